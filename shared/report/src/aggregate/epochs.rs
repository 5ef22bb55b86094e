//! A run of K > 1 epochs (`--epochs K`): how often an item passes in at least one epoch
//! (pass@k) and in all of them (pass^k), and how consistent the system is with itself — per
//! judge dimension and per check, the mean over items of the standard deviation of the item's
//! epoch values (sample, n − 1). Sums in [`Stats`]' fixed point: the fold does not depend on the
//! order results arrive in.

use std::collections::BTreeMap;

use serde::Serialize;

use evalfleet_model::epochs::Epoch;
use evalfleet_model::stats::Stats;

#[derive(Default)]
pub struct EpochsAcc {
    /// The most epochs an item had (every item has K; a failed one none).
    k: usize,
    items: u64,
    pass_any: u64,
    pass_all: u64,
    /// Dimension or check → the items' within-item standard deviations.
    spread: BTreeMap<String, Stats>,
}

/// The `aggregates` entries of an epochs run.
#[derive(Debug, Serialize, PartialEq)]
pub struct EpochsSummary {
    pub epochs: usize,
    pub pass_at_k: Option<f64>,
    pub pass_all_k: Option<f64>,
    pub within_item_stddev: BTreeMap<String, Option<f64>>,
}

impl EpochsAcc {
    pub fn observe(&mut self, epochs: &[Epoch]) {
        self.k = self.k.max(epochs.len());
        self.items += 1;
        self.pass_any += u64::from(epochs.iter().any(|e| e.passed));
        self.pass_all += u64::from(epochs.iter().all(|e| e.passed));
        let Some(first) = epochs.first() else {
            return;
        };
        for (name, _) in &first.scores.0 {
            self.spread_of(name, epochs.iter().map(|e| e.scores.get(name)));
        }
        for (name, _) in &first.checks.0 {
            self.spread_of(name, epochs.iter().map(|e| e.checks.get(name)));
        }
    }

    /// One item's standard deviation of `name` across its epochs (the epochs that have it).
    /// Two passes over a handful of values: epochs that agree have exactly 0.
    fn spread_of(&mut self, name: &str, values: impl Iterator<Item = Option<f64>>) {
        let values: Vec<f64> = values.flatten().filter(|v| v.is_finite()).collect();
        if values.len() < 2 {
            return;
        }
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
        self.spread
            .entry(name.to_owned())
            .or_default()
            .push(var.sqrt());
    }

    pub fn summary(&self) -> EpochsSummary {
        let share = |n: u64| (self.items > 0).then(|| n as f64 / self.items as f64);
        EpochsSummary {
            epochs: self.k,
            pass_at_k: share(self.pass_any),
            pass_all_k: share(self.pass_all),
            within_item_stddev: self
                .spread
                .iter()
                .map(|(name, s)| (name.clone(), s.mean()))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use evalfleet_model::record::Metrics;

    fn epoch(score: f64, check: Option<f64>, passed: bool) -> Epoch {
        Epoch {
            epoch: 1,
            outputs: None,
            scores: Metrics(vec![("relevance".into(), Some(score))]),
            checks: Metrics(vec![("f1".into(), check)]),
            passed,
        }
    }

    #[test]
    fn pass_at_k_pass_all_k_and_the_spread_within_items() {
        let mut acc = EpochsAcc::default();
        acc.observe(&[epoch(4.0, Some(1.0), true), epoch(2.0, Some(1.0), false)]);
        acc.observe(&[epoch(3.0, None, true), epoch(3.0, Some(0.5), true)]);
        acc.observe(&[epoch(1.0, Some(0.0), false), epoch(1.0, Some(0.0), false)]);
        let s = acc.summary();
        assert_eq!(s.epochs, 2);
        assert_eq!(s.pass_at_k, Some(2.0 / 3.0));
        assert_eq!(s.pass_all_k, Some(1.0 / 3.0));
        // relevance: sd(4, 2) = √2, then 0 and 0; f1: 0 and 0 (the second item has one value).
        let sd = s.within_item_stddev["relevance"].unwrap();
        assert!((sd - 2f64.sqrt() / 3.0).abs() < 1e-9, "{sd}");
        assert_eq!(s.within_item_stddev["f1"], Some(0.0));
    }
}
