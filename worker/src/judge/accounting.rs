//! A run's accounting: tokens and estimated cost per call from the configured price table, and
//! the run budget. The budget is checked before every call and charged after it, so a run stops
//! calling judges once the budget is spent (calls already in flight still finish). One
//! accounting serves the judges and the run's target ([`crate::Judge::accounting`]), so that
//! `--budget` covers what both spend.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use evalfleet_config::Price;

/// Micro-dollars: atomic integer arithmetic for a shared running total.
const MICRO: f64 = 1_000_000.0;

pub struct Accounting {
    prices: BTreeMap<String, Price>,
    budget_micro: Option<u64>,
    spent_micro: AtomicU64,
}

impl Accounting {
    pub fn new(prices: BTreeMap<String, Price>, budget_usd: Option<f64>) -> Self {
        Accounting {
            prices,
            budget_micro: budget_usd.map(|b| (b.max(0.0) * MICRO).round() as u64),
            spent_micro: AtomicU64::new(0),
        }
    }

    /// The estimated cost of a call; 0 for a model without a price.
    pub fn cost(&self, model: &str, input_tokens: u64, output_tokens: u64) -> f64 {
        self.prices.get(model).map_or(0.0, |p| {
            (input_tokens as f64 * p.input_per_mtok + output_tokens as f64 * p.output_per_mtok)
                / MICRO
        })
    }

    pub fn has_price(&self, model: &str) -> bool {
        self.prices.contains_key(model)
    }

    /// The run budget, if any (as the micro-dollars it is kept in).
    pub fn budget_usd(&self) -> Option<f64> {
        self.budget_micro.map(|b| b as f64 / MICRO)
    }

    /// Whether another judge call may start.
    pub fn within_budget(&self) -> bool {
        self.budget_micro
            .is_none_or(|b| self.spent_micro.load(Ordering::SeqCst) < b)
    }

    pub fn charge(&self, cost_usd: f64) {
        self.spent_micro
            .fetch_add((cost_usd * MICRO).round() as u64, Ordering::SeqCst);
    }

    pub fn spent_usd(&self) -> f64 {
        self.spent_micro.load(Ordering::SeqCst) as f64 / MICRO
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_and_budget() {
        let prices = [(
            "m".to_owned(),
            Price {
                input_per_mtok: 1.0,
                output_per_mtok: 4.0,
            },
        )]
        .into();
        let a = Accounting::new(prices, Some(0.01));
        assert!((a.cost("m", 1000, 500) - 0.003).abs() < 1e-12);
        assert_eq!(a.cost("unpriced", 1000, 500), 0.0);
        assert!(a.within_budget());
        a.charge(0.006);
        assert!(a.within_budget());
        a.charge(0.004);
        assert!(!a.within_budget(), "spent == budget stops further calls");
        assert!((a.spent_usd() - 0.01).abs() < 1e-12);
        assert_eq!(a.budget_usd(), Some(0.01));
        let unlimited = Accounting::new(BTreeMap::new(), None);
        assert!(unlimited.within_budget());
        assert_eq!(unlimited.budget_usd(), None);
    }
}
