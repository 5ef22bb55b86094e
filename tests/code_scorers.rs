//! Code scorers end to end through the `evalfleet` binary: the bundled Python scorers
//! (`examples/scorers/`) on their example suite; a custom suite with a `command` scorer that
//! crashes and misbehaves on some items and an `http` scorer served on 127.0.0.1 (nulls with
//! reasons, never a failed example); bad scorer settings as clear errors; and a fleet worker
//! that runs only the commands `fleet.targets.allowed_commands` lists.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::fleet::Fleet;
use common::{evalfleet_with_env, items, read_json, root, run_suite, tempdir};
use serde_json::{json, Value};

fn python_available(test: &str) -> bool {
    let present = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    common::available(test, "python3", present, "install Python 3")
}

/// id → (metrics, check_reasons) of a report's items.
fn scored(report: &Value) -> Vec<(String, Value, Value)> {
    items(report)
        .iter()
        .map(|i| {
            (
                i["id"].as_str().unwrap().to_owned(),
                i["metrics"].clone(),
                i["details"]["check_reasons"].clone(),
            )
        })
        .collect()
}

const ANALYST: &str = "examples/scorers/analyst.yaml";

fn analyst_expected() -> Vec<(String, Value, Value)> {
    let row = |id: &str, sql: Value, cites: f64, sql_reason: &str, cite_reason: &str| {
        (
            id.to_owned(),
            json!({"sql_correct": sql, "cites_sources": cites, "short_summary": 1.0}),
            json!({"sql_correct": sql_reason, "cites_sources": cite_reason}),
        )
    };
    vec![
        row(
            "q1",
            json!(1.0),
            1.0,
            "1 row, as expected",
            "1 of 1 citations name a source",
        ),
        row(
            "q2",
            json!(1.0),
            1.0,
            "2 rows, as expected",
            "2 of 2 citations name a source",
        ),
        row(
            "q3",
            json!(1.0),
            0.5,
            "3 rows, as expected",
            "1 of 2 citations name a source; unknown: 3",
        ),
        row("q4", json!(1.0), 0.0, "2 rows, as expected", "no citation"),
        row(
            "q5",
            json!(0.0),
            1.0,
            "SQL error: no such table: product",
            "2 of 2 citations name a source",
        ),
        row(
            "q6",
            json!(0.0),
            1.0,
            "1 row, expected 1; first missing [3]",
            "1 of 1 citations name a source",
        ),
        row(
            "q7",
            Value::Null,
            1.0,
            "the item has no expected result",
            "1 of 1 citations name a source",
        ),
        row(
            "q8",
            json!(1.0),
            0.5,
            "2 rows, as expected",
            "1 of 2 citations name a source; unknown: 4",
        ),
    ]
}

#[test]
fn the_bundled_scorers_score_sql_and_citations() {
    if !python_available("the_bundled_scorers_score_sql_and_citations") {
        return;
    }
    let dir = tempdir();
    let out = dir.path().join("out");
    let run = run_suite(
        &root().join("examples/scorers/analyst.jsonl"),
        ANALYST,
        &out,
        &["--judge", "none"],
    );
    run.assert_code(0);
    let report = read_json(&out.join("report.json"));
    assert_eq!(scored(&report), analyst_expected());
    assert_eq!(report["totals"]["ok"], 8, "{}", report["totals"]);
    let tags: Vec<Value> = items(&report)
        .iter()
        .map(|i| i["fail_tags"].clone())
        .collect();
    assert_eq!(tags[2], json!(["bad_citation"]));
    assert_eq!(tags[4], json!(["wrong_sql"]));
    assert_eq!(tags[6], json!([]), "a null is not a failed gate");
    assert!(out.join("items.parquet").is_file());
}

/// A tiny HTTP scorer on 127.0.0.1: `{"score": 1.0 if the answer has "[1]" else 0.0}`, and a
/// 401 without `X-Token: t0k3n`. Counts the requests it answered.
fn http_scorer() -> (String, Arc<AtomicU32>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let calls = Arc::new(AtomicU32::new(0));
    let counted = calls.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let counted = counted.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                loop {
                    let (mut length, mut token) = (0usize, String::new());
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    loop {
                        line.clear();
                        reader.read_line(&mut line).unwrap();
                        let header = line.trim_end();
                        if header.is_empty() {
                            break;
                        }
                        let (name, value) = header.split_once(':').unwrap();
                        match name.to_ascii_lowercase().as_str() {
                            "content-length" => length = value.trim().parse().unwrap(),
                            "x-token" => token = value.trim().to_owned(),
                            _ => {}
                        }
                    }
                    let mut body = vec![0; length];
                    reader.read_exact(&mut body).unwrap();
                    let request: Value = serde_json::from_slice(&body).unwrap();
                    counted.fetch_add(1, Ordering::SeqCst);
                    let (status, reply) = if token != "t0k3n" {
                        ("401 Unauthorized", json!({"error": "no token"}))
                    } else {
                        let answer = request["fields"]["answer"].as_str().unwrap_or_default();
                        let cited = answer.contains("[1]");
                        (
                            "200 OK",
                            json!({"score": if cited { 1.0 } else { 0.0 }, "reason": format!("{} via {}", request["id"], request["check"])}),
                        )
                    };
                    let text = reply.to_string();
                    let mut stream = reader.get_ref();
                    write!(
                        stream,
                        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{text}",
                        text.len()
                    )
                    .unwrap();
                }
            });
        }
    });
    (format!("http://{addr}"), calls)
}

/// A command scorer that exits with an error on the answer "boom", writes a traceback to
/// stdout instead of a reply on "junk", and otherwise scores the answer's length / 10.
fn flaky_scorer(dir: &Path) -> String {
    let path = dir.join("flaky.py");
    std::fs::write(
        &path,
        "import json, sys\n\
         for line in sys.stdin:\n\
         \x20   req = json.loads(line)\n\
         \x20   answer = req['fields']['answer']\n\
         \x20   if answer == 'boom':\n\
         \x20       print('ValueError: cannot score boom', file=sys.stderr)\n\
         \x20       sys.exit(2)\n\
         \x20   if answer == 'junk':\n\
         \x20       print('Traceback (most recent call last):', flush=True)\n\
         \x20       continue\n\
         \x20   print(json.dumps({'score': min(len(answer), 10) / 10, 'reason': req['args']['unit']}), flush=True)\n",
    )
    .unwrap();
    path.display().to_string()
}

fn write_suite(dir: &Path, checks: &str) -> String {
    let suite = dir.join("suite.yaml");
    std::fs::write(
        &suite,
        format!(
            "name: scored\nkind: custom\nrecord:\n  fields:\n    answer: {{type: string, required: true}}\nchecks:\n{checks}"
        ),
    )
    .unwrap();
    suite.display().to_string()
}

#[test]
fn a_command_and_an_http_scorer_give_scores_or_nulls_with_reasons_never_failures() {
    if !python_available(
        "a_command_and_an_http_scorer_give_scores_or_nulls_with_reasons_never_failures",
    ) {
        return;
    }
    let dir = tempdir();
    let (base, calls) = http_scorer();
    let script = flaky_scorer(dir.path());
    let suite = write_suite(
        dir.path(),
        &format!(
            "  - {{name: length, type: command, command: [python3, '{script}'], fields: [answer], args: {{unit: chars}}, processes: 1, timeout_s: 5}}\n\
             \x20 - {{name: cited, type: http, url: '{base}/score', headers: {{X-Token: '${{SCORER_TOKEN}}'}}, fields: [answer], timeout_s: 5}}\n"
        ),
    );
    let data = dir.path().join("data.jsonl");
    let answers = ["short [1]", "boom", "junk", "a longer answer", "[1] cited"];
    let lines: Vec<String> = answers
        .iter()
        .enumerate()
        .map(|(i, a)| json!({"id": format!("a{i}"), "answer": a}).to_string())
        .collect();
    std::fs::write(&data, lines.join("\n")).unwrap();
    let out = dir.path().join("out");
    let run = evalfleet_with_env(
        &[
            "run",
            data.to_str().unwrap(),
            "--suite",
            &suite,
            "--out",
            out.to_str().unwrap(),
        ],
        &[("SCORER_TOKEN", "t0k3n")],
    );
    run.assert_code(0);
    assert!(
        run.stderr
            .contains("scorer stderr: ValueError: cannot score boom"),
        "the scorer's stderr goes to the log under its check: {}",
        run.stderr
    );
    let report = read_json(&out.join("report.json"));
    assert_eq!(
        report["totals"]["ok"], 5,
        "no example fails: {}",
        report["totals"]
    );
    let got = scored(&report);
    let length: Vec<Value> = got.iter().map(|(_, m, _)| m["length"].clone()).collect();
    assert_eq!(
        length,
        [json!(0.9), Value::Null, Value::Null, json!(1.0), json!(0.9)]
    );
    let reason = |i: usize, check: &str| got[i].2[check].as_str().unwrap_or_default().to_owned();
    assert!(
        reason(1, "length")
            .starts_with("the scorer process exited (exit status: 2) before it answered")
            && reason(1, "length").ends_with("stderr: ValueError: cannot score boom"),
        "{}",
        reason(1, "length")
    );
    assert!(
        reason(2, "length").starts_with("the reply is not JSON"),
        "{}",
        reason(2, "length")
    );
    assert_eq!(
        reason(3, "length"),
        "chars",
        "the scorer restarted after the crash"
    );
    let cited: Vec<Value> = got.iter().map(|(_, m, _)| m["cited"].clone()).collect();
    assert_eq!(
        cited,
        [json!(1.0), json!(0.0), json!(0.0), json!(0.0), json!(1.0)]
    );
    assert_eq!(reason(0, "cited"), "\"a0\" via \"cited\"");
    assert_eq!(calls.load(Ordering::SeqCst), 5);

    // Without the variable's value in the environment, `run` refuses to start.
    let unset = evalfleet_with_env(
        &[
            "run",
            data.to_str().unwrap(),
            "--suite",
            &suite,
            "--out",
            out.to_str().unwrap(),
        ],
        &[],
    );
    unset.assert_code(2);
    assert!(
        unset.stderr.contains(
            "check 'cited': headers.X-Token: the environment variable SCORER_TOKEN is not set"
        ),
        "{}",
        unset.stderr
    );
}

#[test]
fn bad_scorer_settings_name_the_key() {
    let dir = tempdir();
    let data = dir.path().join("data.jsonl");
    std::fs::write(&data, "{\"id\": \"a\", \"answer\": \"x\"}\n").unwrap();
    for (checks, message) in [
        (
            "  - {name: s, type: command, fields: [answer]}\n",
            "check 's': type command needs 'command': the program and its arguments, as a list",
        ),
        (
            "  - {name: s, type: command, command: [x], fields: [answr]}\n",
            "check 's': 'answr' is not a field in record.fields",
        ),
        (
            "  - {name: s, type: http, url: 'http://x', processes: 2}\n",
            "check 's': 'processes' does not apply to type http",
        ),
        (
            "  - {name: s, type: command, command: [x], timeout: 3}\n",
            "unknown field `timeout`",
        ),
    ] {
        let suite = write_suite(dir.path(), checks);
        let run = common::evalfleet(&["validate", data.to_str().unwrap(), "--suite", &suite]);
        run.assert_code(2);
        assert!(run.stderr.contains(message), "{checks}: {}", run.stderr);
    }
}

/// On a shared worker a command scorer runs only when `fleet.targets.allowed_commands` lists
/// it: the allowed one scores as `run` does, the other gives nulls with the reason, and no
/// example fails.
#[test]
fn a_fleet_worker_runs_only_the_commands_it_allows() {
    if !python_available("a_fleet_worker_runs_only_the_commands_it_allows") {
        return;
    }
    let mut fleet =
        Fleet::new("  targets: {allowed_commands: ['python3 examples/scorers/sql_exec.py']}\n");
    fleet.worker("w1", 19701);
    fleet.aggregator("agg", 19709);
    let data = root().join("examples/scorers/analyst.jsonl");
    let run_id = format!("{}-scorers", fleet.prefix);
    fleet.submit(&data, &run_id, &["--suite", ANALYST, "--judge", "none"]);
    let report = fleet.wait_report(&run_id, Duration::from_secs(60));
    assert_eq!(report["totals"]["ok"], 8, "{}", report["totals"]);
    let refused = "check 'cites_sources': the command `python3 examples/scorers/citations.py` is not allowed on this worker (fleet.targets.allowed_commands)";
    let expected: Vec<(String, Value, Value)> = analyst_expected()
        .into_iter()
        .map(|(id, mut metrics, mut reasons)| {
            metrics["cites_sources"] = Value::Null;
            reasons["cites_sources"] = json!(refused);
            (id, metrics, reasons)
        })
        .collect();
    assert_eq!(scored(&report), expected);
    assert!(
        fleet.log("w1").contains(refused),
        "the refusal is logged once by the worker"
    );
}
