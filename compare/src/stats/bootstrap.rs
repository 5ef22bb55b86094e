//! The paired bootstrap interval of the mean difference: resample items (pairs) with
//! replacement, B = 10,000 times with a fixed seed, and take the 2.5th and 97.5th percentiles of
//! the resampled means (linear interpolation between order statistics, numpy's default).
//!
//! When the differences take few distinct values (judge scores on a 1–5 rubric, pass/fail) a
//! resample is fully described by how many times each value is drawn, a Multinomial(n, counts/n)
//! draw; sampling that by sequential binomials gives exactly the same bootstrap distribution in
//! O(distinct values) per resample instead of O(n), so even 10^6 pairs are resampled in
//! milliseconds. Otherwise pairs are resampled one by one up to [`MAX_RAW_PAIRS`]; above it the
//! bootstrap is skipped and the t interval is reported (the outputs say which).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Binomial, Distribution};

pub(crate) const RESAMPLES: usize = 10_000;
pub(crate) const SEED: u64 = 20_261_124;
/// Above this many pairs (with many distinct differences) the bootstrap is skipped.
pub(crate) const MAX_RAW_PAIRS: usize = 100_000;
/// Up to this many distinct differences, resamples are drawn as multinomial counts.
const MAX_COMPRESSED_VALUES: usize = 256;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resampling {
    /// Each resample draws n pairs.
    Pairs,
    /// Each resample draws the multinomial counts of the distinct differences.
    Counts,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Interval {
    pub low: f64,
    pub high: f64,
    pub resampling: Resampling,
}

/// The percentile interval, or None when the sample is empty or too large to resample.
/// `sorted` must be the differences in ascending order.
pub(crate) fn bootstrap_ci(sorted: &[f64]) -> Option<Interval> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let distinct = distinct_counts(sorted, MAX_COMPRESSED_VALUES);
    let (mut means, resampling) = match distinct {
        Some(values) => {
            let mut rng = ChaCha8Rng::seed_from_u64(SEED);
            (
                (0..RESAMPLES)
                    .map(|_| multinomial_mean(&values, n as u64, &mut rng))
                    .collect::<Vec<f64>>(),
                Resampling::Counts,
            )
        }
        None if n <= MAX_RAW_PAIRS => (pair_means(sorted), Resampling::Pairs),
        None => return None,
    };
    means.sort_unstable_by(f64::total_cmp);
    let alpha = 1.0 - super::CONFIDENCE;
    Some(Interval {
        low: percentile(&means, alpha / 2.0),
        high: percentile(&means, 1.0 - alpha / 2.0),
        resampling,
    })
}

/// Resamples drawn pair by pair are split into this many chunks, each with its own ChaCha
/// stream of the fixed seed, so the result is the same however many threads compute them.
const CHUNKS: usize = 8;

/// The means of [`RESAMPLES`] pair-by-pair resamples, computed on up to [`CHUNKS`] threads.
fn pair_means(sorted: &[f64]) -> Vec<f64> {
    let n = sorted.len();
    let mut means = vec![0.0; RESAMPLES];
    let mut chunks: Vec<(usize, &mut [f64])> = means
        .chunks_mut(RESAMPLES.div_ceil(CHUNKS))
        .enumerate()
        .collect();
    let threads = std::thread::available_parallelism()
        .map_or(1, |t| t.get())
        .clamp(1, CHUNKS);
    let per_thread = chunks.len().div_ceil(threads);
    std::thread::scope(|s| {
        while !chunks.is_empty() {
            let take = per_thread.min(chunks.len());
            let mine: Vec<(usize, &mut [f64])> = chunks.drain(..take).collect();
            s.spawn(move || {
                for (k, out) in mine {
                    let mut rng = ChaCha8Rng::seed_from_u64(SEED);
                    rng.set_stream(k as u64 + 1);
                    for m in out.iter_mut() {
                        let sum: f64 = (0..n).map(|_| sorted[rng.random_range(0..n)]).sum();
                        *m = sum / n as f64;
                    }
                }
            });
        }
    });
    means
}

/// (value, count) of each distinct value, or None when there are more than `max`.
fn distinct_counts(sorted: &[f64], max: usize) -> Option<Vec<(f64, u64)>> {
    let mut out: Vec<(f64, u64)> = Vec::new();
    for &x in sorted {
        match out.last_mut() {
            Some((v, c)) if *v == x => *c += 1,
            _ => {
                if out.len() == max {
                    return None;
                }
                out.push((x, 1));
            }
        }
    }
    Some(out)
}

/// One resample's mean from multinomial counts drawn by sequential binomials.
fn multinomial_mean(values: &[(f64, u64)], n: u64, rng: &mut ChaCha8Rng) -> f64 {
    let mut left_draws = n;
    let mut left_weight = n;
    let mut sum = 0.0;
    for &(v, c) in values {
        if left_draws == 0 {
            break;
        }
        let k = if c == left_weight {
            left_draws
        } else {
            let p = c as f64 / left_weight as f64;
            Binomial::new(left_draws, p).map_or(0, |b| b.sample(rng))
        };
        sum += v * k as f64;
        left_draws -= k;
        left_weight -= c;
    }
    sum / n as f64
}

/// numpy's default ("linear") percentile of sorted data, q in [0, 1].
pub(crate) fn percentile(sorted: &[f64], q: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * q;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_for_the_fixed_seed() {
        let mut d: Vec<f64> = (0..2000)
            .map(|i| ((i * 7919) % 1013) as f64 / 1013.0 - 0.4)
            .collect();
        d.sort_by(f64::total_cmp);
        let a = bootstrap_ci(&d).unwrap();
        let b = bootstrap_ci(&d).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.resampling, Resampling::Pairs);
        // The interval brackets the mean and is about ±1.96 standard errors wide.
        let mean = d.iter().sum::<f64>() / d.len() as f64;
        let sd = (d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 1999.0).sqrt();
        let se = sd / 2000f64.sqrt();
        assert!(a.low < mean && mean < a.high);
        assert!(
            ((a.high - a.low) / (2.0 * 1.96 * se) - 1.0).abs() < 0.05,
            "{a:?}"
        );
    }

    /// The multinomial shortcut and pair-by-pair resampling estimate the same distribution: on
    /// a 3-valued sample their intervals agree within Monte-Carlo error.
    #[test]
    fn counts_match_pairs() {
        let mut d: Vec<f64> = (0..3000)
            .map(|i| f64::from(i % 3) - 1.0 + f64::from(u8::from(i % 7 == 0)))
            .collect();
        d.sort_by(f64::total_cmp);
        let counts = bootstrap_ci(&d).unwrap();
        assert_eq!(counts.resampling, Resampling::Counts);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut means: Vec<f64> = (0..RESAMPLES)
            .map(|_| {
                (0..d.len())
                    .map(|_| d[rng.random_range(0..d.len())])
                    .sum::<f64>()
                    / d.len() as f64
            })
            .collect();
        means.sort_by(f64::total_cmp);
        let (lo, hi) = (percentile(&means, 0.025), percentile(&means, 0.975));
        let width = hi - lo;
        assert!(
            (counts.low - lo).abs() < 0.05 * width,
            "{counts:?} vs {lo} {hi}"
        );
        assert!(
            (counts.high - hi).abs() < 0.05 * width,
            "{counts:?} vs {lo} {hi}"
        );
    }

    #[test]
    fn constant_sample_gives_a_point() {
        let ci = bootstrap_ci(&[0.25; 10]).unwrap();
        assert_eq!((ci.low, ci.high), (0.25, 0.25));
        assert!(bootstrap_ci(&[]).is_none());
    }

    #[test]
    fn percentile_is_numpy_linear() {
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0], 0.5), 2.5);
        assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0], 0.025), 1.075);
    }

    #[test]
    fn too_many_distinct_pairs_are_not_resampled() {
        let d: Vec<f64> = (0..MAX_RAW_PAIRS + 1).map(|i| i as f64).collect();
        assert!(bootstrap_ci(&d).is_none());
    }
}
