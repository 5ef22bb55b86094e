//! Run gauges: an active run's counts, progress and pass rate, and the mean judge scores its
//! results show so far (`evalfleet_run_*`, `evalfleet_score_mean`).

use evalfleet_contract::registry::RunMeta;
use evalfleet_contract::store::Counts;

use crate::fold::Tracked;
use crate::metrics::metrics;

/// Sets the gauges of `meta`'s run from its stored `counts` and, when this aggregator follows
/// it, its aggregates.
pub(crate) fn publish_run(meta: &RunMeta, counts: Counts, tracked: Option<&Tracked>) {
    let m = metrics();
    let run = meta.id.as_str();
    for (outcome, n) in [
        ("ok", counts.ok),
        ("failed", counts.failed),
        ("skipped", counts.skipped),
    ] {
        m.run_examples
            .with_label_values(&[run, outcome])
            .set(n as i64);
    }
    if let Some(total) = meta.total.filter(|t| *t > 0) {
        m.run_total.with_label_values(&[run]).set(total as i64);
        m.run_progress
            .with_label_values(&[run])
            .set(counts.done() as f64 / total as f64);
    }
    let Some(t) = tracked else { return };
    if let Some(rate) = t.agg.all.pass_rate() {
        m.run_pass.with_label_values(&[run]).set(rate);
    }
    let suite = t.spec.suite.name.as_str();
    for (grouping, groups) in t.agg.grouped() {
        if grouping.keys != ["model", "prompt_version"] {
            continue;
        }
        for (key, g) in groups {
            for (slot, dim) in t.agg.dimensions().iter().enumerate() {
                if let Some(mean) = g.scores[slot].mean() {
                    m.score_mean
                        .with_label_values(&[suite, dim, &key[0], &key[1]])
                        .set(mean);
                }
            }
        }
    }
}
