//! A JSON array, split into its elements lexically (bracket depth, aware of strings) before any
//! element is parsed, so that a malformed element is skipped with its index and the rest still
//! load, and only one element is ever in memory. Elements are numbered from 0.

use super::bytes::{first_significant_byte, parse_json, read_bounded, too_large, Delim};
use super::{DatasetError, JsonSource, Position, RawRecord, State};

impl JsonSource {
    pub(super) fn next_element(
        &mut self,
        state: &mut State,
    ) -> Option<Result<RawRecord, DatasetError>> {
        let index = state.ordinal;
        let position = Position::Index(index);
        let mut scan = ElementScan::default();
        let result = read_bounded(&mut self.input, &mut self.buf, state.max_record, |b| {
            scan.step(b)
        });
        let read = match result {
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
        if read.overflow {
            let reason = too_large(read.size(), state.max_record);
            return Some(Ok(state.record(position, Err(reason))));
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
