//! `evalfleet run` end to end on the bundled examples and the seed data: the four report files
//! exist and agree with each other (report.json totals, summary.md, junit.xml), items keep dataset
//! order, the exit code follows the run gates, and the suite-specific parts of report.json have
//! the shape docs/DESIGN.md §2.1–2.4 and §9 promise. `evalfleet validate` accepts the bundled datasets.

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use common::{
    check_consistent, count_jsonl_records, evalfleet, items, root, run_suite, tempdir, u,
};
use serde_json::Value;

/// The 14 `by_layer` keys of docs/DESIGN.md §9.
const LAYER_KEYS: [&str; 14] = [
    "l1_entity_link_f1",
    "l1_concept_map_f1",
    "l1_constraint_extraction_f1",
    "l2_context_recall",
    "l2_context_precision",
    "l2_mrr",
    "l3_hits_at_k",
    "l3_kg_edge_f1",
    "l4_constraint_violation_rate",
    "l4_type_consistency_rate",
    "l5_exact_match",
    "l5_answer_f1",
    "l5_groundedness",
    "l5_relevance",
];

/// The rag-layers gate tags in gate order (docs/DESIGN.md §2.2): the tie-break of `top_fail_reasons`.
const RAG_GATE_ORDER: [&str; 10] = [
    "L1_mapping_fail",
    "L1_concept_fail",
    "L2_doc_retrieval_fail",
    "L3_kg_fail",
    "L3_edge_fail",
    "L4_constraint_violation",
    "L4_type_inconsistency",
    "L5_wrong_answer",
    "L5_grounding_fail",
    "L5_relevance_fail",
];

const SEED_EXAMPLES: &str = "tests/fixtures/seed-data/eval-harness/examples.json";
const LANEIGE: &str =
    "tests/fixtures/seed-data/AMORE-PACIFIC-RAG-KG-HYBRID-AGENT-/laneige_golden_v2.jsonl";

/// Runs `dataset` (relative to the crate root) and returns the consistent reports.
fn run_checked(dataset: &str, suite: &str, extra: &[&str]) -> (common::Reports, tempfile::TempDir) {
    let dir = tempdir();
    let out = dir.path().join("out");
    let exit = run_suite(Path::new(dataset), suite, &out, extra);
    exit.assert_no_panic();
    let reports = check_consistent(&out, &exit);
    (reports, dir)
}

/// Runs a bundled example and checks it accounts for every record of the file.
fn run_bundled(suite: &str) -> common::Reports {
    let dataset = format!("examples/{suite}.jsonl");
    let (reports, _dir) = run_checked(&dataset, suite, &[]);
    let t = &reports.json["totals"];
    assert_eq!(
        u(t, "examples"),
        count_jsonl_records(&root().join(&dataset)),
        "{suite}: records of the file"
    );
    assert_eq!(u(t, "skipped"), 0, "{suite}: the bundled example is valid");
    assert_eq!(u(t, "failed"), 0, "{suite}: nothing fails offline");
    assert_eq!(reports.json["run"]["suite"], suite);
    reports
}

#[test]
fn support_judge_bundled_reports_agree() {
    let r = run_bundled("support-judge");
    for item in items(&r.json) {
        for dim in ["relevance", "tone"] {
            let score = item[dim]["score"]
                .as_u64()
                .unwrap_or_else(|| panic!("{dim} score in {item}"));
            assert!((1..=5).contains(&score), "{dim} score {score} outside 1..5");
        }
    }
    let by_model = r.json["aggregates"]["by_model"]
        .as_object()
        .expect("aggregates.by_model");
    let count: u64 = by_model.values().map(|g| u(g, "count")).sum();
    assert_eq!(
        count,
        u(&r.json["totals"], "ok"),
        "by_model counts add up to the ok examples"
    );
}

#[test]
fn rag_layers_bundled_reports_agree() {
    let r = run_bundled("rag-layers");
    let agg = &r.json["aggregates"];
    let by_layer = agg["by_layer"].as_object().expect("aggregates.by_layer");
    let keys: BTreeSet<&str> = by_layer.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        LAYER_KEYS.into_iter().collect::<BTreeSet<_>>(),
        "by_layer keys"
    );
    for (key, value) in by_layer {
        let v = value
            .as_f64()
            .unwrap_or_else(|| panic!("{key} = {value}: the bundled traces have every metric"));
        assert!((0.0..=1.0).contains(&v), "{key} = {v} is not a fraction");
    }
    check_top_fail_reasons(&r.json);
    let (total, passed) = (u(agg, "total"), u(agg, "passed"));
    assert_eq!(
        total,
        u(&r.json["totals"], "ok") + u(&r.json["totals"], "failed")
    );
    assert_eq!(u(agg, "failed"), total - passed);
}

/// `top_fail_reasons` counts equal the items' fail tags, descending, ties in gate order.
fn check_top_fail_reasons(report: &Value) {
    let reasons = report["aggregates"]["top_fail_reasons"]
        .as_object()
        .expect("top_fail_reasons");
    assert!(
        !reasons.is_empty(),
        "some item fails a gate in this dataset"
    );
    let listed: Vec<(&str, u64)> = reasons
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_u64().expect("a count")))
        .collect();
    for pair in listed.windows(2) {
        let ((a, na), (b, nb)) = (pair[0], pair[1]);
        assert!(
            na >= nb,
            "top_fail_reasons not descending: {a}={na} before {b}={nb}"
        );
        if na == nb {
            let pos = |t: &str| {
                RAG_GATE_ORDER
                    .iter()
                    .position(|g| *g == t)
                    .unwrap_or(usize::MAX)
            };
            assert!(pos(a) < pos(b), "tie {a}/{b} ({na}) is not in gate order");
        }
    }
    for (tag, n) in &listed {
        let counted = items(report)
            .iter()
            .filter(|i| {
                i["fail_tags"]
                    .as_array()
                    .is_some_and(|t| t.iter().any(|x| x == tag))
            })
            .count();
        assert_eq!(
            counted as u64, *n,
            "top_fail_reasons[{tag}] vs items carrying the tag"
        );
    }
}

#[test]
fn log_analysis_bundled_reports_agree_and_carry_method_used() {
    let r = run_bundled("log-analysis");
    let list = items(&r.json);
    assert!(!list.is_empty());
    for item in list {
        let method = item["method_used"]
            .as_object()
            .unwrap_or_else(|| panic!("no method_used in {}", item["id"]));
        for key in ["events", "timeline", "metrics"] {
            let m = method
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_else(|| panic!("method_used.{key} in {}", item["id"]));
            assert!(
                ["structured", "freeform", "none"].contains(&m),
                "method_used.{key} = {m}"
            );
        }
    }
}

#[test]
fn support_judge_seed_array_runs_end_to_end() {
    let (r, _dir) = run_checked(SEED_EXAMPLES, "support-judge", &[]);
    let results = items(&r.json);
    let ids: Vec<&str> = results
        .iter()
        .map(|x| x["id"].as_str().expect("id"))
        .collect();
    assert_eq!(ids, ["ticket-001", "ticket-002", "ticket-003"]);
    for res in results {
        for dim in ["relevance", "tone"] {
            let d = &res[dim];
            let score = d["score"]
                .as_u64()
                .unwrap_or_else(|| panic!("{dim}.score of {} is not an integer: {d}", res["id"]));
            assert!((1..=5).contains(&score), "{dim}.score = {score}");
            assert!(
                d["reasoning"]
                    .as_str()
                    .is_some_and(|s| !s.trim().is_empty()),
                "{dim}.reasoning: {d}"
            );
            assert_eq!(d["judge"]["provider"], "heuristic", "{dim}.judge: {d}");
        }
    }
    let agg = &r.json["aggregates"];
    let by_model = agg["by_model"].as_object().expect("by_model");
    let models: BTreeSet<&str> = by_model.keys().map(String::as_str).collect();
    assert_eq!(
        models,
        BTreeSet::from(["gpt-4o", "claude-sonnet-4-20250514"])
    );
    assert_eq!(u(&by_model["gpt-4o"], "count"), 2);
    assert_eq!(u(&by_model["claude-sonnet-4-20250514"], "count"), 1);
    let combined = agg["by_model_and_prompt_version"]
        .as_object()
        .expect("by_model_and_prompt_version");
    assert_eq!(
        u(&combined["gpt-4o|v1.0"], "count"),
        2,
        "composite key model|prompt_version"
    );
    assert!(
        agg["by_prompt_version"].get("v0.9").is_some(),
        "by_prompt_version has v0.9"
    );
}

/// The result list without wall-clock fields, which legitimately differ between runs.
fn without_timing(results: &Value) -> Value {
    let mut v = results.clone();
    for r in v.as_array_mut().expect("results") {
        r.as_object_mut()
            .expect("result object")
            .remove("latency_ms");
    }
    v
}

#[test]
fn support_judge_seed_run_is_deterministic() {
    let (a, _d1) = run_checked(SEED_EXAMPLES, "support-judge", &[]);
    let (b, _d2) = run_checked(SEED_EXAMPLES, "support-judge", &["--concurrency", "1"]);
    assert_eq!(
        without_timing(&a.json["results"]),
        without_timing(&b.json["results"])
    );
    assert_eq!(a.json["aggregates"], b.json["aggregates"]);
}

#[test]
fn judge_none_leaves_support_judge_unscored_and_passing() {
    let (r, _dir) = run_checked(
        "examples/support-judge.jsonl",
        "support-judge",
        &["--judge", "none"],
    );
    let results = items(&r.json);
    assert_eq!(
        results.len() as u64,
        u(&r.json["totals"], "examples"),
        "every example is ok"
    );
    for res in results {
        assert!(
            res["relevance"].is_null() && res["tone"].is_null(),
            "no judge ran, yet {res}"
        );
        assert_eq!(res["passed"], true, "{}", res["id"]);
    }
    assert_eq!(r.json["run"]["judge"], "none");
    assert_eq!(r.json["gates"]["passed"], true);
}

#[test]
fn rag_layers_gold_items_without_traces_all_load() {
    let (r, _dir) = run_checked(LANEIGE, "rag-layers", &[]);
    let t = &r.json["totals"];
    assert_eq!(
        (u(t, "examples"), u(t, "ok"), u(t, "skipped")),
        (160, 160, 0)
    );
    assert_eq!(items(&r.json).len(), 160);
    let keys: BTreeSet<&str> = r.json["aggregates"]["by_layer"]
        .as_object()
        .expect("by_layer")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, LAYER_KEYS.into_iter().collect::<BTreeSet<_>>());
    check_top_fail_reasons(&r.json);
}

#[test]
fn validate_accepts_the_bundled_datasets() {
    for suite in ["support-judge", "rag-layers", "log-analysis"] {
        let dataset = format!("examples/{suite}.jsonl");
        let n = count_jsonl_records(&root().join(&dataset));
        let out = evalfleet(&["validate", &dataset, "--suite", suite]);
        out.assert_code(0);
        assert!(
            out.stdout.contains(&format!("{n} valid, 0 invalid")),
            "{suite}: {}",
            out.stdout
        );
    }
}
