//! One compared quantity (a score dimension, a metric, or the pass/fail outcome, overall or in
//! one group): the paired differences, their means, intervals and test. The gate is applied later
//! ([`crate::verdict`]), once Holm's correction has seen the whole family.

use serde::Serialize;

use crate::read::Kind;
use crate::stats::{bootstrap, mcnemar, ttest, wilcoxon};

/// Every figure of one comparison, unrounded (compare.json's objects).
#[derive(Debug, Clone, Serialize)]
pub struct Quantity {
    /// The dimension or metric, or `passed`.
    pub name: String,
    #[serde(serialize_with = "kind_str")]
    pub kind: Kind,
    /// The `group_by` entry and the group's key (`gpt-4o|v1.2`), for per-group objects.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group_by: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Pairs with a value on both sides.
    pub n: usize,
    /// Paired items left out because the value is null (unscored, not computed) on a side.
    pub excluded_null: usize,
    pub mean_base: Option<f64>,
    pub mean_new: Option<f64>,
    /// Mean of NEW − BASE over the pairs.
    pub delta: Option<f64>,
    /// The 95% interval of `delta`: the bootstrap's when it ran, else the t interval.
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    /// `bootstrap` or `t`: which interval `ci_low`/`ci_high` are.
    pub ci_method: Option<&'static str>,
    pub bootstrap_ci_low: Option<f64>,
    pub bootstrap_ci_high: Option<f64>,
    /// `pairs` (n pairs drawn per resample) or `counts` (multinomial counts of the distinct
    /// differences, the same distribution); null when the bootstrap was skipped.
    pub bootstrap_resampling: Option<&'static str>,
    pub t_ci_low: Option<f64>,
    pub t_ci_high: Option<f64>,
    /// `wilcoxon-pratt` (scores, metrics) or `mcnemar-exact` (pass/fail).
    pub test: &'static str,
    /// The null distribution: `exact`, `exact-permutation`, `normal` (Wilcoxon) or `binomial`.
    pub test_method: &'static str,
    /// Wilcoxon: min(R+, R−); McNemar: the smaller discordant count.
    pub statistic: Option<f64>,
    /// The raw p-value of `test`; null when no test is possible (no pair, or all differences 0).
    pub p_value: Option<f64>,
    /// Holm-adjusted across the comparisons of the same family (overall, or all groups).
    pub p_adjusted: Option<f64>,
    /// The paired t test's p-value, beside the rank test (`scipy.stats.ttest_rel`).
    pub p_value_t: Option<f64>,
    pub higher_is_better: bool,
    /// How much worse NEW is, in the quantity's units (positive = worse).
    pub drop: Option<f64>,
    pub max_drop: f64,
    pub regressed: bool,
    /// pass/fail only: discordant pairs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pass_to_fail: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fail_to_pass: Option<u64>,
    /// The paired differences binned for the HTML plot (overall comparisons only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub histogram: Option<Histogram>,
}

fn kind_str<S: serde::Serializer>(k: &Kind, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(k.as_str())
}

#[derive(Debug, Clone, Serialize)]
pub struct Histogram {
    /// Bin edges (bins + 1 of them), or the distinct values when there are few.
    pub edges: Vec<f64>,
    pub counts: Vec<u64>,
    /// True when each bin is one distinct value (`edges[i]`), not a range.
    pub discrete: bool,
}

/// How many bins the difference plot uses at most.
const BINS: usize = 24;

/// Computes the figures of one quantity from its paired values (NaN = null).
pub(crate) fn measure(
    name: &str,
    kind: Kind,
    values: impl Iterator<Item = (f64, f64)>,
    with_histogram: bool,
) -> Quantity {
    let (mut sum_b, mut sum_n) = (0.0, 0.0);
    let mut d = Vec::new();
    let mut excluded = 0;
    for (b, n) in values {
        if b.is_nan() || n.is_nan() {
            excluded += 1;
            continue;
        }
        sum_b += b;
        sum_n += n;
        d.push(n - b);
    }
    let n = d.len();
    let mean = |s: f64| (n > 0).then(|| s / n as f64);
    let t = ttest::paired_t(&d);
    let (test, test_method, statistic, p_value, discordant) = if kind == Kind::Pass {
        let p2f = d.iter().filter(|&&x| x < 0.0).count() as u64;
        let f2p = d.iter().filter(|&&x| x > 0.0).count() as u64;
        (
            "mcnemar-exact",
            "binomial",
            Some(p2f.min(f2p) as f64),
            (n > 0).then(|| mcnemar::mcnemar_exact(p2f, f2p)),
            Some((p2f, f2p)),
        )
    } else {
        let w = wilcoxon::wilcoxon(&d);
        (
            "wilcoxon-pratt",
            w.as_ref().map_or("none", |w| w.method.name()),
            w.as_ref().map(|w| w.statistic),
            w.and_then(|w| w.p_value),
            None,
        )
    };
    d.sort_unstable_by(f64::total_cmp);
    let boot = bootstrap::bootstrap_ci(&d);
    let delta = mean(d.iter().sum::<f64>());
    let (ci, ci_method) = match (&boot, &t) {
        (Some(b), _) => (Some((b.low, b.high)), Some("bootstrap")),
        (None, Some(t)) => (Some(t.ci), Some("t")),
        (None, None) => (None, None),
    };
    Quantity {
        name: name.to_owned(),
        kind,
        group_by: None,
        group: None,
        n,
        excluded_null: excluded,
        mean_base: mean(sum_b),
        mean_new: mean(sum_n),
        delta,
        ci_low: ci.map(|c| c.0),
        ci_high: ci.map(|c| c.1),
        ci_method,
        bootstrap_ci_low: boot.as_ref().map(|b| b.low),
        bootstrap_ci_high: boot.as_ref().map(|b| b.high),
        bootstrap_resampling: boot.as_ref().map(|b| match b.resampling {
            bootstrap::Resampling::Pairs => "pairs",
            bootstrap::Resampling::Counts => "counts",
        }),
        t_ci_low: t.as_ref().map(|t| t.ci.0),
        t_ci_high: t.as_ref().map(|t| t.ci.1),
        test,
        test_method,
        statistic,
        p_value,
        p_adjusted: None,
        p_value_t: t.as_ref().and_then(|t| t.p_value),
        higher_is_better: true,
        drop: None,
        max_drop: 0.0,
        regressed: false,
        pass_to_fail: discordant.map(|d| d.0),
        fail_to_pass: discordant.map(|d| d.1),
        histogram: (with_histogram && n > 0).then(|| histogram(&d)),
    }
}

/// Bins sorted differences: one bin per distinct value when there are few, else equal widths.
fn histogram(sorted: &[f64]) -> Histogram {
    let mut distinct: Vec<(f64, u64)> = Vec::new();
    for &x in sorted {
        let len = distinct.len();
        match distinct.last_mut() {
            Some((v, c)) if *v == x => *c += 1,
            _ if len > BINS => break,
            _ => distinct.push((x, 1)),
        }
    }
    if distinct.len() <= BINS {
        return Histogram {
            edges: distinct.iter().map(|d| d.0).collect(),
            counts: distinct.iter().map(|d| d.1).collect(),
            discrete: true,
        };
    }
    let (lo, hi) = (sorted[0], sorted[sorted.len() - 1]);
    let width = (hi - lo) / BINS as f64;
    let mut counts = vec![0u64; BINS];
    for &x in sorted {
        let i = (((x - lo) / width) as usize).min(BINS - 1);
        counts[i] += 1;
    }
    Histogram {
        edges: (0..=BINS).map(|i| lo + width * i as f64).collect(),
        counts,
        discrete: false,
    }
}
