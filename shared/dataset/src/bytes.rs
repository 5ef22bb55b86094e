//! Reading one record's bytes, for the JSON formats: a bounded read that never holds more than
//! the record limit, skipping whitespace between records, and parsing the bytes with a reason
//! that names the column (the caller knows the line or index).

use std::io::{self, BufRead};

use serde_json::Value;

/// Why a record over the size limit is skipped: its size (the bytes between its line ends or
/// separators) and the limit, both in bytes and MiB.
pub(super) fn too_large(size: usize, max: usize) -> String {
    format!(
        "record is {}, more than max_record_bytes {}",
        bytes(size),
        bytes(max)
    )
}

/// `1234 bytes`, with KiB, MiB or GiB beside it from 1 KiB on.
pub(super) fn bytes(n: usize) -> String {
    let units = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    match units.iter().find(|(size, _)| n >= *size) {
        Some((size, unit)) => format!("{n} bytes ({:.1} {unit})", n as f64 / *size as f64),
        None => format!("{n} bytes"),
    }
}

/// Parses one record, turning serde's message into one that names the column, not serde's
/// internal "line 1" (the caller knows the real line or index).
pub(super) fn parse_json(text: &[u8]) -> Result<Value, String> {
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

pub(super) enum Delim {
    /// The byte ends the record and is consumed but not kept.
    Stop,
}

/// What [`read_bounded`] read.
pub(super) struct Bounded {
    /// Bytes consumed, the delimiter included.
    pub consumed: usize,
    /// Whether the record was longer than the limit (then `buf` holds none of it).
    pub overflow: bool,
    /// Whether a delimiter ended it (not the end of the input).
    pub delimited: bool,
}

impl Bounded {
    /// The record's own size: its bytes without the delimiter.
    pub fn size(&self) -> usize {
        self.consumed - usize::from(self.delimited)
    }
}

/// Reads bytes into `buf` until `delim` says stop or the input ends, keeping at most `max`
/// bytes (the rest of an oversized record is consumed and dropped, so a record of any length
/// costs at most `max` bytes of memory).
pub(super) fn read_bounded(
    input: &mut impl BufRead,
    buf: &mut Vec<u8>,
    max: usize,
    mut delim: impl FnMut(u8) -> Option<Delim>,
) -> io::Result<Bounded> {
    buf.clear();
    let mut consumed = 0;
    let mut overflow = false;
    loop {
        let chunk = input.fill_buf()?;
        if chunk.is_empty() {
            return Ok(Bounded {
                consumed,
                overflow,
                delimited: false,
            });
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
            return Ok(Bounded {
                consumed,
                overflow,
                delimited: true,
            });
        }
    }
}

/// Skips leading ASCII whitespace; returns the first other byte (not consumed), if any, and
/// the line feeds skipped on the way.
pub(super) fn first_significant_byte(input: &mut impl BufRead) -> io::Result<(Option<u8>, u64)> {
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
