//! Pairwise preference end to end through `evalfleet run` (issue 21, part 4): the bundled
//! `pairwise-support` suite and dataset judged by the offline heuristic and by live judges
//! against the fake provider (live calls and provider batches), checked in `report.json`'s
//! items, `aggregates.pairwise` and the `min_win_rate` run gate; a judge that follows the
//! position makes every item a tie and shows in `position_bias`.

mod common;

use std::path::Path;

use common::fake::{fake_preference, run_live_suite, FakeServer, LiveConfig};
use common::{check_consistent, items, root, run_suite, tempdir, u};
use evalfleet_fake_provider::FakeProviderArgs;
use serde_json::Value;

const DATASET: &str = "examples/pairwise-support.jsonl";
const SUITE: &str = "config/suites/pairwise-support.yaml";

fn records() -> Vec<Value> {
    std::fs::read_to_string(root().join(DATASET))
        .expect("reading the dataset")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

/// The suite file with another `min_win_rate`, written into `dir`.
fn suite_with_min_win_rate(dir: &Path, min: f64) -> String {
    let text = std::fs::read_to_string(root().join(SUITE)).expect("reading the suite");
    let text = text.replace("min_win_rate: 0.5", &format!("min_win_rate: {min}"));
    let path = dir.join("pairwise.yaml");
    std::fs::write(&path, text).expect("writing the suite");
    path.to_str().expect("utf-8").to_owned()
}

/// id → (preference, followed_position) of each item.
fn preferences(report: &Value) -> Vec<(String, String, bool)> {
    items(report)
        .iter()
        .map(|it| {
            let s = &it["scores"]["preferred"];
            let p = &s["pairwise"];
            let score = s["score"].as_f64().expect("a score");
            let preference = p["preference"].as_str().expect("preference").to_owned();
            let want = match preference.as_str() {
                "win" => 1.0,
                "tie" => 0.5,
                _ => 0.0,
            };
            assert_eq!(score, want, "{it}");
            (
                it["id"].as_str().expect("id").to_owned(),
                preference,
                p["followed_position"].as_bool().expect("followed_position"),
            )
        })
        .collect()
}

fn check_block(block: &Value, n: u64, wins: u64, ties: u64, losses: u64, followed: u64) {
    assert_eq!(
        (
            u(block, "n"),
            u(block, "wins"),
            u(block, "ties"),
            u(block, "losses")
        ),
        (n, wins, ties, losses),
        "{block}"
    );
    let rate = |k: u64| k as f64 / n as f64;
    assert_eq!(block["win_rate"].as_f64(), Some(rate(wins)));
    assert_eq!(block["tie_rate"].as_f64(), Some(rate(ties)));
    assert_eq!(block["loss_rate"].as_f64(), Some(rate(losses)));
    assert_eq!(block["position_bias"].as_f64(), Some(rate(followed)));
    for key in ["win_rate", "tie_rate", "loss_rate"] {
        let ci = block[format!("{key}_ci95")]
            .as_array()
            .expect("an interval");
        let (lo, hi) = (ci[0].as_f64().unwrap(), ci[1].as_f64().unwrap());
        let v = block[key].as_f64().unwrap();
        assert!(
            0.0 <= lo && lo <= v && v <= hi && hi <= 1.0,
            "{key}: {block}"
        );
    }
}

#[test]
fn the_heuristic_compares_the_two_releases_and_gates_the_win_rate() {
    let dir = tempdir();
    let out = dir.path().join("out");
    let run = run_suite(
        &root().join(DATASET),
        SUITE,
        &out,
        &["--judge", "heuristic"],
    );
    run.assert_code(0);
    let report = check_consistent(&out, &run).json;
    let prefs = preferences(&report);
    assert_eq!(prefs.len(), 12);
    let count = |p: &str| prefs.iter().filter(|(_, q, _)| q == p).count() as u64;
    let (wins, ties, losses) = (count("win"), count("tie"), count("loss"));
    assert_eq!((wins, ties, losses), (9, 1, 2), "{prefs:?}");
    let block = &report["aggregates"]["pairwise"]["preferred"];
    check_block(block, 12, wins, ties, losses, 0);
    // Per topic: the groups add up to the run.
    let topics = block["by_topic"].as_object().expect("by_topic");
    assert_eq!(topics.len(), 5);
    assert_eq!(topics.values().map(|g| u(g, "n")).sum::<u64>(), 12);
    check_block(&topics["sharing"], 3, 3, 0, 0, 0);
    // The items the baseline won carry the item gate's tag.
    let tagged = items(&report)
        .iter()
        .filter(|it| it["fail_tags"].to_string().contains("lost_to_baseline"))
        .count() as u64;
    assert_eq!(tagged, losses);
    let gate = report["gates"]["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["name"] == "min_win_rate.preferred")
        .expect("the win-rate gate")
        .clone();
    assert_eq!(gate["value"].as_f64(), Some(0.75));
    assert_eq!(gate["passed"], true);
    let summary = std::fs::read_to_string(out.join("summary.md")).expect("summary.md");
    assert!(summary.contains("## Pairwise Preference"), "{summary}");
    assert!(summary.contains("| all items | 12 | 75.0% |"), "{summary}");

    // The same run with a bar it does not reach fails with exit 1.
    let strict = suite_with_min_win_rate(dir.path(), 0.8);
    let out = dir.path().join("strict");
    let run = run_suite(
        &root().join(DATASET),
        &strict,
        &out,
        &["--judge", "heuristic"],
    );
    run.assert_code(1);
    let report = check_consistent(&out, &run).json;
    assert_eq!(report["gates"]["passed"], false);
    assert!(
        run.stdout.contains("min_win_rate.preferred"),
        "{}",
        run.stdout
    );
}

/// The bundled suite and dataset judged live by `fake`, 4 examples at a time: the report,
/// after checking the exit code and that the report files agree.
fn run_live(fake: &FakeServer, code: i32) -> Value {
    let dir = tempdir();
    let config = fake.config(dir.path(), &LiveConfig::default());
    let out = dir.path().join("out");
    let run = run_live_suite(
        SUITE,
        &root().join(DATASET),
        &config,
        &out,
        &fake.key,
        &["-j", "4"],
        &[],
    );
    run.assert_code(code);
    check_consistent(&out, &run).json
}

#[test]
fn live_judges_ask_twice_with_the_positions_swapped() {
    let fake = FakeServer::plain();
    let report = run_live(&fake, 0);
    // Two questions per item, nothing else.
    assert_eq!(u(&fake.stats(), "total"), 24, "{}", fake.stats());
    let want: Vec<(String, String, bool)> = records()
        .iter()
        .map(|r| {
            let text = |key: &str| r[key].as_str().unwrap();
            let p = fake_preference(text("answer"), text("baseline_answer"));
            (text("id").to_owned(), p.to_owned(), false)
        })
        .collect();
    assert_eq!(preferences(&report), want);
    let count = |p: &str| want.iter().filter(|(_, q, _)| q == p).count() as u64;
    let block = &report["aggregates"]["pairwise"]["preferred"];
    check_block(block, 12, count("win"), count("tie"), count("loss"), 0);
    let item = &items(&report)[0]["scores"]["preferred"];
    assert_eq!(item["pairwise"]["verdicts"], serde_json::json!(["A", "B"]));
    assert_eq!(
        item["judge"]["provider"], "anthropic",
        "gpt-4o's answers go to Claude"
    );
}

#[test]
fn a_judge_that_follows_the_position_ties_everything_and_fails_the_gate() {
    let fake = FakeServer::start(FakeProviderArgs {
        position_bias: 1.0,
        ..FakeProviderArgs::default()
    });
    let report = run_live(&fake, 1);
    for (id, preference, followed) in preferences(&report) {
        assert_eq!((preference.as_str(), followed), ("tie", true), "{id}");
    }
    let block = &report["aggregates"]["pairwise"]["preferred"];
    check_block(block, 12, 0, 12, 0, 12);
    assert_eq!(report["gates"]["passed"], false);
}

#[test]
fn batch_judges_send_the_two_questions_as_two_batch_lines() {
    let fake = FakeServer::start(FakeProviderArgs {
        batch_processing_ms: 300,
        ..FakeProviderArgs::default()
    });
    let dir = tempdir();
    let config = fake.config(
        dir.path(),
        &LiveConfig {
            extra: "  batch: {max_wait_s: 5, poll_s: 0.05, max_poll_s: 0.2}\n".into(),
            ..LiveConfig::default()
        },
    );
    let (live_out, batch_out) = (dir.path().join("live"), dir.path().join("batch"));
    let data = root().join(DATASET);
    let live = run_live_suite(SUITE, &data, &config, &live_out, &fake.key, &[], &[]);
    let batch = run_live_suite(
        SUITE,
        &data,
        &config,
        &batch_out,
        &fake.key,
        &["--judge-mode", "batch"],
        &[],
    );
    let (live, batch) = (
        check_consistent(&live_out, &live).json,
        check_consistent(&batch_out, &batch).json,
    );
    assert_eq!(preferences(&batch), preferences(&live));
    assert_eq!(
        batch["aggregates"]["pairwise"]["preferred"]["win_rate"],
        live["aggregates"]["pairwise"]["preferred"]["win_rate"]
    );
    let openai = fake.api_get("/v1/batches?limit=100");
    let anthropic = fake.api_get("/v1/messages/batches?limit=100");
    let requests: u64 = openai["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|b| u(&b["request_counts"], "total"))
        .chain(anthropic["data"].as_array().expect("data").iter().map(|b| {
            let c = &b["request_counts"];
            ["processing", "succeeded", "errored", "canceled", "expired"]
                .iter()
                .map(|k| u(c, k))
                .sum::<u64>()
        }))
        .sum();
    assert_eq!(requests, 24, "two batch lines per item");
}
