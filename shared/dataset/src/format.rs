//! Which format a dataset is in: the one the caller gives, else the file's name (`.csv`,
//! `.jsonl`/`.ndjson`), else the first significant byte (`[` is a JSON array). Apart from the
//! readers, because it is decided once, before the first record, and each reader then only
//! reads its own format.

use std::io::BufRead;
use std::path::Path;

use super::bytes::first_significant_byte;
use super::{DatasetError, Position};

/// A dataset's format. Unless it is given ([`ReadOptions::format`](crate::ReadOptions::format)), a `.csv` file is CSV and a
/// `.jsonl`/`.ndjson` file is always JSONL (a line that happens to be an array is then one bad
/// line, not the whole file). Otherwise the first non-whitespace byte decides: `[` is a JSON
/// array, anything else JSONL (a JSONL file can start with a `#` comment or a `{`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    JsonLines,
    JsonArray,
    Csv,
}

impl Format {
    /// The format a user names: `jsonl`, `json` (an array) or `csv`, in any case.
    pub fn from_name(s: &str) -> Option<Format> {
        [
            ("jsonl", Format::JsonLines),
            ("json", Format::JsonArray),
            ("csv", Format::Csv),
        ]
        .into_iter()
        .find_map(|(name, format)| s.eq_ignore_ascii_case(name).then_some(format))
    }
}

/// The format `path`'s name says when none is `given`: CSV or JSONL, None when the content
/// must decide.
pub(super) fn named(path: &Path, given: Option<Format>) -> Option<Format> {
    let named = |ext: &[&str]| {
        path.extension()
            .is_some_and(|e| ext.iter().any(|x| e.eq_ignore_ascii_case(x)))
    };
    given.or_else(|| {
        if named(&["csv"]) {
            Some(Format::Csv)
        } else if named(&["jsonl", "ndjson"]) {
            Some(Format::JsonLines)
        } else {
            None
        }
    })
}

/// What the start of a JSON file says.
pub(super) struct Detected {
    pub format: Format,
    /// Line feeds skipped before the first significant byte (JSONL line numbers count them).
    pub newlines: u64,
    /// A file given as a JSON array that holds nothing but whitespace: no records.
    pub empty: bool,
}

/// Reads `input` up to its first significant byte and decides between JSONL and a JSON array
/// (whose `[` is consumed), unless `given` (or the name) already said JSONL.
pub(super) fn detect_json(
    input: &mut impl BufRead,
    path: &Path,
    given: Option<Format>,
) -> Result<Detected, DatasetError> {
    let mut detected = Detected {
        format: Format::JsonLines,
        newlines: 0,
        empty: false,
    };
    if given == Some(Format::JsonLines) {
        return Ok(detected);
    }
    let (first, newlines) = first_significant_byte(input).map_err(|source| DatasetError::Read {
        path: path.to_owned(),
        position: Position::Line(1),
        source,
    })?;
    detected.newlines = newlines;
    match (first, given) {
        (Some(b'['), _) => {
            input.consume(1);
            detected.format = Format::JsonArray;
        }
        (Some(_), Some(Format::JsonArray)) => {
            return Err(DatasetError::NotAnArray {
                path: path.to_owned(),
            })
        }
        (None, Some(Format::JsonArray)) => {
            // An empty file has no records whatever its format.
            detected.format = Format::JsonArray;
            detected.empty = true;
        }
        _ => {}
    }
    Ok(detected)
}
