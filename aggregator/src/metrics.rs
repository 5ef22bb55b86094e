//! The aggregator's Prometheus metrics (docs/DESIGN.md §6). Run ids appear only on run-level gauges of
//! active runs, and those series are removed when the run finishes, so label sets stay bounded.

use std::sync::OnceLock;

use evalfleet_metrics::Registrar;
use prometheus::{GaugeVec, IntCounter, IntGaugeVec, Registry};

use evalfleet_contract::depth::Depth;

pub struct AggregatorMetrics {
    pub registry: Registry,
    pub run_examples: IntGaugeVec,
    /// `evalfleet_run_records{run}`: a gauge, so its name must not end in `_total`.
    pub run_total: IntGaugeVec,
    pub run_progress: GaugeVec,
    pub run_pass: GaugeVec,
    pub queue_messages: IntGaugeVec,
    pub score_mean: GaugeVec,
    pub reports_written: IntCounter,
}

fn build() -> prometheus::Result<AggregatorMetrics> {
    let r = Registrar::new()?;
    Ok(AggregatorMetrics {
        run_examples: r.int_gauge_vec(
            "evalfleet_run_examples",
            "Results stored for an active run, by outcome.",
            &["run", "outcome"],
        )?,
        run_total: r.int_gauge_vec(
            "evalfleet_run_records",
            "Records of an active run (known once submission ends).",
            &["run"],
        )?,
        run_progress: r.gauge_vec(
            "evalfleet_run_progress_ratio",
            "Share of an active run's records with a stored result.",
            &["run"],
        )?,
        run_pass: r.gauge_vec(
            "evalfleet_run_pass_ratio",
            "Share of an active run's evaluated examples that passed every gate.",
            &["run"],
        )?,
        queue_messages: r.int_gauge_vec(
            "evalfleet_queue_messages",
            "Messages in the work and dead-letter queues, by state (ready, unacked).",
            &["queue", "state"],
        )?,
        score_mean: r.gauge_vec(
            "evalfleet_score_mean",
            "Mean judge score of active runs, by suite, dimension, model and prompt version.",
            &["suite", "dimension", "model", "prompt_version"],
        )?,
        reports_written: r.int_counter(
            "evalfleet_reports_written_total",
            "Runs whose reports this aggregator wrote.",
        )?,
        registry: r.finish(),
    })
}

/// The process-wide aggregator metrics.
pub fn metrics() -> &'static AggregatorMetrics {
    static METRICS: OnceLock<AggregatorMetrics> = OnceLock::new();
    METRICS.get_or_init(|| build().expect("the aggregator's metric definitions are valid"))
}

impl AggregatorMetrics {
    /// One queue's depth: `state="ready"` always, `state="unacked"` only when the source can see
    /// it — a series the source cannot back is removed rather than left stale.
    pub fn set_queue_depth(&self, queue: &str, depth: Depth) {
        let gauge = |state: &str| self.queue_messages.with_label_values(&[queue, state]);
        gauge("ready").set(clamp(depth.ready));
        match depth.unacked {
            Some(n) => gauge("unacked").set(clamp(n)),
            None => {
                let _ = self.queue_messages.remove_label_values(&[queue, "unacked"]);
            }
        }
    }

    /// The exported `evalfleet_queue_messages{queue,state}`, None when that series does not
    /// exist (read through the registry, so looking never creates it).
    pub fn queue_depth(&self, queue: &str, state: &str) -> Option<i64> {
        self.registry
            .gather()
            .iter()
            .filter(|f| f.name() == "evalfleet_queue_messages")
            .flat_map(|f| f.get_metric())
            .find(|s| {
                let label = |name: &str| s.get_label().iter().find(|l| l.name() == name);
                label("queue").is_some_and(|l| l.value() == queue)
                    && label("state").is_some_and(|l| l.value() == state)
            })
            .map(|s| s.get_gauge().get_value() as i64)
    }

    /// Drops every series of a run that is no longer active.
    pub fn forget_run(&self, run: &str) {
        for outcome in ["ok", "failed", "skipped"] {
            let _ = self.run_examples.remove_label_values(&[run, outcome]);
        }
        let _ = self.run_total.remove_label_values(&[run]);
        let _ = self.run_progress.remove_label_values(&[run]);
        let _ = self.run_pass.remove_label_values(&[run]);
    }
}

fn clamp(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(m: &AggregatorMetrics, queue: &str, state: &str) -> Option<i64> {
        m.queue_depth(queue, state)
    }

    #[test]
    fn unacked_is_reported_only_when_the_source_sees_it() {
        let m = build().unwrap();
        m.set_queue_depth(
            "p.examples",
            Depth {
                ready: 4,
                unacked: Some(3),
            },
        );
        assert_eq!(value(&m, "p.examples", "ready"), Some(4));
        assert_eq!(value(&m, "p.examples", "unacked"), Some(3));
        m.set_queue_depth(
            "p.examples",
            Depth {
                ready: 5,
                unacked: None,
            },
        );
        assert_eq!(value(&m, "p.examples", "ready"), Some(5));
        assert_eq!(
            value(&m, "p.examples", "unacked"),
            None,
            "no stale unacked count"
        );
    }
}
