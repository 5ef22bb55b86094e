//! The paired t test and interval on the differences (scipy's `ttest_rel` and its
//! `confidence_interval`): the reference interval beside the bootstrap, and the only interval
//! above the bootstrap's size limit, where the t interval is accurate anyway.

use statrs::distribution::{ContinuousCDF, StudentsT};

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PairedT {
    pub mean: f64,
    pub ci: (f64, f64),
    pub statistic: Option<f64>,
    /// None when the differences do not vary (t is undefined; scipy returns NaN).
    pub p_value: Option<f64>,
}

/// None below two differences (no variance, no interval).
pub(crate) fn paired_t(d: &[f64]) -> Option<PairedT> {
    let n = d.len();
    if n < 2 {
        return None;
    }
    let nf = n as f64;
    let mean = d.iter().sum::<f64>() / nf;
    let var = d.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (nf - 1.0);
    let se = (var / nf).sqrt();
    let t = StudentsT::new(0.0, 1.0, nf - 1.0).ok()?;
    let q = t.inverse_cdf(0.5 + super::CONFIDENCE / 2.0);
    let ci = (mean - q * se, mean + q * se);
    if se == 0.0 {
        return Some(PairedT {
            mean,
            ci,
            statistic: None,
            p_value: None,
        });
    }
    let stat = mean / se;
    Some(PairedT {
        mean,
        ci,
        statistic: Some(stat),
        p_value: Some((2.0 * t.cdf(-stat.abs())).min(1.0)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// By hand: d = 1..5 → mean 3, s² = 10/4, se = √(2.5/5) = √0.5, t = 3/√0.5 = 4.2426;
    /// t(4, 0.975) = 2.7764451 (tables) → 3 ± 1.9632.
    #[test]
    fn hand_worked() {
        let r = paired_t(&[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        assert_eq!(r.mean, 3.0);
        let half = 2.776_445_105 * 0.5f64.sqrt();
        assert!((r.ci.0 - (3.0 - half)).abs() < 1e-7 && (r.ci.1 - (3.0 + half)).abs() < 1e-7);
        assert!((r.statistic.unwrap() - 3.0 / 0.5f64.sqrt()).abs() < 1e-12);
        // scipy.stats.ttest_rel([1, 2, 3, 4, 5], [0] * 5).pvalue
        assert!(
            (r.p_value.unwrap() - 0.013_235_599_563_682_69).abs() < 1e-12,
            "{r:?}"
        );
    }

    #[test]
    fn constant_differences_have_no_test() {
        let r = paired_t(&[0.5, 0.5, 0.5]).unwrap();
        assert_eq!((r.ci, r.p_value), ((0.5, 0.5), None));
        assert!(paired_t(&[1.0]).is_none());
    }
}
