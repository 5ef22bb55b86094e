use serde_json::{json, Value};

use super::*;
use evalfleet_model::record::{Group, JudgeId, Metrics, Score, Scores};
use evalfleet_model::suite::SuiteKind;

pub(crate) fn support_record(
    index: u64,
    id: &str,
    model: &str,
    pv: &str,
    relevance: Option<f64>,
    tone: Option<f64>,
) -> ResultRecord {
    let score = |v: Option<f64>| match v {
        Some(v) => Score::scored(v, "r".into(), JudgeId::heuristic()),
        None => Score::unscored(JudgeId::heuristic(), "invalid reply".into()),
    };
    let mut rec = ResultRecord::skipped(
        "run",
        "support-judge",
        index,
        None,
        id.into(),
        String::new(),
    );
    rec.outcome = Outcome::Ok;
    rec.reason = None;
    rec.group = Group {
        model: Some(model.into()),
        prompt_version: Some(pv.into()),
        ..Group::default()
    };
    rec.scores = Scores(vec![
        ("relevance".into(), score(relevance)),
        ("tone".into(), score(tone)),
    ]);
    let suite = Suite::builtin(SuiteKind::SupportJudge);
    rec.fail_tags = evalfleet_model::gate::fail_tags(&suite.gates, &|m| rec.value(m), &|_| None);
    rec.passed = rec.fail_tags.is_empty();
    rec
}

/// The seed's own run (seed-data/eval-harness/output.json) folded by our aggregator gives the
/// seed's aggregates.
#[test]
fn seed_output_aggregates_are_reproduced() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/seed-data/eval-harness/output.json"
    );
    let seed: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let suite = Suite::builtin(SuiteKind::SupportJudge);
    let mut agg = RunAggregator::new(&suite);
    for (i, r) in seed["results"].as_array().unwrap().iter().enumerate() {
        let rec = support_record(
            i as u64,
            r["id"].as_str().unwrap(),
            r["model"].as_str().unwrap(),
            r["prompt_version"].as_str().unwrap(),
            r["relevance"]["score"].as_f64(),
            r["tone"]["score"].as_f64(),
        );
        agg.observe(&rec);
    }
    let want = &seed["aggregates"];
    for (slot, grouping) in suite.group_by.iter().enumerate() {
        for (key, g) in agg.groups(slot) {
            let seed_group = &want[&grouping.name][crate::group_key(&key)];
            assert_eq!(
                json!(g.ok),
                seed_group["count"],
                "{} {key:?}",
                grouping.name
            );
            for (d, dim) in ["relevance", "tone"].iter().enumerate() {
                let s = g.scores[d].summary();
                assert_eq!(s.mean, seed_group[dim]["mean"].as_f64());
                assert_eq!(s.min, seed_group[dim]["min"].as_f64());
                assert_eq!(s.max, seed_group[dim]["max"].as_f64());
            }
        }
        assert_eq!(
            agg.groups(slot).len(),
            want[&grouping.name].as_object().unwrap().len()
        );
    }
}

#[test]
fn counts_outcomes_unscored_and_tags_independent_of_order() {
    let suite = Suite::builtin(SuiteKind::SupportJudge);
    let mut recs = vec![
        support_record(0, "a", "gpt-4o", "v1", Some(5.0), Some(5.0)),
        support_record(1, "b", "gpt-4o", "v1", Some(2.0), Some(1.0)),
        support_record(2, "c", "claude-x", "v2", None, Some(4.0)),
        support_record(3, "d", "claude-x", "v2", Some(1.0), Some(4.0)),
    ];
    let mut failed = ResultRecord::skipped(
        "run",
        "support-judge",
        4,
        None,
        "e".into(),
        "judge error: HTTP 500".into(),
    );
    failed.outcome = Outcome::Failed;
    recs.push(failed);
    recs.push(ResultRecord::skipped(
        "run",
        "support-judge",
        5,
        None,
        String::new(),
        "Item is not an object".into(),
    ));
    let fold = |recs: &[ResultRecord]| {
        let mut agg = RunAggregator::new(&suite);
        recs.iter().for_each(|r| agg.observe(r));
        agg
    };
    let agg = fold(&recs);
    assert_eq!(
        agg.totals,
        Totals {
            examples: 6,
            ok: 4,
            failed: 1,
            skipped: 1,
            unscored: 1
        }
    );
    assert_eq!(agg.all.total(), 5);
    assert_eq!(
        agg.all.passed, 2,
        "a and c pass (c's relevance is unscored, so not gated)"
    );
    assert_eq!(
        agg.top_fail_reasons(&suite),
        vec![("low_relevance".to_owned(), 2), ("poor_tone".to_owned(), 1)]
    );
    assert_eq!(agg.failure_reasons.get("judge error"), Some(&1));
    assert_eq!(
        agg.worst["low_relevance"]
            .iter()
            .map(|w| w.id.as_str())
            .collect::<Vec<_>>(),
        ["b", "d"]
    );
    let mut reversed = recs.clone();
    reversed.reverse();
    let agg2 = fold(&reversed);
    for i in 0..suite.group_by.len() {
        assert_eq!(agg2.groups(i), agg.groups(i));
    }
    assert_eq!(agg2.worst, agg.worst);
    let unscored_rate = agg.unscored_rate().unwrap();
    assert!((unscored_rate - 1.0 / 8.0).abs() < 1e-12);
}

#[test]
fn run_gates_compare_pass_rate_and_unscored_rate() {
    let mut suite = Suite::builtin(SuiteKind::SupportJudge);
    suite.run_gates.min_pass_rate = 0.5;
    suite.run_gates.max_unscored_rate = 0.0;
    let mut agg = RunAggregator::new(&suite);
    agg.observe(&support_record(
        0,
        "a",
        "gpt-4o",
        "v1",
        Some(5.0),
        Some(5.0),
    ));
    agg.observe(&support_record(1, "b", "gpt-4o", "v1", Some(1.0), None));
    let checks = agg.run_gates(&suite);
    assert_eq!(checks[0].value, Some(0.5));
    assert!(checks[0].passed, "equal to the threshold passes");
    assert!(!checks[1].passed);
}

#[test]
fn metric_slots_follow_names_even_when_records_differ() {
    let suite = Suite::builtin(SuiteKind::LogAnalysis);
    let mut agg = RunAggregator::new(&suite);
    let mut rec = support_record(0, "a", "m", "p", None, None);
    rec.scores = Scores::default();
    rec.metrics = Metrics(vec![("x".into(), Some(1.0)), ("y".into(), None)]);
    agg.observe(&rec);
    rec.metrics = Metrics(vec![("y".into(), Some(0.5)), ("x".into(), Some(0.0))]);
    agg.observe(&rec);
    assert_eq!(agg.metric_names(), ["x", "y"]);
    assert_eq!(agg.all.metric(0).mean, Some(0.5));
    assert_eq!(agg.all.metric(1).mean, Some(0.5));
    assert_eq!(agg.all.metric(1).count, 1);
}
