//! `summary.md`: the report a person reads in a pull request. Numbers are the same as in
//! `report.json`, rounded for display.

use crate::aggregate::{GroupAcc, RunAggregator};
use evalfleet_model::record::Outcome;
use evalfleet_model::suite::SuiteKind;
use evalfleet_suites::suite::Suite;

use super::json::layer_key;
use super::{recommendations, ReportError, ReportInput, Sink};

/// How many skipped and failed examples the summary lists before pointing at `report.json`.
const LISTED: usize = 20;

pub(super) fn write(w: &mut Sink<'_>, input: &ReportInput<'_>) -> Result<(), ReportError> {
    let ReportInput {
        info, suite, agg, ..
    } = *input;
    let mut out = String::new();
    out.push_str(&format!(
        "# evalfleet report: {} (run `{}`)\n\n",
        suite.name, info.id
    ));
    out.push_str(&format!(
        "Dataset `{}` · judge **{}**",
        info.dataset, info.judge
    ));
    if info.judge == evalfleet_suites::spec::JudgeMode::Heuristic {
        out.push_str(" (offline text-overlap scores, not an LLM judge)");
    }
    out.push_str(&format!(
        " · finished {} in {:.1} s\n\n",
        info.finished_at, info.duration_seconds
    ));
    overall(&mut out, input);
    match suite.kind {
        SuiteKind::SupportJudge => judge_scores(&mut out, agg),
        SuiteKind::RagLayers => layer_metrics(&mut out, agg, "Layer Metrics", true),
        SuiteKind::LogAnalysis => layer_metrics(&mut out, agg, "Metrics", false),
        SuiteKind::Custom => {
            if !agg.dimensions().is_empty() {
                judge_scores(&mut out, agg);
            }
            checks(&mut out, agg);
        }
    }
    groups(&mut out, agg);
    super::human_report::markdown(&mut out, agg);
    super::pairwise_report::markdown(&mut out, agg);
    failure_reasons(&mut out, suite, agg);
    out.push_str("## Recommendations\n\n");
    let recs = recommendations(suite, agg);
    if recs.is_empty() {
        out.push_str("Nothing to recommend: no item failed a gate.\n");
    }
    for r in recs {
        out.push_str(&format!("- {r}\n"));
    }
    w.put(&out)?;
    not_evaluated(w, input)
}

fn pct(x: Option<f64>) -> String {
    x.map_or("–".into(), |x| format!("{:.1}%", x * 100.0))
}

fn num(x: Option<f64>) -> String {
    x.map_or("–".into(), |x| format!("{x:.3}"))
}

fn overall(out: &mut String, input: &ReportInput<'_>) {
    let agg = input.agg;
    let t = &agg.totals;
    let g = &agg.all;
    out.push_str("## Overall Results\n\n| | |\n|---|---|\n");
    out.push_str(&format!(
        "| Examples | {} (ok {}, failed {}, skipped {}) |\n",
        t.examples, t.ok, t.failed, t.skipped
    ));
    out.push_str(&format!(
        "| Passed | {} of {} ({}) |\n",
        g.passed,
        g.total(),
        pct(g.pass_rate())
    ));
    out.push_str(&format!(
        "| Average overall score | {} |\n",
        num(g.overall.mean())
    ));
    if t.unscored > 0 {
        out.push_str(&format!("| Unscored judge replies | {} |\n", t.unscored));
    }
    if agg.judge_calls > 0 || agg.cache_hits > 0 {
        out.push_str(&format!(
            "| Judge calls | {} (answers from the cache: {}) |\n",
            agg.judge_calls, agg.cache_hits
        ));
    }
    if let Some(t) = agg.target.as_ref().map(|t| t.summary()) {
        let l = &t.latency_ms;
        out.push_str(&format!(
            "| Target {} | {} answers in {} attempts; latency p50 {} / p95 {} / p99 {} ms; tokens {} in, {} out; {:.4} USD |\n",
            t.name,
            t.calls,
            t.attempts,
            num(l.p50),
            num(l.p95),
            num(l.p99),
            t.tokens_in,
            t.tokens_out,
            t.cost_usd
        ));
    }
    if let Some(e) = agg.epochs.as_ref().map(|e| e.summary()) {
        let pct = |share: Option<f64>| share.map_or("–".into(), |s| format!("{:.1}%", s * 100.0));
        let spread: Vec<String> = e
            .within_item_stddev
            .iter()
            .map(|(name, sd)| format!("{name} {}", num(*sd)))
            .collect();
        out.push_str(&format!(
            "| Epochs | {} per item; pass@k {}, pass^k {}; spread within items (stddev): {} |\n",
            e.epochs,
            pct(e.pass_at_k),
            pct(e.pass_all_k),
            if spread.is_empty() {
                "–".to_owned()
            } else {
                spread.join(", ")
            }
        ));
    }
    for (dim, a) in agg.dimensions().iter().zip(&agg.all.agreement) {
        if let Some(s) = a.as_ref().map(|a| a.summary()) {
            let stat = if s.judges == 2 {
                "Cohen's kappa"
            } else {
                "Krippendorff's alpha"
            };
            out.push_str(&format!(
                "| Agreement on {dim} ({} judges) | {stat} {} over {} items |\n",
                s.judges,
                num(s.value()),
                s.units
            ));
        }
    }
    let u = &agg.usage;
    out.push_str(&format!(
        "| Tokens (in / out) | {} / {} |\n| Cost (USD) | {:.4} |\n",
        u.input_tokens, u.output_tokens, u.cost_usd
    ));
    let checks = input.gate_checks();
    let verdict = if checks.iter().all(|c| c.passed) {
        "**PASSED**"
    } else {
        "**FAILED**"
    };
    let detail: Vec<String> = checks
        .iter()
        .map(|c| {
            format!(
                "{} {} (threshold {}) {}",
                c.name,
                num(c.value),
                c.threshold,
                if c.passed { "✓" } else { "✗" }
            )
        })
        .collect();
    out.push_str(&format!(
        "| Run gates | {verdict}: {} |\n\n",
        detail.join("; ")
    ));
}

fn judge_scores(out: &mut String, agg: &RunAggregator) {
    out.push_str("## Judge Scores\n\n| Dimension | Mean | Min | Max | Std dev | 95% CI | Scored | Unscored |\n|---|---|---|---|---|---|---|---|\n");
    for (slot, name) in agg.dimensions().iter().enumerate() {
        let s = agg.all.scores[slot].summary();
        let ci = s
            .ci95
            .map_or("–".into(), |[lo, hi]| format!("{lo:.2} – {hi:.2}"));
        out.push_str(&format!(
            "| {name} | {} | {} | {} | {} | {ci} | {} | {} |\n",
            s.mean.map_or("–".into(), |m| format!(
                "{:.2}",
                evalfleet_model::num::round2(m)
            )),
            num(s.min),
            num(s.max),
            num(s.stddev),
            s.count,
            agg.all.unscored[slot]
        ));
    }
    out.push('\n');
}

/// A custom suite's checks: spread and confidence beside the mean, and how many items had no
/// value (the checked field absent).
fn checks(out: &mut String, agg: &RunAggregator) {
    if agg.metric_names().is_empty() {
        return;
    }
    out.push_str("## Checks\n\n| Check | Mean | Std dev | 95% CI | Values | Null |\n|---|---|---|---|---|---|\n");
    for (slot, name) in agg.metric_names().iter().enumerate() {
        let s = agg.all.metric(slot);
        let ci = s
            .ci95
            .map_or("–".into(), |[lo, hi]| format!("{lo:.3} – {hi:.3}"));
        out.push_str(&format!(
            "| {name} | {} | {} | {ci} | {} | {} |\n",
            num(s.mean),
            num(s.stddev),
            s.count,
            agg.all.ok - s.count
        ));
    }
    out.push('\n');
}

fn layer_metrics(out: &mut String, agg: &RunAggregator, title: &str, layered: bool) {
    out.push_str(&format!(
        "## {title}\n\n| Metric | Mean | Min | Max | Values |\n|---|---|---|---|---|\n"
    ));
    for (slot, name) in agg.metric_names().iter().enumerate() {
        let s = agg.all.metric(slot);
        let label = if layered {
            layer_key(name)
        } else {
            name.clone()
        };
        out.push_str(&format!(
            "| {label} | {} | {} | {} | {} |\n",
            num(s.mean),
            num(s.min),
            num(s.max),
            s.count
        ));
    }
    out.push('\n');
}

fn groups(out: &mut String, agg: &RunAggregator) {
    for (grouping, groups) in agg.grouped() {
        out.push_str(&format!(
            "## {}\n\n| {} | Count | Passed | Pass rate | Avg overall |",
            grouping.name,
            grouping.keys.join(" | ")
        ));
        for d in agg.dimensions() {
            out.push_str(&format!(" {d} mean |"));
        }
        out.push_str("\n|");
        for _ in 0..grouping.keys.len() + 4 + agg.dimensions().len() {
            out.push_str("---|");
        }
        out.push('\n');
        for (key, g) in groups {
            out.push_str(&group_row(&key, g));
        }
        out.push('\n');
    }
}

fn group_row(key: &[String], g: &GroupAcc) -> String {
    let mut row = format!(
        "| {} | {} | {} | {} | {} |",
        key.join(" | "),
        g.total(),
        g.passed,
        pct(g.pass_rate()),
        num(g.overall.mean())
    );
    for s in &g.scores {
        row.push_str(&format!(
            " {} |",
            s.mean().map_or("–".into(), |m| format!(
                "{:.2}",
                evalfleet_model::num::round2(m)
            ))
        ));
    }
    row.push('\n');
    row
}

fn failure_reasons(out: &mut String, suite: &Suite, agg: &RunAggregator) {
    out.push_str("## Top Failure Reasons\n\n");
    let tags = agg.top_fail_reasons(suite);
    if tags.is_empty() {
        out.push_str("No item failed a gate.\n\n");
        return;
    }
    out.push_str("| Tag | Items | Meaning | Worst items |\n|---|---|---|---|\n");
    for (tag, n) in tags {
        let meaning = suite
            .gates
            .iter()
            .find(|g| g.tag == tag)
            .map_or("", |g| g.meaning.as_str());
        let worst: Vec<String> = agg.worst.get(&tag).map_or_else(Vec::new, |ws| {
            ws.iter()
                .map(|w| format!("`{}` ({})", w.id, num(w.overall_score)))
                .collect()
        });
        out.push_str(&format!(
            "| `{tag}` | {n} | {meaning} | {} |\n",
            worst.join(", ")
        ));
    }
    out.push('\n');
}

/// Skipped and failed examples, the first few of each, streamed from the items.
fn not_evaluated(w: &mut Sink<'_>, input: &ReportInput<'_>) -> Result<(), ReportError> {
    let t = &input.agg.totals;
    for (outcome, count, title) in [
        (Outcome::Skipped, t.skipped, "Skipped"),
        (Outcome::Failed, t.failed, "Failed"),
    ] {
        if count == 0 {
            continue;
        }
        w.put(&format!("\n## {title} ({count})\n\n"))?;
        let mut listed = 0;
        input.items.for_each_item(Some(outcome), &mut |rec| {
            if listed >= LISTED {
                return Ok(());
            }
            listed += 1;
            let at = rec
                .line
                .map_or(format!("index {}", rec.index), |l| format!("line {l}"));
            let id = if rec.id.is_empty() {
                String::new()
            } else {
                format!(" `{}`", rec.id)
            };
            w.put(&format!(
                "- {at}{id}: {}\n",
                rec.reason.as_deref().unwrap_or("")
            ))
        })?;
        if count as usize > LISTED {
            w.put(&format!(
                "- … and {} more in report.json\n",
                count as usize - LISTED
            ))?;
        }
    }
    Ok(())
}
