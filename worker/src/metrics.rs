//! The worker's Prometheus metrics (DESIGN §6): names, units and bounded labels — never an
//! example id. One registry per process, served at `/metrics`; the judge and the consumer
//! loops update it through [`metrics()`].

use std::sync::OnceLock;
use std::time::Duration;

use prometheus::{
    CounterVec, Encoder, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec,
    IntGauge, Opts, Registry, TextEncoder,
};

/// Buckets for work that waits on LLMs: from 10 ms to 10 minutes.
const LLM_BUCKETS: [f64; 16] = [
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0,
];

pub struct WorkerMetrics {
    pub registry: Registry,
    pub examples_processed: IntCounterVec,
    pub example_duration: Histogram,
    pub judge_requests: IntCounterVec,
    pub judge_request_duration: HistogramVec,
    pub judge_retries: IntCounterVec,
    pub judge_tokens: IntCounterVec,
    pub judge_cost: CounterVec,
    pub rate_limit_wait: CounterVec,
    pub inflight: IntGauge,
    pub redelivered: IntCounter,
    pub dead_lettered: IntCounter,
}

fn build() -> prometheus::Result<WorkerMetrics> {
    let registry = Registry::new();
    let counter_vec =
        |name: &str, help: &str, labels: &[&str]| -> prometheus::Result<IntCounterVec> {
            let c = IntCounterVec::new(Opts::new(name, help), labels)?;
            registry.register(Box::new(c.clone()))?;
            Ok(c)
        };
    let float_vec = |name: &str, help: &str, labels: &[&str]| -> prometheus::Result<CounterVec> {
        let c = CounterVec::new(Opts::new(name, help), labels)?;
        registry.register(Box::new(c.clone()))?;
        Ok(c)
    };
    let m = WorkerMetrics {
        examples_processed: counter_vec(
            "evalfleet_examples_processed_total",
            "Examples processed, by suite and outcome.",
            &["suite", "outcome"],
        )?,
        example_duration: {
            let h = Histogram::with_opts(
                HistogramOpts::new(
                    "evalfleet_example_duration_seconds",
                    "Time to evaluate one example, judges included.",
                )
                .buckets(LLM_BUCKETS.to_vec()),
            )?;
            registry.register(Box::new(h.clone()))?;
            h
        },
        judge_requests: counter_vec(
            "evalfleet_judge_requests_total",
            "Judge HTTP requests, by provider, model and status (HTTP code, timeout or error).",
            &["provider", "model", "status"],
        )?,
        judge_request_duration: {
            let h = HistogramVec::new(
                HistogramOpts::new(
                    "evalfleet_judge_request_duration_seconds",
                    "Judge HTTP request latency.",
                )
                .buckets(LLM_BUCKETS.to_vec()),
                &["provider", "model"],
            )?;
            registry.register(Box::new(h.clone()))?;
            h
        },
        judge_retries: counter_vec(
            "evalfleet_judge_retries_total",
            "Judge calls retried, by provider and reason.",
            &["provider", "reason"],
        )?,
        judge_tokens: counter_vec(
            "evalfleet_judge_tokens_total",
            "Judge tokens, by provider, model and kind (input, output).",
            &["provider", "model", "kind"],
        )?,
        judge_cost: float_vec(
            "evalfleet_judge_cost_usd_total",
            "Estimated judge cost in USD, from the configured price table.",
            &["provider", "model"],
        )?,
        rate_limit_wait: float_vec(
            "evalfleet_rate_limit_wait_seconds_total",
            "Time judge calls waited for rate limits and the adaptive in-flight cap.",
            &["provider"],
        )?,
        inflight: {
            let g = IntGauge::new(
                "evalfleet_worker_inflight",
                "Examples being processed right now.",
            )?;
            registry.register(Box::new(g.clone()))?;
            g
        },
        redelivered: {
            let c = IntCounter::new(
                "evalfleet_messages_redelivered_total",
                "Messages the broker delivered again.",
            )?;
            registry.register(Box::new(c.clone()))?;
            c
        },
        dead_lettered: {
            let c = IntCounter::new(
                "evalfleet_messages_dead_lettered_total",
                "Messages this worker rejected to the dead-letter queue.",
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

/// The process-wide worker metrics.
pub fn metrics() -> &'static WorkerMetrics {
    static METRICS: OnceLock<WorkerMetrics> = OnceLock::new();
    METRICS.get_or_init(|| build().expect("the worker's metric definitions are valid"))
}

impl WorkerMetrics {
    pub fn judge_request(&self, provider: &str, model: &str, status: &str, took: Duration) {
        self.judge_requests
            .with_label_values(&[provider, model, status])
            .inc();
        self.judge_request_duration
            .with_label_values(&[provider, model])
            .observe(took.as_secs_f64());
    }

    /// The text exposition of `registries`, for `/metrics`.
    pub fn render(registries: &[&Registry]) -> String {
        let mut families = Vec::new();
        for r in registries {
            families.extend(r.gather());
        }
        let mut out = Vec::new();
        let _ = TextEncoder::new().encode(&families, &mut out);
        String::from_utf8(out).unwrap_or_default()
    }
}
