//! Pairwise preference against a baseline run (issue 21, part 4): a suite whose pairwise
//! `against` names the judged field itself compares each new answer with the baseline run's
//! answer of the same item, read from that run's `outputs.jsonl` by id. Two chat targets on
//! the fake provider answer the bundled pairwise-support questions (the old one sees only the
//! question, the new one the help-center context too); the live judge (the fake, which prefers
//! the answer with more distinct words) must see both answers, in both positions, for every
//! item the baseline answered. Through `run` and through the fleet on the real RabbitMQ and
//! Redis, whose report must equal the embedded run's.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::fake::targets::{arg, Case};
use common::fake::{fake_preference, FakeServer, LiveConfig, KEY_ENV};
use common::fleet::embedded::submit_and_compare_with_embedded_with;
use common::fleet::Fleet;
use common::{check_consistent, items, root, u};
use serde_json::Value;

const SUITE: &str = "config/suites/pairwise-support.yaml";
const DATASET: &str = "examples/pairwise-support.jsonl";

/// The bundled pairwise suite, comparing `answer` with the baseline run's `answer`.
fn suite_against_the_baseline(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(root().join(SUITE)).expect("reading the suite");
    assert!(text.contains("pairwise: {against: baseline_answer}"));
    let text = text.replace(
        "pairwise: {against: baseline_answer}",
        "pairwise: {against: answer}",
    );
    let path = dir.join("against-run.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

/// A chat target on the fake writing `answer` from `prompt`.
fn chat_target(dir: &Path, name: &str, prompt: &str) -> PathBuf {
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(
        &path,
        format!(
            "name: {name}\nkind: chat\nprovider: openai\nmodel: gpt-4o-mini\n\
             prompt: \"{prompt}\"\nparams: {{temperature: 0}}\noutput: answer\n"
        ),
    )
    .unwrap();
    path
}

const OLD_PROMPT: &str = "{{ question }}";
const NEW_PROMPT: &str = "Answer from the help center. {{ context }} The user asks: {{ question }}";

/// The first `n` bundled records.
fn dataset(dir: &Path, n: usize) -> PathBuf {
    let text = std::fs::read_to_string(root().join(DATASET)).unwrap();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with('{'))
        .take(n)
        .collect();
    let path = dir.join(format!("first-{n}.jsonl"));
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

/// id → answer in a run's outputs.jsonl.
fn answers(run_dir: &Path) -> BTreeMap<String, String> {
    std::fs::read_to_string(run_dir.join("outputs.jsonl"))
        .expect("the run's outputs.jsonl")
        .lines()
        .map(|l| {
            let r: Value = serde_json::from_str(l).unwrap();
            (
                r["id"].as_str().unwrap().to_owned(),
                r["answer"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Checks every item of `report` against the two runs' answers: an item the baseline answered
/// has the preference the fake's rule gives; one it did not is unscored, saying why. Returns
/// the (wins, ties, losses).
fn check_items(report: &Value, base: &BTreeMap<String, String>) -> (u64, u64, u64) {
    let (mut wins, mut ties, mut losses) = (0, 0, 0);
    for item in items(report) {
        let id = item["id"].as_str().unwrap();
        let score = &item["scores"]["preferred"];
        let Some(old) = base.get(id) else {
            assert_eq!(score["score"], Value::Null, "{item}");
            assert_eq!(
                score["unscored"], "the baseline run has no 'answer' for this item",
                "{item}"
            );
            continue;
        };
        let new = item["outputs"]["answer"].as_str().expect("the new answer");
        assert_ne!(new, old, "the two targets answer differently: {item}");
        let want = fake_preference(new, old);
        match want {
            "win" => wins += 1,
            "loss" => losses += 1,
            _ => ties += 1,
        }
        assert_eq!(score["pairwise"]["preference"], want, "{id}: {item}");
    }
    (wins, ties, losses)
}

#[test]
fn a_run_is_compared_item_by_item_with_its_baseline_runs_answers() {
    let case = Case::with(FakeServer::plain());
    let dir = case.dir.path();
    let old = chat_target(dir, "old", OLD_PROMPT);
    let new = chat_target(dir, "new", NEW_PROMPT);
    // The baseline: the old target on the first 9 questions, with the suite as bundled.
    let base_dir = case.path("base");
    let base = case.run(
        &dataset(dir, 9),
        SUITE,
        &old,
        &base_dir,
        &["--judge", "heuristic"],
    );
    base.assert_no_panic();
    assert!(
        base.code == Some(0) || base.code == Some(1),
        "{}",
        base.stderr
    );
    let base_answers = answers(&base_dir);
    assert_eq!(base_answers.len(), 9);

    let suite = suite_against_the_baseline(dir);
    let suite = arg(&suite);
    let all = root().join(DATASET);
    // Without --baseline the suite cannot run, and says what it needs.
    let out = case.path("new");
    let run = case.run(&all, suite, &new, &out, &["--judge", "live"]);
    run.assert_code(2);
    assert!(
        run.stderr
            .contains("compares its 'answer' with a baseline run's")
            && run.stderr.contains("--baseline RUN"),
        "{}",
        run.stderr
    );
    // A baseline that is not a target run has no answers to compare with.
    let recorded = case.path("recorded");
    case.evalfleet(
        &[
            "run",
            &all.display().to_string(),
            "--suite",
            SUITE,
            "--judge",
            "heuristic",
            "--out",
            arg(&recorded),
        ],
        &[],
    )
    .assert_no_panic();
    let run = case.run(
        &all,
        suite,
        &new,
        &out,
        &["--judge", "live", "--baseline", arg(&recorded)],
    );
    run.assert_code(2);
    assert!(
        run.stderr.contains("has no outputs.jsonl") && run.stderr.contains("--target"),
        "{}",
        run.stderr
    );

    // The new target on all 12 questions against the baseline: 2 judge questions for each of
    // the 9 items the baseline answered, none for the other 3.
    let calls_before = u(&case.fake.stats(), "total");
    let run = case.run(
        &all,
        suite,
        &new,
        &out,
        &["--judge", "live", "--baseline", arg(&base_dir), "-j", "4"],
    );
    run.assert_no_panic();
    assert!(
        run.stderr.contains("baseline: 9 items' 'answer' from"),
        "{}",
        run.stderr
    );
    let report = check_consistent(&out, &run).json;
    assert_eq!(u(&report["totals"], "ok"), 12, "{}", report["totals"]);
    let calls = u(&case.fake.stats(), "total") - calls_before;
    assert_eq!(
        calls,
        12 + 2 * 9,
        "12 target calls and 2 judge questions an item"
    );
    let (wins, ties, losses) = check_items(&report, &base_answers);
    assert_eq!(wins + ties + losses, 9);
    assert!(wins > 0, "the answers with the context are the fuller ones");
    let block = &report["aggregates"]["pairwise"]["preferred"];
    assert_eq!(
        (
            u(block, "n"),
            u(block, "wins"),
            u(block, "ties"),
            u(block, "losses")
        ),
        (9, wins, ties, losses),
        "{block}"
    );
    // --baseline also compares the two reports, as it always has.
    assert!(out.join("compare/compare.json").is_file());
}

#[test]
fn the_fleet_compares_with_a_baseline_run_as_run_does() {
    let fake = FakeServer::plain();
    let mut fleet = Fleet::new(&LiveConfig::default().yaml(fake.addr));
    fleet.env.push((KEY_ENV.to_owned(), fake.key.clone()));
    fleet.worker("w1", 19831);
    fleet.worker("w2", 19832);
    fleet.aggregator("agg", 19839);
    let dir = fleet.dir.path().to_owned();
    let old = chat_target(&dir, "old", OLD_PROMPT);
    let new = chat_target(&dir, "new", NEW_PROMPT);
    let all = root().join(DATASET);
    let base_dir = dir.join("base");
    let base = fleet.run(
        &[
            "run",
            arg(&all),
            "--suite",
            SUITE,
            "--target",
            arg(&old),
            "--judge",
            "heuristic",
            "--out",
            arg(&base_dir),
        ],
        std::time::Duration::from_secs(60),
    );
    base.assert_no_panic();
    let base_answers = answers(&base_dir);
    assert_eq!(base_answers.len(), 12);
    let suite = suite_against_the_baseline(&dir);
    let run_id = format!("{}-pairwise-baseline", fleet.prefix);
    let flags = [
        "--suite",
        arg(&suite),
        "--target",
        arg(&new),
        "--judge",
        "live",
        "--baseline",
        arg(&base_dir),
        // The reports' own comparison must not decide the exit: the gates do.
        "--max-drop",
        "1",
    ];
    let (_, report) = submit_and_compare_with_embedded_with(&fleet, &all, &flags, &run_id);
    assert_eq!(u(&report["totals"], "ok"), 12, "{}", report["totals"]);
    let (wins, ties, losses) = check_items(&report, &base_answers);
    assert_eq!(wins + ties + losses, 12);
    assert_eq!(
        u(&report["aggregates"]["pairwise"]["preferred"], "n"),
        12,
        "{}",
        report["aggregates"]["pairwise"]
    );
}
