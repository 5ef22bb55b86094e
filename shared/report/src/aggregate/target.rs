//! What a target run's calls to the system under test came to: how many, how fast (p50, p95,
//! p99 from an HDR histogram, so memory stays bounded whatever the run's size and the fold does
//! not depend on the order results arrive in), the tokens and the cost. Target failures are
//! counted with the other failures, under their own kind (`target NAME`).

use hdrhistogram::Histogram;
use serde::Serialize;

use evalfleet_model::record::TargetCall;
use evalfleet_model::stats::Stats;

/// Latencies are kept in microseconds, to three significant digits.
const SIGNIFICANT: u8 = 3;

pub struct TargetAcc {
    pub name: String,
    /// Examples whose outputs the target generated.
    pub calls: u64,
    /// Attempts, retries included.
    pub attempts: u64,
    latency_us: Histogram<u64>,
    /// Sums in fixed point: a fleet run (arrival order) and an embedded one report the same
    /// bits.
    latency_ms: Stats,
    pub tokens_in: u64,
    pub tokens_out: u64,
    cost_usd: Stats,
}

/// The target block of `report.json`.
#[derive(Debug, Serialize, PartialEq)]
pub struct TargetSummary {
    pub name: String,
    pub calls: u64,
    pub attempts: u64,
    pub latency_ms: Latency,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub cost_usd: f64,
}

#[derive(Debug, Serialize, PartialEq)]
pub struct Latency {
    pub mean: Option<f64>,
    pub p50: Option<f64>,
    pub p95: Option<f64>,
    pub p99: Option<f64>,
    pub max: Option<f64>,
}

impl TargetAcc {
    pub fn new(name: &str) -> Self {
        TargetAcc {
            name: name.to_owned(),
            calls: 0,
            attempts: 0,
            latency_us: Histogram::new(SIGNIFICANT)
                .expect("3 significant digits is a valid precision"),
            latency_ms: Stats::default(),
            tokens_in: 0,
            tokens_out: 0,
            cost_usd: Stats::default(),
        }
    }

    pub fn observe(&mut self, call: &TargetCall) {
        self.calls += 1;
        self.attempts += u64::from(call.attempts);
        if call.latency_ms.is_finite() && call.latency_ms >= 0.0 {
            // Auto-resizing: a value above the range grows it rather than failing.
            let _ = self
                .latency_us
                .record((call.latency_ms * 1000.0).round() as u64);
            self.latency_ms.push(call.latency_ms);
        }
        self.tokens_in += call.tokens_in;
        self.tokens_out += call.tokens_out;
        self.cost_usd.push(call.cost_usd);
    }

    pub fn summary(&self) -> TargetSummary {
        let n = self.latency_us.len();
        let at = |q: f64| (n > 0).then(|| self.latency_us.value_at_quantile(q) as f64 / 1000.0);
        TargetSummary {
            name: self.name.clone(),
            calls: self.calls,
            attempts: self.attempts,
            latency_ms: Latency {
                mean: self.latency_ms.mean(),
                p50: at(0.50),
                p95: at(0.95),
                p99: at(0.99),
                max: (n > 0).then(|| self.latency_us.max() as f64 / 1000.0),
            },
            tokens_in: self.tokens_in,
            tokens_out: self.tokens_out,
            cost_usd: self.cost_usd.sum(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_quantiles_within_three_digits_and_sums() {
        let mut acc = TargetAcc::new("bot");
        for ms in 1..=1000 {
            acc.observe(&TargetCall {
                name: "bot".into(),
                latency_ms: ms as f64,
                attempts: 1,
                tokens_in: 10,
                tokens_out: 5,
                cost_usd: 0.001,
            });
        }
        let s = acc.summary();
        let close = |got: Option<f64>, want: f64| (got.unwrap() - want).abs() / want < 0.002;
        assert!(close(s.latency_ms.p50, 500.0), "{:?}", s.latency_ms);
        assert!(close(s.latency_ms.p95, 950.0), "{:?}", s.latency_ms);
        assert!(close(s.latency_ms.p99, 990.0), "{:?}", s.latency_ms);
        assert!(close(s.latency_ms.max, 1000.0));
        assert!(close(s.latency_ms.mean, 500.5));
        assert_eq!(
            (s.calls, s.attempts, s.tokens_in, s.tokens_out),
            (1000, 1000, 10_000, 5_000)
        );
        assert!((s.cost_usd - 1.0).abs() < 1e-9);
        let empty = TargetAcc::new("bot").summary();
        assert_eq!(empty.latency_ms.p50, None);
    }
}
