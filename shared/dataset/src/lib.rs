//! # evalfleet-dataset
//! Owns: reading dataset files record by record. Depends on nothing of evalfleet's: a dataset is
//! raw JSON objects with their positions; what a record means is the suites' business.
//!
//! Streaming dataset reader for JSONL, JSON-array and CSV files.
//!
//! Datasets run to 10^7 examples, so nothing here holds more than one record in memory. A JSON
//! array is split into elements lexically (string-aware bracket depth) before any element is
//! parsed, so one malformed element is reported with its index and the rest still load — the same
//! promise JSONL gets per line and CSV per row (docs/DESIGN.md §9: a bad record is skipped, never fatal).
//! CSV lives in [`csv`](self::csv): a header row, then one JSON object per row.

mod csv;

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use self::csv::CellType;
use self::csv::{CsvSource, OpenError, ReadFailure, Record};

/// The largest record read into memory; a longer line or element is skipped with its position.
pub const DEFAULT_MAX_RECORD_BYTES: usize = 64 * 1024 * 1024;

/// Where a record sits in its file: JSONL and CSV lines are 1-based (a CSV record spanning
/// several lines is named by its first), array positions 0-based (docs/DESIGN.md §9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Position {
    Line(u64),
    Index(u64),
}

impl Position {
    /// The line number, if this record came from a JSONL or CSV file.
    pub fn line(self) -> Option<u64> {
        match self {
            Position::Line(n) => Some(n),
            Position::Index(_) => None,
        }
    }
}

impl std::fmt::Display for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Position::Line(n) => write!(f, "line {n}"),
            Position::Index(n) => write!(f, "index {n}"),
        }
    }
}

/// One record of the dataset: its ordinal among all records (blank and comment lines excluded),
/// its position in the file, and the parsed JSON or the reason it could not be parsed.
#[derive(Debug)]
pub struct RawRecord {
    pub ordinal: u64,
    pub position: Position,
    pub value: Result<Value, String>,
}

#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    #[error("cannot open dataset '{path}': {source}")]
    Open { path: PathBuf, source: io::Error },
    #[error("cannot read dataset '{path}' at {position}: {source}")]
    Read {
        path: PathBuf,
        position: Position,
        source: io::Error,
    },
    #[error("dataset '{path}' is a JSON array that ends early: element {index} is not closed")]
    Truncated { path: PathBuf, index: u64 },
    #[error("dataset '{path}' has text after the closing ']' of its array")]
    TrailingData { path: PathBuf },
    /// The format was given as a JSON array, so a file that is not one cannot be read at all.
    #[error("dataset '{path}' is read as a JSON array but does not start with '['")]
    NotAnArray { path: PathBuf },
    /// Every CSV row is keyed by the header, so without a usable header no row means anything.
    #[error("dataset '{path}' has a bad CSV header: {message}")]
    BadHeader { path: PathBuf, message: String },
}

/// A dataset's format. Unless it is given ([`ReadOptions::format`]), a `.csv` file is CSV and a
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

/// How to read a dataset: the format (None = detect), the CSV column types, the record size limit.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    pub format: Option<Format>,
    /// CSV header name → type (e.g. from a suite's declared fields). A name the header does not
    /// have is ignored, so one map can serve files with and without optional columns.
    pub cells: HashMap<String, CellType>,
    /// Records longer than this many bytes are skipped without being held in memory.
    pub max_record: usize,
}

impl Default for ReadOptions {
    fn default() -> Self {
        Self {
            format: None,
            cells: HashMap::new(),
            max_record: DEFAULT_MAX_RECORD_BYTES,
        }
    }
}

/// A streaming iterator over a dataset's records.
pub struct DatasetReader {
    state: State,
    format: Format,
    source: Source,
}

/// What every format shares: names for messages and the record count.
struct State {
    path: PathBuf,
    max_record: usize,
    ordinal: u64,
    done: bool,
}

enum Source {
    Json(JsonSource),
    // Boxed: the parser's tables and buffers make it far larger than the JSON state.
    Csv(Box<CsvSource>),
}

struct JsonSource {
    input: BufReader<Box<dyn Read + Send>>,
    line: u64,
    buf: Vec<u8>,
}

impl DatasetReader {
    /// Opens `path` and detects its format.
    pub fn open(path: &Path) -> Result<Self, DatasetError> {
        Self::open_with(path, &ReadOptions::default())
    }

    /// Opens `path` with a given format, CSV cell types or record limit.
    pub fn open_with(path: &Path, options: &ReadOptions) -> Result<Self, DatasetError> {
        let file = File::open(path).map_err(|source| DatasetError::Open {
            path: path.to_owned(),
            source,
        })?;
        Self::from_reader_with(path, Box::new(file), options)
    }

    /// Reads from any byte source; `path` is only used in messages and format detection.
    pub fn from_reader(
        path: &Path,
        input: Box<dyn Read + Send>,
        max_record: usize,
    ) -> Result<Self, DatasetError> {
        let options = ReadOptions {
            max_record,
            ..ReadOptions::default()
        };
        Self::from_reader_with(path, input, &options)
    }

    /// Reads from any byte source with the given options; `path` is only used in messages and
    /// format detection. A CSV header is read here, so a bad one fails now, not at the first row.
    pub fn from_reader_with(
        path: &Path,
        input: Box<dyn Read + Send>,
        options: &ReadOptions,
    ) -> Result<Self, DatasetError> {
        let mut state = State {
            path: path.to_owned(),
            max_record: options.max_record,
            ordinal: 0,
            done: false,
        };
        let named = |ext: &[&str]| {
            path.extension()
                .is_some_and(|e| ext.iter().any(|x| e.eq_ignore_ascii_case(x)))
        };
        let given = options.format.or_else(|| {
            if named(&["csv"]) {
                Some(Format::Csv)
            } else if named(&["jsonl", "ndjson"]) {
                Some(Format::JsonLines)
            } else {
                None
            }
        });
        if given == Some(Format::Csv) {
            let source = CsvSource::open(input, options).map_err(|e| match e {
                OpenError::Header(message) => DatasetError::BadHeader {
                    path: path.to_owned(),
                    message,
                },
                OpenError::Io(ReadFailure { line, source }) => DatasetError::Read {
                    path: path.to_owned(),
                    position: Position::Line(line),
                    source,
                },
            })?;
            return Ok(Self {
                state,
                format: Format::Csv,
                source: Source::Csv(Box::new(source)),
            });
        }
        let mut json = JsonSource {
            input: BufReader::with_capacity(256 * 1024, input),
            line: 0,
            buf: Vec::new(),
        };
        let format = if given == Some(Format::JsonLines) {
            Format::JsonLines
        } else {
            let (first, newlines) =
                first_significant_byte(&mut json.input).map_err(|source| DatasetError::Read {
                    path: path.to_owned(),
                    position: Position::Line(1),
                    source,
                })?;
            // The skipped whitespace may hold blank lines; JSONL line numbers count them.
            json.line = newlines;
            match (first, given) {
                (Some(b'['), _) => {
                    json.input.consume(1);
                    Format::JsonArray
                }
                (Some(_), Some(Format::JsonArray)) => {
                    return Err(DatasetError::NotAnArray {
                        path: path.to_owned(),
                    })
                }
                (None, Some(Format::JsonArray)) => {
                    // An empty file has no records whatever its format.
                    state.done = true;
                    Format::JsonArray
                }
                _ => Format::JsonLines,
            }
        };
        Ok(Self {
            state,
            format,
            source: Source::Json(json),
        })
    }

    pub fn format(&self) -> Format {
        self.format
    }

    /// The CSV header (column names in file order), None for JSON formats.
    pub fn columns(&self) -> Option<&[String]> {
        match &self.source {
            Source::Csv(csv) => Some(csv.columns()),
            Source::Json(_) => None,
        }
    }
}

impl JsonSource {
    fn next_line(&mut self, state: &mut State) -> Option<Result<RawRecord, DatasetError>> {
        loop {
            self.line += 1;
            let position = Position::Line(self.line);
            let (read, overflow) =
                match read_bounded(&mut self.input, &mut self.buf, state.max_record, |b| {
                    (b == b'\n').then_some(Delim::Stop)
                }) {
                    Ok(r) => r,
                    Err(source) => return Some(Err(state.read_error(position, source))),
                };
            if read == 0 {
                state.done = true;
                return None;
            }
            if overflow {
                return Some(Ok(state.record(position, Err(too_large(state.max_record)))));
            }
            let text = self.buf.trim_ascii();
            if text.is_empty() || text.starts_with(b"#") || is_unicode_blank(text) {
                continue;
            }
            let value = parse_json(text);
            return Some(Ok(state.record(position, value)));
        }
    }

    fn next_element(&mut self, state: &mut State) -> Option<Result<RawRecord, DatasetError>> {
        let index = state.ordinal;
        let position = Position::Index(index);
        let mut scan = ElementScan::default();
        let result = read_bounded(&mut self.input, &mut self.buf, state.max_record, |b| {
            scan.step(b)
        });
        let (_, overflow) = match result {
            Ok(r) => r,
            Err(source) => return Some(Err(state.read_error(position, source))),
        };
        let empty = self.buf.trim_ascii().is_empty();
        match scan.end {
            Some(End::Close) => {
                state.done = true;
                if let Err(e) = self.expect_eof(state) {
                    return Some(Err(e));
                }
                if empty {
                    // `[]`, or the `]` after the last element.
                    return None;
                }
            }
            Some(End::Comma) => {}
            None => {
                state.done = true;
                return Some(Err(DatasetError::Truncated {
                    path: state.path.clone(),
                    index,
                }));
            }
        }
        if overflow {
            return Some(Ok(state.record(position, Err(too_large(state.max_record)))));
        }
        let value = if empty {
            Err("empty array element".to_owned())
        } else {
            parse_json(self.buf.trim_ascii())
        };
        Some(Ok(state.record(position, value)))
    }

    fn expect_eof(&mut self, state: &mut State) -> Result<(), DatasetError> {
        match first_significant_byte(&mut self.input) {
            Ok((None, _)) => Ok(()),
            Ok((Some(_), _)) => Err(DatasetError::TrailingData {
                path: state.path.clone(),
            }),
            Err(source) => Err(state.read_error(Position::Index(state.ordinal), source)),
        }
    }
}

impl State {
    fn record(&mut self, position: Position, value: Result<Value, String>) -> RawRecord {
        let ordinal = self.ordinal;
        self.ordinal += 1;
        RawRecord {
            ordinal,
            position,
            value,
        }
    }

    fn read_error(&mut self, position: Position, source: io::Error) -> DatasetError {
        self.done = true;
        DatasetError::Read {
            path: self.path.clone(),
            position,
            source,
        }
    }
}

impl Iterator for DatasetReader {
    type Item = Result<RawRecord, DatasetError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.state.done {
            return None;
        }
        match &mut self.source {
            Source::Json(json) if self.format == Format::JsonArray => {
                json.next_element(&mut self.state)
            }
            Source::Json(json) => json.next_line(&mut self.state),
            Source::Csv(csv) => match csv.next_record() {
                Some(Ok(Record { line, value })) => {
                    Some(Ok(self.state.record(Position::Line(line), value)))
                }
                Some(Err(ReadFailure { line, source })) => {
                    Some(Err(self.state.read_error(Position::Line(line), source)))
                }
                None => {
                    self.state.done = true;
                    None
                }
            },
        }
    }
}

fn too_large(max: usize) -> String {
    format!("record is larger than {} MiB", max / (1024 * 1024))
}

/// Parses one record, turning serde's message into one that names the column, not serde's
/// internal "line 1" (the caller knows the real line or index).
fn parse_json(text: &[u8]) -> Result<Value, String> {
    serde_json::from_slice(text).map_err(|e| {
        let msg = e.to_string();
        let msg = msg.split(" at line ").next().unwrap_or(&msg).to_owned();
        match std::str::from_utf8(text) {
            Err(_) if msg.contains("unicode") || msg.contains("UTF-8") || msg.contains("utf-8") => {
                format!("invalid UTF-8: {msg}")
            }
            Err(_) => "invalid UTF-8 in record".to_owned(),
            Ok(_) => format!("invalid JSON: {msg} at column {}", e.column()),
        }
    })
}

/// A line of Unicode whitespace only (e.g. a no-break space) is blank too (docs/DESIGN.md §9).
fn is_unicode_blank(b: &[u8]) -> bool {
    std::str::from_utf8(b).is_ok_and(|s| s.trim().is_empty())
}

/// Skips leading ASCII whitespace; returns the first other byte (not consumed), if any, and
/// the line feeds skipped on the way.
fn first_significant_byte(input: &mut impl BufRead) -> io::Result<(Option<u8>, u64)> {
    let mut newlines = 0;
    loop {
        let buf = input.fill_buf()?;
        if buf.is_empty() {
            return Ok((None, newlines));
        }
        let end = buf.iter().position(|b| !b.is_ascii_whitespace());
        let skipped = &buf[..end.unwrap_or(buf.len())];
        newlines += skipped.iter().filter(|&&b| b == b'\n').count() as u64;
        match end {
            Some(i) => {
                let b = buf[i];
                input.consume(i);
                return Ok((Some(b), newlines));
            }
            None => {
                let n = buf.len();
                input.consume(n);
            }
        }
    }
}

enum Delim {
    /// The byte ends the record and is consumed but not kept.
    Stop,
}

/// Reads bytes into `buf` until `delim` says stop or the input ends, keeping at most `max`
/// bytes (the rest of an oversized record is consumed and dropped). Returns the bytes consumed
/// and whether the record overflowed.
fn read_bounded(
    input: &mut impl BufRead,
    buf: &mut Vec<u8>,
    max: usize,
    mut delim: impl FnMut(u8) -> Option<Delim>,
) -> io::Result<(usize, bool)> {
    buf.clear();
    let mut consumed = 0;
    let mut overflow = false;
    loop {
        let chunk = input.fill_buf()?;
        if chunk.is_empty() {
            return Ok((consumed, overflow));
        }
        let mut stop_at = None;
        for (i, &b) in chunk.iter().enumerate() {
            if delim(b).is_some() {
                stop_at = Some(i);
                break;
            }
            if !overflow {
                if buf.len() < max {
                    buf.push(b);
                } else {
                    overflow = true;
                    buf.clear();
                }
            }
        }
        let used = stop_at.map_or(chunk.len(), |i| i + 1);
        input.consume(used);
        consumed += used;
        if stop_at.is_some() {
            return Ok((consumed, overflow));
        }
    }
}

#[derive(Clone, Copy)]
enum End {
    Comma,
    Close,
}

/// Finds the end of one array element: the `,` or `]` at depth zero outside any string.
#[derive(Default)]
struct ElementScan {
    depth: u32,
    in_string: bool,
    escaped: bool,
    end: Option<End>,
}

impl ElementScan {
    fn step(&mut self, b: u8) -> Option<Delim> {
        if self.in_string {
            match (self.escaped, b) {
                (true, _) => self.escaped = false,
                (false, b'\\') => self.escaped = true,
                (false, b'"') => self.in_string = false,
                _ => {}
            }
            return None;
        }
        match b {
            b'"' => self.in_string = true,
            b'{' | b'[' => self.depth += 1,
            b'}' | b']' if self.depth > 0 => self.depth -= 1,
            b',' if self.depth == 0 => {
                self.end = Some(End::Comma);
                return Some(Delim::Stop);
            }
            b']' => {
                self.end = Some(End::Close);
                return Some(Delim::Stop);
            }
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &[u8]) -> Vec<Result<RawRecord, DatasetError>> {
        read_max(text, DEFAULT_MAX_RECORD_BYTES)
    }

    fn read_max(text: &[u8], max: usize) -> Vec<Result<RawRecord, DatasetError>> {
        let owned = text.to_vec();
        DatasetReader::from_reader(Path::new("d"), Box::new(io::Cursor::new(owned)), max)
            .unwrap()
            .collect()
    }

    fn ok(r: &Result<RawRecord, DatasetError>) -> &RawRecord {
        r.as_ref().unwrap()
    }

    #[test]
    fn jsonl_skips_blank_and_comment_lines_and_numbers_lines_from_one() {
        let recs = read(b"# header\n\n{\"a\":1}\r\n   \n  # indented\n{\"a\":2}");
        assert_eq!(recs.len(), 2);
        assert_eq!(ok(&recs[0]).position, Position::Line(3));
        assert_eq!(ok(&recs[0]).ordinal, 0);
        assert_eq!(ok(&recs[1]).position, Position::Line(6));
        assert_eq!(ok(&recs[1]).value.as_ref().unwrap()["a"], 2);
    }

    #[test]
    fn jsonl_bad_line_is_reported_and_reading_goes_on() {
        let recs = read(b"{\"a\":1}\n{\"a\":\n{\"a\":3}\n");
        assert_eq!(recs.len(), 3);
        let bad = ok(&recs[1]);
        assert_eq!(bad.position, Position::Line(2));
        assert!(
            bad.value.as_ref().unwrap_err().starts_with("invalid JSON"),
            "{:?}",
            bad.value
        );
        assert!(ok(&recs[2]).value.is_ok());
    }

    #[test]
    fn invalid_utf8_is_a_clear_per_line_error() {
        let recs = read(b"{\"a\":\"\xff\xfe\"}\n{\"a\":1}\n");
        let err = ok(&recs[0]).value.as_ref().unwrap_err();
        assert!(err.contains("UTF-8"), "{err}");
        assert!(ok(&recs[1]).value.is_ok());
    }

    #[test]
    fn unicode_whitespace_line_is_blank() {
        let recs = read("\u{a0}\u{2003}\n{\"a\":1}\n".as_bytes());
        assert_eq!(recs.len(), 1);
        assert_eq!(ok(&recs[0]).position, Position::Line(2));
    }

    #[test]
    fn empty_file_has_no_records() {
        assert!(read(b"").is_empty());
        assert!(read(b"  \n\n").is_empty());
        assert!(read(b"[]").is_empty());
        assert!(read(b" [ \n ] \n").is_empty());
    }

    #[test]
    fn array_elements_are_indexed_from_zero_and_one_bad_element_is_skipped() {
        let recs = read(br#"[{"a":"x,]}"}, {"a": }, 7, {"b":[1,{"c":2}]} ]"#);
        assert_eq!(recs.len(), 4);
        assert_eq!(ok(&recs[0]).value.as_ref().unwrap()["a"], "x,]}");
        assert_eq!(ok(&recs[1]).position, Position::Index(1));
        assert!(ok(&recs[1]).value.is_err());
        assert_eq!(ok(&recs[2]).value.as_ref().unwrap(), &serde_json::json!(7));
        assert_eq!(ok(&recs[3]).position, Position::Index(3));
    }

    #[test]
    fn escaped_quotes_inside_strings_do_not_end_the_string() {
        let recs = read(br#"[{"a":"say \"hi\", ]"}]"#);
        assert_eq!(recs.len(), 1);
        assert_eq!(ok(&recs[0]).value.as_ref().unwrap()["a"], "say \"hi\", ]");
    }

    #[test]
    fn truncated_array_is_an_error_naming_the_element() {
        let recs = read(br#"[{"a":1}, {"a":2"#);
        assert!(ok(&recs[0]).value.is_ok());
        match &recs[1] {
            Err(DatasetError::Truncated { index, .. }) => assert_eq!(*index, 1),
            other => panic!("{other:?}"),
        }
        assert_eq!(recs.len(), 2);
    }

    #[test]
    fn trailing_text_after_array_is_an_error() {
        let recs = read(br#"[{"a":1}] junk"#);
        assert!(matches!(
            recs.last(),
            Some(Err(DatasetError::TrailingData { .. }))
        ));
    }

    #[test]
    fn oversized_record_is_skipped_not_loaded() {
        let big = format!("{{\"a\":\"{}\"}}\n{{\"a\":1}}\n", "x".repeat(100));
        let recs = read_max(big.as_bytes(), 50);
        assert!(ok(&recs[0])
            .value
            .as_ref()
            .unwrap_err()
            .contains("larger than"));
        assert!(ok(&recs[1]).value.is_ok());
    }

    #[test]
    fn ten_megabyte_field_loads() {
        let big = format!("{{\"a\":\"{}\"}}\n", "y".repeat(10 * 1024 * 1024));
        let recs = read(big.as_bytes());
        assert_eq!(
            ok(&recs[0]).value.as_ref().unwrap()["a"]
                .as_str()
                .unwrap()
                .len(),
            10 << 20
        );
    }

    #[test]
    fn jsonl_extension_keeps_a_leading_array_line_a_bad_line() {
        let text = b"[1, 2]\n{\"a\":1}\n".to_vec();
        let recs: Vec<_> =
            DatasetReader::from_reader(Path::new("d.jsonl"), Box::new(io::Cursor::new(text)), 1024)
                .unwrap()
                .collect();
        assert_eq!(recs.len(), 2);
        assert_eq!(ok(&recs[0]).position, Position::Line(1));
        assert!(
            ok(&recs[0]).value.is_ok(),
            "a valid JSON line; the suite rejects it as not an object"
        );
        assert_eq!(ok(&recs[1]).position, Position::Line(2));
    }

    #[test]
    fn jsonl_lines_count_blank_lines_before_the_first_record() {
        let recs = read(b"\n\n  \n{\"a\":1}\n{\"a\":2}\n");
        assert_eq!(ok(&recs[0]).position, Position::Line(4));
        assert_eq!(ok(&recs[1]).position, Position::Line(5));
    }

    fn read_as(text: &[u8], format: Format) -> Result<DatasetReader, DatasetError> {
        let options = ReadOptions {
            format: Some(format),
            ..ReadOptions::default()
        };
        let input = Box::new(io::Cursor::new(text.to_vec()));
        DatasetReader::from_reader_with(Path::new("d"), input, &options)
    }

    #[test]
    fn a_given_format_wins_over_detection() {
        let reader = read_as(b"[1, 2]\n", Format::JsonLines).unwrap();
        assert_eq!(reader.format(), Format::JsonLines);
        let recs: Vec<_> = reader.collect();
        assert_eq!(
            ok(&recs[0]).value.as_ref().unwrap(),
            &serde_json::json!([1, 2])
        );

        let recs: Vec<_> = read_as(b" [1, 2]", Format::JsonArray).unwrap().collect();
        assert_eq!(recs.len(), 2);
        assert_eq!(read_as(b"  \n", Format::JsonArray).unwrap().count(), 0);
        assert!(matches!(
            read_as(b"{\"a\":1}\n", Format::JsonArray),
            Err(DatasetError::NotAnArray { .. })
        ));
    }

    #[test]
    fn formats_are_named_as_users_write_them() {
        assert_eq!(Format::from_name("jsonl"), Some(Format::JsonLines));
        assert_eq!(Format::from_name("json"), Some(Format::JsonArray));
        assert_eq!(Format::from_name("CSV"), Some(Format::Csv));
        assert_eq!(Format::from_name("tsv"), None);
    }

    #[test]
    fn missing_file_is_a_clear_error() {
        let err = DatasetReader::open(Path::new("/nonexistent/data.jsonl"))
            .err()
            .unwrap();
        assert!(err
            .to_string()
            .contains("cannot open dataset '/nonexistent/data.jsonl'"));
    }
}
