//! McNemar's exact test for the pass/fail outcome: only discordant pairs carry information, and
//! under "no change" each is equally likely to be pass → fail or fail → pass, so the count of one
//! kind is Binomial(b + c, ½). Two-sided p as `scipy.stats.binomtest(b, b + c, 0.5)` gives it:
//! the probability of every count at most as likely as the observed one, which for p = ½ is
//! twice the smaller tail, capped at 1.

use statrs::distribution::{Binomial, DiscreteCDF};

/// `pass_to_fail` = b, `fail_to_pass` = c. With no discordant pair there is no evidence either
/// way: p = 1.
pub(crate) fn mcnemar_exact(pass_to_fail: u64, fail_to_pass: u64) -> f64 {
    let n = pass_to_fail + fail_to_pass;
    if n == 0 || pass_to_fail == fail_to_pass {
        return 1.0;
    }
    let k = pass_to_fail.min(fail_to_pass);
    match Binomial::new(0.5, n) {
        Ok(b) => (2.0 * b.cdf(k)).min(1.0),
        Err(_) => f64::NAN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_worked() {
        // b = 0, c = 5: P(X ≤ 0) = 1/32, two-sided 2/32.
        assert!((mcnemar_exact(0, 5) - 0.0625).abs() < 1e-12);
        assert_eq!(mcnemar_exact(3, 3), 1.0);
        assert_eq!(mcnemar_exact(0, 0), 1.0);
        // b = 1, c = 2 (n = 3): both tails hold everything → 1.
        assert_eq!(mcnemar_exact(1, 2), 1.0);
    }

    /// Published: Fagerland, Lydersen & Laake (2013), "The McNemar test for binary matched-pairs
    /// data: mid-p and asymptotic are better than exact conditional", BMC Medical Research
    /// Methodology 13:91, Table 1 (airway hyper-responsiveness before/after stem cell
    /// transplantation, Bentur et al. 2009): b = 1, c = 7, exact conditional p = 0.070;
    /// exactly 2 · (1 + 8) / 256 = 0.0703125.
    #[test]
    fn published_fagerland_ahr() {
        assert!((mcnemar_exact(1, 7) - 0.0703125).abs() < 1e-12);
        assert!((mcnemar_exact(7, 1) - 0.0703125).abs() < 1e-12);
    }
}
