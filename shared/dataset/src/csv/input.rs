//! The byte side of CSV reading: a buffer over the dataset that counts lines as bytes are
//! consumed ([`Input`]), and one record's fields parsed by `csv-core` into reused buffers, capped
//! at the record limit whatever the quoting ([`Row`]).

use std::io::{self, Read};

use csv_core::ReadRecordResult;

/// Read size: one refill serves thousands of typical rows.
const BUFFER_BYTES: usize = 256 * 1024;

const BOM: &[u8] = b"\xef\xbb\xbf";

/// A byte buffer over the dataset that can look ahead past its current end (to tell a line of
/// spaces from a row that starts with spaces) and counts lines as bytes are consumed.
pub(super) struct Input {
    src: Box<dyn Read + Send>,
    buf: Box<[u8]>,
    pos: usize,
    end: usize,
    eof: bool,
    /// The 1-based line of the next unconsumed byte.
    pub(super) line: u64,
    /// The last consumed byte was `\r`: a `\n` right after it ends no further line.
    prev_cr: bool,
}

impl Input {
    pub(super) fn new(src: Box<dyn Read + Send>) -> Self {
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

    pub(super) fn available(&self) -> &[u8] {
        &self.buf[self.pos..self.end]
    }

    /// Consumes `n` available bytes. `\n`, `\r\n` and a lone `\r` each end a line, as they each
    /// end a record for the parser, so line numbers match what an editor shows.
    pub(super) fn consume(&mut self, n: usize) {
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
    pub(super) fn fill_more(&mut self) -> io::Result<bool> {
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
    pub(super) fn skip_bom(&mut self) -> io::Result<()> {
        while self.available().len() < BOM.len() && self.fill_more()? {}
        if self.available().starts_with(BOM) {
            self.consume(BOM.len());
        }
        Ok(())
    }

    /// Skips blank and comment lines. Returns false at the end of the input, else the next
    /// byte starts a record (on line `self.line`).
    pub(super) fn skip_to_record(&mut self) -> io::Result<bool> {
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
    pub(super) fn skip_line(&mut self) -> io::Result<()> {
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
pub(super) struct Row {
    core: csv_core::Reader,
    fields: Vec<u8>,
    ends: Vec<usize>,
    /// Bytes of `fields` and entries of `ends` that belong to the current record.
    nout: usize,
    pub(super) nend: usize,
    /// Fields seen in the current record, including those not kept.
    pub(super) count: usize,
    /// Input bytes the current record took, its line end included.
    raw: usize,
    /// Bytes of `raw` that are the record's line end (`\n`, `\r\n` or `\r`).
    line_end: usize,
    pub(super) too_large: bool,
    /// No record was read yet: the next one is the header.
    first: bool,
}

impl Row {
    pub(super) fn new() -> Self {
        Self {
            core: csv_core::ReaderBuilder::new().build(),
            fields: vec![0; 8 * 1024],
            ends: vec![0; 64],
            nout: 0,
            nend: 0,
            count: 0,
            raw: 0,
            line_end: 0,
            too_large: false,
            first: true,
        }
    }

    /// Reads the next record into `fields`/`ends`. Past `max` input bytes the record is only
    /// scanned to its end, and `ends` grows no further than `keep` entries (beyond the header's
    /// width fields are only counted: the row is bad anyway), so neither buffer grows with a
    /// bad record. Returns the line the record starts on, or None at the end of the input.
    pub(super) fn read(
        &mut self,
        input: &mut Input,
        max: usize,
        keep: usize,
    ) -> io::Result<Option<u64>> {
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
        self.line_end = 0;
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
            if result == ReadRecordResult::Record {
                let read = &chunk[..nin];
                self.line_end = match read {
                    [.., b'\r', b'\n'] => 2,
                    [.., b'\n' | b'\r'] => 1,
                    _ => 0,
                };
            }
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
    pub(super) fn make_room(&mut self, max: usize, keep: usize) -> bool {
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

    /// The current record's size in the file: its bytes without its line end.
    pub(super) fn size(&self) -> usize {
        self.raw - self.line_end
    }

    /// The current record's fields, as far as they were kept.
    pub(super) fn fields(&self) -> impl Iterator<Item = &[u8]> {
        let mut start = 0;
        self.ends[..self.nend].iter().map(move |&end| {
            let field = &self.fields[start..end];
            start = end;
            field
        })
    }
}

pub(super) fn fields(n: usize) -> String {
    if n == 1 {
        "1 field".to_owned()
    } else {
        format!("{n} fields")
    }
}
