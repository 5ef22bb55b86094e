//! The fleet end to end on the real RabbitMQ and Redis: `submit`, two `worker` processes and an
//! `aggregator` produce the same report as the embedded `run` of the same data, and no example
//! is lost or counted twice when a worker or the aggregator is killed mid-run. Runs with a
//! target (the system under test called by the workers) are in `fleet_targets.rs`.

mod common;

use std::time::Duration;

use common::fleet::embedded::submit_and_compare_with_embedded;
use common::fleet::{example, Fleet};
use serde_json::Value;

#[test]
fn fleet_report_equals_embedded_report() {
    let mut fleet = Fleet::new("");
    fleet.worker("w1", 19501);
    fleet.worker("w2", 19502);
    fleet.aggregator("agg", 19510);
    let run_id = format!("{}-run", fleet.prefix);
    let data = example("support-judge.jsonl");
    let (submit, fleet_report) =
        submit_and_compare_with_embedded(&fleet, &data, "support-judge", &run_id);
    assert!(
        submit.stdout.contains(&run_id),
        "submit prints the run id\n{}",
        submit.stderr
    );
    assert_eq!(fleet_report["totals"]["examples"], 120);
    for file in ["summary.md", "report.html", "junit.xml"] {
        assert!(
            fleet.reports_dir().join(&run_id).join(file).is_file(),
            "{file} written by the aggregator"
        );
    }
    // The aggregator's HTTP API answers for the run.
    let get = |path: &str| {
        let out = std::process::Command::new("curl")
            .args(["-sf", &format!("http://127.0.0.1:19510{path}")])
            .output()
            .expect("curl");
        assert!(out.status.success(), "GET {path} failed");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let run_json: Value = serde_json::from_str(&get(&format!("/runs/{run_id}"))).expect("run JSON");
    assert_eq!(run_json["done"], 120);
    assert_eq!(run_json["progress"], 1.0);
    let served: Value =
        serde_json::from_str(&get(&format!("/runs/{run_id}/report"))).expect("report JSON");
    assert_eq!(served["totals"], fleet_report["totals"]);
    let metrics = get("/metrics");
    assert!(
        metrics.contains("evalfleet_reports_written_total 1"),
        "{metrics}"
    );
    assert!(
        !metrics.contains(&format!("run=\"{run_id}\"")),
        "a finished run's gauges are removed"
    );
    let report = fleet.run(&["report", &run_id], Duration::from_secs(20));
    assert!(
        report.stdout.contains("## Overall Results"),
        "`report` prints the stored summary\n{}",
        report.stderr
    );
    let status = fleet.run(&["status", &run_id], Duration::from_secs(20));
    assert!(
        status.stdout.contains("progress 120/120"),
        "{}",
        status.stdout
    );
    // The aggregator followed the run from its first result (while it was being submitted)
    // and wrote the reports from what it folded, not by reading every record back.
    let log = fleet.log("agg");
    assert!(log.contains("aggregates_rebuilt=false"), "{log}");
}

#[test]
fn fleet_report_of_a_custom_suite_on_csv_equals_embedded_report() {
    let mut fleet = Fleet::new("");
    fleet.worker("w1", 19541);
    fleet.worker("w2", 19542);
    fleet.aggregator("agg", 19550);
    let run_id = format!("{}-custom", fleet.prefix);
    let data = example("qa-faithfulness.csv");
    let suite = common::root().join("config/suites/qa-faithfulness.yaml");
    let (submit, fleet_report) =
        submit_and_compare_with_embedded(&fleet, &data, suite.to_str().unwrap(), &run_id);
    assert!(
        submit
            .stderr
            .contains("skipped 6 records; the first 5:\n    line 16 (qa-0015): 'answer' is empty"),
        "submit shows the first skipped records\n{}",
        submit.stderr
    );
    assert_eq!(fleet_report["run"]["suite"], "qa-faithfulness");
    assert!(fleet_report["totals"]["skipped"].as_u64().unwrap_or(0) > 0);
    assert!(fleet_report["items"]
        .as_array()
        .is_some_and(|i| !i.is_empty()));
}

/// Log-analysis examples name their scenario by digest: each distinct scenario is stored once
/// for the run, and the workers score exactly as the embedded run does.
#[test]
fn log_analysis_scenarios_are_stored_once_per_run_and_score_as_embedded() {
    let mut fleet = Fleet::new("");
    fleet.worker("w1", 19561);
    fleet.worker("w2", 19562);
    fleet.aggregator("agg", 19570);
    let run_id = format!("{}-log", fleet.prefix);
    let data = example("log-analysis.jsonl");
    let (_, fleet_report) =
        submit_and_compare_with_embedded(&fleet, &data, "log-analysis", &run_id);
    assert_eq!(fleet_report["totals"]["examples"], 36);
    let scenarios = format!("{}:run:{run_id}:scenarios", fleet.prefix);
    let digests = fleet.redis(&["HKEYS", &scenarios]);
    let digests: Vec<&str> = digests.lines().collect();
    // The bundled dataset names three scenario files.
    assert_eq!(
        digests.len(),
        3,
        "one entry per distinct scenario: {digests:?}"
    );
    for digest in digests {
        let stored = fleet.redis(&["HGET", &scenarios, digest]);
        assert!(stored.starts_with("{\"key_events\":"), "{digest}: {stored}");
    }
}

#[test]
fn killing_a_worker_and_the_aggregator_mid_run_loses_and_duplicates_nothing() {
    let mut fleet = Fleet::new("");
    fleet.worker("w1", 19521);
    fleet.worker("w2", 19522);
    fleet.aggregator("agg1", 19530);
    let data = fleet.dir.path().join("data.jsonl");
    let gen = fleet.run(
        &[
            "generate",
            "support-judge",
            "-n",
            "20000",
            "--seed",
            "3",
            "--out",
            data.to_str().unwrap(),
        ],
        Duration::from_secs(60),
    );
    gen.assert_code(0);
    let run_id = format!("{}-kill", fleet.prefix);
    let submit = fleet.run(
        &["submit", data.to_str().unwrap(), "--run-id", &run_id],
        Duration::from_secs(120),
    );
    submit.assert_code(0);
    std::thread::sleep(Duration::from_millis(300));
    fleet.signal("w1", 9);
    fleet.signal("agg1", 9);
    fleet.aggregator("agg2", 19531);
    let report = fleet.wait_report(&run_id, Duration::from_secs(120));
    assert_eq!(
        report["totals"]["examples"], 20000,
        "every record accounted for exactly once"
    );
    let results = report["results"].as_array().expect("results");
    assert_eq!(results.len(), 20000);
    assert!(
        results
            .windows(2)
            .all(|w| w[0]["index"].as_u64() < w[1]["index"].as_u64()),
        "no duplicate, in dataset order"
    );
    let counts = fleet.redis(&["hgetall", &format!("{}:run:{run_id}:counts", fleet.prefix)]);
    assert!(counts.contains("20000"), "Redis counts agree: {counts}");
}

/// `retry` after a run whose judge failed some examples: the failed examples are evaluated
/// again, and the run's new report holds the retried results — read back from the
/// aggregator's result logs (Redis keeps no record), the later line of an index winning — and
/// every other result as before, none twice.
#[test]
fn retry_reports_the_retried_results_with_the_rest_from_the_result_logs() {
    const N: u64 = 120;
    let fake = common::fake::FakeServer::start(evalfleet_fake_provider::FakeProviderArgs {
        fault_500: 0.3,
        ..Default::default()
    });
    let config = common::fake::LiveConfig {
        max_attempts: 1,
        ..Default::default()
    };
    let mut fleet = Fleet::new(&config.yaml(fake.addr));
    fleet
        .env
        .push((common::fake::KEY_ENV.to_owned(), fake.key.clone()));
    fleet.worker("w1", 19541);
    fleet.aggregator("agg", 19549);
    let data = fleet.generate("support-judge", N, 31);
    let run_id = format!("{}-retry", fleet.prefix);
    fleet.submit(&data, &run_id, &["--judge", "live"]);
    let first = fleet.wait_report(&run_id, Duration::from_secs(120));
    fleet.assert_exactly(&run_id, &first, N);
    let failed = first["totals"]["failed"].as_u64().unwrap();
    assert!(failed > 0, "some judge calls failed: {}", first["totals"]);
    let logs = fleet.reports_dir().join(&run_id).join(".results");
    assert!(
        std::fs::read_dir(&logs).is_ok_and(|d| d.count() > 0),
        "the results are in the aggregator's logs"
    );

    fake.admin(serde_json::json!({"fault_500": 0.0}));
    let report_json = fleet.reports_dir().join(&run_id).join("report.json");
    std::fs::remove_file(&report_json).unwrap();
    fleet
        .run(&["retry", &run_id], Duration::from_secs(60))
        .assert_code(0);
    let second = fleet.wait_report(&run_id, Duration::from_secs(120));
    fleet.assert_exactly(&run_id, &second, N);
    assert_eq!(second["totals"]["failed"], 0, "{}", second["totals"]);
    assert_eq!(second["totals"]["ok"], N);
    // What passed the first time is reported as it was.
    let before: std::collections::HashMap<String, Value> = common::items(&first)
        .iter()
        .map(|i| (i["id"].as_str().unwrap().to_owned(), i["relevance"].clone()))
        .collect();
    for item in common::items(&second) {
        if let Some(was) = before.get(item["id"].as_str().unwrap()) {
            assert_eq!(&item["relevance"], was, "{}", item["id"]);
        }
    }
}
