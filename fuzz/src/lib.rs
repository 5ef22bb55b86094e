//! What the fuzz targets share: reading a dataset three ways and checking they agree, and the
//! judge's reply → verdict path.

use std::collections::HashMap;
use std::io::{self, Cursor, Read};
use std::path::Path;

use evalfleet_dataset::{
    CellType, DatasetReader, Format, Position, ReadOptions, DEFAULT_MAX_RECORD_BYTES,
};
use evalfleet_worker::judge::prompt::{reask, Prompt};
use evalfleet_worker::judge::provider::fuzzing::{self, Api, BatchItem};
use evalfleet_worker::judge::reply::parse_verdict;

/// A record limit small enough that fuzzed inputs cross it.
const SMALL_MAX_RECORD: usize = 48;

/// Hands out at most `chunk` bytes per read, so every lookahead and refill of the readers is
/// crossed by record boundaries.
struct Trickle {
    inner: Cursor<Vec<u8>>,
    chunk: usize,
}

impl Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf.len().min(self.chunk);
        self.inner.read(&mut buf[..n])
    }
}

/// One record or error, comparable across reads of the same bytes.
#[derive(Debug, PartialEq)]
enum Seen {
    Record {
        ordinal: u64,
        position: Position,
        value: Result<serde_json::Value, String>,
    },
    Error(String),
    Open(String),
}

fn read(data: &[u8], options: &ReadOptions, input: Box<dyn Read + Send>) -> Vec<Seen> {
    let reader = match DatasetReader::from_reader_with(Path::new("fuzz"), input, options) {
        Ok(reader) => reader,
        Err(e) => return vec![Seen::Open(e.to_string())],
    };
    // Any position is at most one past the line ends in the input (`\n`, `\r`, or both).
    let line_ends = data.iter().filter(|&&b| b == b'\n' || b == b'\r').count() as u64;
    let mut seen = Vec::new();
    let mut last_line = 0;
    for item in reader {
        assert!(seen.len() <= data.len(), "more records than bytes of input");
        let item = match item {
            Ok(record) => record,
            Err(e) => {
                seen.push(Seen::Error(e.to_string()));
                continue;
            }
        };
        assert_eq!(item.ordinal, seen.len() as u64, "ordinals count records");
        match item.position {
            Position::Line(line) => {
                assert!(line > last_line, "line {line} after line {last_line}");
                assert!(
                    line <= line_ends + 1,
                    "line {line} of {line_ends} line ends"
                );
                last_line = line;
            }
            Position::Index(index) => assert_eq!(index, item.ordinal),
        }
        if let Err(reason) = &item.value {
            assert!(!reason.is_empty(), "a skipped record says why");
        }
        seen.push(Seen::Record {
            ordinal: item.ordinal,
            position: item.position,
            value: item.value,
        });
    }
    seen
}

/// Reads `data` as a dataset file of `format`: whole, then trickled a few bytes per read (which
/// must read the same), then with a small record limit.
pub fn read_dataset(data: &[u8], format: Format, cells: &[(&str, CellType)]) {
    let mut options = ReadOptions {
        format: Some(format),
        cells: cells
            .iter()
            .map(|&(name, kind)| (name.to_owned(), kind))
            .collect::<HashMap<_, _>>(),
        max_record: DEFAULT_MAX_RECORD_BYTES,
    };
    let whole = read(data, &options, Box::new(Cursor::new(data.to_vec())));
    let trickled = read(
        data,
        &options,
        Box::new(Trickle {
            inner: Cursor::new(data.to_vec()),
            chunk: 1 + data.len() % 7,
        }),
    );
    assert_eq!(whole, trickled, "the same bytes read in small pieces");
    options.max_record = SMALL_MAX_RECORD;
    read(data, &options, Box::new(Cursor::new(data.to_vec())));
}

/// The judge's verdict in a reply text, and the re-ask built when there is none.
pub fn verdict(text: &str) {
    match parse_verdict(text, 1, 5) {
        Ok(v) => assert!((1..=5).contains(&v.score)),
        Err(problem) => {
            // The problem becomes the re-ask's line and the `unscored` reason: it stays short.
            assert!(
                problem.chars().count() <= 120,
                "a long problem: {problem:?}"
            );
            let prompt = Prompt {
                system: "Score the answer from 1 to 5.".to_owned(),
                user: "<answer>x</answer>".to_owned(),
            };
            reask(&prompt, text, &problem);
        }
    }
}

/// A provider's HTTP response body as the live client reads it (lossy UTF-8 text): a 2xx body
/// into its reply text and then a verdict; the same body as an error response.
pub fn judge_reply(api: Api, data: &[u8]) {
    let body = String::from_utf8_lossy(data);
    if let Ok((text, _usage)) = fuzzing::parse_response(api, &body) {
        verdict(&text);
    }
    for status in [400, 429, 500] {
        let error = fuzzing::classify_error(api, status, &body);
        error.retryable();
        let reason = error.reason();
        assert!(reason.chars().count() <= 400, "a long reason: {reason:?}");
    }
}

/// A batch results file as downloaded: lines at `\n` (the last may lack one), each decoded, and
/// each reply's verdict read.
pub fn batch_results(api: Api, data: &[u8]) {
    for line in data.split(|&b| b == b'\n') {
        match fuzzing::decode_batch_line(api, line) {
            None | Some(Err(_)) => {}
            Some(Ok((_id, BatchItem::Reply { text, .. }))) => verdict(&text),
            Some(Ok((_id, BatchItem::Errored { reason, .. }))) => {
                assert!(reason.chars().count() <= 400, "a long reason: {reason:?}")
            }
            Some(Ok((_id, BatchItem::Expired | BatchItem::Canceled))) => {}
        }
    }
}
