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

use std::collections::HashMap;
use std::io::{self, Read};

use csv_core::ReadRecordResult;
use serde_json::{Map, Value};

use super::bytes::too_large;
use super::ReadOptions;

/// How a CSV cell becomes a JSON value; columns not listed stay strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CellType {
    /// The cell's text as given, untrimmed; an empty cell is `""`.
    String,
    /// A JSON number: an integer that fits i64 stays an integer, anything else must be a
    /// finite f64.
    Number,
    /// `true/false`, `yes/no`, `1/0`, in any case.
    Bool,
    /// The cell parsed as JSON (an object, an array, a quoted string, ...).
    Json,
}

/// Read size: one refill serves thousands of typical rows.
const BUFFER_BYTES: usize = 256 * 1024;

/// The longest part of a cell quoted in a reason; a 10 MB cell must not become a 10 MB message.
const QUOTE_CHARS: usize = 40;

const BOM: &[u8] = b"\xef\xbb\xbf";

/// A byte buffer over the dataset that can look ahead past its current end (to tell a line of
/// spaces from a row that starts with spaces) and counts lines as bytes are consumed.
struct Input {
    src: Box<dyn Read + Send>,
    buf: Box<[u8]>,
    pos: usize,
    end: usize,
    eof: bool,
    /// The 1-based line of the next unconsumed byte.
    line: u64,
    /// The last consumed byte was `\r`: a `\n` right after it ends no further line.
    prev_cr: bool,
}

impl Input {
    fn new(src: Box<dyn Read + Send>) -> Self {
        Self {
            src,
            buf: vec![0; BUFFER_BYTES].into_boxed_slice(),
            pos: 0,
            end: 0,
            eof: false,
            line: 1,
            prev_cr: false,
        }
    }

    fn available(&self) -> &[u8] {
        &self.buf[self.pos..self.end]
    }

    /// Consumes `n` available bytes. `\n`, `\r\n` and a lone `\r` each end a line, as they each
    /// end a record for the parser, so line numbers match what an editor shows.
    fn consume(&mut self, n: usize) {
        let mut lines = 0;
        let mut prev_cr = self.prev_cr;
        for &b in &self.buf[self.pos..self.pos + n] {
            lines += u64::from(b == b'\r' || (b == b'\n' && !prev_cr));
            prev_cr = b == b'\r';
        }
        self.line += lines;
        self.prev_cr = prev_cr;
        self.pos += n;
    }

    /// Reads more bytes after the available ones, keeping those. Returns false at the end of the
    /// input, or when the buffer is already full of unconsumed bytes.
    fn fill_more(&mut self) -> io::Result<bool> {
        if self.eof {
            return Ok(false);
        }
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.pos = 0;
        }
        if self.end == self.buf.len() {
            return Ok(false);
        }
        loop {
            match self.src.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(true);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Drops a UTF-8 byte-order mark at the very start (spreadsheet exports write one).
    fn skip_bom(&mut self) -> io::Result<()> {
        while self.available().len() < BOM.len() && self.fill_more()? {}
        if self.available().starts_with(BOM) {
            self.consume(BOM.len());
        }
        Ok(())
    }

    /// Skips blank and comment lines. Returns false at the end of the input, else the next
    /// byte starts a record (on line `self.line`).
    fn skip_to_record(&mut self) -> io::Result<bool> {
        loop {
            let available = self.available();
            match available.iter().position(|&b| b != b' ' && b != b'\t') {
                Some(i) => match available[i] {
                    b'\n' | b'\r' => self.consume(i + 1),
                    b'#' => {
                        self.consume(i + 1);
                        self.skip_line()?;
                    }
                    _ => return Ok(true),
                },
                None => {
                    if self.fill_more()? {
                        continue;
                    }
                    if self.eof {
                        // A last line of spaces without a newline is blank too.
                        let n = self.available().len();
                        self.consume(n);
                        return Ok(false);
                    }
                    // 256 KiB of spaces and tabs with no line end: call it a record and let
                    // the row checks say what is wrong with it.
                    return Ok(true);
                }
            }
        }
    }

    /// Consumes the rest of a comment line, its line end included.
    fn skip_line(&mut self) -> io::Result<()> {
        loop {
            let available = self.available();
            if let Some(i) = available.iter().position(|&b| b == b'\n' || b == b'\r') {
                self.consume(i + 1);
                return Ok(());
            }
            let n = available.len();
            self.consume(n);
            if !self.fill_more()? {
                return Ok(());
            }
        }
    }
}

/// One record's parse: field bytes and field ends, both buffers reused across records, so a
/// row costs no allocation of its own beyond the JSON value built from it.
struct Row {
    core: csv_core::Reader,
    fields: Vec<u8>,
    ends: Vec<usize>,
    /// Bytes of `fields` and entries of `ends` that belong to the current record.
    nout: usize,
    nend: usize,
    /// Fields seen in the current record, including those not kept.
    count: usize,
    /// Input bytes the current record took, its line end included.
    raw: usize,
    too_large: bool,
    /// No record was read yet: the next one is the header.
    first: bool,
}

impl Row {
    fn new() -> Self {
        Self {
            core: csv_core::ReaderBuilder::new().build(),
            fields: vec![0; 8 * 1024],
            ends: vec![0; 64],
            nout: 0,
            nend: 0,
            count: 0,
            raw: 0,
            too_large: false,
            first: true,
        }
    }

    /// Reads the next record into `fields`/`ends`. Past `max` input bytes the record is only
    /// scanned to its end, and `ends` grows no further than `keep` entries (beyond the header's
    /// width fields are only counted: the row is bad anyway), so neither buffer grows with a
    /// bad record. Returns the line the record starts on, or None at the end of the input.
    fn read(&mut self, input: &mut Input, max: usize, keep: usize) -> io::Result<Option<u64>> {
        if !input.skip_to_record()? {
            return Ok(None);
        }
        if self.first {
            // csv-core drops a byte-order mark at the start of the first input it is given, but
            // only when all of it is there, and something after it (an empty rest is the end of
            // the input to csv-core): so that the header reads the same however the reads split
            // the file, a header starting like a mark is read on until it is more than that.
            self.first = false;
            while BOM.starts_with(input.available()) && input.fill_more()? {}
        }
        let line = input.line;
        self.nout = 0;
        self.nend = 0;
        self.count = 0;
        self.raw = 0;
        self.too_large = false;
        loop {
            if input.available().is_empty() {
                input.fill_more()?;
            }
            let discard = self.make_room(max, keep);
            let chunk = input.available();
            let at_eof = chunk.is_empty();
            let (result, nin, nout, nend) = if discard {
                // Parsed only to find where the record ends; the buffers are scratch.
                self.core
                    .read_record(chunk, &mut self.fields, &mut self.ends)
            } else {
                self.core.read_record(
                    chunk,
                    &mut self.fields[self.nout..],
                    &mut self.ends[self.nend..],
                )
            };
            input.consume(nin);
            self.raw = self.raw.saturating_add(nin);
            self.count += nend;
            if !discard {
                self.nout += nout;
                self.nend += nend;
            }
            if self.raw > max {
                self.too_large = true;
            }
            match result {
                ReadRecordResult::Record => return Ok(Some(line)),
                // Neither happens once `skip_to_record` found a byte; stop rather than spin.
                ReadRecordResult::End => return Ok(None),
                ReadRecordResult::InputEmpty if at_eof => return Ok(None),
                ReadRecordResult::InputEmpty
                | ReadRecordResult::OutputFull
                | ReadRecordResult::OutputEndsFull => {}
            }
        }
    }

    /// Grows the buffers the parser writes into next, within the limits; returns true when the
    /// rest of the record is to be discarded instead.
    fn make_room(&mut self, max: usize, keep: usize) -> bool {
        if self.too_large {
            return true;
        }
        if self.nout == self.fields.len() {
            if self.fields.len() > max {
                self.too_large = true;
                return true;
            }
            let len = self
                .fields
                .len()
                .saturating_mul(2)
                .min(max.saturating_add(1));
            self.fields.resize(len.max(self.fields.len() + 1), 0);
        }
        if self.nend == self.ends.len() {
            if self.nend >= keep {
                // Every end but a record's last comes from a delimiter, so one more field
                // follows: the row already has more fields than the header.
                return true;
            }
            let len = self.ends.len().saturating_mul(2).min(keep);
            self.ends.resize(len.max(self.ends.len() + 1), 0);
        }
        false
    }

    /// The current record's fields, as far as they were kept.
    fn fields(&self) -> impl Iterator<Item = &[u8]> {
        let mut start = 0;
        self.ends[..self.nend].iter().map(move |&end| {
            let field = &self.fields[start..end];
            start = end;
            field
        })
    }
}

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
                    "the header is larger than {} MiB",
                    max_record / (1024 * 1024)
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
            return Err(too_large(self.max_record));
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

/// A typed cell's value from its trimmed, non-empty text.
fn typed(kind: CellType, text: &str) -> Result<Value, String> {
    match kind {
        CellType::String => Ok(Value::String(text.to_owned())),
        CellType::Number => {
            if let Ok(i) = text.parse::<i64>() {
                return Ok(Value::from(i));
            }
            match text.parse::<f64>() {
                Ok(f) if f.is_finite() => Ok(Value::from(f)),
                Ok(_) => Err(format!("{} is not a finite number", quote(text))),
                Err(_) => Err(format!("{} is not a number", quote(text))),
            }
        }
        CellType::Bool => {
            let is = |words: [&str; 3]| words.iter().any(|w| text.eq_ignore_ascii_case(w));
            if is(["true", "yes", "1"]) {
                Ok(Value::Bool(true))
            } else if is(["false", "no", "0"]) {
                Ok(Value::Bool(false))
            } else {
                Err(format!(
                    "{} is not a boolean (true/false, yes/no, 1/0)",
                    quote(text)
                ))
            }
        }
        CellType::Json => serde_json::from_str(text).map_err(|e| {
            // serde's own "at line L column C" counts within the cell; say so.
            let msg = e.to_string();
            let msg = msg.split(" at line ").next().unwrap_or(&msg);
            if e.line() == 0 {
                format!("invalid JSON: {msg}")
            } else {
                format!(
                    "invalid JSON: {msg} at line {} column {} of the cell",
                    e.line(),
                    e.column()
                )
            }
        }),
    }
}

/// `'text'`, cut to its first [`QUOTE_CHARS`] characters.
fn quote(text: &str) -> String {
    match text.char_indices().nth(QUOTE_CHARS) {
        Some((cut, _)) => format!("'{}…'", &text[..cut]),
        None => format!("'{text}'"),
    }
}

fn fields(n: usize) -> String {
    if n == 1 {
        "1 field".to_owned()
    } else {
        format!("{n} fields")
    }
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;
    use std::path::Path;

    use serde_json::json;

    use super::*;
    use crate::{DatasetError, DatasetReader, Format, Position, RawRecord};

    fn options(cells: &[(&str, CellType)]) -> ReadOptions {
        ReadOptions {
            format: Some(Format::Csv),
            cells: cells.iter().map(|&(n, t)| (n.to_owned(), t)).collect(),
            ..ReadOptions::default()
        }
    }

    fn open(text: &[u8], options: &ReadOptions) -> Result<DatasetReader, DatasetError> {
        let input = Box::new(Cursor::new(text.to_vec()));
        DatasetReader::from_reader_with(Path::new("d.csv"), input, options)
    }

    fn read_with(text: &[u8], options: &ReadOptions) -> Vec<RawRecord> {
        open(text, options)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    fn read(text: &[u8]) -> Vec<RawRecord> {
        read_with(text, &options(&[]))
    }

    fn lines(records: &[RawRecord]) -> Vec<u64> {
        records.iter().filter_map(|r| r.position.line()).collect()
    }

    fn value(r: &RawRecord) -> &Value {
        r.value.as_ref().unwrap()
    }

    fn reason(r: &RawRecord) -> &str {
        r.value.as_ref().unwrap_err()
    }

    /// Hands out one byte per read, so every lookahead and line end crosses a refill.
    struct Trickle(Cursor<Vec<u8>>);

    impl Read for Trickle {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf.len().min(1);
            self.0.read(&mut buf[..n])
        }
    }

    #[test]
    fn rows_become_objects_in_header_order_with_quoted_commas_and_quotes() {
        let recs = read(b"id,text,note\n1,\"a, b\",\"say \"\"hi\"\"\"\n2,plain,\n");
        assert_eq!(lines(&recs), [2, 3]);
        assert_eq!(recs[0].ordinal, 0);
        assert_eq!(recs[1].ordinal, 1);
        let first = value(&recs[0]);
        assert_eq!(
            first,
            &json!({"id": "1", "text": "a, b", "note": "say \"hi\""})
        );
        let keys: Vec<_> = first.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["id", "text", "note"]);
        assert_eq!(
            value(&recs[1])["note"],
            "",
            "an empty string cell stays \"\""
        );
    }

    #[test]
    fn a_record_with_quoted_newlines_is_named_by_its_first_line() {
        let recs = read(b"id,text\n1,\"one\ntwo\nthree\"\n2,after\n3,\"x\r\ny\"\r\n4,z");
        assert_eq!(lines(&recs), [2, 5, 6, 8]);
        assert_eq!(value(&recs[0])["text"], "one\ntwo\nthree");
        assert_eq!(value(&recs[1])["id"], "2");
        assert_eq!(value(&recs[2])["text"], "x\r\ny");
        assert_eq!(value(&recs[3]), &json!({"id": "4", "text": "z"}));
    }

    #[test]
    fn bom_and_crlf_are_handled() {
        let recs = read(b"\xef\xbb\xbfid,n\r\n1,a\r\n\r\n2,b\r\n");
        assert_eq!(lines(&recs), [2, 4]);
        assert_eq!(value(&recs[0]), &json!({"id": "1", "n": "a"}));
        assert_eq!(value(&recs[1]), &json!({"id": "2", "n": "b"}));
    }

    /// Found by fuzzing (target `dataset_csv`): a byte-order mark starting the header after a
    /// comment line was dropped when the read that reached it held all three of its bytes, and
    /// kept in the first column's name when it did not, so the same file had different columns.
    #[test]
    fn a_mark_before_the_header_reads_the_same_however_the_file_arrives() {
        let found =
            b"\xef\xbb\xbf#v\0\0\0orted\r\n\xef\xbb\xbf,b,j,latency_ms\r\n\"a, \"\"b\"\"\",\
            \x8442,true,\"{\"\"k\"\": [1]}\",1.5\r\n x ,1e3\0\0\0\0\0\0\0\0,no,,\n\n  # c\nl\
            ast,-7,YES,\"\"\"orted\rnf\n";
        let read_all = |input: Box<dyn Read + Send>| {
            DatasetReader::from_reader_with(Path::new("d.csv"), input, &options(&[]))
                .map(|reader| {
                    let columns = reader.columns().map(<[String]>::to_vec);
                    let records: Vec<_> = reader
                        .map(|r| r.map(|r| (r.position, r.value)).map_err(|e| e.to_string()))
                        .collect();
                    (columns, records)
                })
                .map_err(|e| e.to_string())
        };
        let simple = b"\xef\xbb\xbf# exported\r\n\xef\xbb\xbfid,n\n1,a\n";
        for text in [&found[..], simple] {
            let whole = read_all(Box::new(Cursor::new(text.to_vec())));
            let trickled = read_all(Box::new(Trickle(Cursor::new(text.to_vec()))));
            assert_eq!(whole, trickled, "{text:?}");
        }
        let (columns, _) = read_all(Box::new(Trickle(Cursor::new(simple.to_vec())))).unwrap();
        assert_eq!(columns.unwrap(), ["id", "n"]);
        let whole = read_all(Box::new(Cursor::new(found.to_vec())));
        assert_eq!(
            whole.unwrap_err(),
            "dataset 'd.csv' has a bad CSV header: column 1 has no name"
        );
    }

    #[test]
    fn a_lone_carriage_return_ends_a_line_too() {
        let recs = read(b"id\r1\r\r2\r");
        assert_eq!(lines(&recs), [2, 4]);
    }

    #[test]
    fn blank_and_comment_lines_are_skipped_and_still_counted() {
        let text = b"# exported 2024-05-01\n\nid,n\n# a comment\n1,a\n\n  \t \n   # indented comment\n2,b\n";
        let recs = read(text);
        assert_eq!(lines(&recs), [5, 9]);
        assert_eq!(recs[1].ordinal, 1);
        assert_eq!(value(&recs[1]), &json!({"id": "2", "n": "b"}));
    }

    #[test]
    fn a_row_starting_with_spaces_is_a_row() {
        let recs = read(b"id,n\n  1,a\n");
        assert_eq!(value(&recs[0]), &json!({"id": "  1", "n": "a"}));
    }

    #[test]
    fn ragged_rows_are_skipped_and_reading_goes_on() {
        let many = format!("{}\n", vec!["x"; 200].join(","));
        let text = format!("a,b,c,d,e\n1,2,3\n1,2,3,4,5,6\n{many}1,2,3,4,5\n");
        let recs = read(text.as_bytes());
        assert_eq!(lines(&recs), [2, 3, 4, 5]);
        assert_eq!(reason(&recs[0]), "has 3 fields, the header has 5");
        assert_eq!(reason(&recs[1]), "has 6 fields, the header has 5");
        assert_eq!(reason(&recs[2]), "has 200 fields, the header has 5");
        assert_eq!(value(&recs[3])["e"], "5");
        let recs = read(b"a,b\nx\n");
        assert_eq!(reason(&recs[0]), "has 1 field, the header has 2");
    }

    #[test]
    fn number_cells_keep_integers_integral() {
        let cells = options(&[("n", CellType::Number)]);
        let recs = read_with(
            b"id,n\na,42\nb,1.5\nc, -7 \nd,1e3\ne,18446744073709551615\nf,\ng,  \n",
            &cells,
        );
        let n: Vec<_> = recs.iter().map(|r| value(r).get("n").cloned()).collect();
        assert_eq!(n[0], Some(json!(42)));
        assert!(n[0].as_ref().unwrap().is_i64());
        assert_eq!(n[1], Some(json!(1.5)));
        assert_eq!(n[2], Some(json!(-7)));
        assert_eq!(n[3], Some(json!(1000.0)));
        assert_eq!(n[4], Some(json!(18446744073709551615.0_f64)));
        assert_eq!(n[5], None, "an empty typed cell is left out");
        assert_eq!(n[6], None, "a blank typed cell is left out");
        assert_eq!(value(&recs[5]), &json!({"id": "f"}));
    }

    #[test]
    fn a_bad_cell_names_its_column_by_name_and_number() {
        let cells = options(&[
            ("latency_ms", CellType::Number),
            ("ok", CellType::Bool),
            ("meta", CellType::Json),
        ]);
        let text = b"id,x,ok,meta,y,latency_ms\n\
            1,,true,{},,fast\n\
            2,,maybe,{},,3\n\
            3,,no,\"{\"\"a\"\":}\",,3\n\
            4,,no,{},,inf\n";
        let recs = read_with(text, &cells);
        assert_eq!(
            reason(&recs[0]),
            "column 6 'latency_ms': 'fast' is not a number"
        );
        assert_eq!(
            reason(&recs[1]),
            "column 3 'ok': 'maybe' is not a boolean (true/false, yes/no, 1/0)"
        );
        assert_eq!(
            reason(&recs[2]),
            "column 4 'meta': invalid JSON: expected value at line 1 column 6 of the cell"
        );
        assert_eq!(
            reason(&recs[3]),
            "column 6 'latency_ms': 'inf' is not a finite number"
        );
        let long = format!("id,n\n1,{}\n", "z".repeat(100));
        let recs = read_with(long.as_bytes(), &options(&[("n", CellType::Number)]));
        assert_eq!(
            reason(&recs[0]),
            format!("column 2 'n': '{}…' is not a number", "z".repeat(40))
        );
    }

    #[test]
    fn bool_and_json_cells_are_converted() {
        let cells = options(&[
            ("ok", CellType::Bool),
            ("meta", CellType::Json),
            ("s", CellType::String),
        ]);
        let text =
            b"ok,meta,s\nTRUE,\"{\"\"a\"\": [1, 2]}\", x \n yes ,\"\"\"q\"\"\",\n0,,\nNo, 7 ,\n";
        let recs = read_with(text, &cells);
        assert_eq!(
            value(&recs[0]),
            &json!({"ok": true, "meta": {"a": [1, 2]}, "s": " x "})
        );
        assert_eq!(value(&recs[1]), &json!({"ok": true, "meta": "q", "s": ""}));
        assert_eq!(value(&recs[2]), &json!({"ok": false, "s": ""}));
        assert_eq!(value(&recs[3]), &json!({"ok": false, "meta": 7, "s": ""}));
    }

    #[test]
    fn header_only_and_empty_files_have_no_records() {
        for text in [&b""[..], b"\n\n", b"# only a comment\n", b"id,n\n", b"id,n"] {
            let reader = open(text, &options(&[])).unwrap();
            assert_eq!(reader.format(), Format::Csv);
            assert_eq!(reader.count(), 0, "{text:?}");
        }
        let reader = open(b"id, question \n", &options(&[])).unwrap();
        assert_eq!(
            reader.columns().unwrap(),
            ["id", "question"],
            "names are trimmed"
        );
        assert_eq!(
            open(b"", &options(&[])).unwrap().columns().unwrap(),
            [] as [String; 0]
        );
    }

    #[test]
    fn a_bad_header_is_an_error_naming_the_column() {
        let message = |text: &[u8]| match open(text, &options(&[])) {
            Err(DatasetError::BadHeader { message, .. }) => message,
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("{text:?} opened"),
        };
        assert_eq!(
            message(b"id,text,id\n1,2,3\n"),
            "column 3 'id' repeats column 1"
        );
        assert_eq!(message(b"id, id\n"), "column 2 'id' repeats column 1");
        assert_eq!(message(b"id,,x\n"), "column 2 has no name");
        assert_eq!(message(b"id,\xff\n"), "column 2 is not valid UTF-8");
        let err = open(
            b"a,b\n",
            &ReadOptions {
                max_record: 2,
                ..options(&[])
            },
        )
        .err()
        .unwrap();
        assert_eq!(
            err.to_string(),
            "dataset 'd.csv' has a bad CSV header: the header is larger than 0 MiB"
        );
    }

    #[test]
    fn invalid_utf8_skips_the_row_naming_the_column() {
        let recs = read(b"id,text\n1,ok\n2,\"a\xff\"\n3,ok\n");
        assert_eq!(reason(&recs[1]), "invalid UTF-8 in column 2 'text'");
        assert_eq!(recs[1].position, Position::Line(3));
        assert!(recs[2].value.is_ok());
    }

    #[test]
    fn oversized_rows_are_skipped_without_being_kept() {
        let text = format!("id,text\n1,{}\n2,b\n", "x".repeat(100));
        let small = ReadOptions {
            max_record: 50,
            ..options(&[])
        };
        let recs = read_with(text.as_bytes(), &small);
        assert_eq!(reason(&recs[0]), "record is larger than 0 MiB");
        assert_eq!(value(&recs[1])["id"], "2");
        assert_eq!(recs[1].position, Position::Line(3));
        // An unclosed quote runs to the end of the file; it stays bounded all the same.
        let text = format!("id,text\n1,\"open\n{}", "2,b\n".repeat(1000));
        let recs = read_with(text.as_bytes(), &small);
        assert_eq!(recs.len(), 1);
        assert_eq!(reason(&recs[0]), "record is larger than 0 MiB");
    }

    #[test]
    fn a_large_cell_loads() {
        let text = format!("id,text\n1,\"{}\"\n", "y".repeat(1 << 20));
        let recs = read(text.as_bytes());
        assert_eq!(value(&recs[0])["text"].as_str().unwrap().len(), 1 << 20);
    }

    #[test]
    fn byte_by_byte_input_reads_the_same() {
        let text =
            b"\xef\xbb\xbf# c\r\n id ,n\r\n  \r\n1,\"a\r\nb\"\r\n   \t\n# x\n2,c\n  3,d\r4,e"
                .to_vec();
        let whole = read(&text);
        let input = Box::new(Trickle(Cursor::new(text)));
        let trickled: Vec<_> =
            DatasetReader::from_reader_with(Path::new("d.csv"), input, &options(&[]))
                .unwrap()
                .map(Result::unwrap)
                .collect();
        assert_eq!(lines(&whole), [4, 8, 9, 10]);
        assert_eq!(lines(&trickled), lines(&whole));
        for (a, b) in whole.iter().zip(&trickled) {
            assert_eq!(a.value, b.value);
        }
        assert_eq!(value(&whole[0]), &json!({"id": "1", "n": "a\r\nb"}));
        assert_eq!(value(&whole[2]), &json!({"id": "  3", "n": "d"}));
    }

    #[test]
    fn the_extension_or_the_given_format_decides() {
        let text = b"id,n\n1,a\n".to_vec();
        let open_as = |name: &str, format: Option<Format>| {
            let options = ReadOptions {
                format,
                ..ReadOptions::default()
            };
            let input = Box::new(Cursor::new(text.clone()));
            DatasetReader::from_reader_with(Path::new(name), input, &options).unwrap()
        };
        assert_eq!(open_as("d.csv", None).format(), Format::Csv);
        assert_eq!(open_as("D.CSV", None).format(), Format::Csv);
        assert_eq!(open_as("d.txt", Some(Format::Csv)).format(), Format::Csv);
        let jsonl = open_as("d.csv", Some(Format::JsonLines));
        assert_eq!(jsonl.format(), Format::JsonLines);
        assert_eq!(jsonl.columns(), None);
        let recs: Vec<_> = jsonl.map(Result::unwrap).collect();
        assert!(reason(&recs[0]).starts_with("invalid JSON"));
        assert_eq!(open_as("d.txt", None).format(), Format::JsonLines);
    }

    #[test]
    fn a_read_error_is_a_dataset_error_with_its_line() {
        struct Failing(Cursor<Vec<u8>>);
        impl Read for Failing {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                match self.0.read(buf)? {
                    0 => Err(io::Error::other("disk gone")),
                    n => Ok(n),
                }
            }
        }
        let input = Box::new(Failing(Cursor::new(b"id\n1\n2\n".to_vec())));
        let results: Vec<_> =
            DatasetReader::from_reader_with(Path::new("d.csv"), input, &options(&[]))
                .unwrap()
                .collect();
        assert_eq!(results.len(), 3);
        assert_eq!(value(results[1].as_ref().unwrap())["id"], "2");
        match &results[2] {
            Err(DatasetError::Read { position, .. }) => assert_eq!(*position, Position::Line(4)),
            other => panic!("{other:?}"),
        }
    }
}
