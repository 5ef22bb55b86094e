use serde_json::Value;

use super::*;
use crate::aggregate::tests_support::support_record;
use evalfleet_model::record::Outcome;
use evalfleet_model::suite::SuiteKind;

fn info() -> RunInfo {
    RunInfo {
        id: "run-1".into(),
        suite: "support-judge".into(),
        dataset: "d.json".into(),
        judge: evalfleet_suites::spec::JudgeMode::Heuristic,
        started_at: "2026-11-23T00:00:00Z".into(),
        finished_at: "2026-11-23T00:00:01Z".into(),
        duration_seconds: 1.0,
    }
}

fn render_all(suite: &Suite, recs: Vec<ResultRecord>) -> (Value, String, String, String) {
    let mut agg = RunAggregator::new(suite);
    recs.iter().for_each(|r| agg.observe(r));
    let info = info();
    let input = ReportInput {
        info: &info,
        suite,
        agg: &agg,
        items: &recs,
        inline_items: 100_000,
        items_ahead: None,
    };
    let json: Value = serde_json::from_str(&render(ReportFile::Json, &input).unwrap()).unwrap();
    (
        json,
        render(ReportFile::Summary, &input).unwrap(),
        render(ReportFile::Junit, &input).unwrap(),
        render(ReportFile::Html, &input).unwrap(),
    )
}

#[test]
fn support_report_has_the_seed_shape_and_half_even_means() {
    let suite = Suite::builtin(SuiteKind::SupportJudge);
    // 40 relevance scores summing to 107: mean 2.675, which Python's round gives as 2.67.
    let mut recs: Vec<ResultRecord> = (0..40)
        .map(|i| {
            let r = if i < 27 { 3.0 } else { 2.0 };
            support_record(i, &format!("t{i}"), "gpt-4o", "v1.0", Some(r), Some(5.0))
        })
        .collect();
    recs.push(ResultRecord::skipped(
        "run-1",
        "support-judge",
        40,
        None,
        String::new(),
        "Missing 'ticket' field".into(),
    ));
    let (json, md, junit, _) = render_all(&suite, recs);
    let g = &json["aggregates"]["by_model"]["gpt-4o"];
    assert_eq!(g["count"], 40);
    assert_eq!(g["relevance"]["mean"], 2.67);
    assert_eq!(g["relevance"]["mean_exact"], 2.675);
    assert_eq!(g["relevance"]["min"], serde_json::json!(2));
    assert_eq!(g["relevance"]["max"], serde_json::json!(3));
    assert!(json["aggregates"]["by_model_and_prompt_version"]["gpt-4o|v1.0"].is_object());
    let first = &json["results"][0];
    assert_eq!(first["id"], "t0");
    assert_eq!(first["relevance"]["score"], serde_json::json!(3));
    assert_eq!(first["relevance"]["judge"]["provider"], "heuristic");
    assert_eq!(
        json["skipped"][0],
        serde_json::json!({"index": 40, "reason": "Missing 'ticket' field"})
    );
    assert_eq!(json["totals"]["examples"], 41);
    assert_eq!(json["totals"]["skipped"], 1);
    assert!(md.contains("| relevance | 2.67 |"), "{md}");
    assert!(
        junit.contains("tests=\"41\" failures=\"13\" errors=\"0\" skipped=\"1\""),
        "{junit}"
    );
}

#[test]
fn numbers_agree_across_json_markdown_and_junit() {
    let suite = Suite::builtin(SuiteKind::SupportJudge);
    let mut recs = vec![
        support_record(0, "a", "gpt-4o", "v1", Some(5.0), Some(5.0)),
        support_record(1, "b<&>", "claude-x", "v1", Some(1.0), Some(2.0)),
        support_record(2, "c", "claude-x", "v2", Some(4.0), Some(4.0)),
    ];
    let mut failed = ResultRecord::skipped(
        "run-1",
        "support-judge",
        3,
        None,
        "d".into(),
        "budget exhausted".into(),
    );
    failed.outcome = Outcome::Failed;
    recs.push(failed);
    recs.push(ResultRecord::skipped(
        "run-1",
        "support-judge",
        4,
        Some(9),
        String::new(),
        "invalid JSON".into(),
    ));
    let (json, md, junit, html) = render_all(&suite, recs);
    assert_eq!(
        json["totals"],
        serde_json::json!({"examples": 5, "ok": 3, "failed": 1, "skipped": 1, "unscored": 0})
    );
    assert_eq!(json["failed"][0]["reason"], "budget exhausted");
    assert_eq!(
        json["skipped"][0],
        serde_json::json!({"line": 9, "reason": "invalid JSON"})
    );
    assert!(
        md.contains("| Examples | 5 (ok 3, failed 1, skipped 1) |"),
        "{md}"
    );
    assert!(md.contains("| Passed | 2 of 4 (50.0%) |"), "{md}");
    // The items, then the run gates and the groups as test cases.
    assert!(
        junit.contains(
            "<testsuite name=\"support-judge\" id=\"run-1\" tests=\"5\" failures=\"1\" errors=\"1\" skipped=\"1\""
        ),
        "{junit}"
    );
    let items = &junit[..junit.find("</testsuite>").unwrap()];
    assert_eq!(items.matches("<testcase ").count(), 5);
    assert!(junit.contains(
        "<testcase classname=\"support-judge.run_gates\" name=\"min_pass_rate\" time=\"0.000\">\n      <failure type=\"run_gate\" message=\"min_pass_rate = 0.5000 (threshold 0.75)\">"
    ), "{junit}");
    assert!(
        junit.contains(
            "<testcase classname=\"support-judge.by_model\" name=\"model=gpt-4o\" time=\"0.000\"/>"
        ),
        "{junit}"
    );
    assert!(junit.contains("<failure type=\"group\" message=\"pass rate 0.5000 below min_pass_rate 0.75 (1 of 2 passed)\">"));
    assert!(junit.contains("name=\"b&lt;&amp;&gt;\""));
    assert!(junit.contains("<failure type=\"gate\" message=\"low_relevance, poor_tone\">"));
    assert_eq!(json["aggregates"]["overall"]["passed"], 2);
    assert!(
        html.starts_with("<!DOCTYPE html>")
            && html.contains("<svg")
            && !html.contains("http://")
            && !html.contains("https://")
    );
    assert!(!html.contains("b<&>"), "ids are escaped in HTML");
}

#[test]
fn recommendations_never_fire_on_absent_scores() {
    let suite = Suite::builtin(SuiteKind::SupportJudge);
    // `--judge none`: no scores at all, so no gate can trip and nothing is recommended.
    let recs: Vec<ResultRecord> = (0..3)
        .map(|i| {
            let mut r = support_record(i, &format!("t{i}"), "gpt-4o", "v1", None, None);
            r.scores = evalfleet_model::record::Scores::default();
            r
        })
        .collect();
    let mut agg = RunAggregator::new(&suite);
    recs.iter().for_each(|r| agg.observe(r));
    assert_eq!(agg.all.passed, 3);
    assert!(recommendations(&suite, &agg).is_empty());
    // One real low score does fire exactly one recommendation, naming its tag.
    agg.observe(&support_record(
        3,
        "t3",
        "gpt-4o",
        "v1",
        Some(1.0),
        Some(5.0),
    ));
    let recs = recommendations(&suite, &agg);
    assert_eq!(recs.len(), 1);
    assert!(
        recs[0].starts_with("low_relevance (1 of 4 items"),
        "{recs:?}"
    );
}

#[test]
fn report_json_lists_every_outcome_in_dataset_order_from_one_pass() {
    let suite = Suite::builtin(SuiteKind::SupportJudge);
    let mut recs = Vec::new();
    for i in 0..9u64 {
        let id = format!("e{i}");
        recs.push(match i % 3 {
            0 => support_record(i, &id, "gpt-4o", "v1", Some(4.0), Some(4.0)),
            1 => ResultRecord::skipped("run-1", "support-judge", i, Some(i + 1), id, "bad".into()),
            _ => {
                let mut r =
                    ResultRecord::skipped("run-1", "support-judge", i, None, id, "429".into());
                r.outcome = Outcome::Failed;
                r
            }
        });
    }
    let (json, ..) = render_all(&suite, recs);
    let ids = |key: &str| -> Vec<String> {
        json[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(ids("results"), ["e0", "e3", "e6"]);
    assert_eq!(ids("skipped"), ["e1", "e4", "e7"]);
    assert_eq!(ids("failed"), ["e2", "e5", "e8"]);
    assert_eq!(
        json["skipped"][1],
        serde_json::json!({"line": 5, "reason": "bad", "id": "e4"})
    );
}

#[test]
fn a_large_runs_junit_lists_only_a_bounded_number_of_items_that_did_not_pass() {
    let suite = Suite::builtin(SuiteKind::SupportJudge);
    let n = junit::MAX_ITEM_CASES + 30;
    // Every third item fails its relevance gate; the rest pass.
    let recs: Vec<ResultRecord> = (0..n)
        .map(|i| {
            let r = if i.is_multiple_of(3) { 1.0 } else { 5.0 };
            support_record(i, &format!("t{i}"), "gpt-4o", "v1.0", Some(r), Some(5.0))
        })
        .collect();
    let not_passing = recs.iter().filter(|r| !r.passed).count() as u64;
    assert!(
        not_passing < junit::MAX_ITEM_CASES,
        "fewer than the bound: every one listed"
    );
    let (_, _, junit, _) = render_all(&suite, recs);
    let items = &junit[..junit.find("</testsuite>").unwrap()];
    assert_eq!(items.matches("<testcase ").count() as u64, not_passing);
    assert!(
        !items.contains("name=\"t1\""),
        "a passing item is not listed"
    );
    assert!(!junit.contains("more items that did not pass"));

    // More items that did not pass than the bound: the first ones, and a case for the rest.
    let recs: Vec<ResultRecord> = (0..n)
        .map(|i| support_record(i, &format!("t{i}"), "gpt-4o", "v1.0", Some(1.0), Some(5.0)))
        .collect();
    let (_, _, junit, _) = render_all(&suite, recs);
    let items = &junit[..junit.find("</testsuite>").unwrap()];
    assert_eq!(
        items.matches("<testcase ").count() as u64,
        junit::MAX_ITEM_CASES + 1
    );
    assert!(items.contains(&format!("name=\"t{}\"", junit::MAX_ITEM_CASES - 1)));
    assert!(!items.contains(&format!("name=\"t{}\"", junit::MAX_ITEM_CASES)));
    assert!(
        items.contains("message=\"30 more items did not pass"),
        "the rest are counted"
    );
}

/// The items `report.html` embeds.
fn embedded_items(html: &str) -> Vec<Value> {
    let start = html.find("id=\"items\">").unwrap() + "id=\"items\">".len();
    let end = start + html[start..].find("</script>").unwrap();
    serde_json::from_str(&html[start..end]).unwrap()
}

#[test]
fn a_large_runs_page_holds_the_worst_items_of_each_tag_and_an_even_sample() {
    let suite = Suite::builtin(SuiteKind::SupportJudge);
    let n = viewer::EMBEDDED_ITEMS * 3 + 7;
    // Items 1000, 1001, 1002 (not on any stride) fail their relevance gate.
    let recs: Vec<ResultRecord> = (0..n)
        .map(|i| {
            let r = if (1000..1003).contains(&i) { 1.0 } else { 5.0 };
            support_record(i, &format!("t{i}"), "gpt-4o", "v1.0", Some(r), Some(5.0))
        })
        .collect();
    let (_, _, _, html) = render_all(&suite, recs);
    let held = embedded_items(&html);
    assert!(
        held.len() as u64 <= viewer::EMBEDDED_ITEMS,
        "{}",
        held.len()
    );
    assert!(
        held.len() as u64 > viewer::EMBEDDED_ITEMS * 9 / 10,
        "{}",
        held.len()
    );
    let indexes: Vec<u64> = held.iter().map(|i| i["index"].as_u64().unwrap()).collect();
    for worst in 1000..1003 {
        assert!(indexes.contains(&worst), "the worst item {worst} is held");
    }
    assert!(indexes.windows(2).all(|w| w[0] < w[1]), "in dataset order");
    assert!(
        *indexes.last().unwrap() > n - 10,
        "the sample spans the run"
    );
    assert!(html.contains(&format!(
        "of the run's {n} items: the worst items of each failure tag"
    )));
    assert!(html.len() < 20 << 20);
}

#[test]
fn a_page_never_holds_more_than_its_bytes_of_items() {
    let suite = Suite::builtin(SuiteKind::SupportJudge);
    // 2,000 items of 10 KB each: 20 MB of items, more than the page takes.
    let recs: Vec<ResultRecord> = (0..2000u64)
        .map(|i| {
            let mut r = support_record(i, &format!("t{i}"), "gpt-4o", "v1.0", Some(5.0), Some(5.0));
            r.details.insert(
                "inputs".into(),
                serde_json::json!({"response": "x".repeat(10_000)}),
            );
            r
        })
        .collect();
    let (_, _, _, html) = render_all(&suite, recs);
    let held = embedded_items(&html).len();
    assert!((1000..2000).contains(&held), "{held}");
    assert!(
        html.len() < viewer::EMBEDDED_BYTES + (1 << 20),
        "{}",
        html.len()
    );
    assert!(html.contains(&format!(
        "This page holds {held} of the run's 2000 items: the first ones that fit"
    )));
}
