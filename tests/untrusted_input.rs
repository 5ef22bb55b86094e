//! What a shared fleet takes from whoever submits a run, bounded (issue 22, docs/ARCHITECTURE.md
//! "Trust"): run ids that cannot leave `reports_dir` or share Redis keys, records that are not
//! read whole past `max_record_bytes`, and templates that stop at their fuel and output bounds
//! and leave the worker going. Through the real binary, RabbitMQ and Redis.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::fake::FakeServer;
use common::fleet::Fleet;
use common::served;
use evalfleet_model::record::ResultRecord;
use evalfleet_model::run_id::RULE;
use serde_json::{json, Value};

/// The ids the issue names, and the ones it found escaping.
fn bad_ids() -> Vec<String> {
    [
        "..",
        "a/b",
        "/abs",
        "a:b",
        "",
        &"x".repeat(129),
        "../escaped",
        "../../x/evil",
        "/tmp/abs-evil",
        "../../../tmp/nu/pwned",
        ".hidden",
        "run id",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// The names in a directory, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

fn path(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

#[test]
fn run_submit_and_every_run_command_refuse_ids_that_break_the_rule() {
    let fleet = Fleet::new("");
    let data = fleet.generate("support-judge", 3, 1);
    let before = listing(fleet.dir.path());
    for id in bad_ids() {
        let commands: Vec<Vec<&str>> = vec![
            vec!["run", path(&data), "--run-id", &id],
            vec!["submit", path(&data), "--run-id", &id],
            vec!["status", &id],
            vec!["report", &id],
            vec!["cancel", &id],
            vec!["retry", &id],
            vec!["dlq", "requeue", "--run", &id],
        ];
        for args in commands {
            let out = fleet.run(&args, Duration::from_secs(60));
            out.assert_code(2);
            assert!(
                out.stderr.contains(RULE) && out.stderr.contains("is not allowed"),
                "{args:?}: {}",
                out.stderr
            );
        }
    }
    assert_eq!(listing(fleet.dir.path()), before, "nothing was written");
    let keys = fleet.redis(&["--scan", "--pattern", &format!("{}:*", fleet.prefix)]);
    assert!(keys.is_empty(), "nothing was registered: {keys}");

    // An id that follows the rule runs, into reports_dir/<id>.
    let out = fleet.run(
        &["run", path(&data), "--run-id", "ok.v1_2-3"],
        Duration::from_secs(60),
    );
    out.assert_no_panic();
    assert!(matches!(out.code, Some(0 | 1)), "{}", out.stderr);
    assert_eq!(listing(&fleet.reports_dir()), ["ok.v1_2-3"]);
}

/// Writes a run straight into Redis, as a submit of an older version or anyone with the
/// store's password could: registered, running, every result stored, and its event.
fn inject_run(fleet: &Fleet, id: &str) {
    let p = &fleet.prefix;
    let now = jiff::Timestamp::now();
    let created = now.to_string();
    fleet.redis(&[
        "hset",
        &format!("{p}:run:{id}"),
        "id",
        id,
        "suite",
        "support-judge",
        "status",
        "running",
        "total",
        "1",
        "published",
        "1",
        "created_at",
        &created,
        "dataset",
        "d.jsonl",
        "judge",
        "heuristic",
    ]);
    fleet.redis(&["hset", &format!("{p}:run:{id}:counts"), "skipped", "1"]);
    fleet.redis(&[
        "zadd",
        &format!("{p}:runs"),
        &now.as_millisecond().to_string(),
        id,
    ]);
    let record = ResultRecord::skipped(
        id,
        "support-judge",
        0,
        Some(1),
        "e0".into(),
        "injected".into(),
    );
    let record = serde_json::to_string(&record).unwrap();
    fleet.redis(&[
        "xadd",
        &format!("{p}:events"),
        "*",
        "run",
        id,
        "index",
        "0",
        "record",
        &record,
    ]);
}

/// `GET path`: the status and the body as JSON.
fn get(port: u16, path: &str) -> (u16, Value) {
    let (status, body) = served::get(port, path, None).expect("GET");
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

#[test]
fn the_aggregator_refuses_a_run_whose_id_breaks_the_rule_even_in_redis_and_goes_on() {
    let mut fleet = Fleet::new("");
    let port = served::free_port();
    fleet.worker("w1", served::free_port());
    fleet.aggregator("agg", port);
    assert!(
        fleet.wait_log("agg", "HTTP API listening", Duration::from_secs(30)),
        "{}",
        fleet.log("agg")
    );
    for id in ["../escaped", "a:b", "/tmp/abs-evil-evalfleet"] {
        inject_run(&fleet, id);
    }
    let started = Instant::now();
    while fleet.log("agg").matches("run refused").count() < 3 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{}",
            fleet.log("agg")
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Their events are acknowledged and dropped, not left to be claimed again and again.
    let started = Instant::now();
    while fleet.redis(&["xlen", &format!("{}:events", fleet.prefix)]) != "0" {
        assert!(started.elapsed() < Duration::from_secs(30), "events left");
        std::thread::sleep(Duration::from_millis(100));
    }
    // The aggregator goes on with a run whose id follows the rule.
    let data = fleet.generate("support-judge", 4, 2);
    let run = format!("{}-after", fleet.prefix);
    fleet.submit(&data, &run, &[]);
    let report = fleet.wait_report(&run, Duration::from_secs(60));
    assert_eq!(report["totals"]["examples"], 4);
    assert_eq!(listing(&fleet.reports_dir()), [run.as_str()]);
    assert_eq!(
        listing(fleet.dir.path())
            .into_iter()
            .filter(|n| n.contains("escaped"))
            .count(),
        0
    );
    assert!(!Path::new("/tmp/abs-evil-evalfleet").exists());
    let log = fleet.log("agg");
    assert_eq!(log.matches("run refused").count(), 3, "once each: {log}");
    assert!(log.contains(RULE), "{log}");
    let status = |id: &str| fleet.redis(&["hget", &format!("{}:run:{id}", fleet.prefix), "status"]);
    assert_eq!(status("a:b"), "running", "never finished");

    // The HTTP API: 400 naming the rule for every route that takes an id.
    for path in [
        "/runs/a:b".to_owned(),
        "/runs/..%2Fescaped".to_owned(),
        "/runs/..%2Fescaped/report".to_owned(),
        "/runs/a%3Ab/items".to_owned(),
        "/runs/a%3Ab/items/facets".to_owned(),
        format!("/runs/{run}/compare/a:b"),
        format!("/runs/{}", "x".repeat(129)),
    ] {
        let (status, body) = get(port, &path);
        assert_eq!(status, 400, "{path}: {body}");
        assert!(
            body["error"].as_str().is_some_and(|e| e.contains(RULE)),
            "{path}: {body}"
        );
        assert_eq!(body["rule"], RULE);
    }
    assert_eq!(get(port, &format!("/runs/{run}")).0, 200);
    assert_eq!(get(port, "/runs/no-such-run").0, 404);
}

/// An http target at `agent` whose question is rendered by `question` (a Jinja template).
fn target(dir: &Path, name: &str, agent: &FakeServer, question: &str) -> String {
    let file = dir.join(format!("{name}.yaml"));
    std::fs::write(
        &file,
        format!(
            "name: {name}\nkind: http\nurl: \"http://{}/agent\"\n\
             body: {{question: {}}}\noutputs: {{trace: /data/trace}}\n\
             retry: {{max_attempts: 1}}\ntimeout_s: 5\n",
            agent.addr,
            serde_json::to_string(question).unwrap()
        ),
    )
    .unwrap();
    file.to_str().unwrap().to_owned()
}

/// The bounds a worker's configuration sets hold for the templates of the runs it takes: an
/// example whose target request runs out of fuel or writes too much fails with the reason, no
/// call is made, and the same worker then runs the next run at full speed. The submitter's
/// `max_record_bytes` skips an oversized record with its line and size.
#[test]
fn a_worker_fails_examples_whose_templates_pass_their_bounds_and_goes_on() {
    let agent = FakeServer::plain();
    let mut fleet = Fleet::new("max_record_bytes: 65536\ntemplates: {max_output_bytes: 4096}\n");
    fleet.worker("w1", served::free_port());
    fleet.aggregator("agg", served::free_port());
    let data = fleet.dir.path().join("questions.jsonl");
    let mut text = common::jsonl(&common::questions(3));
    // Line 4: 100 KiB, over max_record_bytes.
    let big = json!({"id": "big", "question": "y".repeat(100 * 1024)}).to_string();
    text.push_str(&format!("{big}\n"));
    std::fs::write(&data, text).unwrap();
    let spin = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}{{ question }}";
    let flood = "{% for i in range(100000) %}{{ question }}{% endfor %}";
    let cases = [
        (
            "spin",
            spin,
            "the template took more than templates.fuel (100000 instructions)",
        ),
        (
            "flood",
            flood,
            "the rendered text is longer than templates.max_output_bytes (4096 bytes)",
        ),
    ];
    for (name, question, reason) in cases {
        let file = target(fleet.dir.path(), name, &agent, question);
        let run = format!("{}-{name}", fleet.prefix);
        let started = Instant::now();
        fleet.submit(&data, &run, &["--suite", "rag-layers", "--target", &file]);
        let report = fleet.wait_report(&run, Duration::from_secs(60));
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(report["totals"]["failed"], 3, "{}", report["totals"]);
        for failed in report["failed"].as_array().unwrap() {
            let why = failed["reason"].as_str().unwrap();
            assert!(
                why.starts_with(&format!("target {name}: body/question: "))
                    && why.ends_with(reason),
                "{why}"
            );
        }
        let skipped = &report["skipped"][0];
        assert_eq!(skipped["line"], 4, "{skipped}");
        let size = big.len();
        assert_eq!(
            skipped["reason"],
            format!(
                "record is {size} bytes ({:.1} KiB), more than max_record_bytes 65536 bytes (64.0 KiB)",
                size as f64 / 1024.0
            )
        );
    }
    assert_eq!(agent.stats()["agent_requests"], 0, "no call was made");
    // The same worker, the next run.
    let file = target(fleet.dir.path(), "plain", &agent, "{{ question }}");
    let run = format!("{}-plain", fleet.prefix);
    fleet.submit(&data, &run, &["--suite", "rag-layers", "--target", &file]);
    let report = fleet.wait_report(&run, Duration::from_secs(60));
    assert_eq!(report["totals"]["ok"], 3, "{}", report["totals"]);
    assert_eq!(report["totals"]["skipped"], 1);
}
