//! The report's judge-vs-people sections (issue 21): `aggregates.human_agreement` and
//! `aggregates.self_preference` in `report.json` (and each group's `human_agreement`), and
//! their tables in `summary.md` and `report.html` (the confusion matrices as heatmaps). Every
//! figure comes from the run's aggregates ([`crate::aggregate`]), never from the items.

use serde_json::{json, Map, Value};

use crate::aggregate::{GroupAcc, HumanAgreementSummary, RunAggregator};
use crate::heatmap;
use evalfleet_model::text::escape;

/// Confusion matrices wider than this many scale points are left out of summary.md (they stay
/// in report.json and the HTML heatmap).
const MARKDOWN_MATRIX_MAX: usize = 11;

/// `human_agreement` and `self_preference` of the whole run, when the run has them.
pub(crate) fn add_run_blocks(fields: &mut Map<String, Value>, agg: &RunAggregator) {
    if let Some(block) = human_block(agg, &agg.all) {
        fields.insert("human_agreement".into(), block);
    }
    if !agg.self_preference.is_empty() {
        fields.insert(
            "self_preference".into(),
            json!(agg.self_preference.summary(agg.dimensions())),
        );
    }
}

/// A group's `human_agreement`, when the suite names human labels.
pub(crate) fn add_group_block(block: &mut Value, agg: &RunAggregator, g: &GroupAcc) {
    if let (Some(v), Some(fields)) = (human_block(agg, g), block.as_object_mut()) {
        fields.insert("human_agreement".into(), v);
    }
}

fn human_block(agg: &RunAggregator, g: &GroupAcc) -> Option<Value> {
    if agg.human_dimensions().is_empty() {
        return None;
    }
    let block: Map<String, Value> = agg
        .human_agreement(g)
        .into_iter()
        .map(|(dim, s)| (dim, json!(s)))
        .collect();
    Some(Value::Object(block))
}

fn num(x: Option<f64>) -> String {
    x.map_or("–".into(), |x| format!("{x:.3}"))
}

fn pct(x: Option<f64>) -> String {
    x.map_or("–".into(), |x| format!("{:.1}%", x * 100.0))
}

fn signed(x: Option<f64>) -> String {
    x.map_or("–".into(), |x| format!("{x:+.2}"))
}

fn interval(ci: Option<[f64; 2]>) -> String {
    ci.map_or("–".into(), |[lo, hi]| format!("{lo:+.2} … {hi:+.2}"))
}

/// One row per dimension (its score: a panel's mean) and per judge of it; a dimension one
/// judge scored is one row, named after the judge (its figures are the dimension's).
fn rows(agg: &RunAggregator) -> Vec<(String, String, HumanAgreementSummary)> {
    let mut out = Vec::new();
    for (dim, s) in agg.human_agreement(&agg.all) {
        if s.by_judge.len() == 1 {
            let judge = s.by_judge.keys().next().cloned().unwrap_or_default();
            out.push((dim, judge, s));
            continue;
        }
        let judges: Vec<(String, HumanAgreementSummary)> = s
            .by_judge
            .iter()
            .map(|(j, js)| (j.clone(), js.clone()))
            .collect();
        let label = if judges.is_empty() {
            "–"
        } else {
            "panel mean"
        };
        out.push((dim.clone(), label.to_owned(), s));
        for (judge, js) in judges {
            out.push((dim.clone(), judge, js));
        }
    }
    out
}

/// `summary.md`'s "Human Agreement" and "Self-Preference" sections (nothing when the run has
/// neither).
pub(crate) fn markdown(out: &mut String, agg: &RunAggregator) {
    if !agg.human_dimensions().is_empty() {
        out.push_str("## Human Agreement\n\nThe judges against people's scores (the suite's human labels), on the rubric scale. Bias is the mean judge − human score.\n\n");
        out.push_str("| Dimension | Judge | n | Quadratic κ | Spearman | Exact | Within 1 | Bias |\n|---|---|---|---|---|---|---|---|\n");
        for (dim, judge, s) in rows(agg) {
            out.push_str(&format!(
                "| {dim} | {judge} | {} | {} | {} | {} | {} | {} |\n",
                s.n,
                num(s.kappa_quadratic),
                num(s.spearman),
                pct(s.exact),
                pct(s.within_1),
                signed(s.bias)
            ));
        }
        out.push('\n');
        for (dim, s) in agg.human_agreement(&agg.all) {
            if s.n == 0 || s.confusion.len() > MARKDOWN_MATRIX_MAX {
                continue;
            }
            out.push_str(&format!(
                "Confusion of {dim} (rows: human, columns: judge):\n\n| human \\ judge |"
            ));
            let labels: Vec<i64> = (s.scale[0]..=s.scale[1]).collect();
            for l in &labels {
                out.push_str(&format!(" {l} |"));
            }
            out.push_str("\n|---|");
            out.push_str(&"---|".repeat(labels.len()));
            out.push('\n');
            for (l, row) in labels.iter().zip(&s.confusion) {
                out.push_str(&format!("| **{l}** |"));
                for c in row {
                    out.push_str(&format!(" {c} |"));
                }
                out.push('\n');
            }
            out.push('\n');
        }
        groups_markdown(out, agg);
    }
    if !agg.self_preference.is_empty() {
        out.push_str("## Self-Preference\n\nEach judge provider's mean score of answers its own provider's models wrote and of the others', on the same items the other judges scored. Excess: the judge's own-minus-other difference beyond the other judges' difference (with a Welch 95% interval); with two providers it is the pair's combined self-preference, the same for both.\n\n");
        out.push_str("| Judge provider | Dimension | Own answers: n, mean | Others' answers: n, mean | Difference | Other judges' difference | Excess | 95% CI |\n|---|---|---|---|---|---|---|---|\n");
        for [provider, dim, own_n, own, other_n, other, difference, others, excess, ci] in
            self_preference_rows(agg)
        {
            out.push_str(&format!(
                "| {provider} | {dim} | {own_n}, {own} | {other_n}, {other} | {difference} | {others} | {excess} | {ci} |\n"
            ));
        }
        out.push('\n');
    }
}

/// Per grouping: each group's quadratic kappa (and n) per labelled dimension.
fn groups_markdown(out: &mut String, agg: &RunAggregator) {
    for (grouping, groups) in agg.grouped() {
        if groups.is_empty() {
            continue;
        }
        out.push_str(&format!(
            "Quadratic κ {} (n):\n\n| {} |",
            grouping.name.replace('_', " "),
            grouping.keys.join(" | ")
        ));
        for d in agg.human_dimensions() {
            out.push_str(&format!(" {d} |"));
        }
        out.push_str("\n|");
        out.push_str(&"---|".repeat(grouping.keys.len() + agg.human_dimensions().len()));
        out.push('\n');
        for (key, g) in groups {
            out.push_str(&format!("| {} |", key.join(" | ")));
            for (_, s) in agg.human_agreement(g) {
                out.push_str(&format!(" {} ({}) |", num(s.kappa_quadratic), s.n));
            }
            out.push('\n');
        }
        out.push('\n');
    }
}

/// `report.html`'s "Judges vs people" section: the agreement table, each dimension's
/// confusion matrix as a heatmap, and the self-preference table.
pub(crate) fn html(h: &mut String, agg: &RunAggregator) {
    if !agg.human_dimensions().is_empty() {
        h.push_str("<h2>Judges vs people</h2>\n<p class=\"meta\">The judges against people's scores (the suite's human labels), on the rubric scale. Bias is the mean judge − human score.</p>\n");
        h.push_str("<table id=\"human-agreement\"><tr><th>Dimension</th><th>Judge</th><th>n</th><th>Quadratic κ</th><th>Spearman</th><th>Exact</th><th>Within 1</th><th>Bias</th></tr>\n");
        for (dim, judge, s) in rows(agg) {
            h.push_str(&format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                escape(&dim),
                escape(&judge),
                s.n,
                num(s.kappa_quadratic),
                num(s.spearman),
                pct(s.exact),
                pct(s.within_1),
                signed(s.bias)
            ));
        }
        h.push_str("</table>\n<div class=\"heatmaps\">\n");
        for (dim, s) in agg.human_agreement(&agg.all) {
            heatmap::confusion(h, &dim, &s);
        }
        h.push_str("</div>\n");
    }
    if !agg.self_preference.is_empty() {
        h.push_str("<h2>Self-preference</h2>\n<p class=\"meta\">Each judge provider's mean score of answers its own provider's models wrote and of the others'. Excess: its own-minus-other difference beyond the other judges' difference on the same items, with a Welch 95% interval; with two providers it is the pair's combined self-preference.</p>\n");
        h.push_str("<table id=\"self-preference\"><tr><th>Judge provider</th><th>Dimension</th><th>Own answers (n)</th><th>Mean</th><th>Others' answers (n)</th><th>Mean</th><th>Difference</th><th>Other judges' difference</th><th>Excess</th><th>95% CI</th></tr>\n");
        for [provider, dim, own_n, own, other_n, other, difference, others, excess, ci] in
            self_preference_rows(agg)
        {
            let (provider, dim) = (escape(&provider), escape(&dim));
            h.push_str(&format!(
                "<tr><td>{provider}</td><td>{dim}</td><td>{own_n}</td><td>{own}</td><td>{other_n}</td><td>{other}</td><td>{difference}</td><td>{others}</td><td><b>{excess}</b></td><td>{ci}</td></tr>\n"
            ));
        }
        h.push_str("</table>\n");
    }
}

/// The self-preference table's rows, as summary.md and report.html show them: judge provider,
/// dimension, own answers' n and mean, others' n and mean, the difference, the other judges'
/// difference, the excess and its interval (text, not yet escaped).
fn self_preference_rows(agg: &RunAggregator) -> Vec<[String; 10]> {
    let mut rows = Vec::new();
    for (provider, dims) in agg.self_preference.summary(agg.dimensions()) {
        for (dim, s) in dims {
            rows.push([
                provider.clone(),
                dim,
                s.own.n.to_string(),
                num(s.own.mean),
                s.other.n.to_string(),
                num(s.other.mean),
                signed(s.difference),
                signed(s.other_judges.difference),
                signed(s.excess),
                interval(s.ci95),
            ]);
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use crate::aggregate::tests_support::support_record;
    use crate::{render, ReportFile, ReportInput, RunAggregator, RunInfo};
    use evalfleet_model::record::{JudgeId, PanelVerdict, ResultRecord};
    use evalfleet_suites::suite::Suite;

    fn suite(gate: &str) -> Suite {
        Suite::from_yaml(
            &format!("extends: support-judge\nhuman_labels: {{tone: human_tone}}\n{gate}"),
            "h.yaml",
        )
        .unwrap()
    }

    /// Item i: tone judged by an OpenAI and an Anthropic judge, a person's tone score, and the
    /// answer from `model`.
    fn record(
        i: u64,
        model: &str,
        openai: i64,
        anthropic: i64,
        human: Option<f64>,
    ) -> ResultRecord {
        let mut rec = support_record(i, &format!("t{i}"), model, "v1", Some(4.0), Some(0.0));
        let tone = &mut rec.scores.0[1].1;
        tone.score = Some((openai + anthropic) as f64 / 2.0);
        tone.human = human;
        tone.panel = [("openai", openai), ("anthropic", anthropic)]
            .into_iter()
            .map(|(p, s)| PanelVerdict {
                judge: JudgeId {
                    provider: p.into(),
                    model: format!("{p}-judge"),
                },
                score: Some(s),
                reasoning: String::new(),
            })
            .collect();
        rec.answer_provider = Some(
            if model.starts_with("gpt") {
                "openai"
            } else {
                "anthropic"
            }
            .into(),
        );
        rec
    }

    fn render_all(suite: &Suite, recs: &Vec<ResultRecord>) -> (Value, String, String, bool) {
        let mut agg = RunAggregator::new(suite);
        recs.iter().for_each(|r| agg.observe(r));
        let info = RunInfo {
            id: "run".into(),
            suite: suite.name.clone(),
            dataset: "d.jsonl".into(),
            judge: evalfleet_suites::spec::JudgeMode::Live,
            started_at: String::new(),
            finished_at: String::new(),
            duration_seconds: 0.0,
        };
        let input = ReportInput {
            info: &info,
            suite,
            agg: &agg,
            items: recs,
            inline_items: 100,
            items_ahead: None,
        };
        let json = serde_json::from_str(&render(ReportFile::Json, &input).unwrap()).unwrap();
        (
            json,
            render(ReportFile::Summary, &input).unwrap(),
            render(ReportFile::Html, &input).unwrap(),
            input.gates_passed(),
        )
    }

    fn records() -> Vec<ResultRecord> {
        vec![
            record(0, "gpt-4o", 5, 4, Some(5.0)),
            record(1, "gpt-4o", 4, 3, Some(3.0)),
            record(2, "claude-3", 2, 3, Some(2.0)),
            record(3, "claude-3", 3, 4, Some(4.0)),
            record(4, "claude-3", 4, 4, None),
        ]
    }

    #[test]
    fn report_json_has_human_agreement_by_judge_and_group_and_self_preference() {
        let (json, md, html, passed) = render_all(&suite(""), &records());
        let a = &json["aggregates"];
        let tone = &a["human_agreement"]["tone"];
        assert_eq!(tone["n"], 4, "the unlabelled item is not counted");
        assert_eq!(tone["scale"], serde_json::json!([1, 5]));
        // The panel means 4.5, 3.5, 2.5, 3.5 round half to even: 4, 4, 2, 4.
        assert_eq!(tone["confusion"][4][3], 1);
        assert_eq!(tone["confusion"][2][3], 1);
        assert_eq!(tone["exact"], 0.5);
        assert_eq!(tone["bias"], (-0.5 + 0.5 + 0.5 - 0.5) / 4.0);
        assert_eq!(tone["by_judge"]["openai/openai-judge"]["n"], 4);
        assert_eq!(tone["by_judge"]["anthropic/anthropic-judge"]["exact"], 0.5);
        assert!(tone["kappa_quadratic"].is_f64() && tone["spearman"].is_f64());
        assert!(
            a["human_agreement"].get("relevance").is_none(),
            "only labelled dimensions"
        );
        let by_model = &a["by_model"];
        assert_eq!(by_model["gpt-4o"]["human_agreement"]["tone"]["n"], 2);
        assert_eq!(by_model["claude-3"]["human_agreement"]["tone"]["n"], 2);
        assert_eq!(a["overall"]["human_agreement"]["tone"]["n"], 4);
        let sp = &a["self_preference"]["openai"]["tone"];
        assert_eq!(sp["own"]["n"], 2);
        assert_eq!(sp["other"]["n"], 3);
        assert_eq!(sp["own"]["mean"], 4.5);
        assert!(a["self_preference"]["anthropic"]["tone"]["excess"].is_f64());
        assert!(
            a["self_preference"]["openai"].get("relevance").is_none(),
            "relevance had no panel"
        );
        assert!(md.contains("## Human Agreement"), "{md}");
        assert!(md.contains("| tone | panel mean | 4 |"), "{md}");
        assert!(md.contains("| tone | openai/openai-judge | 4 |"), "{md}");
        assert!(md.contains("Confusion of tone (rows: human, columns: judge)"));
        assert!(md.contains("## Self-Preference"));
        assert!(html.contains("<h2>Judges vs people</h2>"));
        assert!(html.contains("class=\"heatmap confusion\" data-dimension=\"tone\""));
        assert!(html.contains("id=\"self-preference\""));
        let gates = json["gates"]["checks"].as_array().unwrap();
        assert!(gates
            .iter()
            .all(|c| !c["name"].as_str().unwrap().starts_with("min_human")));
        let _ = passed;
    }

    #[test]
    fn min_human_kappa_gates_each_labelled_dimension() {
        let (json, md, _, passed) =
            render_all(&suite("run_gates: {min_human_kappa: 0.99}\n"), &records());
        let checks = json["gates"]["checks"].as_array().unwrap();
        let gate = checks
            .iter()
            .find(|c| c["name"] == "min_human_kappa.tone")
            .unwrap();
        assert_eq!(gate["passed"], false);
        assert_eq!(
            gate["value"],
            json["aggregates"]["human_agreement"]["tone"]["kappa_quadratic"]
        );
        assert!(!passed);
        assert!(md.contains("min_human_kappa.tone"));
        let (_, _, _, passed) =
            render_all(&suite("run_gates: {min_human_kappa: -1}\n"), &records());
        assert!(passed);
        let unlabelled: Vec<ResultRecord> = records()
            .into_iter()
            .map(|mut r| {
                r.scores.0[1].1.human = None;
                r
            })
            .collect();
        let (json, _, html, passed) =
            render_all(&suite("run_gates: {min_human_kappa: -1}\n"), &unlabelled);
        assert!(
            !passed,
            "no labelled item: the gate fails rather than pass unchecked"
        );
        assert_eq!(json["aggregates"]["human_agreement"]["tone"]["n"], 0);
        assert!(
            !html.contains("class=\"heatmap confusion\""),
            "no matrix to draw"
        );
    }

    #[test]
    fn a_run_without_human_labels_or_mixed_panels_has_neither_block() {
        let plain = Suite::builtin(evalfleet_model::suite::SuiteKind::SupportJudge);
        let recs = vec![support_record(0, "a", "gpt-4o", "v1", Some(4.0), Some(3.0))];
        let (json, md, html, _) = render_all(&plain, &recs);
        assert!(json["aggregates"].get("human_agreement").is_none());
        assert!(json["aggregates"].get("self_preference").is_none());
        assert!(json["aggregates"]["by_model"]["gpt-4o"]
            .get("human_agreement")
            .is_none());
        assert!(!md.contains("Human Agreement") && !html.contains("Judges vs people"));
    }
}
