//! Splitting a `report.json` into its items and the rest, in one fast pass over large blocks,
//! so each item is parsed from a slice (serde_json parses slices several times faster than it
//! parses a reader, which it reads byte by byte) and a million-item report never has to be in
//! memory at once.
//!
//! The scanner follows only what JSON's structure needs: string boundaries (with escapes),
//! nesting depth, and the top-level key in front of each value. The array under the top-level
//! `results` or `items` key is the items array: each of its objects goes to
//! [`Sink::item`] with its byte offset; everything else of the document (with that array left
//! empty) is kept as the skeleton, parsed afterwards for the run, the config and the rest. The
//! skeleton up to the items array also goes to [`Sink::before_items`], so what precedes the
//! items (the totals: how many there are) is known before the first of them.

use std::io::Read;

/// What the scanner hands over.
pub(crate) trait Sink {
    /// The document up to and including the items array's `[`.
    fn before_items(&mut self, prefix: &[u8]) -> Result<(), serde_json::Error>;
    /// One item object, whole, and the byte offset of its `{`.
    fn item(&mut self, offset: u64, bytes: &[u8]) -> Result<(), serde_json::Error>;
}

/// Why a report could not be split.
#[derive(Debug)]
pub(crate) enum SplitError {
    Io(std::io::Error),
    /// Not the shape of a report, noticed at byte `at`.
    Shape {
        at: u64,
        message: String,
    },
    /// The sink refused the part starting at byte `at` (its error's line and column count
    /// from there).
    Sink {
        at: u64,
        error: serde_json::Error,
    },
}

const BLOCK: usize = 8 << 20;

/// Scans `reader` to its end; returns the skeleton (the document with an empty items array).
pub(crate) fn split(mut reader: impl Read, sink: &mut dyn Sink) -> Result<Vec<u8>, SplitError> {
    let mut s = Scanner::default();
    let mut block = vec![0u8; BLOCK];
    loop {
        let n = read_block(&mut reader, &mut block).map_err(SplitError::Io)?;
        if n == 0 {
            break;
        }
        s.scan(&block[..n], sink)?;
        s.at += n as u64;
    }
    if s.in_items || s.depth != 0 || s.in_string {
        let inside = if s.in_items {
            "the items array"
        } else {
            "the document"
        };
        return Err(SplitError::Shape {
            at: s.at,
            message: format!("the file ends inside {inside}"),
        });
    }
    Ok(s.skeleton)
}

/// Fills `buf` as far as the reader goes (a short read is not the end).
fn read_block(reader: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

#[derive(Default)]
struct Scanner {
    /// Absolute offset of the current block's first byte.
    at: u64,
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// The text of the last string at depth 1 (a key, when a `:` follows it).
    key: Vec<u8>,
    /// The value now starting is the items array's.
    items_key: bool,
    in_items: bool,
    /// The current item's start in the current block, or 0 once it spans blocks.
    item_start: Option<usize>,
    item_offset: u64,
    /// The current item's bytes from earlier blocks.
    carried: Vec<u8>,
    /// Items handed over so far.
    items: u64,
    skeleton: Vec<u8>,
}

impl Scanner {
    fn scan(&mut self, block: &[u8], sink: &mut dyn Sink) -> Result<(), SplitError> {
        // Where the skeleton copy of this block starts (None while inside the items array).
        let mut copy_from = (!self.in_items).then_some(0);
        let mut i = 0;
        while i < block.len() {
            let c = block[i];
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if c == b'\\' {
                    self.escaped = true;
                } else if c == b'"' {
                    self.in_string = false;
                } else if self.depth == 1 && self.key.len() < 16 {
                    self.key.push(c);
                }
                i += 1;
                continue;
            }
            if self.in_items && self.depth == 2 {
                match c {
                    b'{' | b']' | b',' | b' ' | b'\t' | b'\n' | b'\r' => {}
                    _ => {
                        return Err(SplitError::Shape {
                            at: self.at + i as u64,
                            message: format!(
                                "item {} of the items array is not an object",
                                self.items
                            ),
                        })
                    }
                }
            }
            match c {
                b'"' => {
                    self.in_string = true;
                    if self.depth == 1 {
                        self.key.clear();
                    }
                }
                b':' if self.depth == 1 => {
                    self.items_key = self.key == b"results" || self.key == b"items";
                }
                b',' if self.depth == 1 => self.items_key = false,
                b'[' if self.depth == 1 && self.items_key && !self.in_items => {
                    self.depth += 1;
                    self.in_items = true;
                    self.items_key = false;
                    let from = copy_from.take().unwrap_or(0);
                    self.skeleton.extend_from_slice(&block[from..=i]);
                    sink.before_items(&self.skeleton)
                        .map_err(|error| SplitError::Sink { at: 0, error })?;
                }
                b'{' | b'[' => {
                    if self.in_items && self.depth == 2 {
                        self.item_start = Some(i);
                        self.item_offset = self.at + i as u64;
                    }
                    self.depth += 1;
                }
                b'}' | b']' => {
                    self.depth = self.depth.checked_sub(1).ok_or_else(|| SplitError::Shape {
                        at: self.at + i as u64,
                        message: format!("unbalanced '{}'", c as char),
                    })?;
                    if self.in_items && self.depth == 2 && c == b'}' {
                        let start = self.item_start.take().unwrap_or(0);
                        let bytes = &block[start..=i];
                        let result = if self.carried.is_empty() {
                            sink.item(self.item_offset, bytes)
                        } else {
                            self.carried.extend_from_slice(bytes);
                            let r = sink.item(self.item_offset, &self.carried);
                            self.carried.clear();
                            r
                        };
                        let at = self.item_offset;
                        result.map_err(|error| SplitError::Sink { at, error })?;
                        self.items += 1;
                    } else if self.in_items && self.depth == 1 {
                        // The items array's `]`: the skeleton goes on from here.
                        self.in_items = false;
                        copy_from = Some(i);
                    }
                }
                _ => {}
            }
            i += 1;
        }
        if let Some(from) = copy_from {
            self.skeleton.extend_from_slice(&block[from..]);
        }
        if let Some(start) = self.item_start {
            self.carried.extend_from_slice(&block[start..]);
            self.item_start = Some(0);
        }
        Ok(())
    }
}

/// The 1-based line and column of byte `at` of `reader`'s text (read again: errors only).
pub(crate) fn line_column(reader: impl Read, at: u64) -> std::io::Result<(u64, u64)> {
    let (mut line, mut column) = (1, 1);
    for byte in std::io::BufReader::new(reader).bytes().take(at as usize) {
        if byte? == b'\n' {
            line += 1;
            column = 1;
        } else {
            column += 1;
        }
    }
    Ok((line, column))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Collect {
        prefix: String,
        items: Vec<(u64, String)>,
    }

    impl Sink for Collect {
        fn before_items(&mut self, prefix: &[u8]) -> Result<(), serde_json::Error> {
            self.prefix = String::from_utf8_lossy(prefix).into_owned();
            Ok(())
        }
        fn item(&mut self, offset: u64, bytes: &[u8]) -> Result<(), serde_json::Error> {
            self.items
                .push((offset, String::from_utf8_lossy(bytes).into_owned()));
            Ok(())
        }
    }

    const DOC: &str = r#"{"run": {"id": "r"}, "totals": {"ok": 2}, "x": "results", "results": [
  {"id": "a", "t": "}{][\"\\", "n": [1, {"results": []}]},
  {"id": "b"}
], "failed": [{"id": "c"}]}"#;

    #[test]
    fn items_come_out_whole_with_their_offsets_and_the_rest_stays() {
        let mut sink = Collect::default();
        let skeleton = split(DOC.as_bytes(), &mut sink).unwrap();
        assert_eq!(
            String::from_utf8(skeleton).unwrap(),
            r#"{"run": {"id": "r"}, "totals": {"ok": 2}, "x": "results", "results": [], "failed": [{"id": "c"}]}"#
        );
        assert!(sink.prefix.ends_with(r#""results": ["#), "{}", sink.prefix);
        assert_eq!(sink.items.len(), 2);
        for (offset, text) in &sink.items {
            assert_eq!(&DOC[*offset as usize..*offset as usize + text.len()], text);
            serde_json::from_str::<serde_json::Value>(text).unwrap();
        }
    }

    #[test]
    fn blocks_may_cut_items_anywhere() {
        for cut in 1..DOC.len() {
            let mut sink = Collect::default();
            let mut s = Scanner::default();
            for part in [&DOC[..cut], &DOC[cut..]] {
                s.scan(part.as_bytes(), &mut sink).unwrap();
                s.at += part.len() as u64;
            }
            assert_eq!(sink.items.len(), 2, "cut at {cut}");
            assert!(
                sink.items[0].1.ends_with("]}"),
                "cut at {cut}: {}",
                sink.items[0].1
            );
            assert_eq!(sink.items[1].1, r#"{"id": "b"}"#, "cut at {cut}");
        }
    }

    #[test]
    fn a_truncated_or_odd_report_is_an_error() {
        let mut sink = Collect::default();
        assert!(matches!(
            split(&DOC.as_bytes()[..40], &mut sink),
            Err(SplitError::Shape { .. })
        ));
        let odd = r#"{"items": [{"id": "a"}, 3]}"#;
        let err = split(odd.as_bytes(), &mut Collect::default()).unwrap_err();
        assert!(
            matches!(err, SplitError::Shape { ref message, at: 24 } if message.contains("item 1")),
            "{err:?}"
        );
    }
}
