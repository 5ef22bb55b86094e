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
    let found = b"\xef\xbb\xbf#v\0\0\0orted\r\n\xef\xbb\xbf,b,j,latency_ms\r\n\"a, \"\"b\"\"\",\
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
    let text =
        b"# exported 2024-05-01\n\nid,n\n# a comment\n1,a\n\n  \t \n   # indented comment\n2,b\n";
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
    let text = b"ok,meta,s\nTRUE,\"{\"\"a\"\": [1, 2]}\", x \n yes ,\"\"\"q\"\"\",\n0,,\nNo, 7 ,\n";
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
        "dataset 'd.csv' has a bad CSV header: the header is 3 bytes, more than max_record_bytes 2 bytes"
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
    assert_eq!(
        reason(&recs[0]),
        "record is 102 bytes, more than max_record_bytes 50 bytes"
    );
    assert_eq!(recs[0].position, Position::Line(2));
    assert_eq!(value(&recs[1])["id"], "2");
    assert_eq!(recs[1].position, Position::Line(3));
    // An unclosed quote runs to the end of the file; it stays bounded all the same.
    let text = format!("id,text\n1,\"open\n{}", "2,b\n".repeat(1000));
    let recs = read_with(text.as_bytes(), &small);
    assert_eq!(recs.len(), 1);
    assert_eq!(
        reason(&recs[0]),
        "record is 4008 bytes (3.9 KiB), more than max_record_bytes 50 bytes"
    );
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
        b"\xef\xbb\xbf# c\r\n id ,n\r\n  \r\n1,\"a\r\nb\"\r\n   \t\n# x\n2,c\n  3,d\r4,e".to_vec();
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
    let results: Vec<_> = DatasetReader::from_reader_with(Path::new("d.csv"), input, &options(&[]))
        .unwrap()
        .collect();
    assert_eq!(results.len(), 3);
    assert_eq!(value(results[1].as_ref().unwrap())["id"], "2");
    match &results[2] {
        Err(DatasetError::Read { position, .. }) => assert_eq!(*position, Position::Line(4)),
        other => panic!("{other:?}"),
    }
}
