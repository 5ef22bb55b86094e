//! The Wilcoxon signed-rank test on paired differences, two-sided, with zero differences handled
//! by Pratt's method: zeros are ranked with the rest and their ranks then dropped, so a tie
//! between "no change" items still shifts the other ranks (Pratt 1959; Cureton 1967 for the
//! normal approximation). It is what `scipy.stats.wilcoxon(d, zero_method="pratt")` computes, with
//! the same choice of null distribution as scipy's `method="auto"`:
//!
//! - n ≤ 50 with no ties and no zeros: the exact null distribution (a DP over the ranks);
//! - n ≤ 13 otherwise: the exact permutation distribution of the observed ranks (all 2^n sign
//!   flips, which is what scipy's permutation test enumerates at that size);
//! - otherwise: the normal approximation with Pratt's mean and variance and the tie correction,
//!   without continuity correction (scipy's default `correction=False`).

use statrs::distribution::{ContinuousCDF, Normal};

/// Which null distribution gave the p-value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    Exact,
    Permutation,
    Normal,
}

impl Method {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Method::Exact => "exact",
            Method::Permutation => "exact-permutation",
            Method::Normal => "normal",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Wilcoxon {
    /// min(R+, R−), scipy's two-sided `statistic`.
    pub statistic: f64,
    pub r_plus: f64,
    pub r_minus: f64,
    /// None when every difference is zero and n > 13 (no test is possible; scipy returns NaN).
    pub p_value: Option<f64>,
    pub method: Method,
    pub zeros: usize,
}

/// The largest n the exact distribution is used for (scipy's `auto` threshold).
const EXACT_MAX_N: usize = 50;
/// The largest n whose sign flips are enumerated when there are ties or zeros.
const PERMUTATION_MAX_N: usize = 13;

/// Tests paired differences `d` (finite; their order does not matter). None for an empty sample.
pub(crate) fn wilcoxon(d: &[f64]) -> Option<Wilcoxon> {
    let n = d.len();
    if n == 0 {
        return None;
    }
    let ranked = rank_abs(d);
    let (r_plus, r_minus) = ranked.iter().fold((0.0, 0.0), |(p, m), r| {
        if r.sign > 0 {
            (p + r.rank, m)
        } else if r.sign < 0 {
            (p, m + r.rank)
        } else {
            (p, m)
        }
    });
    let zeros = ranked.iter().filter(|r| r.sign == 0).count();
    let ties = tie_sizes(&ranked);
    let has_ties = ties.iter().any(|&(_, t)| t > 1);
    let method = if n <= EXACT_MAX_N && !has_ties && zeros == 0 {
        Method::Exact
    } else if n <= PERMUTATION_MAX_N {
        Method::Permutation
    } else {
        Method::Normal
    };
    // All differences zero: the normal approximation has no variance (scipy: NaN); the
    // permutation distribution is a point mass at the observed R+ = 0 (scipy: p = 1).
    let p_value = if zeros == n && method != Method::Permutation {
        None
    } else {
        match method {
            Method::Exact => Some(exact_p(n, r_plus)),
            Method::Permutation => Some(permutation_p(&ranked, r_plus)),
            Method::Normal => normal_p(n, zeros, &ties, r_plus),
        }
    };
    Some(Wilcoxon {
        statistic: r_plus.min(r_minus),
        r_plus,
        r_minus,
        p_value,
        method,
        zeros,
    })
}

#[derive(Debug, Clone, Copy)]
struct Ranked {
    abs: f64,
    rank: f64,
    sign: i8,
}

/// |d| ranked 1..n with ties sharing their average rank, zeros included (Pratt), sorted by |d|.
fn rank_abs(d: &[f64]) -> Vec<Ranked> {
    let mut v: Vec<Ranked> = d
        .iter()
        .map(|&x| Ranked {
            abs: x.abs(),
            rank: 0.0,
            sign: if x > 0.0 {
                1
            } else if x < 0.0 {
                -1
            } else {
                0
            },
        })
        .collect();
    v.sort_unstable_by(|a, b| a.abs.total_cmp(&b.abs));
    let mut i = 0;
    while i < v.len() {
        let mut j = i + 1;
        while j < v.len() && v[j].abs == v[i].abs {
            j += 1;
        }
        // Positions i..j (0-based) hold ranks i+1..=j: their average.
        let rank = (i + 1 + j) as f64 / 2.0;
        v[i..j].iter_mut().for_each(|r| r.rank = rank);
        i = j;
    }
    v
}

/// (is the zero group, size) of each group of equal |d|, in rank order.
fn tie_sizes(ranked: &[Ranked]) -> Vec<(bool, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < ranked.len() {
        let mut j = i + 1;
        while j < ranked.len() && ranked[j].abs == ranked[i].abs {
            j += 1;
        }
        out.push((ranked[i].abs == 0.0, j - i));
        i = j;
    }
    out
}

/// The null distribution of R+ for n untied, non-zero ranks: `counts[k]` = the number of subsets
/// of {1..n} summing to k (out of 2^n).
fn exact_counts(n: usize) -> Vec<f64> {
    let max = n * (n + 1) / 2;
    let mut counts = vec![0.0; max + 1];
    counts[0] = 1.0;
    for rank in 1..=n {
        for k in (rank..=rank * (rank + 1) / 2).rev() {
            counts[k] += counts[k - rank];
        }
    }
    counts
}

/// Two-sided exact p-value: twice the smaller tail at the observed R+, capped at 1.
fn exact_p(n: usize, r_plus: f64) -> f64 {
    let counts = exact_counts(n);
    let total = 2f64.powi(n as i32);
    let k = r_plus.round() as usize;
    let cdf: f64 = counts[..=k.min(counts.len() - 1)].iter().sum::<f64>() / total;
    let sf: f64 = counts[k.min(counts.len())..].iter().sum::<f64>() / total;
    (2.0 * cdf.min(sf)).min(1.0)
}

/// Two-sided p-value over all 2^n sign flips of the observed ranks (zeros' flips change nothing).
fn permutation_p(ranked: &[Ranked], r_plus: f64) -> f64 {
    let ranks: Vec<f64> = ranked
        .iter()
        .filter(|r| r.sign != 0)
        .map(|r| r.rank)
        .collect();
    let m = ranks.len();
    // scipy's tolerance for "numerically distinct but theoretically equal" statistics.
    let gamma = (f64::EPSILON * 100.0 * r_plus).abs();
    let (mut le, mut ge) = (0u64, 0u64);
    for mask in 0u32..(1u32 << m) {
        let s: f64 = (0..m)
            .filter(|i| mask & (1 << i) != 0)
            .map(|i| ranks[i])
            .sum();
        le += u64::from(s <= r_plus + gamma);
        ge += u64::from(s >= r_plus - gamma);
    }
    let total = f64::from(1u32 << m);
    (2.0 * (le as f64 / total).min(ge as f64 / total)).min(1.0)
}

/// Normal approximation: Pratt's mean and variance (zeros' ranks removed), the tie correction
/// over the non-zero tie groups, no continuity correction.
fn normal_p(n: usize, zeros: usize, ties: &[(bool, usize)], r_plus: f64) -> Option<f64> {
    let (n, z) = (n as f64, zeros as f64);
    let mean = n * (n + 1.0) * 0.25 - z * (z + 1.0) * 0.25;
    let tie_correction: f64 = ties
        .iter()
        .filter(|(zero, _)| !zero)
        .map(|&(_, t)| {
            let t = t as f64;
            t * t * t - t
        })
        .sum();
    let var =
        (n * (n + 1.0) * (2.0 * n + 1.0) - z * (z + 1.0) * (2.0 * z + 1.0) - tie_correction / 2.0)
            / 24.0;
    if var <= 0.0 {
        return None;
    }
    let zstat = (r_plus - mean) / var.sqrt();
    let normal = Normal::standard();
    Some((2.0 * normal.cdf(-zstat.abs())).min(1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs().max(1e-300)
    }

    /// Worked on paper: d = [1, -2, 3, 4, 5] → ranks 1..5, R+ = 13, R− = 2. Of the 32 sign
    /// patterns, R+ ≤ 2 happens for {}, {1}, {2} → 3/32; two-sided p = 6/32 = 0.1875.
    #[test]
    fn hand_worked_exact() {
        let w = wilcoxon(&[1.0, -2.0, 3.0, 4.0, 5.0]).unwrap();
        assert_eq!((w.r_plus, w.r_minus, w.statistic), (13.0, 2.0, 2.0));
        assert_eq!(w.method, Method::Exact);
        assert_eq!(w.p_value, Some(0.1875));
    }

    /// The null distribution for n = 3: sums of subsets of {1,2,3} = 0,1,2,3,3,4,5,6.
    #[test]
    fn exact_counts_small() {
        assert_eq!(exact_counts(3), vec![1.0, 1.0, 1.0, 2.0, 1.0, 1.0, 1.0]);
        assert_eq!(exact_counts(10).iter().sum::<f64>(), 1024.0);
    }

    /// Pratt by hand: d = [0, 2, -3, 4, 4, 5] → |d| ranks 1 (the zero), 2, 3, 4.5, 4.5, 6; the
    /// zero's rank is dropped: R+ = 2 + 4.5 + 4.5 + 6 = 17, R− = 3. Ties and a zero with n = 6:
    /// all 2^5 flips of the ranks {2, 3, 4.5, 4.5, 6}: R+ ≤ 3 for {}, {2}, {3} → 3/32;
    /// R+ ≥ 17 by symmetry (total 20) the same 3/32 → p = 6/32.
    #[test]
    fn hand_worked_pratt_permutation() {
        let w = wilcoxon(&[0.0, 2.0, -3.0, 4.0, 4.0, 5.0]).unwrap();
        assert_eq!((w.r_plus, w.r_minus, w.zeros), (17.0, 3.0, 1));
        assert_eq!(w.method, Method::Permutation);
        assert_eq!(w.p_value, Some(6.0 / 32.0));
    }

    /// A published example: Darwin's Zea mays data as analysed in Fisher, R. A. (1935), "The
    /// Design of Experiments", §17 — height differences (cross- minus self-fertilised, eighths
    /// of an inch) of 15 pairs. It is the example of `scipy.stats.wilcoxon`'s documentation,
    /// which gives statistic 24 and two-sided p = 0.041259765625. By hand: ranks of |d| put 48 at
    /// 10 and 67 at 14, so R− = 24, R+ = 96; the exact p is 2 · #{subsets of 1..15 with sum ≤
    /// 24} / 2^15 = 2 · 676 / 32768.
    #[test]
    fn published_darwin_zea_mays() {
        let d = [
            6.0, 8.0, 14.0, 16.0, 23.0, 24.0, 28.0, 29.0, 41.0, -48.0, 49.0, 56.0, 60.0, -67.0,
            75.0,
        ];
        let w = wilcoxon(&d).unwrap();
        assert_eq!((w.r_plus, w.r_minus, w.statistic), (96.0, 24.0, 24.0));
        assert_eq!(w.method, Method::Exact);
        // 2 · (number of subsets of 1..15 with sum ≤ 24) / 2^15 = 2 · 676 / 32768.
        assert!(close(w.p_value.unwrap(), 0.041259765625, 1e-12), "{w:?}");
    }

    /// Normal approximation by hand: n = 60 differences, 10 zeros, the rest ±1..: checked
    /// against the formula written out, so a sign slip in mean or variance shows.
    #[test]
    fn normal_approximation_formula() {
        let mut d = vec![0.0; 10];
        d.extend((0..30).map(|_| 1.0));
        d.extend((0..20).map(|_| -1.0));
        let w = wilcoxon(&d).unwrap();
        assert_eq!(w.method, Method::Normal);
        // Zeros hold ranks 1..10; the 50 ±1s share rank (11 + 60) / 2 = 35.5.
        assert_eq!(w.r_plus, 30.0 * 35.5);
        let mean = 60.0 * 61.0 / 4.0 - 10.0 * 11.0 / 4.0;
        let var = (60.0 * 61.0 * 121.0 - 10.0 * 11.0 * 21.0 - (50f64.powi(3) - 50.0) / 2.0) / 24.0;
        let z: f64 = (w.r_plus - mean) / var.sqrt();
        let p = 2.0 * Normal::standard().cdf(-z.abs());
        assert!(close(w.p_value.unwrap(), p, 1e-15));
        // scipy 1.17: wilcoxon(d, zero_method="pratt").pvalue
        assert!(
            close(w.p_value.unwrap(), 0.157_299_207_050_285_16, 1e-9),
            "{w:?}"
        );
    }

    #[test]
    fn all_zero_differences() {
        // As scipy: p = 1 from the (degenerate) permutation distribution up to n = 13, NaN above.
        let w = wilcoxon(&[0.0, 0.0, 0.0]).unwrap();
        assert_eq!(w.p_value, Some(1.0));
        let w = wilcoxon(&[0.0; 20]).unwrap();
        assert_eq!(w.p_value, None);
        assert!(wilcoxon(&[]).is_none());
    }
}
