//! Runs with a target through the fleet on the real RabbitMQ and Redis: the workers call the
//! system under test (a chat model or an HTTP agent on fake-provider) and the report equals the
//! embedded run's; a target's secrets and hosts stay within what the workers allow.

mod common;

use std::path::Path;
use std::time::Duration;

use common::fleet::embedded::submit_and_compare_with_embedded_with;
use common::fleet::{example, Fleet};
use serde_json::Value;

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
