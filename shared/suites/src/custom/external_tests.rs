use serde_json::json;

use super::*;

fn spec(yaml: &str) -> CheckSpec {
    serde_norway::from_str(yaml).unwrap_or_else(|e| panic!("{yaml}: {e}"))
}

fn compile(yaml: &str) -> Result<ExternalCheck, String> {
    ExternalCheck::compile(&spec(yaml))
}

#[test]
fn a_command_scorer_compiles_with_its_defaults() {
    let c = compile(
        "{name: sql, type: command, command: [python3, scorers/sql_exec.py], fields: [answer, question], args: {db: shop}}",
    )
    .unwrap();
    assert_eq!(c.kind(), "command");
    assert_eq!(c.fields, ["answer", "question"]);
    assert_eq!(c.args["db"], "shop");
    assert_eq!(c.timeout, Duration::from_secs_f64(DEFAULT_TIMEOUT_S));
    assert_eq!(
        c.scorer,
        Scorer::Command {
            command: vec!["python3".into(), "scorers/sql_exec.py".into()],
            processes: None
        }
    );
    assert!(c.secrets().is_empty());
}

#[test]
fn an_http_scorer_names_the_variables_it_reads() {
    let c = compile(
        "{name: cite, type: http, url: 'https://scorer.example/${TENANT}/score', headers: {Authorization: 'Bearer ${SCORER_KEY}', X-Tenant: '${TENANT}'}, fields: [answer], timeout_s: 2.5, retry: {max_attempts: 2}}",
    )
    .unwrap();
    assert_eq!(c.kind(), "http");
    assert_eq!(c.secrets(), ["TENANT", "SCORER_KEY"]);
    assert_eq!(c.timeout, Duration::from_millis(2500));
    let Scorer::Http { retry, .. } = &c.scorer else {
        panic!("an http scorer");
    };
    assert_eq!(retry.max_attempts, 2);
    assert_eq!(retry.base_delay_ms, RetryConfig::default().base_delay_ms);
}

#[test]
fn bad_specs_name_the_key() {
    let err = |yaml: &str| compile(yaml).unwrap_err();
    assert_eq!(
        err("{name: s, type: command, fields: [a]}"),
        "check 's': type command needs 'command': the program and its arguments, as a list"
    );
    assert_eq!(
        err("{name: s, type: command, command: []}"),
        "check 's': type command needs 'command': the program and its arguments, as a list"
    );
    assert_eq!(
        err("{name: s, type: command, command: [x], processes: 0}"),
        "check 's': 'processes' is 0: it must be between 1 and 256"
    );
    assert!(err("{name: s, type: command, command: [x], timeout_s: 0}")
        .starts_with("check 's': 'timeout_s' is 0: it must be"));
    assert_eq!(
        err("{name: s, type: http, fields: [a]}"),
        "check 's': type http needs 'url'"
    );
    assert_eq!(
        err("{name: s, type: http, url: 'ftp://x'}"),
        "check 's': 'url' must start with http:// or https://"
    );
    assert_eq!(
        err("{name: s, type: http, url: 'http://x', retry: {max_attempts: 0}}"),
        "check 's': 'retry.max_attempts' must be at least 1"
    );
    assert_eq!(
        err("{name: s, type: command, command: [x], field: answer}"),
        "check 's': 'field' does not apply to type command: a code scorer is sent the declared fields in 'fields' (it takes: command, fields, args, processes, timeout_s)"
    );
    assert_eq!(
        err("{name: s, type: http, url: 'http://x', processes: 2}"),
        "check 's': 'processes' does not apply to type http (it takes: url, headers, fields, args, timeout_s, retry)"
    );
    // A deterministic check refuses the scorers' keys, and still needs its field.
    let check = |yaml: &str| super::super::Check::compile(&spec(yaml)).unwrap_err();
    assert_eq!(
        check("{name: c, type: is_json, field: a, url: 'http://x'}"),
        "check 'c': 'url' does not apply to type is_json (it takes: negate)"
    );
    assert_eq!(
        check("{name: c, type: is_json}"),
        "check 'c': type is_json needs 'field'"
    );
}

#[test]
fn a_request_is_one_line_with_the_fields_in_order() {
    let c =
        compile("{name: sql, type: command, command: [x], fields: [answer, gold], args: {k: 1}}")
            .unwrap();
    let answer = json!("SELECT 1;\n-- two lines");
    let line = serde_json::to_string(&c.request("q1", vec![Some(&answer), None])).unwrap();
    assert!(!line.contains('\n'));
    assert_eq!(
        line,
        r#"{"id":"q1","check":"sql","fields":{"answer":"SELECT 1;\n-- two lines","gold":null},"args":{"k":1}}"#
    );
}

#[test]
fn replies_give_a_score_or_a_null_with_the_reason() {
    let read = |text: &str| ExternalScore::from_reply(text.as_bytes());
    assert_eq!(
        read(r#"{"score": 0.75, "reason": "3 of 4 rows"}"#),
        ExternalScore {
            score: Some(0.75),
            reason: Some("3 of 4 rows".into())
        }
    );
    assert_eq!(read(r#"{"score": 1}"#).score, Some(1.0));
    assert_eq!(read(r#"{"score": 0, "reason": ""}"#).reason, None);
    assert_eq!(
        read(r#"{"score": null, "reason": "no SQL in the answer"}"#),
        ExternalScore::null("no SQL in the answer")
    );
    assert_eq!(
        read(r#"{"score": null}"#),
        ExternalScore::null("the scorer gave no score")
    );
    assert_eq!(
        read(r#"{"score": 1.5, "reason": "x"}"#),
        ExternalScore::null("score 1.5 is outside [0, 1]")
    );
    assert_eq!(
        read(r#"{"score": -0.1}"#),
        ExternalScore::null("score -0.1 is outside [0, 1]")
    );
    assert_eq!(
        read(r#"{"score": "high"}"#),
        ExternalScore::null(r#"'score' is not a number or null: "high""#)
    );
    assert_eq!(
        read(r#"{"reason": "x"}"#),
        ExternalScore::null("the reply has no 'score'")
    );
    assert_eq!(
        read("[0.5]"),
        ExternalScore::null("the reply is not a JSON object: [0.5]")
    );
    let not_json = read("Traceback (most recent call last):");
    assert!(
        not_json
            .reason
            .as_deref()
            .unwrap()
            .starts_with("the reply is not JSON (")
            && not_json
                .reason
                .as_deref()
                .unwrap()
                .ends_with("Traceback (most recent call last):"),
        "{not_json:?}"
    );
    assert_eq!(not_json.score, None);
    let long = read(&format!(
        r#"{{"score": 1, "reason": "{}"}}"#,
        "é".repeat(5000)
    ));
    assert_eq!(
        long.reason.unwrap().chars().count(),
        REASON_CHARS + 1,
        "cut, with an ellipsis"
    );
}

// ---- in a suite ----

const SUITE: &str = r#"
name: sql
kind: custom
record:
  fields:
    question: {type: string, required: true}
    answer: {type: string, required: true}
    expected: {type: json}
checks:
  - {name: runs, type: command, command: [python3, sql_exec.py], fields: [answer, expected], args: {db: shop}}
  - {name: short, type: length, field: answer, max: 100}
  - {name: cited, type: http, url: "http://127.0.0.1:9/score", fields: [answer]}
"#;

fn suite() -> crate::suite::Suite {
    crate::suite::Suite::from_yaml(SUITE, "sql.yaml").unwrap()
}

#[test]
fn a_suite_lists_its_code_scorers_and_builds_their_requests() {
    let suite = suite();
    assert!(suite.has_scorers());
    let custom = suite.custom.as_deref().unwrap();
    let names: Vec<&str> = custom.external().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["runs", "cited"]);
    assert_eq!(
        custom.metric_names().collect::<Vec<_>>(),
        ["runs", "short", "cited"]
    );
    let e = custom
        .parse(
            &json!({"id": 7, "question": "q", "answer": "SELECT 1"}),
            &Default::default(),
            &[],
        )
        .unwrap();
    let line = serde_json::to_string(&custom.scorer_request(0, &e)).unwrap();
    assert_eq!(
        line,
        r#"{"id":"7","check":"runs","fields":{"answer":"SELECT 1","expected":null},"args":{"db":"shop"}}"#
    );
    let example = crate::evaluate::Example::Custom(Box::new(e));
    let tasks = crate::evaluate::scorer_tasks(&suite, &example);
    assert_eq!(tasks.len(), 2);
    assert_eq!(tasks[1].check.kind(), "http");
    assert!(
        !crate::suite::Suite::builtin(evalfleet_model::suite::SuiteKind::RagLayers).has_scorers()
    );
}

#[test]
fn a_code_scorer_must_send_declared_fields() {
    let yaml = SUITE.replace("fields: [answer]}", "fields: [answer, sql]}");
    let err = crate::suite::Suite::from_yaml(&yaml, "sql.yaml").unwrap_err();
    assert_eq!(
        err.to_string(),
        "suite file 'sql.yaml': check 'cited': 'sql' is not a field in record.fields"
    );
}

#[test]
fn scores_become_metrics_in_suite_order_and_reasons_details() {
    let suite = suite();
    let custom = suite.custom.as_deref().unwrap();
    let e = custom
        .parse(
            &json!({"id": "a", "question": "q", "answer": "SELECT 1"}),
            &Default::default(),
            &[],
        )
        .unwrap();
    let scores = ExternalScores(vec![
        ExternalScore {
            score: Some(0.5),
            reason: Some("1 of 2 rows".into()),
        },
        ExternalScore::null("HTTP 503 after 6 attempts"),
    ]);
    let example = crate::evaluate::Example::Custom(Box::new(e));
    let record = crate::evaluate::finish(
        &suite,
        "r",
        0,
        None,
        &example,
        Default::default(),
        &scores,
        Default::default(),
    );
    assert_eq!(
        record.metrics.0,
        [
            ("runs".to_owned(), Some(0.5)),
            ("short".to_owned(), Some(1.0)),
            ("cited".to_owned(), None)
        ]
    );
    assert_eq!(
        record.details["check_reasons"],
        json!({"runs": "1 of 2 rows", "cited": "HTTP 503 after 6 attempts"})
    );
    assert_eq!(
        record.overall_score,
        Some(0.75),
        "nulls are left out of the mean"
    );
    assert_eq!(record.outcome, evalfleet_model::record::Outcome::Ok);
    // Scores that never came (a process that built no scorers) are nulls with a reason.
    let (metrics, reasons) = match &example {
        crate::evaluate::Example::Custom(e) => custom.check_metrics(e, &ExternalScores::default()),
        _ => unreachable!(),
    };
    assert_eq!(metrics.get("runs"), None);
    assert_eq!(reasons["cited"], "the code scorer was not asked");
}
