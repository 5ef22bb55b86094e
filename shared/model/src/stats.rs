//! Streaming summary statistics: count, min, max, mean and variance in O(1) memory, so
//! finishing a run of any size is immediate (docs/DESIGN.md §5).
//!
//! Sums are kept exactly, in 128-bit fixed point (2^-40 resolution): integer addition is
//! associative, so the result does not depend on the order results arrive in — a fleet run
//! (arrival order) and an embedded run (nearly dataset order) report the same bits. The mean is
//! `sum / count` as the seed computes it (exact for integer scores, so half-to-even rounding
//! sees the same f64: 107/40 → 2.67); the variance comes from the exact sums at the end.

use serde::Serialize;

/// Fixed-point scale: values are stored as round(x · 2^40).
const SCALE: f64 = (1u64 << 40) as f64;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    pub count: u64,
    sum: i128,
    sum_sq: i128,
    pub min: f64,
    pub max: f64,
}

fn fixed(x: f64) -> i128 {
    (x * SCALE).round() as i128
}

impl Stats {
    /// Folds one value; non-finite values are ignored.
    pub fn push(&mut self, x: f64) {
        if !x.is_finite() {
            return;
        }
        if self.count == 0 {
            self.min = x;
            self.max = x;
        } else {
            self.min = self.min.min(x);
            self.max = self.max.max(x);
        }
        self.count += 1;
        self.sum += fixed(x);
        self.sum_sq += fixed(x * x);
    }

    /// The sum of the values folded (exact to 2^-40 each, whatever their order).
    pub fn sum(&self) -> f64 {
        self.sum as f64 / SCALE
    }

    /// The plain mean, or None when nothing was observed.
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| (self.sum as f64 / SCALE) / self.count as f64)
    }

    /// Sample standard deviation (n − 1); None below two observations.
    pub fn stddev(&self) -> Option<f64> {
        if self.count < 2 {
            return None;
        }
        let n = self.count as f64;
        let mean = self.sum as f64 / SCALE / n;
        let mean_sq = self.sum_sq as f64 / SCALE / n;
        Some(((mean_sq - mean * mean).max(0.0) * n / (n - 1.0)).sqrt())
    }

    /// The 95% confidence interval of the mean (Student's t), None below two observations.
    pub fn ci95(&self) -> Option<(f64, f64)> {
        let sd = self.stddev()?;
        let mean = self.mean()?;
        let half = t_975(self.count - 1) * sd / (self.count as f64).sqrt();
        Some((mean - half, mean + half))
    }

    /// The JSON summary reports carry: mean, min, max, stddev and ci95, unrounded.
    pub fn summary(&self) -> StatsSummary {
        StatsSummary {
            count: self.count,
            mean: self.mean(),
            min: (self.count > 0).then_some(self.min),
            max: (self.count > 0).then_some(self.max),
            stddev: self.stddev(),
            ci95: self.ci95().map(|(lo, hi)| [lo, hi]),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatsSummary {
    pub count: u64,
    pub mean: Option<f64>,
    #[serde(serialize_with = "crate::num::opt_int_if_whole")]
    pub min: Option<f64>,
    #[serde(serialize_with = "crate::num::opt_int_if_whole")]
    pub max: Option<f64>,
    pub stddev: Option<f64>,
    pub ci95: Option<[f64; 2]>,
}

/// The 97.5% quantile of Student's t with `df` degrees of freedom.
fn t_975(df: u64) -> f64 {
    use statrs::distribution::{ContinuousCDF, StudentsT};
    StudentsT::new(0.0, 1.0, df as f64).map_or(1.96, |t| t.inverse_cdf(0.975))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_does_not_change_a_single_bit() {
        let xs: Vec<f64> = (0..1000)
            .map(|i| ((i * 7919) % 1000) as f64 / 997.0)
            .collect();
        let fold = |xs: &mut dyn Iterator<Item = &f64>| {
            let mut s = Stats::default();
            xs.for_each(|&x| s.push(x));
            s.summary()
        };
        let forward = fold(&mut xs.iter());
        let backward = fold(&mut xs.iter().rev());
        assert_eq!(forward, backward);
    }

    #[test]
    fn matches_two_pass() {
        let xs = [5.0, 2.0, 5.0, 4.0, 3.0];
        let mut s = Stats::default();
        xs.iter().for_each(|&x| s.push(x));
        let mean = 19.0 / 5.0;
        let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / 4.0;
        assert_eq!(s.mean().unwrap(), mean, "sum / count, exactly");
        assert!((s.stddev().unwrap() - var.sqrt()).abs() < 1e-9);
        assert_eq!((s.min, s.max), (2.0, 5.0));
        // t(4, 0.975) = 2.776445
        let (lo, hi) = s.ci95().unwrap();
        let half = 2.776445 * var.sqrt() / 5f64.sqrt();
        assert!((hi - (mean + half)).abs() < 1e-5 && (lo - (mean - half)).abs() < 1e-5);
    }

    #[test]
    fn empty_and_single() {
        let mut s = Stats::default();
        assert_eq!(s.mean(), None);
        s.push(3.0);
        assert_eq!(s.mean(), Some(3.0));
        assert_eq!(s.stddev(), None);
        assert_eq!(s.ci95(), None);
    }
}
