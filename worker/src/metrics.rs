//! The worker's Prometheus metrics (docs/DESIGN.md §6): names, units and bounded labels — never an
//! example id. One registry per process, served at `/metrics`; the judge and the consumer
//! loops update it through [`metrics()`].

use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

use evalfleet_config::JudgeConfig;
use evalfleet_model::suite::SuiteKind;
use evalfleet_suites::suite::Suite;

use evalfleet_metrics::Registrar;
use prometheus::{
    CounterVec, GaugeVec, Histogram, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Registry,
};

/// The `kind` label values of `evalfleet_batch_request_errors_total`.
pub const BATCH_ERROR_KINDS: [&str; 4] = ["errored", "expired", "canceled", "missing"];

/// Buckets for a provider batch's turnaround: from 10 s to the 24-hour window (and past it).
const BATCH_BUCKETS: [f64; 12] = [
    10.0, 30.0, 60.0, 300.0, 900.0, 1_800.0, 3_600.0, 7_200.0, 14_400.0, 28_800.0, 57_600.0,
    86_400.0,
];

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
    pub batches: IntGaugeVec,
    pub batches_finished: IntCounterVec,
    pub batch_requests: IntGaugeVec,
    pub batch_turnaround: HistogramVec,
    pub batch_oldest_running: GaugeVec,
    pub batch_request_errors: IntCounterVec,
    pub redelivered: IntCounter,
    pub dead_lettered: IntCounter,
    pub target_requests: IntCounterVec,
    pub target_duration: HistogramVec,
    pub target_tokens: IntCounterVec,
    pub target_cost: CounterVec,
}

fn build() -> prometheus::Result<WorkerMetrics> {
    let r = Registrar::new()?;
    Ok(WorkerMetrics {
        examples_processed: r.int_counter_vec(
            "evalfleet_examples_processed_total",
            "Examples processed, by suite and outcome.",
            &["suite", "outcome"],
        )?,
        example_duration: r.histogram(
            "evalfleet_example_duration_seconds",
            "Time to evaluate one example, judges included.",
            &LLM_BUCKETS,
        )?,
        judge_requests: r.int_counter_vec(
            "evalfleet_judge_requests_total",
            "Judge HTTP requests, by provider, model and status (HTTP code, timeout or error).",
            &["provider", "model", "status"],
        )?,
        judge_request_duration: r.histogram_vec(
            "evalfleet_judge_request_duration_seconds",
            "Judge HTTP request latency.",
            &LLM_BUCKETS,
            &["provider", "model"],
        )?,
        judge_retries: r.int_counter_vec(
            "evalfleet_judge_retries_total",
            "Judge calls retried, by provider and reason.",
            &["provider", "reason"],
        )?,
        judge_tokens: r.int_counter_vec(
            "evalfleet_judge_tokens_total",
            "Judge tokens, by provider, model and kind (input, output).",
            &["provider", "model", "kind"],
        )?,
        judge_cost: r.counter_vec(
            "evalfleet_judge_cost_usd_total",
            "Estimated judge cost in USD, from the configured price table.",
            &["provider", "model"],
        )?,
        rate_limit_wait: r.counter_vec(
            "evalfleet_rate_limit_wait_seconds_total",
            "Time judge calls waited for rate limits and the adaptive in-flight cap.",
            &["provider"],
        )?,
        inflight: r.int_gauge(
            "evalfleet_worker_inflight",
            "Examples being processed right now.",
        )?,
        batches: r.int_gauge_vec(
            "evalfleet_batches",
            "Provider batches by state (submitting, running), counted by the process coordinating them.",
            &["provider", "state"],
        )?,
        batches_finished: r.int_counter_vec(
            "evalfleet_batches_finished_total",
            "Provider batches seen through, by how they ended (ended: results downloaded; \
             failed: refused, failed or unreadable).",
            &["provider", "state"],
        )?,
        batch_requests: r.int_gauge_vec(
            "evalfleet_batch_requests",
            "Judge requests in batch mode by state: pending (gathered, not sent) or in_batches.",
            &["provider", "state"],
        )?,
        batch_turnaround: r.histogram_vec(
            "evalfleet_batch_turnaround_seconds",
            "Time from a batch's submission to its downloaded results.",
            &BATCH_BUCKETS,
            &["provider"],
        )?,
        batch_oldest_running: r.gauge_vec(
            "evalfleet_batch_oldest_running_timestamp_seconds",
            "Unix time the oldest still-running batch was submitted (0: none running); \
             alert when it is older than the 24-hour completion window.",
            &["provider"],
        )?,
        batch_request_errors: r.int_counter_vec(
            "evalfleet_batch_request_errors_total",
            "Batch requests that came back without a reply, by kind (errored, expired, \
             canceled, missing).",
            &["provider", "kind"],
        )?,
        redelivered: r.int_counter(
            "evalfleet_messages_redelivered_total",
            "Messages the broker delivered again.",
        )?,
        dead_lettered: r.int_counter(
            "evalfleet_messages_dead_lettered_total",
            "Messages this worker rejected to the dead-letter queue.",
        )?,
        target_requests: r.int_counter_vec(
            "evalfleet_target_requests_total",
            "Requests to the system under test, by target and status (HTTP code, timeout or \
             error); each attempt counts.",
            &["target", "status"],
        )?,
        target_duration: r.histogram_vec(
            "evalfleet_target_duration_seconds",
            "Time to get one example's outputs from the target, retries included.",
            &LLM_BUCKETS,
            &["target"],
        )?,
        target_tokens: r.int_counter_vec(
            "evalfleet_target_tokens_total",
            "Tokens a chat target's provider billed, by direction (input, output).",
            &["target", "direction"],
        )?,
        target_cost: r.counter_vec(
            "evalfleet_target_cost_usd_total",
            "What the target's calls cost (USD).",
            &["target"],
        )?,
        registry: r.finish(),
    })
}

/// The process-wide worker metrics.
pub fn metrics() -> &'static WorkerMetrics {
    static METRICS: OnceLock<WorkerMetrics> = OnceLock::new();
    METRICS.get_or_init(|| build().expect("the worker's metric definitions are valid"))
}

/// Every outcome an example can end with.
pub const OUTCOMES: [&str; 3] = ["ok", "failed", "skipped"];
/// The judge statuses the dashboard and the alerts single out: success and rate limiting.
/// Other statuses (5xx, timeout, ...) appear when they happen.
pub const KNOWN_STATUSES: [&str; 2] = ["200", "429"];
/// The retry reasons that do not depend on a status code (`http_<status>` ones appear when
/// they happen); the judge's `retry_reason` gives these names.
pub const RETRY_REASONS: [&str; 6] = [
    "rate_limited",
    "overloaded",
    "timeout",
    "connect",
    "malformed",
    "other",
];
/// Token kinds.
pub const TOKEN_KINDS: [&str; 2] = ["input", "output"];

impl WorkerMetrics {
    /// Creates, at 0, a target's series: its requests answered 200, its latency, tokens and
    /// cost (other statuses appear when they happen).
    pub fn init_target(&self, target: &str) {
        for status in KNOWN_STATUSES {
            self.target_requests.with_label_values(&[target, status]);
        }
        self.target_duration.with_label_values(&[target]);
        for direction in TOKEN_KINDS {
            self.target_tokens.with_label_values(&[target, direction]);
        }
        self.target_cost.with_label_values(&[target]);
    }

    /// Creates, at 0, the labelled series whose label values are known before the first
    /// example: examples processed per suite and outcome, and per configured judge provider
    /// (with the model `judge_models` gives it) its requests by the known statuses, latency,
    /// retries by reason, tokens by kind, cost and rate-limiter wait. A counter that first
    /// appears at 1 makes `rate()` and `increase()` miss that first step; one present at 0
    /// from the first scrape does not.
    pub fn init_known<'a>(
        &self,
        suites: impl IntoIterator<Item = &'a str>,
        judges: Option<&JudgeConfig>,
    ) {
        for suite in suites {
            for outcome in OUTCOMES {
                self.examples_processed.with_label_values(&[suite, outcome]);
            }
        }
        let Some(judges) = judges else { return };
        for (provider, model) in &judges.judge_models {
            if !judges.providers.contains_key(provider) {
                continue;
            }
            let (provider, model) = (provider.as_str(), model.as_str());
            for status in KNOWN_STATUSES {
                self.judge_requests
                    .with_label_values(&[provider, model, status]);
            }
            self.judge_request_duration
                .with_label_values(&[provider, model]);
            for reason in RETRY_REASONS {
                self.judge_retries.with_label_values(&[provider, reason]);
            }
            for kind in TOKEN_KINDS {
                self.judge_tokens
                    .with_label_values(&[provider, model, kind]);
            }
            self.judge_cost.with_label_values(&[provider, model]);
            self.rate_limit_wait.with_label_values(&[provider]);
            // Batch mode's series too, so its dashboard row shows zeros rather than nothing.
            for state in ["submitting", "running"] {
                self.batches.with_label_values(&[provider, state]);
            }
            for state in ["ended", "failed"] {
                self.batches_finished.with_label_values(&[provider, state]);
            }
            for state in ["pending", "in_batches"] {
                self.batch_requests.with_label_values(&[provider, state]);
            }
            self.batch_turnaround.with_label_values(&[provider]);
            self.batch_oldest_running.with_label_values(&[provider]);
            for kind in BATCH_ERROR_KINDS {
                self.batch_request_errors
                    .with_label_values(&[provider, kind]);
            }
        }
    }

    pub fn judge_request(&self, provider: &str, model: &str, status: &str, took: Duration) {
        self.judge_requests
            .with_label_values(&[provider, model, status])
            .inc();
        self.judge_request_duration
            .with_label_values(&[provider, model])
            .observe(took.as_secs_f64());
    }
}

/// The suites a worker can expect: the built-in ones and those in `suites_dir` (a file that
/// does not load is left out: the run that names it fails at submit).
pub fn known_suites(suites_dir: Option<&Path>) -> Vec<String> {
    let mut names: Vec<String> = SuiteKind::ALL.iter().map(|k| k.name().to_owned()).collect();
    let files = suites_dir
        .and_then(|dir| std::fs::read_dir(dir).ok())
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"));
    for path in files {
        if let Ok(suite) = Suite::from_file(&path) {
            names.push(suite.name);
        }
    }
    names.sort();
    names.dedup();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (labels, value) of every series of `family` in `m`'s exposition.
    fn series(m: &WorkerMetrics, family: &str) -> Vec<(Vec<(String, String)>, f64)> {
        m.registry
            .gather()
            .iter()
            .filter(|f| f.name() == family)
            .flat_map(|f| f.get_metric())
            .map(|s| {
                let labels = s
                    .get_label()
                    .iter()
                    .map(|l| (l.name().to_owned(), l.value().to_owned()))
                    .collect();
                let value = if family.ends_with("_seconds") {
                    s.get_histogram().get_sample_count() as f64
                } else {
                    s.get_counter().get_value()
                };
                (labels, value)
            })
            .collect()
    }

    fn has(series: &[(Vec<(String, String)>, f64)], want: &[(&str, &str)]) -> bool {
        series.iter().any(|(labels, value)| {
            *value == 0.0
                && want
                    .iter()
                    .all(|(k, v)| labels.iter().any(|(lk, lv)| lk == k && lv == v))
        })
    }

    #[test]
    fn known_label_values_start_at_zero() {
        let m = build().unwrap();
        assert!(series(&m, "evalfleet_examples_processed_total").is_empty());
        let judges = JudgeConfig::default();
        assert!(
            !judges.judge_models.is_empty(),
            "the defaults name judge models"
        );
        m.init_known(["support-judge", "mine"], Some(&judges));
        let processed = series(&m, "evalfleet_examples_processed_total");
        assert_eq!(processed.len(), 2 * OUTCOMES.len());
        for suite in ["support-judge", "mine"] {
            for outcome in OUTCOMES {
                assert!(has(&processed, &[("suite", suite), ("outcome", outcome)]));
            }
        }
        for (provider, model) in &judges.judge_models {
            let (p, md) = (provider.as_str(), model.as_str());
            let requests = series(&m, "evalfleet_judge_requests_total");
            for status in KNOWN_STATUSES {
                assert!(has(
                    &requests,
                    &[("provider", p), ("model", md), ("status", status)]
                ));
            }
            let latency = series(&m, "evalfleet_judge_request_duration_seconds");
            assert!(has(&latency, &[("provider", p), ("model", md)]));
            let retries = series(&m, "evalfleet_judge_retries_total");
            for reason in RETRY_REASONS {
                assert!(has(&retries, &[("provider", p), ("reason", reason)]));
            }
            let tokens = series(&m, "evalfleet_judge_tokens_total");
            for kind in TOKEN_KINDS {
                assert!(has(
                    &tokens,
                    &[("provider", p), ("model", md), ("kind", kind)]
                ));
            }
            assert!(has(
                &series(&m, "evalfleet_judge_cost_usd_total"),
                &[("provider", p), ("model", md)]
            ));
            assert!(has(
                &series(&m, "evalfleet_rate_limit_wait_seconds_total"),
                &[("provider", p)]
            ));
        }
    }

    #[test]
    fn a_model_without_a_configured_provider_is_left_out() {
        let m = build().unwrap();
        let mut judges = JudgeConfig::default();
        judges.judge_models.insert("nowhere".into(), "m-1".into());
        m.init_known([], Some(&judges));
        let requests = series(&m, "evalfleet_judge_requests_total");
        assert!(!requests.is_empty());
        assert!(requests
            .iter()
            .all(|(labels, _)| !labels.iter().any(|(_, v)| v == "nowhere")));
    }

    #[test]
    fn known_suites_are_the_builtins_and_the_suite_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("strict.yaml"),
            "name: support-strict\nextends: support-judge\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("broken.yaml"), "name: [\n").unwrap();
        let names = known_suites(Some(dir.path()));
        for want in [
            "log-analysis",
            "rag-layers",
            "support-judge",
            "support-strict",
        ] {
            assert!(names.contains(&want.to_owned()), "{names:?}");
        }
        assert_eq!(names.len(), 4, "{names:?}");
        assert_eq!(known_suites(None).len(), 3);
    }
}
