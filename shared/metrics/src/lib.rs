//! # evalfleet-metrics
//! Owns: what every evalfleet process with a `/metrics` endpoint does the same way with the
//! `prometheus` crate — a registry with the process collector, metrics created and registered
//! in one step ([`Registrar`]), and the text exposition ([`render`]). Which metrics exist, their
//! names and labels, stay with each role (`evalfleet-worker`'s and `evalfleet-aggregator`'s
//! `metrics.rs`, docs/DESIGN.md §6).
//!
//! Its own crate because the worker and the aggregator share nothing else that could hold it:
//! neither depends on the other, the worker must not depend on `fleet`, and `contract` is pure.
//! It depends on `prometheus` alone.

use prometheus::core::Collector;
use prometheus::{
    CounterVec, Encoder, GaugeVec, Histogram, HistogramOpts, HistogramVec, IntCounter,
    IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry, TextEncoder,
};

pub use prometheus::Result;

/// Creates metrics and registers each in its registry as it is made, so a metric cannot be
/// created and then forgotten.
pub struct Registrar {
    registry: Registry,
}

impl Registrar {
    /// A new registry; on Linux it also exports the process's CPU, memory and file descriptors
    /// (`process_*`).
    pub fn new() -> Result<Self> {
        let registry = Registry::new();
        #[cfg(target_os = "linux")]
        registry.register(Box::new(
            prometheus::process_collector::ProcessCollector::for_self(),
        ))?;
        Ok(Registrar { registry })
    }

    /// The registry, once every metric is registered.
    pub fn finish(self) -> Registry {
        self.registry
    }

    fn register<C: Collector + Clone + 'static>(&self, metric: C) -> Result<C> {
        self.registry.register(Box::new(metric.clone()))?;
        Ok(metric)
    }

    pub fn int_counter(&self, name: &str, help: &str) -> Result<IntCounter> {
        self.register(IntCounter::new(name, help)?)
    }

    pub fn int_counter_vec(
        &self,
        name: &str,
        help: &str,
        labels: &[&str],
    ) -> Result<IntCounterVec> {
        self.register(IntCounterVec::new(Opts::new(name, help), labels)?)
    }

    /// A counter of fractional amounts (seconds, dollars).
    pub fn counter_vec(&self, name: &str, help: &str, labels: &[&str]) -> Result<CounterVec> {
        self.register(CounterVec::new(Opts::new(name, help), labels)?)
    }

    pub fn int_gauge(&self, name: &str, help: &str) -> Result<IntGauge> {
        self.register(IntGauge::new(name, help)?)
    }

    pub fn int_gauge_vec(&self, name: &str, help: &str, labels: &[&str]) -> Result<IntGaugeVec> {
        self.register(IntGaugeVec::new(Opts::new(name, help), labels)?)
    }

    pub fn gauge_vec(&self, name: &str, help: &str, labels: &[&str]) -> Result<GaugeVec> {
        self.register(GaugeVec::new(Opts::new(name, help), labels)?)
    }

    pub fn histogram(&self, name: &str, help: &str, buckets: &[f64]) -> Result<Histogram> {
        let opts = HistogramOpts::new(name, help).buckets(buckets.to_vec());
        self.register(Histogram::with_opts(opts)?)
    }

    pub fn histogram_vec(
        &self,
        name: &str,
        help: &str,
        buckets: &[f64],
        labels: &[&str],
    ) -> Result<HistogramVec> {
        let opts = HistogramOpts::new(name, help).buckets(buckets.to_vec());
        self.register(HistogramVec::new(opts, labels)?)
    }
}

/// The media type of [`render`]'s output (Prometheus text format 0.0.4).
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The text exposition of every metric in `registries`, for `/metrics`.
pub fn render(registries: &[&Registry]) -> String {
    let families: Vec<_> = registries.iter().flat_map(|r| r.gather()).collect();
    let mut out = Vec::new();
    let _ = TextEncoder::new().encode(&families, &mut out);
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_metrics_are_exported_with_their_names_labels_and_buckets() {
        let r = Registrar::new().unwrap();
        let counter = r
            .int_counter_vec("t_things_total", "Things.", &["kind"])
            .unwrap();
        let gauge = r.int_gauge("t_level", "Level.").unwrap();
        let seconds = r.histogram("t_seconds", "Time.", &[0.5, 1.0]).unwrap();
        let registry = r.finish();
        counter.with_label_values(&["a"]).inc_by(3);
        gauge.set(7);
        seconds.observe(0.7);
        let text = render(&[&registry]);
        assert!(text.contains("# HELP t_things_total Things."), "{text}");
        assert!(text.contains("t_things_total{kind=\"a\"} 3"), "{text}");
        assert!(text.contains("t_level 7"), "{text}");
        assert!(text.contains("t_seconds_bucket{le=\"0.5\"} 0"), "{text}");
        assert!(text.contains("t_seconds_bucket{le=\"1\"} 1"), "{text}");
    }

    #[test]
    fn a_name_registered_twice_is_refused() {
        let r = Registrar::new().unwrap();
        r.int_counter("t_once_total", "Once.").unwrap();
        assert!(r.int_counter("t_once_total", "Once.").is_err());
    }
}
