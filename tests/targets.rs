//! Targets end to end: `evalfleet run --target` has the system under test generate each
//! record's outputs (a chat prompt to the fake's OpenAI API, or the fake's demo agent over
//! HTTP), then evaluates the completed records as recorded ones. Over real sockets.

mod common;

use std::path::{Path, PathBuf};

use common::fake::{FakeServer, LiveConfig, KEY_ENV};
use common::{check_consistent, evalfleet_with_env, items, jsonl, questions, tempdir, Output};
use evalfleet_fake_provider::FakeProviderArgs;
use serde_json::{json, Value};

/// One test's stand-in provider (which also serves the demo agent), its directory, and a
/// config pointing at both.
struct Case {
    fake: FakeServer,
    dir: tempfile::TempDir,
    config: PathBuf,
}

impl Case {
    fn new() -> Case {
        Case::with(FakeServer::plain())
    }

    fn with(fake: FakeServer) -> Case {
        let dir = tempdir();
        let config = fake.config(dir.path(), &LiveConfig::default());
        Case { fake, dir, config }
    }

    /// A file written in the test's directory.
    fn file(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    /// A path in the test's directory (a report directory, say).
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `evalfleet ARGS... --config CONFIG`, with the provider's key and `env` set.
    fn evalfleet(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let config = arg(&self.config).to_owned();
        let mut args = args.to_vec();
        args.extend(["--config", &config]);
        let mut env = env.to_vec();
        env.push((KEY_ENV, &self.fake.key));
        evalfleet_with_env(&args, &env)
    }

    /// `evalfleet run DATA --suite SUITE --target TARGET --out OUT EXTRA...`.
    fn run(&self, data: &Path, suite: &str, target: &Path, out: &Path, extra: &[&str]) -> Output {
        let mut args = vec![
            "run",
            arg(data),
            "--suite",
            suite,
            "--target",
            arg(target),
            "--out",
            arg(out),
        ];
        args.extend_from_slice(extra);
        self.evalfleet(&args, &[])
    }

    /// An http target at the fake's demo agent, with `extra` YAML lines.
    fn agent(&self, name: &str, extra: &str) -> PathBuf {
        self.file(name, &agent_target(&self.fake, extra))
    }
}

fn arg(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
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

#[test]
fn a_chat_target_answers_each_ticket_and_the_judges_score_its_answers() {
    let case = Case::new();
    let target = case.file(
        "bot.yaml",
        "name: bot\nkind: chat\nprovider: openai\nmodel: gpt-4o-mini\n\
         system: \"You are a support engineer.\"\nprompt: \"{{ ticket }}\"\n\
         params: {temperature: 0}\noutput: response\nmodel_field: model\n\
         set: {prompt_version: \"bot-v1\"}\n",
    );
    let data = case.file(
        "tickets.jsonl",
        &jsonl(&[
            json!({"id": "t1", "ticket": "VPN connection drops every hour on macOS"}),
            json!({"id": "t2", "ticket": "Jenkins build fails with an OOM error", "response": "recorded, replaced"}),
            json!({"id": "t3", "question": "no ticket here"}),
        ]),
    );
    // `validate --target` checks what the run checks before any call.
    let validated = case.evalfleet(&["validate", arg(&data), "--target", arg(&target)], &[]);
    assert_eq!(validated.code, Some(1), "{}", validated.stderr);
    assert!(
        validated.stdout.contains(
            "line 3 (t3): target bot: the record has no 'ticket', which its templates use"
        ) && validated
            .stdout
            .contains("2 valid, 1 invalid (support-judge, target bot)"),
        "{}",
        validated.stdout
    );
    assert_eq!(case.fake.stats()["total"], 0, "validate calls nothing");

    let out = case.path("out");
    let exit = case.run(&data, "support-judge", &target, &out, &[]);
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
    let case = Case::new();
    let target = case.agent("agent.yaml", "");
    let data = case.file("q.jsonl", &jsonl(&questions(12)));
    let out = case.path("out");
    let exit = case.run(&data, "rag-layers", &target, &out, &[]);
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
    let again = case.path("again");
    let outputs = out.join("outputs.jsonl");
    let exit = case.evalfleet(
        &[
            "run",
            arg(&outputs),
            "--suite",
            "rag-layers",
            "--out",
            arg(&again),
        ],
        &[],
    );
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
    let failing = Case::with(FakeServer::start(FakeProviderArgs {
        fault_500: 1.0,
        ..FakeProviderArgs::default()
    }));
    let data = failing.file("q.jsonl", &jsonl(&questions(3)));
    let target = failing.agent("a.yaml", "");
    let out = failing.path("out");
    let exit = failing.run(&data, "rag-layers", &target, &out, &[]);
    let report = check_consistent(&out, &exit).json;
    assert_eq!(report["totals"]["failed"], 3, "{}", report["totals"]);
    assert_eq!(
        report["failed"][0]["reason"],
        "target demo: HTTP 500 after 2 attempts"
    );

    // A pointer the reply does not have; a 400 (a body without the question), never retried.
    let case = Case::new();
    let data = case.file("q.jsonl", &jsonl(&questions(3)));
    for reason in [
        "target demo: /data/nothing not found in the reply",
        "target demo: HTTP 400 after 1 attempts",
    ] {
        let yaml = if reason.contains("400") {
            agent_target(&case.fake, "").replace("question: \"{{ question }}\", ", "")
        } else {
            agent_target(&case.fake, "").replace("/data/trace", "/data/nothing")
        };
        let target = case.file("b.yaml", &yaml);
        let out = case.path(&format!("out-{}", reason.len()));
        let exit = case.run(&data, "rag-layers", &target, &out, &[]);
        let report = check_consistent(&out, &exit).json;
        assert_eq!(report["totals"]["failed"], 3, "{}", report["totals"]);
        assert_eq!(report["failed"][0]["reason"], reason);
    }
}

#[test]
fn a_secret_reaches_the_target_and_nothing_else() {
    let case = Case::new();
    let secret = "s3cr3t-agent-key-0451";
    let target = case.agent("agent.yaml", "headers: {X-Agent-Key: \"${AGENT_KEY}\"}\n");
    let data = case.file("q.jsonl", &jsonl(&questions(4)));
    let out = case.path("out");
    let exit = case.evalfleet(
        &[
            "run",
            arg(&data),
            "--suite",
            "rag-layers",
            "--target",
            arg(&target),
            "--out",
            arg(&out),
        ],
        &[("AGENT_KEY", secret)],
    );
    let report = check_consistent(&out, &exit).json;
    assert_eq!(report["totals"]["ok"], 4, "{}", report["totals"]);
    for file in std::fs::read_dir(&out).unwrap() {
        let path = file.unwrap().path();
        // items.parquet is compressed: read its rows as text.
        let text = if path.extension().is_some_and(|e| e == "parquet") {
            let export = common::evalfleet(&["export", path.to_str().unwrap()]);
            export.assert_code(0);
            export.stdout
        } else {
            std::fs::read_to_string(&path).unwrap()
        };
        assert!(
            !text.contains(secret),
            "the secret is in {}",
            path.display()
        );
    }
    assert!(!exit.stdout.contains(secret) && !exit.stderr.contains(secret));

    let missing = case.run(&data, "rag-layers", &target, &case.path("o2"), &[]);
    assert_eq!(missing.code, Some(2), "{}", missing.stderr);
    assert!(
        missing.stderr.contains("AGENT_KEY is not set"),
        "{}",
        missing.stderr
    );
}

#[test]
fn several_targets_give_their_runs_and_a_comparison_with_the_first() {
    let case = Case::new();
    let target = case.file(
        "bot.yaml",
        "name: bot\nkind: chat\nprovider: openai\nmodel: gpt-4o-mini\n\
         prompt: \"{{ ticket }}\"\noutput: response\nmodel_field: model\n\
         set: {prompt_version: \"v1\"}\n",
    );
    let tickets: Vec<Value> = (0..6)
        .map(|i| json!({"id": format!("t{i}"), "ticket": format!("Printer {i} jams on page two")}))
        .collect();
    let data = case.file("tickets.jsonl", &jsonl(&tickets));
    let out = case.path("out");
    let models = ["gpt-4o-mini", "gpt-4o"];
    let (data, target) = (arg(&data), arg(&target));
    let exit = case.evalfleet(
        &[
            "run",
            data,
            "--target",
            target,
            "--target-model",
            models[0],
            "--target-model",
            models[1],
            "--run-id",
            "cmp",
            "--out",
            arg(&out),
        ],
        &[],
    );
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
    let copy = case.path("copy.yaml");
    std::fs::copy(target, &copy).unwrap();
    for (extra, says) in [
        (vec!["--target", target], "is given twice"),
        (vec!["--target", arg(&copy)], "would both be named 'bot'"),
        (
            vec![
                "--target",
                target,
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
        let mut args = vec!["run", data, "--target", target];
        args.extend(extra);
        let exit = case.evalfleet(&args, &[]);
        assert_eq!(exit.code, Some(2), "{}", exit.stderr);
        assert!(exit.stderr.contains(says), "{}", exit.stderr);
    }
}

#[test]
fn a_repeated_request_is_answered_from_the_cache_not_by_the_target() {
    let case = Case::new();
    // The body leaves the id out: two records asking the same question make one request.
    let yaml = agent_target(&case.fake, "").replace(", conversation: {id: \"{{ id }}\"}", "");
    let target = case.file("agent.yaml", &yaml);
    let mut records = questions(3);
    let mut again = records[0].clone();
    again["id"] = json!("asked-again");
    records.push(again);
    let data = case.file("q.jsonl", &jsonl(&records));
    let out = case.path("out");
    let exit = case.run(&data, "rag-layers", &target, &out, &["-j", "1"]);
    let report = check_consistent(&out, &exit).json;
    assert_eq!(report["totals"]["ok"], 4, "{}", report["totals"]);
    assert_eq!(
        case.fake.stats()["agent_requests"],
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
    let target = case.file("fresh.yaml", &format!("{yaml}cache: false\n"));
    let exit = case.run(&data, "rag-layers", &target, &out, &["-j", "1"]);
    check_consistent(&out, &exit);
    assert_eq!(case.fake.stats()["agent_requests"], 3 + 4);
}

#[test]
fn the_estimate_counts_the_target_and_the_budget_covers_its_calls() {
    let case = Case::new();
    let target = case.agent("agent.yaml", "price_per_call: 0.01\ncache: false\n");
    let data = case.file("q.jsonl", &jsonl(&questions(20)));
    let out = case.path("out");
    let base = [
        "run",
        arg(&data),
        "--suite",
        "rag-layers",
        "--target",
        arg(&target),
    ];

    let estimate = case.evalfleet(&[&base[..], &["--estimate"]].concat(), &[]);
    assert_eq!(estimate.code, Some(0), "{}", estimate.stderr);
    let row = estimate
        .stdout
        .lines()
        .find(|l| l.starts_with("target demo (http) "))
        .unwrap_or_else(|| panic!("no target row:\n{}", estimate.stdout));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!((cells[3], cells[6]), ("20", "0.2000"), "{row}");
    assert_eq!(
        case.fake.stats()["agent_requests"],
        0,
        "an estimate sends nothing"
    );

    // 0.05 USD at 0.01 per call: five answers, then every example fails without a call.
    let run = [
        &base[..],
        &["--budget", "0.05", "-j", "1", "--out", arg(&out)],
    ]
    .concat();
    let report = check_consistent(&out, &case.evalfleet(&run, &[])).json;
    assert_eq!(
        (
            report["totals"]["ok"].as_u64(),
            report["totals"]["failed"].as_u64()
        ),
        (Some(5), Some(15)),
        "{}",
        report["totals"]
    );
    assert_eq!(case.fake.stats()["agent_requests"], 5);
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
    let case = Case::new();
    // 120 a minute: a burst of 2, then one every half second or so.
    let target = case.agent("agent.yaml", "rpm: 120\nmax_in_flight: 4\n");
    let data = case.file("q.jsonl", &jsonl(&questions(6)));
    let out = case.path("out");
    let started = std::time::Instant::now();
    let exit = case.run(&data, "rag-layers", &target, &out, &[]);
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
    let case = Case::new();
    let target = case.agent("agent.yaml", "");
    let data = case.file("q.jsonl", &jsonl(&questions(5)));
    let out = case.path("out");
    let exit = case.run(&data, "rag-layers", &target, &out, &["--epochs", "3"]);
    let report = check_consistent(&out, &exit).json;
    assert_eq!(report["totals"]["ok"], 5, "{}", report["totals"]);
    assert_eq!(
        case.fake.stats()["agent_requests"],
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

    let bad = case.run(
        &data,
        "rag-layers",
        &target,
        &case.path("o2"),
        &["--epochs", "0"],
    );
    assert_eq!(bad.code, Some(2), "{}", bad.stderr);
    assert!(
        bad.stderr.contains("--epochs: must be at least 1"),
        "{}",
        bad.stderr
    );
}

#[test]
fn a_suite_names_its_own_target_and_target_overrides_it() {
    let case = Case::new();
    let indented: String = agent_target(&case.fake, "")
        .lines()
        .map(|l| format!("  {l}\n"))
        .collect();
    let suite = case.file(
        "agent-suite.yaml",
        &format!("name: agent-qa\nextends: rag-layers\ntarget:\n{indented}"),
    );
    let data = case.file("q.jsonl", &jsonl(&questions(4)));
    let out = case.path("out");
    let exit = case.evalfleet(
        &[
            "run",
            arg(&data),
            "--suite",
            arg(&suite),
            "--out",
            arg(&out),
            "--epochs",
            "2",
        ],
        &[],
    );
    let report = check_consistent(&out, &exit).json;
    assert_eq!(report["totals"]["ok"], 4, "{}", report["totals"]);
    assert_eq!(report["target"]["name"], "demo");
    assert_eq!(report["aggregates"]["epochs"], 2);
    assert_eq!(case.fake.stats()["agent_requests"], 8);

    // `--target` wins over the suite's.
    let other = case.file(
        "other.yaml",
        &agent_target(&case.fake, "").replace("name: demo", "name: other"),
    );
    let out = case.path("o2");
    let exit = case.run(&data, arg(&suite), &other, &out, &[]);
    assert_eq!(
        check_consistent(&out, &exit).json["target"]["name"],
        "other"
    );

    // A suite's target is checked as a target file is, and named by its key.
    let bad = case.file(
        "bad-suite.yaml",
        "name: bad\nextends: rag-layers\ntarget: {name: x, kind: http, url: \"ftp://h\", outputs: {trace: /t}}\n",
    );
    let exit = case.evalfleet(&["validate", arg(&data), "--suite", arg(&bad)], &[]);
    assert_eq!(exit.code, Some(2), "{}", exit.stderr);
    assert!(exit.stderr.contains("target: url:"), "{}", exit.stderr);
}

/// A log-analysis run with a chat target: the producer loads each record's scenario (paths
/// relative to the dataset), the target writes each `output`, and the completed records are
/// scored against their scenarios; `outputs.jsonl` keeps the scenario paths as written.
#[test]
fn a_chat_target_writes_the_log_analyses_the_suite_scores_against_their_scenarios() {
    let case = Case::new();
    let target = case.file(
        "analyst.yaml",
        "name: analyst\nkind: chat\nprovider: openai\nmodel: gpt-4o-mini\n\
         prompt: \"Analyse the logs of scenario {{ scenario }} (run {{ id }}): list the key \
         events, the timeline and any anomalies.\"\noutput: output\n",
    );
    let data = common::root().join("examples/log-analysis.jsonl");
    let recorded: Vec<Value> = std::fs::read_to_string(&data)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(recorded.len(), 36);
    let out = case.path("out");
    let exit = case.run(&data, "log-analysis", &target, &out, &[]);
    let report = check_consistent(&out, &exit).json;
    assert_eq!(
        report["totals"]["ok"], 36,
        "{}\n{}",
        report["totals"], exit.stderr
    );
    assert_eq!(report["target"]["calls"], 36, "{}", report["target"]);
    assert!(
        exit.stdout
            .contains("note: 36 records already held fields the target fills (output)"),
        "{}",
        exit.stdout
    );
    for (item, record) in items(&report).iter().zip(&recorded) {
        assert_eq!(item["id"], record["id"]);
        let output = item["outputs"]["output"].as_str().unwrap_or_default();
        assert!(
            output.len() > 40 && output != record["output"],
            "the target's: {item}"
        );
        assert_eq!(item["target"]["name"], "analyst");
        // Scored against the record's scenario: its key events are what the output is
        // matched with.
        assert!(item["metrics"]["event_accuracy"].is_number(), "{item}");
        assert!(
            item["details"]["matches"]["events"]["total"].as_u64() > Some(0),
            "scored against the scenario: {item}"
        );
    }
    // The completed records, in the dataset's shape: the scenario as the record named it.
    let outputs = std::fs::read_to_string(out.join("outputs.jsonl")).unwrap();
    let lines: Vec<Value> = outputs
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 36);
    for ((line, record), item) in lines.iter().zip(&recorded).zip(items(&report)) {
        assert_eq!(line["scenario"], record["scenario"], "{line}");
        assert!(line["scenario"].as_str().unwrap().starts_with("scenarios/"));
        assert_eq!(line["output"], item["outputs"]["output"]);
        assert_eq!(line["config"], record["config"]);
    }

    // A record whose scenario file is missing is skipped as a recorded one is, before any call.
    let calls = case.fake.stats()["total"].clone();
    let dir = case.path("logs");
    std::fs::create_dir_all(dir.join("scenarios")).unwrap();
    std::fs::copy(
        common::root().join("examples/scenarios/scenario_001_vm_lifecycle.json"),
        dir.join("scenarios/s1.json"),
    )
    .unwrap();
    let data = dir.join("logs.jsonl");
    std::fs::write(
        &data,
        jsonl(&[
            json!({"id": "l1", "scenario": "scenarios/s1.json"}),
            json!({"id": "l2", "scenario": "scenarios/gone.json"}),
        ]),
    )
    .unwrap();
    let out = case.path("out-missing");
    let exit = case.run(&data, "log-analysis", &target, &out, &[]);
    let report = check_consistent(&out, &exit).json;
    assert_eq!(report["totals"]["ok"], 1, "{}", report["totals"]);
    let reason = report["skipped"][0]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("Cannot read scenario 'scenarios/gone.json': "),
        "{reason}"
    );
    assert_eq!(
        case.fake.stats()["total"].as_u64(),
        calls.as_u64().map(|n| n + 1),
        "one call, for the record with a scenario"
    );
}
