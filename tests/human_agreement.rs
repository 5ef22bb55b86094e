//! Judges measured against people, end to end through the `evalfleet` binary (issue 21): human
//! labels read from the dataset (`human_labels` on a suite extending support-judge, `human:` on
//! a custom suite's dimension, JSONL and CSV), carried to each result (`human` beside the
//! judge's score, a `<dimension>.human` column in items.parquet), folded into
//! `aggregates.human_agreement` — checked figure by figure against scikit-learn and scipy
//! through scripts/human_agreement_reference.py — gated by `run_gates.min_human_kappa`; and a
//! panel of both providers' judges giving `aggregates.self_preference`, recomputed here from the
//! items. The Python comes from EVALFLEET_SCIPY_PYTHON (`.ci/run` sets it) or
//! target/scipy-venv; without one the reference checks say so and are skipped, except under
//! CI=true.

mod common;

use std::path::Path;
use std::process::Command;

use common::fake::{run_live_suite, FakeServer, LiveConfig};
use common::{check_consistent, evalfleet, items, root, run_suite, tempdir};
use evalfleet_fake_provider::FakeProviderArgs;
use serde_json::{json, Value};

const LABELLED: &str = "examples/support-judge-labelled.jsonl";
const SUITE: &str = "config/suites/support-judge-human.yaml";

/// Runs the reference check on a report.json, unless no Python with scikit-learn is available
/// (then says so; a failure under CI=true).
fn check_against_reference(report: &Path) {
    let Some(py) = common::python_with("scipy, numpy, sklearn") else {
        common::available(
            "human_agreement",
            "a Python with scipy, numpy and scikit-learn",
            false,
            "python3 -m venv target/scipy-venv && target/scipy-venv/bin/pip install scipy numpy scikit-learn, or set EVALFLEET_SCIPY_PYTHON",
        );
        return;
    };
    let out = Command::new(py)
        .arg(root().join("scripts/human_agreement_reference.py"))
        .arg("report")
        .arg(report)
        .output()
        .expect("running the reference script");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains(" 0 mismatches"), "{stdout}");
}

#[test]
fn labelled_support_tickets_agree_with_scikit_learn_and_scipy() {
    let dir = tempdir();
    let out = dir.path().join("out");
    let run = run_suite(Path::new(LABELLED), SUITE, &out, &["--judge", "heuristic"]);
    let reports = check_consistent(&out, &run);
    run.assert_code(0);
    let json = &reports.json;
    let agreement = &json["aggregates"]["human_agreement"];
    assert_eq!(agreement["relevance"]["n"], 40);
    assert_eq!(
        agreement["tone"]["n"], 38,
        "two blank tone cells are not counted"
    );
    assert_eq!(
        agreement["tone"]["by_judge"]["heuristic/heuristic"]["n"],
        38
    );
    assert_eq!(
        json["aggregates"]["by_model"]["gpt-4o"]["human_agreement"]["relevance"]["n"],
        9
    );
    let first = &items(json)[0];
    assert_eq!(
        first["relevance"]["human"], 5,
        "the label beside the judge's score"
    );
    assert!(reports.summary.contains("## Human Agreement"));
    assert!(reports
        .html
        .contains("class=\"heatmap confusion\" data-dimension=\"relevance\""));
    check_against_reference(&out.join("report.json"));

    // items.parquet carries the labels as `<dimension>.human`.
    let export = evalfleet(&["export", out.to_str().unwrap(), "--format", "jsonl"]);
    export.assert_code(0);
    let rows: Vec<Value> = export
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 40);
    assert_eq!(rows[1]["relevance.human"], 1.0);
    assert_eq!(rows[14]["tone.human"], Value::Null, "a blank cell");
    assert_eq!(rows[14]["relevance.human"], 5.0);
}

#[test]
fn a_bad_label_is_skipped_and_min_human_kappa_fails_the_run() {
    let dir = tempdir();
    let mut text = std::fs::read_to_string(root().join(LABELLED)).unwrap();
    let mut bad: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    bad["id"] = json!("bad-label");
    bad["human_tone"] = json!("excellent");
    text.push_str(&format!("{bad}\n"));
    let dataset = dir.path().join("labelled.jsonl");
    std::fs::write(&dataset, text).unwrap();
    let suite = dir.path().join("strict.yaml");
    std::fs::write(
        &suite,
        "extends: support-judge\nhuman_labels: {relevance: human_relevance, tone: human_tone}\nrun_gates: {min_pass_rate: 0.5, min_human_kappa: 0.9}\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let run = run_suite(
        &dataset,
        suite.to_str().unwrap(),
        &out,
        &["--judge", "heuristic"],
    );
    let reports = check_consistent(&out, &run);
    run.assert_code(1);
    let json = &reports.json;
    assert_eq!(
        json["skipped"],
        json!([{"line": 41, "id": "bad-label",
                "reason": "'human_tone' must be a whole number from 1 to 5 (the human score of 'tone')"}])
    );
    let checks = json["gates"]["checks"].as_array().unwrap();
    for dim in ["relevance", "tone"] {
        let gate = checks
            .iter()
            .find(|c| c["name"] == format!("min_human_kappa.{dim}"))
            .unwrap_or_else(|| panic!("no gate for {dim}: {checks:?}"));
        assert_eq!(gate["passed"], false, "{gate}");
        assert_eq!(
            gate["value"],
            json["aggregates"]["human_agreement"][dim]["kappa_quadratic"]
        );
    }
    assert!(run.stdout.contains("min_human_kappa.tone"));

    // `validate` lists the bad label with its line.
    let validate = evalfleet(&[
        "validate",
        dataset.to_str().unwrap(),
        "--suite",
        suite.to_str().unwrap(),
    ]);
    validate.assert_code(1);
    assert!(validate.stdout.contains("human score of 'tone'"));

    // A typo in the suite names the key.
    std::fs::write(
        &suite,
        "extends: support-judge\nhuman_labels: {tones: human_tone}\n",
    )
    .unwrap();
    let bad_suite = run_suite(
        &dataset,
        suite.to_str().unwrap(),
        &out,
        &["--judge", "heuristic"],
    );
    bad_suite.assert_code(2);
    assert!(bad_suite
        .stderr
        .contains("human_labels: 'tones' is not a judge dimension of this suite"));
}

#[test]
fn a_custom_suite_reads_its_human_column_from_csv() {
    let dir = tempdir();
    let suite = dir.path().join("graded.yaml");
    std::fs::write(
        &suite,
        r#"name: graded
kind: custom
record:
  fields:
    question: {type: string, required: true}
    answer: {type: string, required: true}
    grade: {type: number, path: grader.score}
judge:
  dimensions:
    - name: on_topic
      scale: {min: 0, max: 4}
      rubric: "4: answers the question; 0: unrelated"
      template: "Question: {{ question }}\n\nAnswer: {{ answer }}"
      judged: [answer]
      human: grade
group_by:
  - {name: by_half, keys: [half]}
"#,
    )
    .unwrap();
    let words = [
        "deploy", "rollback", "cache", "index", "quota", "backup", "token", "queue",
    ];
    let mut csv = String::from("id,question,answer,grader.score,half\n");
    for i in 0..60usize {
        // The answer repeats i % 5 of the question's words: the heuristic's overlap, and so its
        // score, grows with it; the grader mostly agrees.
        let question = words.join(" ");
        let shared = (i % 5) * 2;
        let mut answer: Vec<&str> = words[..shared].to_vec();
        answer.extend(["unrelated", "filler", "text"].iter().take(5 - shared / 2));
        let grade = match i % 7 {
            0 => String::new(),
            1 => format!("{}", ((i % 5) + 1).min(4)),
            _ => format!("{}", i % 5),
        };
        csv.push_str(&format!(
            "c{i},{question},{},{grade},{}\n",
            answer.join(" "),
            if i < 30 { "first" } else { "second" }
        ));
    }
    let dataset = dir.path().join("graded.csv");
    std::fs::write(&dataset, csv).unwrap();
    let out = dir.path().join("out");
    let run = run_suite(
        &dataset,
        suite.to_str().unwrap(),
        &out,
        &["--judge", "heuristic"],
    );
    let reports = check_consistent(&out, &run);
    let json = &reports.json;
    let a = &json["aggregates"]["human_agreement"]["on_topic"];
    assert_eq!(a["n"], 60 - 9, "blank cells are not counted: {a}");
    assert_eq!(a["scale"], json!([0, 4]));
    assert_eq!(
        json["aggregates"]["by_half"]["first"]["human_agreement"]["on_topic"]["n"],
        25
    );
    check_against_reference(&out.join("report.json"));
}

#[test]
fn a_panel_of_both_providers_reports_self_preference_and_each_judge() {
    // Two fakes with different seeds, so the two judges disagree now and then.
    let fake = FakeServer::start(FakeProviderArgs {
        seed: 3,
        ..FakeProviderArgs::default()
    });
    let anthropic = FakeServer::start_keyed(
        FakeProviderArgs {
            seed: 4,
            ..FakeProviderArgs::default()
        },
        fake.key.clone(),
    );
    let dir = tempdir();
    let cfg = LiveConfig {
        panel: vec!["openai", "anthropic"],
        anthropic_at: Some(anthropic.addr),
        ..LiveConfig::default()
    };
    let config = fake.config(dir.path(), &cfg);
    let out = dir.path().join("out");
    let run = run_live_suite(
        SUITE,
        &root().join(LABELLED),
        &config,
        &out,
        &fake.key,
        &["-j", "8"],
        &[],
    );
    let reports = check_consistent(&out, &run);
    let json = &reports.json;
    let tone = &json["aggregates"]["human_agreement"]["tone"];
    let judges: Vec<&String> = tone["by_judge"].as_object().unwrap().keys().collect();
    assert_eq!(
        judges,
        ["anthropic/claude-sonnet-4-20250514", "openai/gpt-4o-mini"]
    );
    check_against_reference(&out.join("report.json"));

    // Self-preference recomputed from the items' panel verdicts.
    let sp = &json["aggregates"]["self_preference"];
    for dim in ["relevance", "tone"] {
        let mut own = Vec::new();
        let mut other = Vec::new();
        for item in items(json) {
            let answer = if item["model"].as_str().unwrap().starts_with("claude") {
                "anthropic"
            } else {
                "openai"
            };
            let panel = item[dim]["panel"].as_array().unwrap();
            let score = |p: &str| {
                panel
                    .iter()
                    .find(|v| v["judge"]["provider"] == p)
                    .and_then(|v| v["score"].as_f64())
            };
            let (Some(o), Some(a)) = (score("openai"), score("anthropic")) else {
                continue;
            };
            if answer == "openai" {
                own.push((o, a));
            } else {
                other.push((o, a));
            }
        }
        let mean = |v: &[(f64, f64)], f: fn(&(f64, f64)) -> f64| {
            v.iter().map(f).sum::<f64>() / v.len() as f64
        };
        let s = &sp["openai"][dim];
        assert_eq!(s["own"]["n"], own.len(), "{s}");
        assert_eq!(s["other"]["n"], other.len(), "{s}");
        let close = |got: &Value, want: f64| {
            assert!(
                (got.as_f64().unwrap() - want).abs() < 1e-9,
                "{dim}: {got} vs {want}: {s}"
            )
        };
        close(&s["own"]["mean"], mean(&own, |p| p.0));
        close(&s["other"]["mean"], mean(&other, |p| p.0));
        close(&s["other_judges"]["own"], mean(&own, |p| p.1));
        let excess = (mean(&own, |p| p.0) - mean(&other, |p| p.0))
            - (mean(&own, |p| p.1) - mean(&other, |p| p.1));
        close(&s["excess"], excess);
        let [lo, hi] = [
            s["ci95"][0].as_f64().unwrap(),
            s["ci95"][1].as_f64().unwrap(),
        ];
        assert!(lo <= excess && excess <= hi, "{s}");
        close(&sp["anthropic"][dim]["excess"], excess);
    }
    assert!(reports.summary.contains("## Self-Preference"));
    assert!(reports.html.contains("id=\"self-preference\""));
}
