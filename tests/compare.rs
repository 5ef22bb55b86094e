//! `evalfleet compare` end to end through the binary: exit codes (0 no regression, 1 a
//! regression, 2 bad input), the four outputs, `run --baseline`, run ids resolved in the
//! reports directory, and the fleet's `submit --wait --baseline` and `GET /runs/{a}/compare/{b}`
//! on the real RabbitMQ and Redis. The statistics themselves are checked against scipy in
//! tests/compare_scipy.rs.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{evalfleet, read_json, run_suite, tempdir};
use serde_json::Value;

fn example(name: &str) -> PathBuf {
    common::root().join("examples").join(name)
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// A support-judge dataset: the example's tickets with NEW's responses made worse (an off-topic,
/// informal reply) for every third ticket.
fn degraded_copy(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(example("support-judge.jsonl")).unwrap();
    let mut out = String::new();
    for (i, line) in text.lines().enumerate() {
        let mut v: Value = serde_json::from_str(line).unwrap();
        if i % 3 == 0 {
            v["response"] = Value::from("lol idk, try turning it off and on again haha");
        }
        out.push_str(&serde_json::to_string(&v).unwrap());
        out.push('\n');
    }
    let path = dir.join("degraded.jsonl");
    std::fs::write(&path, out).unwrap();
    path
}

#[test]
fn compare_exits_0_on_the_same_data_and_1_on_a_regression() {
    let dir = tempdir();
    let base = dir.path().join("base");
    run_suite(
        &example("support-judge.jsonl"),
        "support-judge",
        &base,
        &["--run-id", "base"],
    )
    .assert_no_panic();
    let again = dir.path().join("again");
    run_suite(
        &example("support-judge.jsonl"),
        "support-judge",
        &again,
        &["--run-id", "again"],
    )
    .assert_no_panic();
    let out = dir.path().join("same");
    let same = evalfleet(&["compare", s(&base), s(&again), "--out", s(&out)]);
    same.assert_code(0);
    assert!(
        same.stdout
            .contains("compare: no regression: 120 paired items"),
        "{}",
        same.stdout
    );
    let c = read_json(&out.join("compare.json"));
    assert_eq!(c["verdict"]["regressed"], false);
    assert!(c["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .all(|q| q["delta"] == 0.0));

    let worse = dir.path().join("worse");
    run_suite(
        &degraded_copy(dir.path()),
        "support-judge",
        &worse,
        &["--run-id", "worse"],
    )
    .assert_no_panic();
    let out = dir.path().join("regressed");
    let regressed = evalfleet(&[
        "compare",
        s(&base.join("report.json")),
        s(&worse),
        "--out",
        s(&out),
    ]);
    regressed.assert_code(1);
    assert!(
        regressed.stdout.contains("REGRESSION in"),
        "{}",
        regressed.stdout
    );
    let c = read_json(&out.join("compare.json"));
    let relevance = c["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["name"] == "relevance")
        .unwrap();
    assert_eq!(relevance["kind"], "score");
    assert_eq!(relevance["regressed"], true);
    assert!(relevance["delta"].as_f64().unwrap() < 0.0);
    assert!(relevance["p_adjusted"].as_f64().unwrap() < 0.05);
    assert!(!c["flips"]["pass_to_fail"].as_array().unwrap().is_empty());
    assert!(c["groups"]
        .as_array()
        .unwrap()
        .iter()
        .all(|g| g["group"].is_string()));
    let md = std::fs::read_to_string(out.join("compare.md")).unwrap();
    assert!(
        md.starts_with("## ❌ evalfleet compare: REGRESSION"),
        "{md}"
    );
    let html = std::fs::read_to_string(out.join("compare.html")).unwrap();
    assert!(
        html.contains("<svg") && html.contains("Per-group deltas") && html.contains("Pass → fail")
    );
    assert!(!html.contains("<script") && !html.contains("http://") && !html.contains("https://"));
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert_eq!(
        junit.matches("<testcase").count(),
        c["comparisons"].as_array().unwrap().len()
    );
    assert!(junit.contains("<failure type=\"regression\""));

    // A large --max-drop turns the significant drops into tolerated ones.
    let tolerant = evalfleet(&[
        "compare",
        s(&base),
        s(&worse),
        "--out",
        s(&dir.path().join("t")),
        "--max-drop",
        "5",
    ]);
    tolerant.assert_code(0);
}

#[test]
fn run_baseline_gates_on_the_comparison_and_run_ids_resolve() {
    let dir = tempdir();
    let reports = dir.path().join("reports");
    let config = dir.path().join("evalfleet.yaml");
    std::fs::write(&config, format!("reports_dir: {}\n", reports.display())).unwrap();
    let cfg = s(&config);
    // The baseline as a run id in reports_dir.
    evalfleet(&[
        "--config",
        cfg,
        "run",
        s(&example("support-judge.jsonl")),
        "--run-id",
        "rel-1",
    ])
    .assert_code(0);
    let degraded = degraded_copy(dir.path());
    let run = evalfleet(&[
        "--config",
        cfg,
        "run",
        s(&degraded),
        "--run-id",
        "rel-2",
        "--baseline",
        "rel-1",
    ]);
    run.assert_code(1);
    assert!(run.stdout.contains("compare: REGRESSION"), "{}", run.stdout);
    let c = read_json(&reports.join("rel-2/compare/compare.json"));
    assert_eq!(c["base"]["run_id"], "rel-1");
    assert_eq!(c["new"]["run_id"], "rel-2");
    // Default output directory of `compare` with run ids.
    evalfleet(&["--config", cfg, "compare", "rel-1", "rel-2"]).assert_code(1);
    assert!(reports.join("compare-rel-1-rel-2/compare.md").is_file());
    // The same data as its own baseline: the run's own gates decide (they pass).
    evalfleet(&[
        "--config",
        cfg,
        "run",
        s(&example("support-judge.jsonl")),
        "--run-id",
        "rel-3",
        "--baseline",
        "rel-1",
    ])
    .assert_code(0);
}

#[test]
fn bad_input_exits_2_with_a_clear_message() {
    let dir = tempdir();
    let sj = dir.path().join("sj");
    run_suite(&example("support-judge.jsonl"), "support-judge", &sj, &[]).assert_no_panic();
    let rag = dir.path().join("rag");
    run_suite(&example("rag-layers.jsonl"), "rag-layers", &rag, &[]).assert_no_panic();
    let out = evalfleet(&[
        "compare",
        s(&sj),
        s(&rag),
        "--out",
        s(&dir.path().join("o")),
    ]);
    out.assert_code(2);
    assert!(
        out.stderr.contains("different suites") && out.stderr.contains("rag-layers"),
        "{}",
        out.stderr
    );
    let out = evalfleet(&["compare", s(&sj), "no-such-run-xyz"]);
    out.assert_code(2);
    assert!(out.stderr.contains("no-such-run-xyz"), "{}", out.stderr);
    let broken = dir.path().join("broken.json");
    std::fs::write(
        &broken,
        "{\"run\": {\"id\": \"x\"},\n \"results\": [ {\"id\": \"a\", \"passed\": tru",
    )
    .unwrap();
    let out = evalfleet(&["compare", s(&sj), s(&broken)]);
    out.assert_code(2);
    assert!(
        out.stderr.contains("broken.json") && out.stderr.contains("line 2"),
        "{}",
        out.stderr
    );
    let out = evalfleet(&["compare", s(&sj), s(&sj), "--alpha", "1.5"]);
    out.assert_code(2);
    assert!(out.stderr.contains("--alpha"), "{}", out.stderr);
    // `submit --baseline` needs `--wait` (a usage error before anything is published).
    let out = evalfleet(&[
        "submit",
        s(&example("support-judge.jsonl")),
        "--baseline",
        s(&sj),
    ]);
    out.assert_code(2);
    assert!(out.stderr.contains("--wait"), "{}", out.stderr);
}

#[test]
fn an_unwritable_output_directory_exits_3() {
    let dir = tempdir();
    let sj = dir.path().join("sj");
    run_suite(&example("support-judge.jsonl"), "support-judge", &sj, &[]).assert_no_panic();
    // A regular file where the output directory should be.
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, "").unwrap();
    let out = evalfleet(&["compare", s(&sj), s(&sj), "--out", s(&blocker.join("out"))]);
    out.assert_code(3);
    assert!(out.stderr.contains("cannot write"), "{}", out.stderr);
}

#[test]
fn rag_layers_and_custom_suites_compare_with_themselves() {
    let dir = tempdir();
    for (data, suite) in [
        ("rag-layers.jsonl", "rag-layers"),
        ("log-analysis.jsonl", "log-analysis"),
        ("qa-faithfulness.csv", "config/suites/qa-faithfulness.yaml"),
    ] {
        let a = dir.path().join(format!("{data}-a"));
        let b = dir.path().join(format!("{data}-b"));
        run_suite(&example(data), suite, &a, &[]).assert_no_panic();
        run_suite(&example(data), suite, &b, &[]).assert_no_panic();
        let out = dir.path().join(format!("{data}-cmp"));
        evalfleet(&["compare", s(&a), s(&b), "--out", s(&out)]).assert_code(0);
        let c = read_json(&out.join("compare.json"));
        let kinds: Vec<&str> = c["comparisons"]
            .as_array()
            .unwrap()
            .iter()
            .map(|q| q["kind"].as_str().unwrap())
            .collect();
        assert!(kinds.contains(&"pass"), "{data}: {kinds:?}");
        assert!(
            kinds.contains(&"metric") || kinds.contains(&"score"),
            "{data}: {kinds:?}"
        );
        assert!(c["pairing"]["paired"].as_u64().unwrap() > 0);
    }
}

#[test]
fn fleet_submit_baseline_and_the_compare_endpoint() {
    let mut fleet = common::fleet::Fleet::new("");
    fleet.worker("w1", 19581);
    fleet.aggregator("agg", 19590);
    let base_id = format!("{}-base", fleet.prefix);
    let new_id = format!("{}-new", fleet.prefix);
    let data = example("support-judge.jsonl");
    fleet
        .run(
            &["submit", s(&data), "--run-id", &base_id, "--wait"],
            Duration::from_secs(120),
        )
        .assert_code(0);
    let dir = tempdir();
    let degraded = degraded_copy(dir.path());
    let submit = fleet.run(
        &[
            "submit",
            s(&degraded),
            "--run-id",
            &new_id,
            "--wait",
            "--baseline",
            &base_id,
        ],
        Duration::from_secs(120),
    );
    submit.assert_code(1);
    assert!(
        submit.stdout.contains("compare: REGRESSION"),
        "{}",
        submit.stdout
    );
    let out = fleet
        .reports_dir()
        .join(format!("compare-{base_id}-{new_id}"));
    let written = read_json(&out.join("compare.json"));
    let get = |path: &str| {
        let out = std::process::Command::new("curl")
            .args([
                "-s",
                "-w",
                "\n%{http_code}",
                &format!("http://127.0.0.1:19590{path}"),
            ])
            .output()
            .expect("curl");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let (body, code) = text.rsplit_once('\n').expect("status line");
        (code.to_owned(), body.to_owned())
    };
    let (code, body) = get(&format!("/runs/{base_id}/compare/{new_id}"));
    assert_eq!(code, "200", "{body}");
    let served: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(served["verdict"], written["verdict"]);
    assert_eq!(served["comparisons"], written["comparisons"]);
    let (code, _) = get(&format!("/runs/{base_id}/compare/{}-nope", fleet.prefix));
    assert_eq!(code, "404");
}
