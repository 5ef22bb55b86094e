//! Targets end to end: `evalfleet run --target` has the system under test generate each
//! record's outputs (a chat prompt to the fake's OpenAI API, or the fake's demo agent over
//! HTTP), then evaluates the completed records as recorded ones. Over real sockets.

mod common;

use std::path::{Path, PathBuf};

use common::fake::{FakeServer, LiveConfig, KEY_ENV};
use common::{check_consistent, evalfleet_with_env, items, root, tempdir, Output};
use evalfleet_fake_provider::FakeProviderArgs;
use serde_json::{json, Value};

/// `evalfleet run DATASET --suite SUITE --target TARGET --config CONFIG --out OUT` with `env`.
fn run(
    dataset: &Path,
    suite: &str,
    target: &Path,
    config: &Path,
    out: &Path,
    env: &[(&str, &str)],
) -> Output {
    let path = |p: &Path| p.to_str().expect("a UTF-8 path").to_owned();
    let (dataset, target, config, out) = (path(dataset), path(target), path(config), path(out));
    let args = [
        "run", &dataset, "--suite", suite, "--target", &target, "--config", &config, "--out", &out,
    ];
    evalfleet_with_env(&args, env)
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn jsonl(records: &[Value]) -> String {
    records.iter().map(|r| format!("{r}\n")).collect()
}

/// An http target at the fake's demo agent.
fn agent_target(fake: &FakeServer, extra: &str) -> String {
    format!(
        "name: demo\nkind: http\nurl: \"http://{}/agent\"\n\
         body: {{question: \"{{{{ question }}}}\", conversation: {{id: \"{{{{ id }}}}\"}}}}\n\
         outputs: {{trace: /data/trace}}\ntimeout_s: 5\n\
         retry: {{max_attempts: 2, base_delay_ms: 10, max_delay_ms: 50}}\n{extra}",
        fake.addr
    )
}

/// The bundled rag-layers items without their traces: what the agent must produce.
fn questions(n: usize) -> Vec<Value> {
    std::fs::read_to_string(root().join("examples/rag-layers.jsonl"))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .take(n)
        .map(|l| {
            let mut r: Value = serde_json::from_str(l).unwrap();
            r.as_object_mut().unwrap().remove("trace");
            r
        })
        .collect()
}

#[test]
fn a_chat_target_answers_each_ticket_and_the_judges_score_its_answers() {
    let fake = FakeServer::plain();
    let dir = tempdir();
    let config = fake.config(dir.path(), &LiveConfig::default());
    let target = write(
        dir.path(),
        "bot.yaml",
        "name: bot\nkind: chat\nprovider: openai\nmodel: gpt-4o-mini\n\
         system: \"You are a support engineer.\"\nprompt: \"{{ ticket }}\"\n\
         params: {temperature: 0}\noutput: response\nmodel_field: model\n\
         set: {prompt_version: \"bot-v1\"}\n",
    );
    let data = write(
        dir.path(),
        "tickets.jsonl",
        &jsonl(&[
            json!({"id": "t1", "ticket": "VPN connection drops every hour on macOS"}),
            json!({"id": "t2", "ticket": "Jenkins build fails with an OOM error", "response": "recorded, replaced"}),
            json!({"id": "t3", "question": "no ticket here"}),
        ]),
    );
    let out = dir.path().join("out");
    let exit = run(
        &data,
        "support-judge",
        &target,
        &config,
        &out,
        &[(KEY_ENV, &fake.key)],
    );
    let report = check_consistent(&out, &exit).json;
    assert_eq!(report["totals"]["ok"], 2, "{}", report["totals"]);
    assert_eq!(report["totals"]["skipped"], 1);
    // A recorded field the target fills: replaced, and said once.
    assert_eq!(
        exit.stdout
            .matches("already held fields the target fills")
            .count(),
        1,
        "{}",
        exit.stdout
    );
    assert!(
        exit.stdout.contains("note: 1 record already held fields the target fills (response); the target's outputs replaced them"),
        "{}",
        exit.stdout
    );
    assert_eq!(
        report["skipped"][0]["reason"],
        "target bot: the record has no 'ticket', which its templates use"
    );
    for item in items(&report) {
        let response = item["outputs"]["response"].as_str().unwrap();
        assert!(
            response.len() > 40 && response != "recorded, replaced",
            "{item}"
        );
        assert_eq!(item["model"], "gpt-4o-mini");
        assert_eq!(item["prompt_version"], "bot-v1");
        assert_eq!(item["target"]["name"], "bot");
        assert_eq!(item["target"]["attempts"], 1);
        assert!(item["target"]["tokens_in"].as_u64().unwrap() > 0);
        assert!(item["relevance"]["score"].is_number(), "judged: {item}");
    }
    let answer = items(&report)[0]["outputs"]["response"].as_str().unwrap();
    assert!(answer.contains("connection"), "on topic: {answer}");
    // The target's own figures, apart from the judges'.
    let target = &report["target"];
    assert_eq!(
        (target["name"].as_str(), target["calls"].as_u64()),
        (Some("bot"), Some(2))
    );
    assert!(
        target["latency_ms"]["p95"].as_f64().unwrap() > 0.0,
        "{target}"
    );
    assert!(target["tokens_out"].as_u64().unwrap() > 0);
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        summary.contains("| Target bot | 2 answers in 2 attempts; latency p50 "),
        "{summary}"
    );
}

#[test]
fn an_http_target_fills_the_trace_the_rag_suite_scores() {
    let fake = FakeServer::plain();
    let dir = tempdir();
    let config = fake.config(dir.path(), &LiveConfig::default());
    let target = write(dir.path(), "agent.yaml", &agent_target(&fake, ""));
    let data = write(dir.path(), "q.jsonl", &jsonl(&questions(12)));
    let out = dir.path().join("out");
    let exit = run(&data, "rag-layers", &target, &config, &out, &[]);
    let report = check_consistent(&out, &exit).json;
    assert_eq!(report["totals"]["ok"], 12, "{}", report["totals"]);
    let first = &items(&report)[0];
    assert_eq!(
        first["outputs"]["trace"]["retrieved_chunk_ids"],
        json!(["metric_guide_sos_01"])
    );
    assert!(
        first["metrics"].as_object().is_some_and(|m| !m.is_empty()),
        "{first}"
    );

    // outputs.jsonl: the completed records, in the dataset's shape, evaluated again without
    // the target into the same scores.
    let outputs = std::fs::read_to_string(out.join("outputs.jsonl")).unwrap();
    let lines: Vec<Value> = outputs
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 12);
    assert_eq!(lines[0]["id"], first["id"]);
    assert_eq!(lines[0]["trace"], first["outputs"]["trace"]);
    assert_eq!(lines[0]["question"], questions(1)[0]["question"]);
    let again = dir.path().join("again");
    let path = |p: &Path| p.to_str().unwrap().to_owned();
    let (outputs, config, again_s) = (
        path(&out.join("outputs.jsonl")),
        path(&config),
        path(&again),
    );
    let exit = common::evalfleet(&[
        "run",
        &outputs,
        "--suite",
        "rag-layers",
        "--config",
        &config,
        "--out",
        &again_s,
    ]);
    let replay = check_consistent(&again, &exit).json;
    assert!(
        !again.join("outputs.jsonl").exists(),
        "no target, no outputs.jsonl"
    );
    for (a, b) in items(&report).iter().zip(items(&replay)) {
        assert_eq!((&a["id"], &a["metrics"]), (&b["id"], &b["metrics"]));
    }
}

#[test]
fn a_target_that_fails_fails_its_examples_with_the_reason() {
    let dir = tempdir();
    let failing = FakeServer::start(FakeProviderArgs {
        fault_500: 1.0,
        ..FakeProviderArgs::default()
    });
    let config = failing.config(dir.path(), &LiveConfig::default());
    let data = write(dir.path(), "q.jsonl", &jsonl(&questions(3)));
    let target = write(dir.path(), "a.yaml", &agent_target(&failing, ""));
    let out = dir.path().join("out");
    let exit = run(&data, "rag-layers", &target, &config, &out, &[]);
    let report = check_consistent(&out, &exit).json;
    assert_eq!(report["totals"]["failed"], 3, "{}", report["totals"]);
    assert_eq!(
        report["failed"][0]["reason"],
        "target demo: HTTP 500 after 2 attempts"
    );

    // A pointer the reply does not have; a 400 (a body without the question), never retried.
    let fake = FakeServer::plain();
    for (extra, reason) in [
        ("", "target demo: /data/nothing not found in the reply"),
        ("", "target demo: HTTP 400 after 1 attempts"),
    ] {
        let yaml = if reason.contains("400") {
            agent_target(&fake, extra).replace("question: \"{{ question }}\", ", "")
        } else {
            agent_target(&fake, extra).replace("/data/trace", "/data/nothing")
        };
        let target = write(dir.path(), "b.yaml", &yaml);
        let out = dir.path().join(format!("out-{}", reason.len()));
        let exit = run(&data, "rag-layers", &target, &config, &out, &[]);
        let report = check_consistent(&out, &exit).json;
        assert_eq!(report["totals"]["failed"], 3, "{}", report["totals"]);
        assert_eq!(report["failed"][0]["reason"], reason);
    }
}

#[test]
fn a_secret_reaches_the_target_and_nothing_else() {
    let fake = FakeServer::plain();
    let dir = tempdir();
    let config = fake.config(dir.path(), &LiveConfig::default());
    let secret = "s3cr3t-agent-key-0451";
    let target = write(
        dir.path(),
        "agent.yaml",
        &agent_target(&fake, "headers: {X-Agent-Key: \"${AGENT_KEY}\"}\n"),
    );
    let data = write(dir.path(), "q.jsonl", &jsonl(&questions(4)));
    let out = dir.path().join("out");
    let exit = run(
        &data,
        "rag-layers",
        &target,
        &config,
        &out,
        &[("AGENT_KEY", secret)],
    );
    let report = check_consistent(&out, &exit).json;
    assert_eq!(report["totals"]["ok"], 4, "{}", report["totals"]);
    for file in std::fs::read_dir(&out).unwrap() {
        let text = std::fs::read_to_string(file.unwrap().path()).unwrap();
        assert!(!text.contains(secret), "the secret is in a report file");
    }
    assert!(!exit.stdout.contains(secret) && !exit.stderr.contains(secret));

    let missing = run(
        &data,
        "rag-layers",
        &target,
        &config,
        &dir.path().join("o2"),
        &[],
    );
    assert_eq!(missing.code, Some(2), "{}", missing.stderr);
    assert!(
        missing.stderr.contains("AGENT_KEY is not set"),
        "{}",
        missing.stderr
    );
}

#[test]
fn several_targets_give_their_runs_and_a_comparison_with_the_first() {
    let fake = FakeServer::plain();
    let dir = tempdir();
    let config = fake.config(dir.path(), &LiveConfig::default());
    let target = write(
        dir.path(),
        "bot.yaml",
        "name: bot\nkind: chat\nprovider: openai\nmodel: gpt-4o-mini\n\
         prompt: \"{{ ticket }}\"\noutput: response\nmodel_field: model\n\
         set: {prompt_version: \"v1\"}\n",
    );
    let tickets: Vec<Value> = (0..6)
        .map(|i| json!({"id": format!("t{i}"), "ticket": format!("Printer {i} jams on page two")}))
        .collect();
    let data = write(dir.path(), "tickets.jsonl", &jsonl(&tickets));
    let out = dir.path().join("out");
    let path = |p: &Path| p.to_str().unwrap().to_owned();
    let (data, target, config, out_s) = (path(&data), path(&target), path(&config), path(&out));
    let models = ["gpt-4o-mini", "gpt-4o"];
    let args = [
        "run",
        &data,
        "--target",
        &target,
        "--target-model",
        models[0],
        "--target-model",
        models[1],
        "--run-id",
        "cmp",
        "--config",
        &config,
        "--out",
        &out_s,
    ];
    let exit = evalfleet_with_env(&args, &[(KEY_ENV, &fake.key)]);
    for model in models {
        let run = out.join(format!("bot-{model}"));
        let report = check_consistent(&run, &exit).json;
        assert_eq!(report["run"]["id"], format!("cmp-bot-{model}"));
        assert_eq!(report["totals"]["ok"], 6, "{}", report["totals"]);
        for item in items(&report) {
            assert_eq!(item["model"], model, "{item}");
        }
    }
    // The second run compared with the first, as `compare` does; the first has no comparison.
    let compare: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("bot-gpt-4o/compare/compare.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        compare["base"]["run_id"], "cmp-bot-gpt-4o-mini",
        "{compare}"
    );
    assert_eq!(compare["new"]["run_id"], "cmp-bot-gpt-4o");
    assert!(!out.join("bot-gpt-4o-mini/compare").exists());
    assert!(exit.stdout.contains("compare: "), "{}", exit.stdout);

    // Runs that would share a name, and models that do not pair with the targets: exit 2.
    let copy = dir.path().join("copy.yaml");
    std::fs::copy(&target, &copy).unwrap();
    let copy = path(&copy);
    for (extra, says) in [
        (vec!["--target", &target], "is given twice"),
        (vec!["--target", &copy], "would both be named 'bot'"),
        (
            vec![
                "--target",
                &target,
                "--target-model",
                "a",
                "--target-model",
                "b",
                "--target-model",
                "c",
            ],
            "--target-model given 3 times for 2 targets",
        ),
    ] {
        let mut args = vec!["run", &data, "--target", &target, "--config", &config];
        args.extend(extra);
        let exit = evalfleet_with_env(&args, &[(KEY_ENV, &fake.key)]);
        assert_eq!(exit.code, Some(2), "{}", exit.stderr);
        assert!(exit.stderr.contains(says), "{}", exit.stderr);
    }
}

#[test]
fn a_repeated_request_is_answered_from_the_cache_not_by_the_target() {
    let fake = FakeServer::plain();
    let dir = tempdir();
    let config = fake.config(dir.path(), &LiveConfig::default());
    // The body leaves the id out: two records asking the same question make one request.
    let yaml = agent_target(&fake, "").replace(", conversation: {id: \"{{ id }}\"}", "");
    let target = write(dir.path(), "agent.yaml", &yaml);
    let mut records = questions(3);
    let mut again = records[0].clone();
    again["id"] = json!("asked-again");
    records.push(again);
    let data = write(dir.path(), "q.jsonl", &jsonl(&records));
    let out = dir.path().join("out");
    let path = |p: &Path| p.to_str().unwrap().to_owned();
    let (data, target, config, out_s) = (path(&data), path(&target), path(&config), path(&out));
    let exit = common::evalfleet(&[
        "run",
        &data,
        "--suite",
        "rag-layers",
        "--target",
        &target,
        "--config",
        &config,
        "--out",
        &out_s,
        "-j",
        "1",
    ]);
    let report = check_consistent(&out, &exit).json;
    assert_eq!(report["totals"]["ok"], 4, "{}", report["totals"]);
    assert_eq!(
        fake.stats()["agent_requests"],
        3,
        "one call per distinct request"
    );
    let items = items(&report);
    assert_eq!(
        items[3]["target"]["attempts"], 0,
        "from the cache: {}",
        items[3]
    );
    assert_eq!(items[3]["outputs"], items[0]["outputs"]);

    // `cache: false`: every record is asked.
    let target = write(dir.path(), "fresh.yaml", &format!("{yaml}cache: false\n"));
    let exit = common::evalfleet(&[
        "run",
        &data,
        "--suite",
        "rag-layers",
        "--target",
        &path(&target),
        "--config",
        &config,
        "--out",
        &out_s,
        "-j",
        "1",
    ]);
    check_consistent(&out, &exit);
    assert_eq!(fake.stats()["agent_requests"], 3 + 4);
}

#[test]
fn the_estimate_counts_the_target_and_the_budget_covers_its_calls() {
    let fake = FakeServer::plain();
    let dir = tempdir();
    let config = fake.config(dir.path(), &LiveConfig::default());
    let target = write(
        dir.path(),
        "agent.yaml",
        &agent_target(&fake, "price_per_call: 0.01\ncache: false\n"),
    );
    let data = write(dir.path(), "q.jsonl", &jsonl(&questions(20)));
    let out = dir.path().join("out");
    let path = |p: &Path| p.to_str().unwrap().to_owned();
    let (data, target, config, out_s) = (path(&data), path(&target), path(&config), path(&out));
    let base = [
        "run",
        &data,
        "--suite",
        "rag-layers",
        "--target",
        &target,
        "--config",
        &config,
    ];

    let estimate = common::evalfleet(&[&base[..], &["--estimate"]].concat());
    assert_eq!(estimate.code, Some(0), "{}", estimate.stderr);
    let row = estimate
        .stdout
        .lines()
        .find(|l| l.starts_with("target demo (http) "))
        .unwrap_or_else(|| panic!("no target row:\n{}", estimate.stdout));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!((cells[3], cells[6]), ("20", "0.2000"), "{row}");
    assert_eq!(
        fake.stats()["agent_requests"],
        0,
        "an estimate sends nothing"
    );

    // 0.05 USD at 0.01 per call: five answers, then every example fails without a call.
    let run = [&base[..], &["--budget", "0.05", "-j", "1", "--out", &out_s]].concat();
    let report = check_consistent(&out, &common::evalfleet(&run)).json;
    assert_eq!(
        (
            report["totals"]["ok"].as_u64(),
            report["totals"]["failed"].as_u64()
        ),
        (Some(5), Some(15)),
        "{}",
        report["totals"]
    );
    assert_eq!(fake.stats()["agent_requests"], 5);
    let refused = report["failed"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["reason"] == "target demo: the run budget of 0.05 USD is spent")
        .count();
    assert_eq!(refused, 15);
}

#[test]
fn an_http_targets_rpm_spaces_its_calls() {
    let fake = FakeServer::plain();
    let dir = tempdir();
    let config = fake.config(dir.path(), &LiveConfig::default());
    // 120 a minute: a burst of 2, then one every half second or so.
    let target = write(
        dir.path(),
        "agent.yaml",
        &agent_target(&fake, "rpm: 120\nmax_in_flight: 4\n"),
    );
    let data = write(dir.path(), "q.jsonl", &jsonl(&questions(6)));
    let out = dir.path().join("out");
    let started = std::time::Instant::now();
    let exit = run(&data, "rag-layers", &target, &config, &out, &[]);
    let took = started.elapsed();
    let report = check_consistent(&out, &exit).json;
    assert_eq!(report["totals"]["ok"], 6, "{}", report["totals"]);
    assert!(
        took >= std::time::Duration::from_millis(1900),
        "6 calls at 120 a minute took only {took:?}"
    );
}

#[test]
fn epochs_evaluate_each_record_k_times_into_one_item() {
    let fake = FakeServer::plain();
    let dir = tempdir();
    let config = fake.config(dir.path(), &LiveConfig::default());
    let target = write(dir.path(), "agent.yaml", &agent_target(&fake, ""));
    let data = write(dir.path(), "q.jsonl", &jsonl(&questions(5)));
    let out = dir.path().join("out");
    let path = |p: &Path| p.to_str().unwrap().to_owned();
    let (data, target, config, out_s) = (path(&data), path(&target), path(&config), path(&out));
    let exit = common::evalfleet(&[
        "run",
        &data,
        "--suite",
        "rag-layers",
        "--target",
        &target,
        "--epochs",
        "3",
        "--config",
        &config,
        "--out",
        &out_s,
    ]);
    let report = check_consistent(&out, &exit).json;
    assert_eq!(report["totals"]["ok"], 5, "{}", report["totals"]);
    assert_eq!(
        fake.stats()["agent_requests"],
        15,
        "each epoch is its own call"
    );
    for item in items(&report) {
        let epochs = item["epochs"].as_array().unwrap();
        assert_eq!(epochs.len(), 3, "{item}");
        assert_eq!(epochs[2]["epoch"], 3);
        assert!(epochs[0]["outputs"]["trace"].is_object(), "{item}");
        assert!(epochs[0]["checks"].is_object() && epochs[0]["passed"].is_boolean());
        assert_eq!(item["target"]["attempts"], 3, "the epochs' calls summed");
        assert!(item.get("dataset_record").is_none(), "not an item field");
    }
    // The agent answers a question the same way each time: the epochs agree.
    let aggregates = &report["aggregates"];
    assert_eq!(aggregates["epochs"], 3, "{aggregates}");
    assert_eq!(aggregates["pass_at_k"], aggregates["pass_all_k"]);
    let spread = aggregates["within_item_stddev"].as_object().unwrap();
    assert!(
        !spread.is_empty() && spread.values().all(|v| v == 0.0),
        "{spread:?}"
    );
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        summary.contains("| Epochs | 3 per item; pass@k "),
        "{summary}"
    );

    let bad = common::evalfleet(&[
        "run",
        &data,
        "--suite",
        "rag-layers",
        "--target",
        &target,
        "--epochs",
        "0",
        "--config",
        &config,
    ]);
    assert_eq!(bad.code, Some(2), "{}", bad.stderr);
    assert!(
        bad.stderr.contains("--epochs: must be at least 1"),
        "{}",
        bad.stderr
    );
}
