//! The aggregator's Prometheus metrics (DESIGN §6). Run ids appear only on run-level gauges of
//! active runs, and those series are removed when the run finishes, so label sets stay bounded.

use std::sync::OnceLock;

use prometheus::{GaugeVec, IntCounter, IntGaugeVec, Opts, Registry};

pub struct AggregatorMetrics {
    pub registry: Registry,
    pub run_examples: IntGaugeVec,
    pub run_total: IntGaugeVec,
    pub run_progress: GaugeVec,
    pub run_pass: GaugeVec,
    pub queue_messages: IntGaugeVec,
    pub score_mean: GaugeVec,
    pub reports_written: IntCounter,
}

fn build() -> prometheus::Result<AggregatorMetrics> {
    let registry = Registry::new();
    let int_gauges = |name: &str, help: &str, labels: &[&str]| -> prometheus::Result<IntGaugeVec> {
        let g = IntGaugeVec::new(Opts::new(name, help), labels)?;
        registry.register(Box::new(g.clone()))?;
        Ok(g)
    };
    let gauges = |name: &str, help: &str, labels: &[&str]| -> prometheus::Result<GaugeVec> {
        let g = GaugeVec::new(Opts::new(name, help), labels)?;
        registry.register(Box::new(g.clone()))?;
        Ok(g)
    };
    let m = AggregatorMetrics {
        run_examples: int_gauges(
            "evalfleet_run_examples",
            "Results stored for an active run, by outcome.",
            &["run", "outcome"],
        )?,
        run_total: int_gauges(
            "evalfleet_run_total",
            "Records of an active run (known once submission ends).",
            &["run"],
        )?,
        run_progress: gauges(
            "evalfleet_run_progress_ratio",
            "Share of an active run's records with a stored result.",
            &["run"],
        )?,
        run_pass: gauges(
            "evalfleet_run_pass_ratio",
            "Share of an active run's evaluated examples that passed every gate.",
            &["run"],
        )?,
        queue_messages: int_gauges(
            "evalfleet_queue_messages",
            "Messages in the work and dead-letter queues, by state (ready, unacked).",
            &["queue", "state"],
        )?,
        score_mean: gauges(
            "evalfleet_score_mean",
            "Mean judge score of active runs, by suite, dimension, model and prompt version.",
            &["suite", "dimension", "model", "prompt_version"],
        )?,
        reports_written: {
            let c = IntCounter::new(
                "evalfleet_reports_written_total",
                "Runs whose reports this aggregator wrote.",
            )?;
            registry.register(Box::new(c.clone()))?;
            c
        },
        registry,
    };
    #[cfg(target_os = "linux")]
    m.registry.register(Box::new(
        prometheus::process_collector::ProcessCollector::for_self(),
    ))?;
    Ok(m)
}

/// The process-wide aggregator metrics.
pub fn metrics() -> &'static AggregatorMetrics {
    static METRICS: OnceLock<AggregatorMetrics> = OnceLock::new();
    METRICS.get_or_init(|| build().expect("the aggregator's metric definitions are valid"))
}

impl AggregatorMetrics {
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
