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
    assert!(ok(&recs[0])
        .value
        .as_ref()
        .unwrap_err()
        .contains("larger than"));
    assert!(ok(&recs[1]).value.is_ok());
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
