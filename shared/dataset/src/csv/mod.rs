//! CSV datasets: the first row names the columns and every later row is one record, a JSON
//! object keyed by those names in header order.
//!
//! The parser is `csv-core`, the byte-level state machine inside the `csv` crate, fed from our
//! own buffer. `csv::Reader` would not keep the dataset promises: it grows one record without
//! bound (a single stray quote turns the rest of a 10 GB file into one record in memory), and
//! the position it gives a record is where it started looking, before any blank or comment
//! lines and, after a CRLF row, still on the previous line. Here every consumed byte passes
//! through [`Input::consume`], which counts lines, and a record's bytes are capped at the
//! record limit whatever its quoting.
//!
//! Blank lines (empty or spaces and tabs only) and lines whose first non-blank byte is `#` are
//! skipped before the header and between records, the rule JSONL follows (docs/DESIGN.md §9).

mod cells;
mod input;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::io::{self, Read};

use serde_json::{Map, Value};

use self::cells::typed;
pub use self::cells::CellType;
use self::input::{fields, Input, Row};
use super::bytes::{bytes, too_large};
use super::ReadOptions;

/// A header problem: the message for [`super::DatasetError::BadHeader`], or a read error.
pub(super) enum OpenError {
    Header(String),
    Io(ReadFailure),
}

/// A CSV record: the line it starts on, and its value or the reason it is skipped.
pub(super) struct Record {
    pub line: u64,
    pub value: Result<Value, String>,
}

/// An I/O error and the line it happened on.
pub(super) struct ReadFailure {
    pub line: u64,
    pub source: io::Error,
}

/// The CSV side of a [`super::DatasetReader`].
pub(super) struct CsvSource {
    input: Input,
    row: Row,
    columns: Vec<String>,
    types: Vec<CellType>,
    max_record: usize,
}

impl CsvSource {
    /// Reads the header, so that a file whose header is unusable fails at open, not per row.
    pub(super) fn open(
        input: Box<dyn Read + Send>,
        options: &ReadOptions,
    ) -> Result<Self, OpenError> {
        let mut input = Input::new(input);
        let mut row = Row::new();
        let max_record = options.max_record;
        let io_error = |input: &Input, source| {
            OpenError::Io(ReadFailure {
                line: input.line,
                source,
            })
        };
        input.skip_bom().map_err(|e| io_error(&input, e))?;
        let columns = match row.read(&mut input, max_record, usize::MAX) {
            Ok(Some(_)) if row.too_large => {
                return Err(OpenError::Header(format!(
                    "the header is {}, more than max_record_bytes {}",
                    bytes(row.size()),
                    bytes(max_record)
                )))
            }
            Ok(Some(_)) => header_names(&row)?,
            Ok(None) => Vec::new(),
            Err(e) => return Err(io_error(&input, e)),
        };
        let types = columns
            .iter()
            .map(|name| options.cells.get(name).copied().unwrap_or(CellType::String))
            .collect();
        Ok(Self {
            input,
            row,
            columns,
            types,
            max_record,
        })
    }

    pub(super) fn columns(&self) -> &[String] {
        &self.columns
    }

    /// The next record, None at the end of the input.
    pub(super) fn next_record(&mut self) -> Option<Result<Record, ReadFailure>> {
        if self.columns.is_empty() {
            return None;
        }
        match self
            .row
            .read(&mut self.input, self.max_record, self.columns.len())
        {
            Ok(Some(line)) => Some(Ok(Record {
                line,
                value: self.value(),
            })),
            Ok(None) => None,
            Err(source) => Some(Err(ReadFailure {
                line: self.input.line,
                source,
            })),
        }
    }

    fn value(&self) -> Result<Value, String> {
        let row = &self.row;
        if row.too_large {
            return Err(too_large(row.size(), self.max_record));
        }
        if row.count != self.columns.len() {
            return Err(format!(
                "has {}, the header has {}",
                fields(row.count),
                self.columns.len()
            ));
        }
        let mut object = Map::with_capacity(self.columns.len());
        for (i, field) in row.fields().enumerate() {
            let (name, kind) = (&self.columns[i], self.types[i]);
            let text = std::str::from_utf8(field)
                .map_err(|_| format!("invalid UTF-8 in column {} '{name}'", i + 1))?;
            let value = match kind {
                CellType::String => Value::String(text.to_owned()),
                _ if text.trim().is_empty() => continue,
                _ => typed(kind, text.trim())
                    .map_err(|why| format!("column {} '{name}': {why}", i + 1))?,
            };
            object.insert(name.clone(), value);
        }
        Ok(Value::Object(object))
    }
}

/// Column names, trimmed: `id, question` is a common hand-written header and its second column
/// is meant to be `question`.
fn header_names(row: &Row) -> Result<Vec<String>, OpenError> {
    let mut columns = Vec::with_capacity(row.nend);
    let mut seen: HashMap<&str, usize> = HashMap::with_capacity(row.nend);
    for (i, field) in row.fields().enumerate() {
        let n = i + 1;
        let name = std::str::from_utf8(field)
            .map_err(|_| OpenError::Header(format!("column {n} is not valid UTF-8")))?
            .trim();
        if name.is_empty() {
            return Err(OpenError::Header(format!("column {n} has no name")));
        }
        if let Some(first) = seen.insert(name, n) {
            return Err(OpenError::Header(format!(
                "column {n} '{name}' repeats column {first}"
            )));
        }
        columns.push(name.to_owned());
    }
    Ok(columns)
}
