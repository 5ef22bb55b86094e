//! The reader as its callers see it: records, positions and reasons for JSONL, JSON arrays and
//! format detection, through [`DatasetReader`] (CSV's own tests are in `csv.rs`).

use std::io;
use std::path::Path;

use super::*;

fn read(text: &[u8]) -> Vec<Result<RawRecord, DatasetError>> {
    read_max(text, DEFAULT_MAX_RECORD_BYTES)
}

fn read_max(text: &[u8], max: usize) -> Vec<Result<RawRecord, DatasetError>> {
    let owned = text.to_vec();
    DatasetReader::from_reader(Path::new("d"), Box::new(io::Cursor::new(owned)), max)
        .unwrap()
        .collect()
}

fn ok(r: &Result<RawRecord, DatasetError>) -> &RawRecord {
    r.as_ref().unwrap()
}

#[test]
fn jsonl_skips_blank_and_comment_lines_and_numbers_lines_from_one() {
    let recs = read(b"# header\n\n{\"a\":1}\r\n   \n  # indented\n{\"a\":2}");
    assert_eq!(recs.len(), 2);
    assert_eq!(ok(&recs[0]).position, Position::Line(3));
    assert_eq!(ok(&recs[0]).ordinal, 0);
    assert_eq!(ok(&recs[1]).position, Position::Line(6));
    assert_eq!(ok(&recs[1]).value.as_ref().unwrap()["a"], 2);
}

#[test]
fn jsonl_bad_line_is_reported_and_reading_goes_on() {
    let recs = read(b"{\"a\":1}\n{\"a\":\n{\"a\":3}\n");
    assert_eq!(recs.len(), 3);
    let bad = ok(&recs[1]);
    assert_eq!(bad.position, Position::Line(2));
    assert!(
        bad.value.as_ref().unwrap_err().starts_with("invalid JSON"),
        "{:?}",
        bad.value
    );
    assert!(ok(&recs[2]).value.is_ok());
}

#[test]
fn invalid_utf8_is_a_clear_per_line_error() {
    let recs = read(b"{\"a\":\"\xff\xfe\"}\n{\"a\":1}\n");
    let err = ok(&recs[0]).value.as_ref().unwrap_err();
    assert!(err.contains("UTF-8"), "{err}");
    assert!(ok(&recs[1]).value.is_ok());
}

#[test]
fn unicode_whitespace_line_is_blank() {
    let recs = read("\u{a0}\u{2003}\n{\"a\":1}\n".as_bytes());
    assert_eq!(recs.len(), 1);
    assert_eq!(ok(&recs[0]).position, Position::Line(2));
}

#[test]
fn empty_file_has_no_records() {
    assert!(read(b"").is_empty());
    assert!(read(b"  \n\n").is_empty());
    assert!(read(b"[]").is_empty());
    assert!(read(b" [ \n ] \n").is_empty());
}

#[test]
fn array_elements_are_indexed_from_zero_and_one_bad_element_is_skipped() {
    let recs = read(br#"[{"a":"x,]}"}, {"a": }, 7, {"b":[1,{"c":2}]} ]"#);
    assert_eq!(recs.len(), 4);
    assert_eq!(ok(&recs[0]).value.as_ref().unwrap()["a"], "x,]}");
    assert_eq!(ok(&recs[1]).position, Position::Index(1));
    assert!(ok(&recs[1]).value.is_err());
    assert_eq!(ok(&recs[2]).value.as_ref().unwrap(), &serde_json::json!(7));
    assert_eq!(ok(&recs[3]).position, Position::Index(3));
}

#[test]
fn escaped_quotes_inside_strings_do_not_end_the_string() {
    let recs = read(br#"[{"a":"say \"hi\", ]"}]"#);
    assert_eq!(recs.len(), 1);
    assert_eq!(ok(&recs[0]).value.as_ref().unwrap()["a"], "say \"hi\", ]");
}

#[test]
fn truncated_array_is_an_error_naming_the_element() {
    let recs = read(br#"[{"a":1}, {"a":2"#);
    assert!(ok(&recs[0]).value.is_ok());
    match &recs[1] {
        Err(DatasetError::Truncated { index, .. }) => assert_eq!(*index, 1),
        other => panic!("{other:?}"),
    }
    assert_eq!(recs.len(), 2);
}

#[test]
fn trailing_text_after_array_is_an_error() {
    let recs = read(br#"[{"a":1}] junk"#);
    assert!(matches!(
        recs.last(),
        Some(Err(DatasetError::TrailingData { .. }))
    ));
}

#[test]
fn oversized_record_is_skipped_not_loaded() {
    let big = format!("{{\"a\":\"{}\"}}\n{{\"a\":1}}\n", "x".repeat(100));
    let recs = read_max(big.as_bytes(), 50);
    assert_eq!(
        ok(&recs[0]).value.as_ref().unwrap_err(),
        "record is 108 bytes, more than max_record_bytes 50 bytes"
    );
    assert_eq!(ok(&recs[0]).position, Position::Line(1));
    assert!(ok(&recs[1]).value.is_ok());
    // The same in an array: the element's index and its size, and the next element loads.
    let big = format!("[{{\"a\":\"{}\"}},{{\"a\":1}}]", "x".repeat(100));
    let recs = read_max(big.as_bytes(), 50);
    assert_eq!(
        ok(&recs[0]).value.as_ref().unwrap_err(),
        "record is 108 bytes, more than max_record_bytes 50 bytes"
    );
    assert_eq!(ok(&recs[0]).position, Position::Index(0));
    assert_eq!(ok(&recs[1]).value.as_ref().unwrap()["a"], 1);
}

#[test]
fn sizes_read_in_binary_units() {
    use super::bytes::bytes;
    assert_eq!(bytes(1023), "1023 bytes");
    assert_eq!(bytes(1536), "1536 bytes (1.5 KiB)");
    assert_eq!(bytes(16 << 20), "16777216 bytes (16.0 MiB)");
    assert_eq!(bytes(1 << 30), "1073741824 bytes (1.0 GiB)");
}

#[test]
fn ten_megabyte_field_loads() {
    let big = format!("{{\"a\":\"{}\"}}\n", "y".repeat(10 * 1024 * 1024));
    let recs = read(big.as_bytes());
    assert_eq!(
        ok(&recs[0]).value.as_ref().unwrap()["a"]
            .as_str()
            .unwrap()
            .len(),
        10 << 20
    );
}

#[test]
fn jsonl_extension_keeps_a_leading_array_line_a_bad_line() {
    let text = b"[1, 2]\n{\"a\":1}\n".to_vec();
    let recs: Vec<_> =
        DatasetReader::from_reader(Path::new("d.jsonl"), Box::new(io::Cursor::new(text)), 1024)
            .unwrap()
            .collect();
    assert_eq!(recs.len(), 2);
    assert_eq!(ok(&recs[0]).position, Position::Line(1));
    assert!(
        ok(&recs[0]).value.is_ok(),
        "a valid JSON line; the suite rejects it as not an object"
    );
    assert_eq!(ok(&recs[1]).position, Position::Line(2));
}

#[test]
fn jsonl_lines_count_blank_lines_before_the_first_record() {
    let recs = read(b"\n\n  \n{\"a\":1}\n{\"a\":2}\n");
    assert_eq!(ok(&recs[0]).position, Position::Line(4));
    assert_eq!(ok(&recs[1]).position, Position::Line(5));
}

fn read_as(text: &[u8], format: Format) -> Result<DatasetReader, DatasetError> {
    let options = ReadOptions {
        format: Some(format),
        ..ReadOptions::default()
    };
    let input = Box::new(io::Cursor::new(text.to_vec()));
    DatasetReader::from_reader_with(Path::new("d"), input, &options)
}

#[test]
fn a_given_format_wins_over_detection() {
    let reader = read_as(b"[1, 2]\n", Format::JsonLines).unwrap();
    assert_eq!(reader.format(), Format::JsonLines);
    let recs: Vec<_> = reader.collect();
    assert_eq!(
        ok(&recs[0]).value.as_ref().unwrap(),
        &serde_json::json!([1, 2])
    );

    let recs: Vec<_> = read_as(b" [1, 2]", Format::JsonArray).unwrap().collect();
    assert_eq!(recs.len(), 2);
    assert_eq!(read_as(b"  \n", Format::JsonArray).unwrap().count(), 0);
    assert!(matches!(
        read_as(b"{\"a\":1}\n", Format::JsonArray),
        Err(DatasetError::NotAnArray { .. })
    ));
}

#[test]
fn formats_are_named_as_users_write_them() {
    assert_eq!(Format::from_name("jsonl"), Some(Format::JsonLines));
    assert_eq!(Format::from_name("json"), Some(Format::JsonArray));
    assert_eq!(Format::from_name("CSV"), Some(Format::Csv));
    assert_eq!(Format::from_name("tsv"), None);
}

#[test]
fn missing_file_is_a_clear_error() {
    let err = DatasetReader::open(Path::new("/nonexistent/data.jsonl"))
        .err()
        .unwrap();
    assert!(err
        .to_string()
        .contains("cannot open dataset '/nonexistent/data.jsonl'"));
}

/// A 64 MiB record between two small ones, streamed (never a buffer of that size here either):
/// `head`, 64 MiB of `x`, `tail`.
fn big(head: &str, tail: &str) -> Box<dyn io::Read + Send> {
    use io::Read;
    let body = io::repeat(b'x').take(64 << 20);
    Box::new(
        io::Cursor::new(head.to_owned())
            .chain(body)
            .chain(io::Cursor::new(tail.to_owned())),
    )
}

#[test]
fn a_64_mib_record_is_skipped_with_its_size_in_every_format_and_the_rest_loads() {
    let size = (64 << 20) + r#"{"a":""}"#.len();
    let reason = format!(
        "record is {size} bytes (64.0 MiB), more than max_record_bytes 16777216 bytes (16.0 MiB)"
    );
    let cases = [
        (
            "d.jsonl",
            big("{\"a\":1}\n{\"a\":\"", "\"}\n{\"a\":3}\n"),
            [Position::Line(1), Position::Line(2), Position::Line(3)],
            reason.clone(),
        ),
        (
            "d.json",
            big("[{\"a\":1},{\"a\":\"", "\"},{\"a\":3}]"),
            [Position::Index(0), Position::Index(1), Position::Index(2)],
            reason.clone(),
        ),
        (
            "d.csv",
            big("a\n1\n", "\n3\n"),
            [Position::Line(2), Position::Line(3), Position::Line(4)],
            format!(
                "record is {} bytes (64.0 MiB), more than max_record_bytes 16777216 bytes (16.0 MiB)",
                64 << 20
            ),
        ),
    ];
    for (name, input, positions, reason) in cases {
        let recs: Vec<RawRecord> =
            DatasetReader::from_reader_with(Path::new(name), input, &ReadOptions::default())
                .unwrap()
                .map(Result::unwrap)
                .collect();
        assert_eq!(recs.len(), 3, "{name}");
        let got: Vec<Position> = recs.iter().map(|r| r.position).collect();
        assert_eq!(got, positions, "{name}");
        assert_eq!(recs[1].value.as_ref().unwrap_err(), &reason, "{name}");
        for r in [&recs[0], &recs[2]] {
            assert!(r.value.is_ok(), "{name}: {:?}", r.value);
        }
    }
}

#[test]
fn a_64_mib_line_in_a_file_is_skipped() {
    use std::io::Write;
    let path = std::env::temp_dir().join(format!("evalfleet-big-{}.jsonl", std::process::id()));
    let mut file = io::BufWriter::new(std::fs::File::create(&path).unwrap());
    io::copy(&mut big("{\"a\":\"", "\"}\n{\"a\":2}\n"), &mut file).unwrap();
    file.flush().unwrap();
    drop(file);
    let recs: Vec<RawRecord> = DatasetReader::open(&path)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(recs.len(), 2);
    assert!(recs[0]
        .value
        .as_ref()
        .unwrap_err()
        .starts_with(&format!("record is {} bytes", (64 << 20) + 8)));
    assert_eq!(recs[1].position, Position::Line(2));
    assert_eq!(recs[1].value.as_ref().unwrap()["a"], 2);
}
