//! Reading a scorer's stdout and stderr line by line without trusting them: a line longer than
//! the limit is skipped to its end and reported as one over-long line, so a scorer that prints
//! a huge blob neither fills the worker's memory nor shifts the replies after it.

use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// One line read: its bytes without the newline (and a `\r` before it), or too long.
#[derive(Debug, PartialEq)]
pub(super) enum Line {
    Text(Vec<u8>),
    TooLong,
}

/// The next line of `reader`, at most `max` bytes; None at the end of the stream. A last line
/// without a newline is a line.
pub(super) async fn next_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    max: usize,
) -> std::io::Result<Option<Line>> {
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(match (too_long, line.is_empty()) {
                (true, _) => Some(Line::TooLong),
                (false, true) => None,
                (false, false) => Some(Line::Text(line)),
            });
        }
        let (chunk, used, ended) = match available.iter().position(|&b| b == b'\n') {
            Some(at) => (&available[..at], at + 1, true),
            None => (available, available.len(), false),
        };
        if !too_long {
            if line.len() + chunk.len() > max {
                too_long = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        reader.consume(used);
        if ended {
            if too_long {
                return Ok(Some(Line::TooLong));
            }
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(Some(Line::Text(line)));
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::BufReader;

    use super::*;

    async fn lines(input: &[u8], max: usize) -> Vec<Line> {
        // A tiny buffer, so lines cross buffer boundaries.
        let mut reader = BufReader::with_capacity(3, input);
        let mut out = Vec::new();
        while let Some(line) = next_line(&mut reader, max).await.unwrap() {
            out.push(line);
        }
        out
    }

    fn text(s: &str) -> Line {
        Line::Text(s.as_bytes().to_vec())
    }

    #[tokio::test]
    async fn lines_are_split_and_over_long_ones_skipped_to_their_end() {
        assert_eq!(
            lines(b"{\"a\":1}\r\n\nabcdefghij\nlast", 8).await,
            [text("{\"a\":1}"), text(""), Line::TooLong, text("last")]
        );
        assert_eq!(lines(b"", 8).await, []);
        assert_eq!(lines(b"0123456789", 4).await, [Line::TooLong]);
    }
}
