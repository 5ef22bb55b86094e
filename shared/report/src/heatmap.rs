//! Group comparisons in `report.html` as heatmaps, from the run's aggregates (never from the
//! items, so they cover every example of a run of any size): for a grouping over two keys
//! (model × prompt version) one grid per judge dimension and one of pass rates; for a grouping
//! over one key, one table of groups × pass rate, dimensions and metrics. Each cell is coloured
//! on its quantity's own scale (a dimension's rubric range, [0, 1] for rates and metrics) and
//! names its exact value and count.

use crate::aggregate::{GroupAcc, RunAggregator};
use evalfleet_suites::suite::Suite;

use evalfleet_model::text::escape;

/// Where a compared quantity sits in a group's accumulators.
#[derive(Clone, Copy)]
enum Source {
    PassRate,
    Dimension(usize),
    Metric(usize),
}

/// One compared quantity: its name, where it sits in a group, and its scale.
struct Quantity {
    name: String,
    source: Source,
    lo: f64,
    hi: f64,
}

impl Quantity {
    /// The group's value and how many items it stands for.
    fn value(&self, g: &GroupAcc) -> (Option<f64>, u64) {
        match self.source {
            Source::PassRate => (g.pass_rate(), g.total()),
            Source::Dimension(slot) => {
                let s = g.scores[slot].summary();
                (s.mean, s.count)
            }
            Source::Metric(slot) => {
                let s = g.metric(slot);
                (s.mean, s.count)
            }
        }
    }
}

fn quantities(suite: &Suite, agg: &RunAggregator) -> Vec<Quantity> {
    let unit = |name: &str, source| Quantity {
        name: name.to_owned(),
        source,
        lo: 0.0,
        hi: 1.0,
    };
    let mut out = vec![unit("pass rate", Source::PassRate)];
    for (slot, name) in agg.dimensions().iter().enumerate() {
        let (lo, hi) = suite
            .dimension(name)
            .filter(|d| !d.unit)
            .map_or((0.0, 1.0), |d| (d.min as f64, d.max as f64));
        out.push(Quantity {
            lo,
            hi,
            ..unit(name, Source::Dimension(slot))
        });
    }
    for (slot, name) in agg.metric_names().iter().enumerate() {
        out.push(unit(name, Source::Metric(slot)));
    }
    out
}

/// A cell: background from red (the scale's low end) to green (its high end).
fn cell(value: Option<f64>, n: u64, lo: f64, hi: f64) -> String {
    match value {
        None => "<td class=\"hm none\" title=\"no value\">–</td>".into(),
        Some(v) => {
            let t = if hi > lo {
                ((v - lo) / (hi - lo)).clamp(0.0, 1.0)
            } else {
                0.5
            };
            format!(
                "<td class=\"hm\" style=\"background:hsl({:.0},70%,{:.0}%)\" title=\"{v} (n = {n})\">{v:.2}</td>",
                120.0 * t,
                88.0 - 14.0 * (1.0 - (2.0 * t - 1.0).abs()),
            )
        }
    }
}

/// Every grouping's heatmaps.
pub(super) fn write(h: &mut String, suite: &Suite, agg: &RunAggregator) {
    let quantities = quantities(suite, agg);
    let mut any = false;
    for (grouping, groups) in agg.grouped() {
        if groups.is_empty() {
            continue;
        }
        any = true;
        let title = grouping.name.replace('_', " ");
        if grouping.keys.len() == 2 {
            grid(h, &title, &grouping.keys, &groups, &quantities);
        } else {
            table(h, &title, &grouping.keys, &groups, &quantities);
        }
    }
    if !any {
        h.push_str("<p>No groups to compare.</p>\n");
    }
}

/// Rows of the first key × columns of the second, one grid per quantity (dimensions and the
/// pass rate; metrics go in the one-key tables).
fn grid(
    h: &mut String,
    title: &str,
    keys: &[String],
    groups: &[(Vec<String>, &GroupAcc)],
    quantities: &[Quantity],
) {
    let distinct = |i: usize| {
        let mut v: Vec<&str> = groups.iter().map(|(k, _)| k[i].as_str()).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let (rows, cols) = (distinct(0), distinct(1));
    let shown = quantities
        .iter()
        .filter(|q| !matches!(q.source, Source::Metric(_)));
    h.push_str("<div class=\"heatmaps\">\n");
    for q in shown {
        h.push_str(&format!(
            "<table class=\"heatmap\" data-grouping=\"{}\"><caption>{} · {} × {}</caption><tr><th></th>",
            escape(title),
            escape(&q.name),
            escape(&keys[0]),
            escape(&keys[1])
        ));
        for c in &cols {
            h.push_str(&format!("<th>{}</th>", escape(c)));
        }
        h.push_str("</tr>\n");
        for r in &rows {
            h.push_str(&format!("<tr><th>{}</th>", escape(r)));
            for c in &cols {
                match groups.iter().find(|(k, _)| k[0] == *r && k[1] == *c) {
                    Some((_, g)) => {
                        let (v, n) = q.value(g);
                        h.push_str(&cell(v, n, q.lo, q.hi));
                    }
                    None => h.push_str("<td class=\"hm none\">·</td>"),
                }
            }
            h.push_str("</tr>\n");
        }
        h.push_str("</table>\n");
    }
    h.push_str("</div>\n");
}

/// One row per group, one column per quantity.
fn table(
    h: &mut String,
    title: &str,
    keys: &[String],
    groups: &[(Vec<String>, &GroupAcc)],
    quantities: &[Quantity],
) {
    h.push_str(&format!(
        "<table class=\"heatmap\" data-grouping=\"{}\"><caption>{}</caption><tr><th>{}</th><th>n</th>",
        escape(title),
        escape(title),
        escape(&keys.join(" · "))
    ));
    for q in quantities {
        h.push_str(&format!("<th>{}</th>", escape(&q.name)));
    }
    h.push_str("</tr>\n");
    for (key, g) in groups {
        h.push_str(&format!(
            "<tr><th>{}</th><td>{}</td>",
            escape(&key.join(" · ")),
            g.total()
        ));
        for q in quantities {
            let (v, n) = q.value(g);
            h.push_str(&cell(v, n, q.lo, q.hi));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
}

/// Confusion matrices wider than this many scale points are not drawn (report.json has them).
const CONFUSION_MAX: usize = 21;

/// A judge dimension's confusion matrix against people (rows: the human score, columns: the
/// judge's), each cell shaded by its share of its row, so a row reads as "what the judge says
/// when people say h"; the diagonal (agreement) is outlined.
pub(super) fn confusion(
    h: &mut String,
    dimension: &str,
    s: &crate::aggregate::HumanAgreementSummary,
) {
    if s.n == 0 || s.confusion.len() > CONFUSION_MAX {
        return;
    }
    let labels: Vec<i64> = (s.scale[0]..=s.scale[1]).collect();
    h.push_str(&format!(
        "<table class=\"heatmap confusion\" data-dimension=\"{}\"><caption>{} · human (rows) × judge (columns), n = {}</caption><tr><th>human \\ judge</th>",
        escape(dimension),
        escape(dimension),
        s.n
    ));
    for l in &labels {
        h.push_str(&format!("<th>{l}</th>"));
    }
    h.push_str("</tr>\n");
    for (i, (l, row)) in labels.iter().zip(&s.confusion).enumerate() {
        let total: u64 = row.iter().sum();
        h.push_str(&format!("<tr><th>{l}</th>"));
        for (j, &c) in row.iter().enumerate() {
            let share = if total > 0 {
                c as f64 / total as f64
            } else {
                0.0
            };
            let outline = if i == j {
                "outline:2px solid #1a7f37;outline-offset:-2px;"
            } else {
                ""
            };
            h.push_str(&format!(
                "<td class=\"hm\" style=\"{outline}background:hsl(212,80%,{:.0}%)\" title=\"human {l}, judge {}: {c} ({:.1}% of the row)\">{c}</td>",
                97.0 - 45.0 * share,
                labels[j],
                share * 100.0
            ));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
}
