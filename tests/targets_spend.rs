//! Targets end to end, what a run spends and repeats: several targets in one run, the
//! response cache, the estimate and the budget, an http target's rate limit, and epochs.
//! Over real sockets, against the fake provider and its demo agent.

mod common;

use common::fake::targets::{agent_target, arg, Case};
use common::{check_consistent, items, jsonl, questions};
use serde_json::{json, Value};

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
