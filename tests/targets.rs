//! Targets end to end: `evalfleet run --target` has the system under test generate each
//! record's outputs (a chat prompt to the fake's OpenAI API, or the fake's demo agent over
//! HTTP), then evaluates the completed records as recorded ones. Over real sockets. What a
//! target run spends and repeats (several targets, cache, estimate, budget, rate, epochs) is in
//! `targets_spend.rs`.

mod common;

use common::fake::targets::{agent_target, arg, Case};
use common::fake::FakeServer;
use common::{check_consistent, items, jsonl, questions};
use evalfleet_fake_provider::FakeProviderArgs;
use serde_json::{json, Value};

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
