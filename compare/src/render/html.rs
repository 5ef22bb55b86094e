//! compare.html: one self-contained page (inline CSS and SVG, no script, no network): the
//! verdict, a paired-difference plot per compared quantity (the distribution of NEW − BASE with
//! the mean and its interval), per-group deltas as a heatmap, and the flip list. Its size depends
//! on the number of quantities, groups and listed flips, never on the number of items.

use std::collections::BTreeMap;

use evalfleet_model::text::escape;

use crate::flips::{Flip, Flips};
use crate::quantity::{Histogram, Quantity};
use crate::Comparison;

use super::{interval, num, pval, signed};

/// How many flips of each direction the page lists (compare.json has them all).
const LISTED_FLIPS: usize = 100;

const STYLE: &str = "body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1100px;color:#1f2328;padding:0 1rem}\
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem;border-bottom:1px solid #d0d7de;padding-bottom:.3rem}.meta{color:#57606a}\
.verdict{font-size:1.1rem;padding:.7rem 1rem;border-radius:8px}.ok{background:#dafbe1}.bad{background:#ffebe9}\
table{border-collapse:collapse;margin:.5rem 0}td,th{border:1px solid #d0d7de;padding:.25rem .6rem;text-align:left}th{background:#f6f8fa}\
.charts{display:flex;flex-wrap:wrap;gap:1.5rem}figure{margin:0}figcaption{font-weight:600;margin-bottom:.3rem}svg text{font-size:11px;fill:#1f2328}\
td.num{text-align:right;font-variant-numeric:tabular-nums}.reason{color:#57606a;font-size:12px}";

pub(crate) fn render(c: &Comparison) -> String {
    let mut h = String::with_capacity(64 * 1024);
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    h.push_str(&format!(
        "<title>evalfleet compare · {}</title><style>{STYLE}</style></head><body>\n",
        escape(&c.base.suite)
    ));
    h.push_str(&format!(
        "<h1>evalfleet compare: {}</h1>\n<p class=\"meta\">BASE <code>{}</code> ({}) · NEW <code>{}</code> ({}) · {} paired items · {} only in BASE · {} only in NEW</p>\n",
        escape(&c.base.suite),
        escape(c.base.run_id.as_deref().unwrap_or("?")),
        escape(&c.base.path.display().to_string()),
        escape(c.new.run_id.as_deref().unwrap_or("?")),
        escape(&c.new.path.display().to_string()),
        c.pairing.paired,
        c.pairing.only_in_base.len(),
        c.pairing.only_in_new.len()
    ));
    h.push_str(&format!(
        "<p class=\"verdict {}\">{}</p>\n",
        if c.verdict.regressed { "bad" } else { "ok" },
        escape(&c.verdict.summary)
    ));
    table(&mut h, c);
    h.push_str("<h2>Paired differences (NEW − BASE)</h2>\n<div class=\"charts\">\n");
    for q in &c.comparisons {
        if let Some(hist) = &q.histogram {
            diff_plot(&mut h, q, hist);
        }
    }
    h.push_str("</div>\n");
    heatmap(&mut h, c);
    crate::human::html(&mut h, &c.human_agreement);
    flips(&mut h, "Pass → fail", &c.flips, &c.flips.pass_to_fail);
    flips(&mut h, "Fail → pass", &c.flips, &c.flips.fail_to_pass);
    h.push_str("<p class=\"meta\">Every figure unrounded, and every flip: compare.json.</p>\n</body></html>\n");
    h
}

fn table(h: &mut String, c: &Comparison) {
    h.push_str("<table><tr><th>quantity</th><th>n</th><th>excluded (null)</th><th>BASE</th><th>NEW</th><th>Δ</th><th>95% CI</th><th>test</th><th>p</th><th>p (Holm)</th><th>max drop</th><th>regressed</th></tr>\n");
    for q in &c.comparisons {
        h.push_str(&format!(
            "<tr><td>{} <b>{}</b></td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{} ({})</td><td>{} ({})</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>\n",
            q.kind.as_str(),
            escape(&q.name),
            q.n,
            q.excluded_null,
            num(q.mean_base),
            num(q.mean_new),
            signed(q.delta),
            interval(q),
            q.ci_method.unwrap_or("–"),
            q.test,
            q.test_method,
            pval(q.p_value),
            pval(q.p_adjusted),
            q.max_drop,
            if q.regressed { "<b style=\"color:#cf222e\">yes</b>" } else { "no" }
        ));
    }
    h.push_str("</table>\n");
}

/// A histogram of the differences with a zero line, the mean and its interval.
fn diff_plot(h: &mut String, q: &Quantity, hist: &Histogram) {
    let (w, ht, pad) = (320.0, 150.0, 22.0);
    let n_bins = hist.counts.len().max(1);
    let max = hist.counts.iter().copied().max().unwrap_or(1).max(1) as f64;
    let (lo, hi) = if hist.discrete {
        let lo = hist.edges.first().copied().unwrap_or(0.0);
        let hi = hist.edges.last().copied().unwrap_or(0.0);
        let step = hist
            .edges
            .windows(2)
            .map(|p| p[1] - p[0])
            .fold(f64::INFINITY, f64::min);
        let step = if step.is_finite() { step } else { 1.0 };
        (lo.min(0.0) - step / 2.0, hi.max(0.0) + step / 2.0)
    } else {
        let lo = hist.edges.first().copied().unwrap_or(0.0).min(0.0);
        let hi = hist.edges.last().copied().unwrap_or(0.0).max(0.0);
        (lo, if hi > lo { hi } else { lo + 1.0 })
    };
    let x = |v: f64| pad + (v - lo) / (hi - lo) * (w - 2.0 * pad);
    let plot_h = ht - 2.0 * pad;
    h.push_str(&format!(
        "<figure><figcaption>{} {}{}</figcaption><svg width=\"{w}\" height=\"{ht}\" viewBox=\"0 0 {w} {ht}\" role=\"img\" aria-label=\"paired differences of {}\">",
        q.kind.as_str(),
        escape(&q.name),
        if q.regressed { " — regressed" } else { "" },
        escape(&q.name)
    ));
    for (i, &count) in hist.counts.iter().enumerate() {
        let (x0, x1) = if hist.discrete {
            let bar = ((w - 2.0 * pad) / (n_bins as f64 * 2.0)).clamp(2.0, 24.0);
            let c = x(hist.edges[i]);
            (c - bar / 2.0, c + bar / 2.0)
        } else {
            (x(hist.edges[i]), x(hist.edges[i + 1]))
        };
        let bh = count as f64 / max * plot_h;
        h.push_str(&format!(
            "<rect x=\"{x0:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{bh:.1}\" fill=\"#0969da\"><title>{}: {count}</title></rect>",
            pad + plot_h - bh,
            (x1 - x0 - 0.5).max(0.5),
            if hist.discrete { format!("{:+}", hist.edges[i]) } else { format!("[{:+.3}, {:+.3})", hist.edges[i], hist.edges[i + 1]) }
        ));
    }
    let zero = x(0.0);
    h.push_str(&format!(
        "<line x1=\"{zero:.1}\" x2=\"{zero:.1}\" y1=\"{pad}\" y2=\"{:.1}\" stroke=\"#57606a\" stroke-dasharray=\"3 3\"/>",
        pad + plot_h
    ));
    if let (Some(d), Some(l), Some(u)) = (q.delta, q.ci_low, q.ci_high) {
        let y = ht - 8.0;
        let colour = if q.regressed { "#cf222e" } else { "#1a7f37" };
        h.push_str(&format!(
            "<line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{y}\" y2=\"{y}\" stroke=\"{colour}\" stroke-width=\"3\"/><circle cx=\"{:.1}\" cy=\"{y}\" r=\"4\" fill=\"{colour}\"><title>mean Δ {d:+.4}, 95% CI [{l:+.4}, {u:+.4}]</title></circle>",
            x(l), x(u), x(d)
        ));
    }
    h.push_str(&format!(
        "<text x=\"{pad}\" y=\"14\">Δ {} {} · p (Holm) {}</text></svg></figure>\n",
        signed(q.delta),
        interval(q),
        pval(q.p_adjusted)
    ));
}

/// Rows: groups; columns: quantities; colour: how much worse (red) or better (green) NEW is,
/// scaled per column by the largest |Δ|.
fn heatmap(h: &mut String, c: &Comparison) {
    if c.groups.is_empty() {
        return;
    }
    let names: Vec<&str> = c.comparisons.iter().map(|q| q.name.as_str()).collect();
    let mut rows: BTreeMap<(String, String), BTreeMap<&str, &Quantity>> = BTreeMap::new();
    let mut scale: BTreeMap<&str, f64> = BTreeMap::new();
    for q in &c.groups {
        let key = (
            q.group_by.clone().unwrap_or_default(),
            q.group.clone().unwrap_or_default(),
        );
        rows.entry(key).or_default().insert(q.name.as_str(), q);
        let s = scale.entry(q.name.as_str()).or_insert(0.0);
        *s = s.max(q.delta.map_or(0.0, f64::abs));
    }
    h.push_str("<h2>Per-group deltas</h2>\n<p class=\"meta\">Δ = NEW − BASE per group; red: worse, green: better, intensity scaled per column; bold: significantly worse (Holm across all group comparisons; flagged, not gated).</p>\n<table><tr><th>group_by</th><th>group</th>");
    for n in &names {
        h.push_str(&format!("<th>{}</th>", escape(n)));
    }
    h.push_str("</tr>\n");
    for ((by, group), cells) in &rows {
        h.push_str(&format!(
            "<tr><td>{}</td><td>{}</td>",
            escape(by),
            escape(group)
        ));
        for n in &names {
            match cells.get(n) {
                Some(q) => {
                    let worse = q.drop.unwrap_or(0.0);
                    let s = scale.get(n).copied().unwrap_or(0.0);
                    let t = if s > 0.0 {
                        (worse.abs() / s).min(1.0)
                    } else {
                        0.0
                    };
                    let (r, g, b) = if worse > 0.0 {
                        (255.0, 255.0 - 120.0 * t, 255.0 - 120.0 * t)
                    } else {
                        (255.0 - 120.0 * t, 255.0, 255.0 - 120.0 * t)
                    };
                    h.push_str(&format!(
                        "<td class=\"num\" style=\"background:rgb({r:.0},{g:.0},{b:.0})\" title=\"n {} · CI {} · p (Holm) {}\">{}{}{}</td>",
                        q.n,
                        interval(q),
                        pval(q.p_adjusted),
                        if q.regressed { "<b>" } else { "" },
                        q.delta.map_or("–".into(), |d| format!("{d:+.3}")),
                        if q.regressed { "</b>" } else { "" }
                    ));
                }
                None => h.push_str("<td></td>"),
            }
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
}

fn flips(h: &mut String, title: &str, all: &Flips, list: &[Flip]) {
    h.push_str(&format!("<h2>{title}: {}</h2>\n", list.len()));
    if list.is_empty() {
        return;
    }
    h.push_str("<table><tr><th>id</th><th>overall BASE → NEW</th><th>scores BASE → NEW, with the judge's reasoning</th></tr>\n");
    for f in list.iter().take(LISTED_FLIPS) {
        let Ok(f) = all.view(f) else { continue };
        let mut scores = String::new();
        for (dim, new) in &f.new.scores {
            let base = f.base.scores.get(dim);
            scores.push_str(&format!(
                "<div><b>{}</b> {} → {}<div class=\"reason\">BASE: {}<br>NEW: {}</div></div>",
                escape(dim),
                num(base.and_then(|s| s.score)),
                num(new.score),
                escape(base.and_then(|s| s.reasoning.as_deref()).unwrap_or("–")),
                escape(new.reasoning.as_deref().unwrap_or("–"))
            ));
        }
        h.push_str(&format!(
            "<tr><td><code>{}</code></td><td class=\"num\">{} → {}</td><td>{}</td></tr>\n",
            escape(&f.id),
            num(f.base.overall_score),
            num(f.new.overall_score),
            scores
        ));
    }
    if list.len() > LISTED_FLIPS {
        h.push_str(&format!(
            "<tr><td colspan=\"3\">… {} more in compare.json</td></tr>\n",
            list.len() - LISTED_FLIPS
        ));
    }
    h.push_str("</table>\n");
}
