//! The report's pairwise-preference tables (issue 21): per pairwise dimension, wins, ties and
//! losses with their 95% Wilson intervals and the position bias, overall and per group, in
//! `summary.md` and `report.html`. `report.json`'s `aggregates.pairwise` is written by
//! [`crate::aggregate::PairwiseAcc::report`]. Every figure comes from the run's aggregates.

use crate::aggregate::{PairCounts, RunAggregator};
use evalfleet_model::text::escape;

fn pct(x: Option<f64>) -> String {
    x.map_or("–".into(), |x| format!("{:.1}%", x * 100.0))
}

fn interval(ci: Option<[f64; 2]>) -> String {
    ci.map_or("–".into(), |[lo, hi]| {
        format!("{:.1}–{:.1}%", lo * 100.0, hi * 100.0)
    })
}

/// One table row's cells after the label: n, win/tie/loss rates with intervals, position bias.
fn cells(c: &PairCounts) -> [String; 8] {
    let s = c.summary();
    [
        s.n.to_string(),
        pct(s.win_rate),
        interval(s.win_rate_ci95),
        pct(s.tie_rate),
        interval(s.tie_rate_ci95),
        pct(s.loss_rate),
        interval(s.loss_rate_ci95),
        pct(s.position_bias),
    ]
}

const HEAD: [&str; 8] = [
    "Items",
    "Win rate",
    "95% CI",
    "Tie rate",
    "95% CI",
    "Loss rate",
    "95% CI",
    "Position bias",
];

/// The rows of one dimension: the whole run, then each group of each grouping.
fn rows(agg: &RunAggregator, slot: usize, counts: &PairCounts) -> Vec<(String, [String; 8])> {
    let mut rows = vec![("all items".to_owned(), cells(counts))];
    for (i, grouping) in agg.groupings().iter().enumerate() {
        for (key, c) in agg.pairwise.groups(i, slot) {
            rows.push((format!("{}: {}", grouping.name, key.join("|")), cells(c)));
        }
    }
    rows
}

/// `## Pairwise Preference` in summary.md, when the suite has pairwise dimensions.
pub(crate) fn markdown(out: &mut String, agg: &RunAggregator) {
    if agg.pairwise.is_empty() {
        return;
    }
    out.push_str("## Pairwise Preference\n\n");
    out.push_str(
        "Each item asked twice with the two answers' positions swapped; a verdict that flips with \
         the swap is a tie and counts toward position bias.\n\n",
    );
    for (slot, (dim, counts)) in agg.pairwise.each().enumerate() {
        out.push_str(&format!(
            "### {dim}\n\n| Group | {} |\n|---|{}\n",
            HEAD.join(" | "),
            "---|".repeat(HEAD.len())
        ));
        for (label, cells) in rows(agg, slot, counts) {
            out.push_str(&format!("| {label} | {} |\n", cells.join(" | ")));
        }
        out.push('\n');
    }
}

/// The same tables in report.html.
pub(crate) fn html(h: &mut String, agg: &RunAggregator) {
    if agg.pairwise.is_empty() {
        return;
    }
    h.push_str("<h2>Pairwise preference</h2>\n");
    for (slot, (dim, counts)) in agg.pairwise.each().enumerate() {
        h.push_str(&format!(
            "<h3>{}</h3>\n<table>\n<tr><th>Group</th>",
            escape(dim)
        ));
        for head in HEAD {
            h.push_str(&format!("<th>{head}</th>"));
        }
        h.push_str("</tr>\n");
        for (label, cells) in rows(agg, slot, counts) {
            h.push_str(&format!("<tr><td>{}</td>", escape(&label)));
            for cell in cells {
                h.push_str(&format!("<td>{}</td>", escape(&cell)));
            }
            h.push_str("</tr>\n");
        }
        h.push_str("</table>\n");
    }
}
