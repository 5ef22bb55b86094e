//! JSONL: one record a line, numbered from 1. Blank lines (Unicode whitespace included) and
//! lines starting with `#` are not records; a line over the size limit is skipped unread.

use super::bytes::{parse_json, read_bounded, too_large, Delim};
use super::{DatasetError, JsonSource, Position, RawRecord, State};

impl JsonSource {
    pub(super) fn next_line(
        &mut self,
        state: &mut State,
    ) -> Option<Result<RawRecord, DatasetError>> {
        loop {
            self.line += 1;
            let position = Position::Line(self.line);
            let read = match read_bounded(&mut self.input, &mut self.buf, state.max_record, |b| {
                (b == b'\n').then_some(Delim::Stop)
            }) {
                Ok(r) => r,
                Err(source) => return Some(Err(state.read_error(position, source))),
            };
            if read.consumed == 0 {
                state.done = true;
                return None;
            }
            if read.overflow {
                let reason = too_large(read.size(), state.max_record);
                return Some(Ok(state.record(position, Err(reason))));
            }
            let text = self.buf.trim_ascii();
            if text.is_empty() || text.starts_with(b"#") || is_unicode_blank(text) {
                continue;
            }
            let value = parse_json(text);
            return Some(Ok(state.record(position, value)));
        }
    }
}

/// A line of Unicode whitespace only (e.g. a no-break space) is blank too (docs/DESIGN.md §9).
fn is_unicode_blank(b: &[u8]) -> bool {
    std::str::from_utf8(b).is_ok_and(|s| s.trim().is_empty())
}
