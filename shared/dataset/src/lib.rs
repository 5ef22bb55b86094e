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
//!
//! Here: the records, their positions and errors, and [`DatasetReader`], which hands each
//! record to its format's reader. The format is decided in `format.rs`; JSONL is read in
//! `jsonl.rs`, a JSON array in `json_array.rs` (both with `bytes.rs`: bounded reads and parsing),
//! CSV in `csv/` (a header row, then one JSON object per row).

mod bytes;
mod csv;
mod format;
mod json_array;
mod jsonl;

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use self::csv::CellType;
use self::csv::{CsvSource, OpenError, ReadFailure, Record};
pub use self::format::Format;

/// The largest record read into memory by default (the configuration's `max_record_bytes`,
/// 16 MiB); a longer line, element or CSV record is skipped with its position and size.
pub const DEFAULT_MAX_RECORD_BYTES: usize = 16 * 1024 * 1024;

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
        let given = format::named(path, options.format);
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
        let mut input = BufReader::with_capacity(256 * 1024, input);
        let detected = format::detect_json(&mut input, path, given)?;
        state.done = detected.empty;
        Ok(Self {
            state,
            format: detected.format,
            source: Source::Json(JsonSource {
                input,
                // The skipped whitespace may hold blank lines; JSONL line numbers count them.
                line: detected.newlines,
                buf: Vec::new(),
            }),
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

#[cfg(test)]
mod tests;
