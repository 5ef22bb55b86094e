//! The fleet end to end on the real RabbitMQ and Redis: `submit`, two `worker` processes and an
//! `aggregator` produce the same report as the embedded `run` of the same data, and no example
//! is lost or counted twice when a worker or the aggregator is killed mid-run.

mod common;

use std::path::Path;
use std::time::Duration;

use common::fleet::{example, first_difference, Fleet};
use serde_json::Value;

/// `report.json` without what legitimately differs between two runs: timings.
fn comparable(mut report: Value) -> Value {
    for key in ["started_at", "finished_at", "duration_seconds", "dataset"] {
        report["run"].as_object_mut().map(|r| r.remove(key));
    }
    report["target"]
        .as_object_mut()
        .map(|t| t.remove("latency_ms"));
    for list in ["results", "items"] {
        if let Some(items) = report[list].as_array_mut() {
            for item in items {
                item.as_object_mut().map(|i| i.remove("latency_ms"));
                item["target"]
                    .as_object_mut()
                    .map(|t| t.remove("latency_ms"));
            }
        }
    }
    report
}

/// Submits `data` under `suite` with `--wait` to a running fleet, and checks that the fleet's
/// report equals an embedded run's (timings aside) and that `--wait` exits as `run` does.
/// Returns the submit output and the fleet's report.
fn submit_and_compare_with_embedded(
    fleet: &Fleet,
    data: &Path,
    suite: &str,
    run_id: &str,
) -> (common::Output, Value) {
    submit_and_compare_with_embedded_with(fleet, data, &["--suite", suite], run_id)
}

/// [`submit_and_compare_with_embedded`] with more flags for both (`--suite` among them).
fn submit_and_compare_with_embedded_with(
    fleet: &Fleet,
    data: &Path,
    flags: &[&str],
    run_id: &str,
) -> (common::Output, Value) {
    let data_arg = data.to_str().expect("utf-8 path");
    let mut args = vec!["submit", data_arg, "--run-id", run_id, "--wait"];
    args.extend_from_slice(flags);
    let submit = fleet.run(&args, Duration::from_secs(120));
    submit.assert_no_panic();
    let fleet_report = fleet.wait_report(run_id, Duration::from_secs(30));
    let passed = fleet_report["gates"]["passed"] == true;
    assert_eq!(
        submit.code,
        Some(if passed { 0 } else { 1 }),
        "--wait exits as run does\n{}",
        submit.stderr
    );
    let mut args = vec!["--run-id", run_id];
    args.extend_from_slice(flags);
    let embedded = fleet.embedded_report(data, &args);
    let (a, b) = (comparable(fleet_report.clone()), comparable(embedded));
    assert_eq!(
        first_difference(&a, &b, "report"),
        None,
        "a fleet run and an embedded run must agree"
    );
    let fleet_items = comparable_items(&fleet.reports_dir().join(run_id));
    let embedded_items = comparable_items(&fleet.dir.path().join("embedded"));
    assert_eq!(
        fleet_items.len() as u64,
        a["totals"]["examples"].as_u64().unwrap()
    );
    assert!(
        fleet_items == embedded_items,
        "the fleet's items.parquet and the embedded run's must agree"
    );
    (submit, fleet_report)
}

/// The rows of `dir`'s items.parquet (through `evalfleet export`), timings aside.
fn comparable_items(dir: &Path) -> Vec<Value> {
    let export = common::evalfleet(&["export", dir.to_str().expect("utf-8 path")]);
    export.assert_code(0);
    export
        .stdout
        .lines()
        .map(|line| {
            let mut row: Value = serde_json::from_str(line).expect("a JSON line");
            for key in ["latency_ms", "target.latency_ms"] {
                row.as_object_mut().map(|r| r.remove(key));
            }
            row
        })
        .collect()
}

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

/// A target run through the fleet: the workers ask the demo agent for each question's trace,
/// and the report equals the embedded run's.
#[test]
fn a_target_run_through_the_fleet_equals_the_embedded_one() {
    let agent = common::fake::FakeServer::plain();
    let mut fleet = Fleet::new("");
    fleet.worker("w1", 19571);
    fleet.worker("w2", 19572);
    fleet.aggregator("agg", 19580);
    let target = fleet.dir.path().join("agent.yaml");
    std::fs::write(
        &target,
        format!(
            "name: demo\nkind: http\nurl: \"http://{}/agent\"\n\
             body: {{question: \"{{{{ question }}}}\"}}\noutputs: {{trace: /data/trace}}\n",
            agent.addr
        ),
    )
    .unwrap();
    let data = fleet.dir.path().join("questions.jsonl");
    std::fs::write(&data, common::jsonl(&common::questions(40))).unwrap();
    let run_id = format!("{}-target", fleet.prefix);
    // Two epochs: each worker evaluates an item's epochs and folds them as `run` does.
    let flags = [
        "--suite",
        "rag-layers",
        "--target",
        target.to_str().unwrap(),
        "--epochs",
        "2",
    ];
    let (_, report) = submit_and_compare_with_embedded_with(&fleet, &data, &flags, &run_id);
    assert_eq!(report["totals"]["examples"], 40, "{}", report["totals"]);
    assert_eq!(report["totals"]["ok"], 40);
    assert!(report["items"][0]["outputs"]["trace"].is_object());
    assert_eq!(
        report["items"][0]["epochs"].as_array().map(Vec::len),
        Some(2)
    );
    assert_eq!(report["aggregates"]["epochs"], 2);
    // The completed records: the same file from the aggregator as from `run`.
    let read = |dir: &Path| std::fs::read_to_string(dir.join("outputs.jsonl")).unwrap();
    let fleet_outputs = read(&fleet.reports_dir().join(&run_id));
    assert_eq!(fleet_outputs.lines().count(), 40);
    assert_eq!(fleet_outputs, read(&fleet.dir.path().join("embedded")));
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

/// A log-analysis run with a chat target through the fleet: `submit` loads each record's
/// scenario where the dataset is, stores it once per run and names it by digest; the workers
/// (which have no dataset directory) complete each record and score it against the scenario
/// they load by digest. The report equals the embedded run's, and so does `outputs.jsonl`,
/// which keeps each record's scenario path.
#[test]
fn a_log_analysis_target_run_through_the_fleet_equals_the_embedded_one() {
    let fake = common::fake::FakeServer::plain();
    let mut fleet = Fleet::new(&common::fake::LiveConfig::default().yaml(fake.addr));
    fleet
        .env
        .push((common::fake::KEY_ENV.to_owned(), fake.key.clone()));
    fleet.worker("w1", 19801);
    fleet.worker("w2", 19802);
    fleet.aggregator("agg", 19809);
    let target = fleet.dir.path().join("analyst.yaml");
    std::fs::write(
        &target,
        "name: analyst\nkind: chat\nprovider: openai\nmodel: gpt-4o-mini\n\
         prompt: \"Analyse the logs of scenario {{ scenario }} (run {{ id }}): list the key \
         events, the timeline and any anomalies.\"\noutput: output\n",
    )
    .unwrap();
    let data = example("log-analysis.jsonl");
    let run_id = format!("{}-log-target", fleet.prefix);
    let flags = [
        "--suite",
        "log-analysis",
        "--target",
        target.to_str().unwrap(),
    ];
    let (_, report) = submit_and_compare_with_embedded_with(&fleet, &data, &flags, &run_id);
    assert_eq!(report["totals"]["examples"], 36, "{}", report["totals"]);
    assert_eq!(report["totals"]["ok"], 36, "{}", report["failed"]);
    assert_eq!(report["target"]["calls"], 36, "{}", report["target"]);
    for item in common::items(&report) {
        assert!(item["outputs"]["output"].is_string(), "{item}");
        assert!(
            item["details"]["matches"]["events"]["total"].as_u64() > Some(0),
            "scored against its scenario: {item}"
        );
    }
    // The three scenario files of the dataset, stored once each for the run.
    let scenarios = format!("{}:run:{run_id}:scenarios", fleet.prefix);
    assert_eq!(fleet.redis(&["HLEN", &scenarios]), "3");
    // The completed records: the same file from the aggregator as from `run`, each with the
    // scenario path its record named.
    let read = |dir: &Path| std::fs::read_to_string(dir.join("outputs.jsonl")).unwrap();
    let fleet_outputs = read(&fleet.reports_dir().join(&run_id));
    assert_eq!(fleet_outputs, read(&fleet.dir.path().join("embedded")));
    let lines: Vec<Value> = fleet_outputs
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 36);
    assert!(
        lines.iter().all(|l| l["scenario"]
            .as_str()
            .is_some_and(|s| s.starts_with("scenarios/scenario_"))),
        "{fleet_outputs}"
    );
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

/// A target's `${VAR}` is resolved by each worker from its own environment and goes nowhere
/// else: not into a queued message, not into any Redis value of the run, not into a report file
/// or a log. (Here the submitter's environment holds the secret too: it still does not read it.)
#[test]
fn a_targets_secret_stays_in_the_workers_environment() {
    const SECRET: &str = "s3cr3t-fleet-agent-key-7731";
    let agent = common::fake::FakeServer::plain();
    let mut fleet = Fleet::new("  targets: {allowed_env: [AGENT_KEY]}\n");
    fleet.env.push(("AGENT_KEY".to_owned(), SECRET.to_owned()));
    let target = fleet.dir.path().join("agent.yaml");
    std::fs::write(
        &target,
        format!(
            "name: demo\nkind: http\nurl: \"http://{}/agent?key=${{AGENT_KEY}}\"\n\
             headers: {{X-Agent-Key: \"${{AGENT_KEY}}\"}}\n\
             body: {{question: \"{{{{ question }}}}\", auth: \"${{AGENT_KEY}}\"}}\n\
             outputs: {{trace: /data/trace}}\n",
            agent.addr
        ),
    )
    .unwrap();
    let data = fleet.dir.path().join("questions.jsonl");
    std::fs::write(&data, common::jsonl(&common::questions(12))).unwrap();
    let run_id = format!("{}-secret", fleet.prefix);
    let target_arg = target.to_str().unwrap();
    // Submitted before any worker runs: the messages wait in the queue, to be read.
    fleet.submit(
        &data,
        &run_id,
        &["--suite", "rag-layers", "--target", target_arg],
    );
    if common::management_available("a_targets_secret_stays_in_the_workers_environment") {
        let queue = format!("{}.examples", fleet.prefix);
        let out = std::process::Command::new("curl")
            .args([
                "-sf",
                "-u",
                "guest:guest",
                "-H",
                "content-type: application/json",
                "-X",
                "POST",
            ])
            .args([
                "-d",
                r#"{"count":100,"ackmode":"ack_requeue_true","encoding":"auto"}"#,
            ])
            .arg(format!("http://127.0.0.1:15672/api/queues/%2F/{queue}/get"))
            .output()
            .expect("curl");
        let messages = String::from_utf8_lossy(&out.stdout);
        assert!(
            messages.contains(&run_id),
            "the run's messages are read: {messages}"
        );
        assert!(
            !messages.contains(SECRET),
            "a queued message holds the secret"
        );
    }
    fleet.worker("w1", 19591);
    fleet.aggregator("agg", 19599);
    let report = fleet.wait_report(&run_id, Duration::from_secs(60));
    assert_eq!(report["totals"]["ok"], 12, "{}", report["totals"]);

    // Every Redis value under the fleet's prefix, whatever its type; the run's spec holds the
    // target as its file wrote it.
    let keys = fleet.redis(&["--scan", "--pattern", &format!("{}:*", fleet.prefix)]);
    let mut unresolved = false;
    for key in keys.lines() {
        let value = match fleet.redis(&["TYPE", key]).as_str() {
            "string" => fleet.redis(&["GET", key]),
            "hash" => fleet.redis(&["HGETALL", key]),
            "list" => fleet.redis(&["LRANGE", key, "0", "-1"]),
            "set" => fleet.redis(&["SMEMBERS", key]),
            "zset" => fleet.redis(&["ZRANGE", key, "0", "-1", "WITHSCORES"]),
            "stream" => fleet.redis(&["XRANGE", key, "-", "+"]),
            _ => String::new(),
        };
        assert!(!value.contains(SECRET), "Redis {key} holds the secret");
        unresolved |= value.contains("${AGENT_KEY}");
    }
    assert!(
        unresolved,
        "the spec keeps ${{AGENT_KEY}} as written: {keys}"
    );
    for dir in [
        fleet.reports_dir().join(&run_id),
        fleet.dir.path().to_owned(),
    ] {
        for file in std::fs::read_dir(&dir).unwrap().flatten() {
            if file.path().is_file() {
                let text = std::fs::read(file.path()).unwrap();
                let text = String::from_utf8_lossy(&text);
                assert!(
                    !text.contains(SECRET),
                    "{} holds the secret",
                    file.path().display()
                );
            }
        }
    }
}

/// On a shared worker a target reads only the variables `fleet.targets.allowed_env` names and
/// calls no link-local or metadata address: a run asking for more has its examples failed with
/// the reason, without a call, and the worker goes on with the next run.
#[test]
fn a_worker_refuses_a_targets_variables_and_hosts_it_does_not_allow() {
    let agent = common::fake::FakeServer::plain();
    let mut fleet = Fleet::new("  targets: {allowed_env: [AGENT_KEY]}\n");
    fleet.env.push(("AGENT_KEY".to_owned(), "k".to_owned()));
    fleet
        .env
        .push(("OPENAI_API_KEY".to_owned(), "sk-not-for-targets".to_owned()));
    fleet.worker("w1", 19601);
    fleet.aggregator("agg", 19609);
    let data = fleet.dir.path().join("questions.jsonl");
    std::fs::write(&data, common::jsonl(&common::questions(3))).unwrap();
    let target = |name: &str, url: &str, header: &str| {
        let path = fleet.dir.path().join(format!("{name}.yaml"));
        std::fs::write(
            &path,
            format!(
                "name: {name}\nkind: http\nurl: \"{url}\"\nheaders: {{X-Key: \"{header}\"}}\n\
                 body: {{question: \"{{{{ question }}}}\"}}\noutputs: {{trace: /data/trace}}\n\
                 retry: {{max_attempts: 1}}\ntimeout_s: 2\n"
            ),
        )
        .unwrap();
        path
    };
    let agent_url = format!("http://{}/agent", agent.addr);
    for (name, url, header, reason) in [
        (
            "greedy",
            agent_url.as_str(),
            "${OPENAI_API_KEY}",
            "target greedy: ${OPENAI_API_KEY} is not allowed on this worker",
        ),
        (
            "metadata",
            "http://169.254.169.254/latest/meta-data/",
            "${AGENT_KEY}",
            "target metadata: 169.254.169.254 is not a host a target may call on this worker (fleet.targets.allowed_hosts)",
        ),
    ] {
        let run_id = format!("{}-{name}", fleet.prefix);
        let file = target(name, url, header);
        fleet.submit(&data, &run_id, &["--suite", "rag-layers", "--target", file.to_str().unwrap()]);
        let report = fleet.wait_report(&run_id, Duration::from_secs(60));
        assert_eq!(report["totals"]["failed"], 3, "{}", report["totals"]);
        assert_eq!(report["failed"][0]["reason"], reason, "{}", report["failed"]);
    }
    assert_eq!(agent.stats()["agent_requests"], 0, "no call was made");
    // The same worker then runs an allowed target.
    let run_id = format!("{}-allowed", fleet.prefix);
    let file = target("allowed", &agent_url, "${AGENT_KEY}");
    fleet.submit(
        &data,
        &run_id,
        &["--suite", "rag-layers", "--target", file.to_str().unwrap()],
    );
    let report = fleet.wait_report(&run_id, Duration::from_secs(60));
    assert_eq!(report["totals"]["ok"], 3, "{}", report["totals"]);
}

/// `submit --target a --target b --wait`: one run per target (`<run_id>-<target>`), each
/// followed to its report, and the second compared with the first into the reports directory.
#[test]
fn several_targets_through_the_fleet_give_their_runs_and_a_comparison() {
    let agent = common::fake::FakeServer::plain();
    let mut fleet = Fleet::new("");
    fleet.worker("w1", 19611);
    fleet.aggregator("agg", 19619);
    let data = fleet.dir.path().join("questions.jsonl");
    std::fs::write(&data, common::jsonl(&common::questions(6))).unwrap();
    let target = |name: &str| {
        let path = fleet.dir.path().join(format!("{name}.yaml"));
        std::fs::write(
            &path,
            format!(
                "name: {name}\nkind: http\nurl: \"http://{}/agent\"\n\
                 body: {{question: \"{{{{ question }}}}\"}}\noutputs: {{trace: /data/trace}}\n",
                agent.addr
            ),
        )
        .unwrap();
        path
    };
    let (a, b) = (target("agent-a"), target("agent-b"));
    let run_id = format!("{}-pair", fleet.prefix);
    let submit = fleet.run(
        &[
            "submit",
            data.to_str().unwrap(),
            "--suite",
            "rag-layers",
            "--run-id",
            &run_id,
            "--target",
            a.to_str().unwrap(),
            "--target",
            b.to_str().unwrap(),
            "--wait",
        ],
        Duration::from_secs(120),
    );
    submit.assert_no_panic();
    for name in ["agent-a", "agent-b"] {
        let id = format!("{run_id}-{name}");
        assert!(submit.stdout.contains(&id), "{}", submit.stdout);
        let report = fleet.wait_report(&id, Duration::from_secs(10));
        assert_eq!(report["totals"]["ok"], 6, "{}", report["totals"]);
        assert_eq!(report["target"]["name"], name);
    }
    let compared = fleet.reports_dir().join(format!(
        "compare-{run_id}-agent-a-{run_id}-agent-b/compare.json"
    ));
    let compare: Value = serde_json::from_str(
        &std::fs::read_to_string(&compared)
            .unwrap_or_else(|e| panic!("{}: {e}\n{}", compared.display(), submit.stderr)),
    )
    .unwrap();
    assert_eq!(compare["base"]["run_id"], format!("{run_id}-agent-a"));
    assert_eq!(compare["new"]["run_id"], format!("{run_id}-agent-b"));
    // Two runs of the same agent: nothing regressed, and --wait exits as `run` would.
    let gates = fleet.wait_report(&format!("{run_id}-agent-a"), Duration::from_secs(1))["gates"]
        ["passed"]
        == true;
    assert_eq!(
        submit.code,
        Some(if gates { 0 } else { 1 }),
        "{}",
        submit.stderr
    );
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
