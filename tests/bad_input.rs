//! Bad input never panics and never loses a record (docs/DESIGN.md §8, §9): each malformed, mistyped,
//! non-UTF-8, duplicate or oversized record is skipped with its 1-based line (JSONL) or 0-based
//! index (JSON array) and the exact reason, the rest is evaluated, `validate` names each problem,
//! and unusable input (no records, missing file, unknown suite, bad config, nothing valid) exits 2
//! with a message that says what is wrong.

mod common;

use std::path::{Path, PathBuf};

use common::{check_consistent, evalfleet, items, run_suite, skipped_entries, tempdir, u, Output};
use serde_json::{json, Value};

/// A valid support-judge record.
fn good(id: &str) -> String {
    json!({"id": id, "ticket": "Jenkins build fails with an OOM error", "response": "Increase the JVM heap size of the Jenkins build agent.", "model": "gpt-4o", "prompt_version": "v1"}).to_string()
}

fn write(dir: &Path, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("writing the dataset");
    path
}

fn path_str(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// A completed run (exit 0 or 1, never 2) whose reports agree; returns report.json.
fn run_completed(dataset: &Path, out: &Path) -> Value {
    let exit = run_suite(dataset, "support-judge", out, &[]);
    exit.assert_no_panic();
    assert!(
        matches!(exit.code, Some(0 | 1)),
        "a run with some valid records completes: {exit:?}"
    );
    check_consistent(out, &exit).json
}

/// The positions `validate` printed: the number after each ": line " or ": index ".
fn validate_positions(out: &Output, kind: &str) -> Vec<u64> {
    let marker = format!(": {kind} ");
    out.stdout
        .lines()
        .filter_map(|l| l.find(&marker).map(|i| &l[i + marker.len()..]))
        .map(|rest| {
            rest.chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
                .parse()
                .expect("a position")
        })
        .collect()
}

fn ids(report: &Value) -> Vec<String> {
    items(report)
        .iter()
        .map(|r| r["id"].as_str().expect("id").to_owned())
        .collect()
}

fn assert_bad_input(out: &Output, needle: &str) {
    out.assert_code(2);
    assert!(
        out.stderr.contains(needle),
        "stderr should mention {needle:?}: {}",
        out.stderr
    );
}

#[test]
fn jsonl_bad_lines_are_skipped_with_line_and_exact_reason() {
    let dir = tempdir();
    let lines = [
        good("a"),                            // 1
        r#"{"id":"b","ticket": "#.to_owned(), // 2 malformed
        r#"{"id":"c","ticket":5,"response":"r","model":"gpt-4o","prompt_version":"v1"}"#.to_owned(), // 3
        "[1, 2]".to_owned(),                   // 4
        String::new(),                         // 5 blank
        "# a comment".to_owned(),              // 6
        "   # an indented comment".to_owned(), // 7
        r#"{"id":"d","ticket":"t","response":"r","prompt_version":"v1"}"#.to_owned(), // 8
        r#"{"id":"e","ticket":"t","response":"r","model":"llama-3","prompt_version":"v1"}"#
            .to_owned(), // 9
        good("x"),                             // 10
        good("x"),                             // 11
        good("y"),                             // 12
    ];
    let dataset = write(dir.path(), "bad.jsonl", lines.join("\n") + "\n");
    let report = run_completed(&dataset, &dir.path().join("out"));

    let t = &report["totals"];
    assert_eq!(
        (u(t, "examples"), u(t, "ok"), u(t, "skipped")),
        (9, 3, 6),
        "{t}"
    );
    assert_eq!(ids(&report), ["a", "x", "y"]);
    let skipped = skipped_entries(&report, "line");
    let at: Vec<u64> = skipped.iter().map(|s| s.0).collect();
    assert_eq!(at, [2, 3, 4, 8, 9, 11], "skipped lines: {skipped:?}");
    assert!(
        skipped[0].1.starts_with("invalid JSON"),
        "line 2: {}",
        skipped[0].1
    );
    let exact: Vec<&str> = skipped[1..].iter().map(|s| s.1.as_str()).collect();
    assert_eq!(
        exact,
        [
            "'ticket' must be a string",
            "Item is not an object",
            "Missing 'model' field",
            "Unknown model provider for: llama-3",
            "Duplicate id 'x'"
        ]
    );
    let summary = std::fs::read_to_string(dir.path().join("out/summary.md")).expect("summary.md");
    assert!(summary.contains("## Skipped (6)"), "{summary}");
    for line in &at {
        assert!(
            summary.contains(&format!("- line {line}")),
            "summary.md lacks line {line}"
        );
    }

    let v = evalfleet(&["validate", path_str(&dataset), "--suite", "support-judge"]);
    v.assert_code(1);
    assert_eq!(
        validate_positions(&v, "line"),
        [2, 3, 4, 8, 9, 11],
        "{}",
        v.stdout
    );
    assert!(v.stdout.contains("3 valid, 6 invalid"), "{}", v.stdout);
    for (_, reason) in &skipped[1..] {
        assert!(
            v.stdout.contains(reason.as_str()),
            "validate does not print {reason:?}: {}",
            v.stdout
        );
    }
}

#[test]
fn json_array_bad_elements_are_skipped_with_index() {
    let dir = tempdir();
    let elements = [
        good("a"),                  // 0
        "42".to_owned(),            // 1
        r#"{"id":"b"}"#.to_owned(), // 2
        r#"{"id":"c","ticket":"t","response":"r","model":"gpt-4o","prompt_version":null}"#
            .to_owned(), // 3
        "{bad json}".to_owned(),    // 4
        good("z"),                  // 5
        good("a"),                  // 6
    ];
    let dataset = write(
        dir.path(),
        "bad.json",
        format!("[\n{}\n]\n", elements.join(",\n")),
    );
    let report = run_completed(&dataset, &dir.path().join("out"));

    assert_eq!(u(&report["totals"], "examples"), 7);
    assert_eq!(ids(&report), ["a", "z"]);
    let skipped = skipped_entries(&report, "index");
    let at: Vec<u64> = skipped.iter().map(|s| s.0).collect();
    assert_eq!(at, [1, 2, 3, 4, 6], "{skipped:?}");
    assert_eq!(skipped[0].1, "Item is not an object");
    assert_eq!(skipped[1].1, "Missing 'ticket' field");
    assert_eq!(
        skipped[2].1, "'prompt_version' must be a string",
        "null counts as present (§9)"
    );
    assert!(skipped[3].1.starts_with("invalid JSON"), "{}", skipped[3].1);
    assert_eq!(skipped[4].1, "Duplicate id 'a'");

    let v = evalfleet(&["validate", path_str(&dataset), "--suite", "support-judge"]);
    v.assert_code(1);
    assert_eq!(
        validate_positions(&v, "index"),
        [1, 2, 3, 4, 6],
        "{}",
        v.stdout
    );
}

#[test]
fn invalid_utf8_line_is_skipped_and_the_rest_evaluated() {
    let dir = tempdir();
    let mut bytes = good("a").into_bytes();
    bytes.extend_from_slice(b"\n{\"id\":\"u\",\"ticket\":\"caf\xe9 \xff\xfe\",\"response\":\"r\",\"model\":\"gpt-4o\",\"prompt_version\":\"v1\"}\n");
    bytes.extend_from_slice(good("z").as_bytes());
    bytes.push(b'\n');
    let dataset = write(dir.path(), "utf.jsonl", bytes);
    let report = run_completed(&dataset, &dir.path().join("out"));

    assert_eq!(u(&report["totals"], "examples"), 3);
    assert_eq!(ids(&report), ["a", "z"]);
    let skipped = skipped_entries(&report, "line");
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert_eq!(skipped[0].0, 2);
    assert!(
        skipped[0].1.contains("UTF-8"),
        "reason should mention UTF-8: {}",
        skipped[0].1
    );

    let v = evalfleet(&["validate", path_str(&dataset)]);
    v.assert_code(1);
    assert_eq!(validate_positions(&v, "line"), [2], "{}", v.stdout);
    assert!(v.stdout.contains("UTF-8"), "{}", v.stdout);
}

#[test]
fn empty_and_comment_only_files_have_no_records() {
    let dir = tempdir();
    let empty = write(dir.path(), "empty.jsonl", "");
    let comments = write(
        dir.path(),
        "comments.jsonl",
        "\n# only a comment\n   \n  # another\n\n",
    );
    for dataset in [&empty, &comments] {
        let out = run_suite(dataset, "support-judge", &dir.path().join("out"), &[]);
        assert_bad_input(&out, "no records");
        assert_bad_input(&evalfleet(&["validate", path_str(dataset)]), "no records");
    }
}

#[test]
fn ten_megabyte_response_is_evaluated() {
    let dir = tempdir();
    let huge =
        "Increase the JVM heap size of the Jenkins build agent. ".repeat(10 * 1024 * 1024 / 55 + 1);
    let mut record: Value = serde_json::from_str(&good("big")).unwrap();
    record["response"] = json!(huge);
    let dataset = write(
        dir.path(),
        "big.jsonl",
        format!("{record}\n{}\n", good("small")),
    );
    assert!(std::fs::metadata(&dataset).unwrap().len() > 10 * 1024 * 1024);
    let report = run_completed(&dataset, &dir.path().join("out"));

    let t = &report["totals"];
    assert_eq!(
        (
            u(t, "examples"),
            u(t, "ok"),
            u(t, "skipped"),
            u(t, "failed")
        ),
        (2, 2, 0, 0),
        "{t}"
    );
    assert_eq!(ids(&report), ["big", "small"]);
    let score = items(&report)[0]["relevance"]["score"]
        .as_u64()
        .expect("the huge response is judged");
    assert!((1..=5).contains(&score));
}

#[test]
fn missing_dataset_names_the_path() {
    let dir = tempdir();
    let missing = dir.path().join("no-such-dataset.jsonl");
    let out = run_suite(&missing, "support-judge", &dir.path().join("out"), &[]);
    assert_bad_input(&out, path_str(&missing));
    assert_bad_input(
        &evalfleet(&["validate", path_str(&missing)]),
        path_str(&missing),
    );
}

#[test]
fn unknown_suite_is_bad_input() {
    let dir = tempdir();
    let dataset = write(dir.path(), "ok.jsonl", good("a") + "\n");
    let out = run_suite(&dataset, "no-such-suite", &dir.path().join("out"), &[]);
    assert_bad_input(&out, "unknown suite");
    assert!(out.stderr.contains("no-such-suite"), "{}", out.stderr);
}

#[test]
fn bad_config_key_is_named() {
    let dir = tempdir();
    let dataset = write(dir.path(), "ok.jsonl", good("a") + "\n");
    let config = write(dir.path(), "bad.yaml", "concurency: 4\n");
    let out_dir = dir.path().join("out");
    let out = evalfleet(&[
        "--config",
        path_str(&config),
        "run",
        path_str(&dataset),
        "--out",
        path_str(&out_dir),
    ]);
    assert_bad_input(&out, "concurency");
    assert!(
        !out_dir.join("report.json").exists(),
        "a bad config fails before the run"
    );
}

#[test]
fn all_records_invalid_is_bad_input_but_reported() {
    let dir = tempdir();
    let dataset = write(dir.path(), "allbad.jsonl", "{\"id\":\"q\"}\n42\n\"text\"\n");
    let out_dir = dir.path().join("out");
    let out = run_suite(&dataset, "support-judge", &out_dir, &[]);
    assert_bad_input(&out, "no valid example");
    let report = common::read_json(&out_dir.join("report.json"));
    let t = &report["totals"];
    assert_eq!(
        (u(t, "examples"), u(t, "skipped"), u(t, "ok")),
        (3, 3, 0),
        "every record accounted for: {t}"
    );
    let skipped = skipped_entries(&report, "line");
    assert_eq!(skipped.iter().map(|s| s.0).collect::<Vec<_>>(), [1, 2, 3]);
}

#[test]
fn truncated_array_keeps_earlier_elements_and_reports_the_cut() {
    let dir = tempdir();
    let text = format!(
        "[{}, {}, {{\"id\":\"t\",\"ticket\":\"cut off he",
        good("a"),
        good("z")
    );
    let dataset = write(dir.path(), "cut.json", text);
    let report = run_completed(&dataset, &dir.path().join("out"));

    assert_eq!(u(&report["totals"], "examples"), 3);
    assert_eq!(ids(&report), ["a", "z"]);
    let skipped = skipped_entries(&report, "index");
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert_eq!(skipped[0].0, 2, "the unclosed element is reported by index");
    assert!(!skipped[0].1.is_empty());

    let v = evalfleet(&["validate", path_str(&dataset)]);
    v.assert_code(1);
    assert!(v.stdout.contains("element 2"), "{}", v.stdout);
    assert!(v.stdout.contains("2 valid, 1 invalid"), "{}", v.stdout);
}

/// One rule for a file cut off inside its last record, in every path that reads a dataset
/// (docs/DESIGN.md §9): the cut record is skipped with its position and a reason, never fatal.
/// `run` (and `submit`, through the same producer) stores it as skipped, `validate` reports it
/// like any other invalid record, and `--estimate` counts it as skipped and estimates the rest.
#[test]
fn a_cut_off_last_record_is_one_skipped_record_in_run_validate_and_estimate() {
    let dir = tempdir();
    let reason = "the JSON array ends before element 2 is closed";
    let array = write(
        dir.path(),
        "cut.json",
        format!("[{}, {}, {{\"id\":\"t\",\"tick", good("a"), good("b")),
    );
    let lines = write(
        dir.path(),
        "cut.jsonl",
        format!("{}\n{}\n{{\"id\":\"t\",\"tick", good("a"), good("b")),
    );

    let report = run_completed(&array, &dir.path().join("out"));
    let skipped = skipped_entries(&report, "index");
    assert_eq!(skipped, [(2, reason.to_owned())]);
    let report = run_completed(&lines, &dir.path().join("out-lines"));
    let skipped = skipped_entries(&report, "line");
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert_eq!(skipped[0].0, 3);
    assert!(skipped[0].1.starts_with("invalid JSON"), "{skipped:?}");

    let v = evalfleet(&["validate", path_str(&array)]);
    v.assert_code(1);
    let line = format!("{}: index 2: {reason}", array.display());
    assert!(v.stdout.lines().any(|l| l == line), "{}", v.stdout);
    assert!(v.stdout.contains("2 valid, 1 invalid"), "{}", v.stdout);
    let v = evalfleet(&["validate", path_str(&lines)]);
    v.assert_code(1);
    assert_eq!(validate_positions(&v, "line"), [3], "{}", v.stdout);
    assert!(v.stdout.contains("2 valid, 1 invalid"), "{}", v.stdout);

    // `submit --estimate` reads the dataset before it connects to anything.
    for command in ["run", "submit"] {
        for dataset in [&array, &lines] {
            let e = evalfleet(&[command, path_str(dataset), "--judge", "live", "--estimate"]);
            e.assert_code(0);
            assert!(
                e.stdout.contains("2 examples to judge, 1 records skipped"),
                "{command}: {}{}",
                e.stdout,
                e.stderr
            );
        }
    }
}

/// `validate` reads the file as `run` does: text after an array's closing `]` makes the file
/// unusable (exit 2) there too.
#[test]
fn validate_treats_text_after_array_as_bad_input() {
    let dir = tempdir();
    let dataset = write(
        dir.path(),
        "trailing.json",
        format!("[{}]\n{{\"extra\": 1}}\n", good("a")),
    );
    let out = evalfleet(&["validate", path_str(&dataset)]);
    assert_bad_input(&out, "after the closing ']'");
}

/// Text after an array's closing `]` is a problem with the input (exit 2), not with the
/// environment (exit 3), and the message says what it is.
#[test]
fn text_after_array_is_bad_input() {
    let dir = tempdir();
    let dataset = write(
        dir.path(),
        "trailing.json",
        format!("[{}]\n{{\"extra\": 1}}\n", good("a")),
    );
    let out = run_suite(&dataset, "support-judge", &dir.path().join("out"), &[]);
    assert_bad_input(&out, "after the closing ']'");
}

#[test]
fn providers_in_their_old_place_are_read_with_one_notice() {
    let dir = tempdir();
    let data = write(dir.path(), "d.jsonl", good("a"));
    let old = write(
        dir.path(),
        "old.yaml",
        "judges:\n  providers:\n    openai: {api: openai, base_url: 'http://127.0.0.1:9/v1', api_key_env: K}\n",
    );
    let args = |config: &Path| {
        vec![
            "validate".to_owned(),
            path_str(&data).to_owned(),
            "--config".to_owned(),
            path_str(config).to_owned(),
        ]
    };
    let args_old = args(&old);
    let out = evalfleet(&args_old.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(
        out.stderr
            .matches("judges.providers is now the top-level")
            .count(),
        1,
        "{}",
        out.stderr
    );
    let shipped = common::root().join("config/evalfleet.yaml");
    let args_new = args(&shipped);
    let out = evalfleet(&args_new.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(!out.stderr.contains("judges.providers"), "{}", out.stderr);
}
