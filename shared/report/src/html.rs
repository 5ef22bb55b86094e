//! `report.html`: one self-contained page (inline CSS, SVG and script, no network) that people
//! would rather look at than read: the run's verdict, group comparisons as heatmaps, score
//! distributions, failure reasons and metrics from the aggregates, and an item browser
//! ([`super::viewer`]) over the run's items, capped so the page stays fast at any run size.

use crate::aggregate::{Hist, RunAggregator};
use evalfleet_suites::suite::Suite;

use super::{heatmap, recommendations, viewer, ReportError, ReportInput, Sink};
use evalfleet_model::text::escape;

const STYLE: &str = "body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1100px;color:#1f2328;padding:0 1rem}\
h1{font-size:1.5rem;margin-bottom:.2rem}h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #d0d7de;padding-bottom:.3rem}\
.meta{color:#57606a}.cards{display:flex;gap:1rem;flex-wrap:wrap;margin:1rem 0}.card{border:1px solid #d0d7de;border-radius:8px;padding:.7rem 1rem;min-width:150px}\
.card b{display:block;font-size:1.4rem}.pass{color:#1a7f37}.fail{color:#cf222e}table{border-collapse:collapse;margin:.5rem 0}\
td,th{border:1px solid #d0d7de;padding:.25rem .6rem;text-align:left}th{background:#f6f8fa}.charts{display:flex;flex-wrap:wrap;gap:1.5rem}\
figure{margin:0}figcaption{font-weight:600;margin-bottom:.3rem}svg text{font-size:11px;fill:#1f2328}\
.heatmaps{display:flex;flex-wrap:wrap;gap:1.5rem}table.heatmap caption{font-weight:600;text-align:left;padding-bottom:.3rem}td.hm{text-align:right;font-variant-numeric:tabular-nums}td.none{color:#8c959f}\
.note{background:#fff8c5;border:1px solid #d4a72c;border-radius:6px;padding:.4rem .7rem}#controls{display:flex;flex-wrap:wrap;gap:.5rem;margin:.5rem 0}#controls input{min-width:16rem}\
.scroll{overflow-x:auto}#items-table th{cursor:pointer;white-space:nowrap}#items-table tr.item{cursor:pointer}#items-table tr.item:hover{background:#f6f8fa}tr.failing td:nth-child(3){color:#cf222e}\
#detail{position:fixed;top:0;right:0;width:min(560px,100%);height:100%;overflow:auto;background:#fff;border-left:1px solid #d0d7de;box-shadow:-4px 0 12px rgba(0,0,0,.08);padding:1rem 1.2rem}\
#detail pre{white-space:pre-wrap;background:#f6f8fa;padding:.5rem;border-radius:6px;max-height:18rem;overflow:auto}#detail .reasoning{margin-top:.2rem}#close{float:right}";

const BAR: &str = "#0969da";
const BAD: &str = "#cf222e";

pub(super) fn write(w: &mut Sink<'_>, input: &ReportInput<'_>) -> Result<(), ReportError> {
    let ReportInput {
        info, suite, agg, ..
    } = *input;
    let mut h = String::with_capacity(64 * 1024);
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    h.push_str(&format!(
        "<title>evalfleet · {} · {}</title><style>{STYLE}</style><script>window.__viewerErrors=[];addEventListener(\"error\",function(e){{window.__viewerErrors.push(String(e.message))}});</script></head><body>\n",
        escape(&suite.name),
        escape(&info.id)
    ));
    h.push_str(&format!(
        "<h1>evalfleet report: {}</h1>\n",
        escape(&suite.name)
    ));
    let judge = if info.judge == evalfleet_suites::spec::JudgeMode::Heuristic {
        "heuristic (offline text-overlap scores, not an LLM judge)".to_owned()
    } else {
        info.judge.to_string()
    };
    h.push_str(&format!(
        "<p class=\"meta\">run <code>{}</code> · dataset <code>{}</code> · judge <b>{}</b> · finished {} in {:.1} s</p>\n",
        escape(&info.id), escape(&info.dataset), escape(&judge), escape(&info.finished_at), info.duration_seconds
    ));
    cards(&mut h, input);
    h.push_str("<h2>Group comparisons</h2>\n");
    heatmap::write(&mut h, suite, agg);
    h.push_str("<h2>Score distributions</h2>\n<div class=\"charts\">\n");
    distributions(&mut h, agg);
    h.push_str("</div>\n");
    super::human_report::html(&mut h, agg);
    super::pairwise_report::html(&mut h, agg);
    h.push_str("<h2>Failure reasons</h2>\n");
    failure_reasons(&mut h, suite, agg);
    metrics_table(&mut h, agg);
    h.push_str("<h2>Recommendations</h2>\n<ul>\n");
    for r in recommendations(suite, agg) {
        h.push_str(&format!("<li>{}</li>\n", escape(&r)));
    }
    h.push_str("</ul>\n");
    w.put(&h)?;
    viewer::write(w, input)?;
    w.put("<p class=\"meta\">Every item, with its metrics and judge reasoning, is in <code>report.json</code>; one test case per example in <code>junit.xml</code>.</p>\n</body></html>\n")
}

fn cards(h: &mut String, input: &ReportInput<'_>) {
    let agg = input.agg;
    let t = &agg.totals;
    let passed = input.gates_passed();
    let card = |label: &str, value: String, class: &str| {
        format!("<div class=\"card\">{label}<b class=\"{class}\">{value}</b></div>")
    };
    h.push_str("<div class=\"cards\">");
    h.push_str(&card(
        "Run gates",
        if passed { "PASSED" } else { "FAILED" }.into(),
        if passed { "pass" } else { "fail" },
    ));
    h.push_str(&card("Examples", t.examples.to_string(), ""));
    h.push_str(&card(
        "Pass rate",
        agg.all
            .pass_rate()
            .map_or("–".into(), |p| format!("{:.1}%", p * 100.0)),
        "",
    ));
    h.push_str(&card(
        "Avg overall",
        agg.all
            .overall
            .mean()
            .map_or("–".into(), |m| format!("{m:.3}")),
        "",
    ));
    h.push_str(&card(
        "ok / failed / skipped",
        format!("{} / {} / {}", t.ok, t.failed, t.skipped),
        "",
    ));
    if t.unscored > 0 {
        h.push_str(&card("Unscored", t.unscored.to_string(), "fail"));
    }
    h.push_str("</div>\n");
}

/// One histogram per judge dimension over the whole run, and one of the overall score (the
/// groups are compared in the heatmaps).
fn distributions(h: &mut String, agg: &RunAggregator) {
    let all = &agg.all;
    let charts: Vec<(String, &Hist)> = agg
        .dimensions()
        .iter()
        .zip(&all.score_hists)
        .map(|(d, hist)| (d.clone(), hist))
        .chain(std::iter::once((
            "overall score".to_owned(),
            &all.overall_hist,
        )))
        .collect();
    if charts.is_empty() {
        h.push_str("<p>No scores were recorded.</p>");
    }
    for (title, hist) in charts {
        h.push_str(&histogram(&title, hist));
    }
}

fn histogram(title: &str, hist: &Hist) -> String {
    let (w, hgt, pad) = (240.0, 120.0, 18.0);
    let n = hist.bins.len().max(1) as f64;
    let max = hist.bins.iter().copied().max().unwrap_or(0).max(1) as f64;
    let bw = (w - 2.0 * pad) / n;
    let mut svg = format!("<figure><figcaption>{}</figcaption><svg width=\"{w}\" height=\"{}\" role=\"img\" aria-label=\"{}\">", escape(title), hgt + 2.0 * pad, escape(title));
    for (i, &c) in hist.bins.iter().enumerate() {
        let bh = (c as f64 / max) * hgt;
        let x = pad + i as f64 * bw;
        let y = pad + hgt - bh;
        svg.push_str(&format!("<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{bh:.1}\" fill=\"{BAR}\"><title>{}: {c}</title></rect>", bw - 2.0, hist.label(i)));
        if c > 0 {
            svg.push_str(&format!(
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{c}</text>",
                x + bw / 2.0 - 1.0,
                y - 3.0
            ));
        }
        if hist.is_integer() || i % 2 == 0 {
            svg.push_str(&format!(
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                x + bw / 2.0 - 1.0,
                pad + hgt + 13.0,
                hist.label(i)
            ));
        }
    }
    svg.push_str("</svg></figure>\n");
    svg
}

/// Horizontal bars: (label, value, annotation), scaled to `max`.
fn hbar_chart(title: &str, bars: &[(String, f64, String)], max: f64, color: &str) -> String {
    let (label_w, bar_w, row) = (220.0, 300.0, 22.0);
    let height = row * bars.len().max(1) as f64 + 10.0;
    let mut svg = format!("<figure><figcaption>{}</figcaption><svg width=\"{}\" height=\"{height}\" role=\"img\" aria-label=\"{}\">", escape(title), label_w + bar_w + 90.0, escape(title));
    for (i, (label, value, note)) in bars.iter().enumerate() {
        let y = 5.0 + i as f64 * row;
        let len = if max > 0.0 {
            (value / max).clamp(0.0, 1.0) * bar_w
        } else {
            0.0
        };
        let short: String = if label.chars().count() > 34 {
            label.chars().take(33).chain(['…']).collect()
        } else {
            label.clone()
        };
        svg.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            label_w - 6.0,
            y + 14.0,
            escape(&short)
        ));
        svg.push_str(&format!("<rect x=\"{label_w}\" y=\"{y:.1}\" width=\"{len:.1}\" height=\"{:.1}\" fill=\"{color}\"><title>{}</title></rect>", row - 6.0, escape(note)));
        svg.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            label_w + len + 5.0,
            y + 14.0,
            escape(note)
        ));
    }
    svg.push_str("</svg></figure>\n");
    svg
}

fn failure_reasons(h: &mut String, suite: &Suite, agg: &RunAggregator) {
    let tags = agg.top_fail_reasons(suite);
    if tags.is_empty() {
        h.push_str("<p class=\"pass\">No item failed a gate.</p>\n");
        return;
    }
    let max = tags.first().map_or(1, |t| t.1) as f64;
    let bars: Vec<(String, f64, String)> = tags
        .iter()
        .map(|(t, n)| (t.clone(), *n as f64, n.to_string()))
        .collect();
    h.push_str(&hbar_chart("Items per fail tag", &bars, max, BAD));
    h.push_str("<table><tr><th>Tag</th><th>Items</th><th>Meaning</th><th>Worst items</th></tr>\n");
    for (tag, n) in &tags {
        let meaning = suite
            .gates
            .iter()
            .find(|g| &g.tag == tag)
            .map_or("", |g| g.meaning.as_str());
        let worst: Vec<String> = agg
            .worst
            .get(tag)
            .map_or_else(Vec::new, |ws| ws.iter().map(|w| escape(&w.id)).collect());
        h.push_str(&format!(
            "<tr><td><code>{}</code></td><td>{n}</td><td>{}</td><td>{}</td></tr>\n",
            escape(tag),
            escape(meaning),
            worst.join(", ")
        ));
    }
    h.push_str("</table>\n");
}

fn metrics_table(h: &mut String, agg: &RunAggregator) {
    let dims = agg.dimensions();
    if agg.metric_names().is_empty() && dims.is_empty() {
        return;
    }
    h.push_str("<h2>Metrics</h2>\n<table><tr><th>Metric</th><th>Mean</th><th>Min</th><th>Max</th><th>Std dev</th><th>Values</th></tr>\n");
    let rows = agg
        .metric_names()
        .iter()
        .enumerate()
        .map(|(slot, name)| (name.clone(), agg.all.metric(slot)))
        .chain(
            dims.iter()
                .enumerate()
                .map(|(slot, d)| (format!("{d} (judge)"), agg.all.scores[slot].summary())),
        );
    let f = |x: Option<f64>| x.map_or("–".into(), |x| format!("{x:.3}"));
    for (name, s) in rows {
        h.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            escape(&name),
            f(s.mean),
            f(s.min),
            f(s.max),
            f(s.stddev),
            s.count
        ));
    }
    h.push_str("</table>\n");
}
