//! Streaming summary statistics: count, min, max and Welford's mean/variance in O(1) memory,
//! so finishing a run of any size is immediate (DESIGN §5).

use serde::Serialize;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stats {
    pub count: u64,
    /// The plain sum: the reported mean is `sum / count`, as the seed computes it, so that
    /// half-to-even rounding sees the same f64 (107/40 → 2.67, where Welford's running mean
    /// lands an ulp above 2.675).
    sum: f64,
    /// Welford's running mean, for the variance only.
    mean: f64,
    m2: f64,
    pub min: f64,
    pub max: f64,
}

impl Stats {
    pub fn push(&mut self, x: f64) {
        if self.count == 0 {
            self.min = x;
            self.max = x;
        } else {
            self.min = self.min.min(x);
            self.max = self.max.max(x);
        }
        self.count += 1;
        self.sum += x;
        let delta = x - self.mean;
        self.mean += delta / self.count as f64;
        self.m2 += delta * (x - self.mean);
    }

    /// The plain mean, or None when nothing was observed.
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum / self.count as f64)
    }

    /// Sample standard deviation (n − 1); None below two observations.
    pub fn stddev(&self) -> Option<f64> {
        (self.count > 1).then(|| (self.m2 / (self.count - 1) as f64).sqrt())
    }

    /// The 95% confidence interval of the mean (Student's t), None below two observations.
    pub fn ci95(&self) -> Option<(f64, f64)> {
        let sd = self.stddev()?;
        let half = t_975(self.count - 1) * sd / (self.count as f64).sqrt();
        let mean = self.sum / self.count as f64;
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
    fn welford_matches_two_pass() {
        let xs = [5.0, 2.0, 5.0, 4.0, 3.0];
        let mut s = Stats::default();
        xs.iter().for_each(|&x| s.push(x));
        let mean = 19.0 / 5.0;
        let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / 4.0;
        assert!((s.mean().unwrap() - mean).abs() < 1e-12);
        assert!((s.stddev().unwrap() - var.sqrt()).abs() < 1e-12);
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
