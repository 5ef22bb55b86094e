//! End-to-end checks of the library on small hand-made reports in both item shapes.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::*;

/// Pretty-printed, so the flips' byte offsets are checked with whitespace around items (the
/// CLI tests read compact reports written by `run`).
fn write(dir: &Path, name: &str, report: &Value) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string_pretty(report).unwrap()).unwrap();
    path
}

/// A support-judge report in the seed shape.
fn seed_report(run: &str, rows: &[(&str, &str, Option<f64>, bool)]) -> Value {
    let results: Vec<Value> = rows
        .iter()
        .map(|(id, model, relevance, passed)| {
            json!({"id": id, "model": model, "prompt_version": "v1",
                   "relevance": relevance.map(|s| json!({"score": s, "reasoning": format!("because {id}"), "judge": {"provider": "h", "model": "h"}})),
                   "index": 0, "overall_score": relevance.map(|s| s / 5.0), "passed": passed, "fail_tags": []})
        })
        .collect();
    json!({"run": {"id": run}, "results": results, "skipped": [], "failed": [{"id": "broken", "index": 9}],
           "config": {"name": "support-judge", "kind": "support-judge",
                      "group_by": [{"name": "by_model", "keys": ["model"]}], "gates": []}})
}

#[test]
fn seed_shape_pairs_counts_and_gates() {
    let dir = tempfile::tempdir().unwrap();
    let mut base_rows = Vec::new();
    let mut new_rows = Vec::new();
    let ids: Vec<String> = (0..40).map(|i| format!("t{i:02}")).collect();
    for (i, id) in ids.iter().enumerate() {
        let model = if i % 2 == 0 { "a" } else { "b" };
        base_rows.push((id.as_str(), model, Some(5.0), true));
        // NEW: model b drops to 2 and fails; one item unscored.
        let new = if i == 3 {
            None
        } else if i % 2 == 1 {
            Some(2.0)
        } else {
            Some(5.0)
        };
        new_rows.push((id.as_str(), model, new, i % 2 == 0));
    }
    base_rows.push(("only-base", "a", Some(4.0), true));
    new_rows.push(("only-new", "a", Some(4.0), true));
    let base = write(dir.path(), "base.json", &seed_report("r1", &base_rows));
    let new = write(dir.path(), "new.json", &seed_report("r2", &new_rows));
    let c = compare(&base, &new, &Options::default()).unwrap();
    assert_eq!(c.pairing.paired, 40);
    assert_eq!(c.pairing.only_in_base, vec!["only-base"]);
    assert_eq!(c.pairing.only_in_new, vec!["only-new"]);
    // "broken" failed in both.
    assert_eq!(c.pairing.failed_in_base, vec!["broken"]);
    let rel = c
        .comparisons
        .iter()
        .find(|q| q.name == "relevance")
        .unwrap();
    assert_eq!((rel.n, rel.excluded_null), (39, 1));
    assert_eq!(rel.mean_base, Some(5.0));
    assert!((rel.delta.unwrap() - (-3.0 * 19.0 / 39.0)).abs() < 1e-12);
    assert!(rel.regressed && rel.test == "wilcoxon-pratt");
    let passed = c.comparisons.iter().find(|q| q.name == "passed").unwrap();
    assert_eq!(
        (passed.pass_to_fail, passed.fail_to_pass),
        (Some(20), Some(0))
    );
    assert_eq!(passed.test, "mcnemar-exact");
    assert!(passed.regressed);
    assert!(c.verdict.regressed);
    // Per group: model a did not move, model b did.
    let group = |g: &str| {
        c.groups
            .iter()
            .find(|q| q.name == "passed" && q.group.as_deref() == Some(g))
            .unwrap()
    };
    assert!(!group("a").regressed && group("b").regressed);
    assert_eq!(group("a").p_value, Some(1.0));
    // Flips carry both sides' reasoning.
    assert_eq!(c.flips.pass_to_fail.len(), 20);
    for f in &c.flips.pass_to_fail {
        let v = c.flips.view(f).unwrap();
        let want = format!("because {}", v.id);
        assert_eq!(
            v.base.scores["relevance"].reasoning.as_deref(),
            Some(want.as_str())
        );
        // t03 is unscored in NEW: no score, no reasoning.
        let new_reasoning = v.new.scores["relevance"].reasoning.as_deref();
        assert_eq!(new_reasoning, (v.id != "t03").then_some(want.as_str()));
    }
    let f = c.flips.view(&c.flips.pass_to_fail[0]).unwrap();
    assert_eq!(
        f.base.scores["relevance"].reasoning.as_deref(),
        Some(format!("because {}", f.id).as_str())
    );
    // Outputs.
    let out = dir.path().join("out");
    let paths = write_outputs(&out, &c).unwrap();
    assert_eq!(paths.len(), 4);
    let j: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("compare.json")).unwrap()).unwrap();
    for key in [
        "name",
        "kind",
        "n",
        "mean_base",
        "mean_new",
        "delta",
        "ci_low",
        "ci_high",
        "test",
        "p_value",
        "p_adjusted",
        "regressed",
    ] {
        assert!(j["comparisons"][0].get(key).is_some(), "{key}");
    }
    assert_eq!(j["groups"][0]["group"], "a");
    let md = std::fs::read_to_string(out.join("compare.md")).unwrap();
    assert!(
        md.starts_with("## ❌ evalfleet compare: REGRESSION in relevance, passed"),
        "{md}"
    );
    let junit = std::fs::read_to_string(out.join("junit.xml")).unwrap();
    assert_eq!(junit.matches("<testcase").count(), 2);
    assert_eq!(junit.matches("<failure").count(), 2);
}

/// The items shape, a lower-is-better metric, a max_drop override and identical reports.
fn items_report(values: &[(&str, f64, f64)], compare_section: Value) -> Value {
    let items: Vec<Value> = values
        .iter()
        .map(|(id, f1, violations)| {
            json!({"id": id, "outcome": "ok", "group": {"domain": "x"},
                   "metrics": {"answer_f1": f1, "constraint_violation_rate": violations, "note": "text"},
                   "scores": {}, "overall_score": f1, "passed": true, "fail_tags": []})
        })
        .collect();
    json!({"run": {"id": "r"}, "items": items, "config": {"name": "rag-layers", "kind": "rag-layers",
           "group_by": [{"name": "by_domain", "keys": ["domain"]}],
           "gates": [{"tag": "v", "metric": "constraint_violation_rate", "op": ">", "threshold": 0.5}],
           "compare": compare_section}})
}

#[test]
fn items_shape_direction_and_overrides() {
    let dir = tempfile::tempdir().unwrap();
    let ids: Vec<String> = (0..30).map(|i| format!("q{i}")).collect();
    let base: Vec<(&str, f64, f64)> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.as_str(), 0.8 + i as f64 * 1e-3, 0.1))
        .collect();
    // NEW: F1 a little lower everywhere (significant, but below the suite's max_drop), and
    // more violations (significant, lower is better → worse).
    let new: Vec<(&str, f64, f64)> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| {
            (
                id.as_str(),
                0.79 + i as f64 * 1e-3 - i as f64 * 1e-5,
                0.3 + i as f64 * 1e-3,
            )
        })
        .collect();
    let section = json!({"max_drop": {"answer_f1": 0.05}});
    let b = write(dir.path(), "b.json", &items_report(&base, section.clone()));
    let n = write(dir.path(), "n.json", &items_report(&new, section));
    let c = compare(&b, &n, &Options::default()).unwrap();
    let q = |name: &str| c.comparisons.iter().find(|q| q.name == name).unwrap();
    assert!(q("answer_f1").p_adjusted.unwrap() < 0.05 && !q("answer_f1").regressed);
    assert_eq!(q("answer_f1").max_drop, 0.05);
    assert!(!q("constraint_violation_rate").higher_is_better);
    assert!(q("constraint_violation_rate").regressed);
    assert_eq!(c.verdict.regressions, vec!["constraint_violation_rate"]);
    // Non-numeric metrics are not compared.
    assert!(c.comparisons.iter().all(|q| q.name != "note"));
    // A report compared with itself: nothing moves.
    let same = compare(&b, &b, &Options::default()).unwrap();
    assert!(!same.verdict.regressed);
    assert!(same.comparisons.iter().all(|q| q.delta == Some(0.0)));
}

#[test]
fn bad_inputs_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(
        dir.path(),
        "a.json",
        &items_report(&[("x", 1.0, 0.0)], json!({})),
    );
    let other = write(
        dir.path(),
        "o.json",
        &seed_report("r", &[("y", "m", Some(1.0), true)]),
    );
    let err = compare(&a, &other, &Options::default()).unwrap_err();
    assert!(matches!(err, CompareError::DifferentSuites { .. }), "{err}");
    let b = write(
        dir.path(),
        "b.json",
        &items_report(&[("z", 1.0, 0.0)], json!({})),
    );
    let err = compare(&a, &b, &Options::default()).unwrap_err();
    assert!(matches!(err, CompareError::NoCommonItems { .. }), "{err}");
    std::fs::write(
        dir.path().join("bad.json"),
        "{\"run\": {\"id\": \"r\"}, \"items\": [ {\"id\": 3,",
    )
    .unwrap();
    let err = compare(&dir.path().join("bad.json"), &a, &Options::default()).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("bad.json") && text.contains("line 1 column"),
        "{text}"
    );
    let unknown = write(
        dir.path(),
        "u.json",
        &items_report(&[("x", 1.0, 0.0)], json!({"max_drop": {"nope": 0.1}})),
    );
    let err = compare(&a, &unknown, &Options::default()).unwrap_err();
    assert!(err.to_string().contains("compare.max_drop.nope"), "{err}");
    let err = resolve("no-such-run", dir.path()).unwrap_err();
    assert!(err.to_string().contains("no-such-run"), "{err}");
    assert!(err.is_bad_input());
}

#[test]
fn human_agreement_changes_are_shown_not_gated() {
    let dir = tempfile::tempdir().unwrap();
    let rows: Vec<(String, &str, Option<f64>, bool)> = (0..10)
        .map(|i| (format!("t{i}"), "a", Some(4.0), true))
        .collect();
    let rows: Vec<(&str, &str, Option<f64>, bool)> = rows
        .iter()
        .map(|(i, m, s, p)| (i.as_str(), *m, *s, *p))
        .collect();
    let with_agreement = |run: &str, kappa: f64| {
        let mut r = seed_report(run, &rows);
        r["aggregates"] = json!({"by_model": {}, "human_agreement": {"relevance": {
            "n": 10, "kappa_quadratic": kappa, "spearman": 0.5, "exact": 0.4, "within_1": 0.9,
            "bias": 0.25, "scale": [1, 5], "confusion": [],
            "by_judge": {"openai/gpt": {"n": 10, "kappa_quadratic": kappa, "spearman": null,
                                         "exact": 0.4, "within_1": 0.9, "bias": 0.25}}}}});
        r
    };
    let base = write(dir.path(), "base.json", &with_agreement("r1", 0.8));
    let new = write(dir.path(), "new.json", &with_agreement("r2", 0.55));
    let c = compare(&base, &new, &Options::default()).unwrap();
    assert!(
        !c.verdict.regressed,
        "agreement with people is shown, not gated"
    );
    assert_eq!(c.human_agreement.len(), 2);
    let dim = &c.human_agreement[0];
    assert_eq!(
        (dim.dimension.as_str(), dim.judge.as_deref()),
        ("relevance", None)
    );
    assert!((dim.change.kappa_quadratic.unwrap() + 0.25).abs() < 1e-12);
    assert_eq!(dim.change.spearman, Some(0.0));
    assert_eq!(c.human_agreement[1].judge.as_deref(), Some("openai/gpt"));
    assert_eq!(c.human_agreement[1].change.spearman, None);
    let out = tempfile::tempdir().unwrap();
    write_outputs(out.path(), &c).unwrap();
    let md = std::fs::read_to_string(out.path().join("compare.md")).unwrap();
    assert!(md.contains("**Agreement with people**"), "{md}");
    assert!(
        md.contains("| `relevance` | all judges | 10 → 10 | 0.8000 → 0.5500 (-0.2500) |"),
        "{md}"
    );
    let html = std::fs::read_to_string(out.path().join("compare.html")).unwrap();
    assert!(html.contains("<h2>Agreement with people</h2>"));
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("compare.json")).unwrap())
            .unwrap();
    assert_eq!(json["human_agreement"][0]["base"]["kappa_quadratic"], 0.8);
    // A report without human labels: no section.
    let plain = write(dir.path(), "plain.json", &seed_report("r3", &rows));
    let c = compare(&plain, &plain, &Options::default()).unwrap();
    assert!(c.human_agreement.is_empty());
}
