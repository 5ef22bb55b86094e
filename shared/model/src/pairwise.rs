//! Pairwise preference: which of two answers to the same item is better, asked twice with the
//! answers' positions swapped (as MT-Bench and AlpacaEval do), because absolute 1–5 scores are
//! noisy and judges favour a position.
//!
//! Words shared by the judge (which asks), the record (which keeps the item's result) and the
//! report (which counts wins, ties, losses and how often the judge followed the position).
//! In the first question the judged answer is `A` and the other answer `B`; in the second
//! they swap. Only a preference that survives the swap counts: a win (or loss) needs both
//! verdicts to agree, anything else is a tie. Two verdicts that name the same position (`A`
//! both times, or `B` both times) followed the position, not the answers: a tie that also
//! counts toward the report's `position_bias`.

use serde::{Deserialize, Serialize};

/// One judge verdict: the answer in position A, the one in position B, or neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Pick {
    A,
    B,
    #[serde(rename = "tie")]
    Tie,
}

impl Pick {
    /// The verdict's word as the judge writes it: `A`, `B`, `tie` (case-insensitive, trimmed).
    pub fn parse(word: &str) -> Option<Pick> {
        match word.trim().to_ascii_lowercase().as_str() {
            "a" => Some(Pick::A),
            "b" => Some(Pick::B),
            "tie" => Some(Pick::Tie),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Pick::A => "A",
            Pick::B => "B",
            Pick::Tie => "tie",
        }
    }
}

/// An item's result for the judged answer against the other one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Preference {
    Win,
    Tie,
    Loss,
}

impl Preference {
    /// The dimension's score: 1 for a win, 0.5 for a tie, 0 for a loss, so that means, item
    /// gates (`< 0.5` tags a loss) and heatmaps work on it unchanged.
    pub fn score(self) -> f64 {
        match self {
            Preference::Win => 1.0,
            Preference::Tie => 0.5,
            Preference::Loss => 0.0,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Preference::Win => "win",
            Preference::Tie => "tie",
            Preference::Loss => "loss",
        }
    }

    /// A panel's preference from its judges' mean score: above ½ a win, below a loss.
    pub fn of_mean(mean: f64) -> Preference {
        if mean > 0.5 {
            Preference::Win
        } else if mean < 0.5 {
            Preference::Loss
        } else {
            Preference::Tie
        }
    }
}

/// What the pair of questions found for one item: the two verdicts (the judged answer in
/// position A first, then in position B) and what they mean together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PairwiseResult {
    pub preference: Preference,
    /// The judge's verdicts: `[judged answer as A, judged answer as B]`.
    pub verdicts: [Pick; 2],
    /// The two verdicts named the same position (`A`,`A` or `B`,`B`): the judge followed the
    /// position, not the answers. Such an item is a tie.
    pub followed_position: bool,
}

impl PairwiseResult {
    /// Combines the verdict with the judged answer in position A (`first`) and the one with it
    /// in position B (`swapped`).
    pub fn combine(first: Pick, swapped: Pick) -> PairwiseResult {
        // Each verdict as the judged answer's result.
        let as_judged = |pick: Pick, judged_is_a: bool| match (pick, judged_is_a) {
            (Pick::Tie, _) => Preference::Tie,
            (Pick::A, true) | (Pick::B, false) => Preference::Win,
            (Pick::A, false) | (Pick::B, true) => Preference::Loss,
        };
        let (one, two) = (as_judged(first, true), as_judged(swapped, false));
        let preference = if one == two { one } else { Preference::Tie };
        PairwiseResult {
            preference,
            verdicts: [first, swapped],
            followed_position: first == swapped && first != Pick::Tie,
        }
    }
}

/// The 95% Wilson score interval of `k` successes in `n` trials, `[lo, hi]`; None when n = 0.
/// Unlike the normal approximation it stays inside [0, 1] and is sound for small n and rates
/// near 0 or 1 — the usual case of a win rate over a few dozen items.
pub fn wilson95(k: u64, n: u64) -> Option<[f64; 2]> {
    if n == 0 {
        return None;
    }
    const Z: f64 = 1.959_963_984_540_054;
    let n = n as f64;
    let p = k as f64 / n;
    let z2 = Z * Z;
    let denom = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denom;
    let half = Z / denom * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    // At k = 0 (k = n) the bound is exactly 0 (1); rounding would leave it a hair off.
    let lo = if k == 0 {
        0.0
    } else {
        (centre - half).max(0.0)
    };
    let hi = if k as f64 == n {
        1.0
    } else {
        (centre + half).min(1.0)
    };
    Some([lo, hi])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pref(first: Pick, swapped: Pick) -> (Preference, bool) {
        let r = PairwiseResult::combine(first, swapped);
        (r.preference, r.followed_position)
    }

    #[test]
    fn a_preference_must_survive_the_swap() {
        use Pick::*;
        // The judged answer is A first, B second.
        assert_eq!(pref(A, B), (Preference::Win, false));
        assert_eq!(pref(B, A), (Preference::Loss, false));
        assert_eq!(pref(Tie, Tie), (Preference::Tie, false));
        // A verdict that flips with the swap follows the position: a tie.
        assert_eq!(pref(A, A), (Preference::Tie, true));
        assert_eq!(pref(B, B), (Preference::Tie, true));
        // One verdict a tie, the other a preference: not consistent, a tie.
        assert_eq!(pref(A, Tie), (Preference::Tie, false));
        assert_eq!(pref(Tie, B), (Preference::Tie, false));
        assert_eq!(pref(Tie, A), (Preference::Tie, false));
    }

    #[test]
    fn scores_and_words() {
        assert_eq!(Preference::Win.score(), 1.0);
        assert_eq!(Preference::Tie.score(), 0.5);
        assert_eq!(Preference::Loss.score(), 0.0);
        assert_eq!(Pick::parse(" b "), Some(Pick::B));
        assert_eq!(Pick::parse("TIE"), Some(Pick::Tie));
        assert_eq!(Pick::parse("C"), None);
        assert_eq!(Preference::of_mean(0.75), Preference::Win);
        assert_eq!(Preference::of_mean(0.5), Preference::Tie);
        assert_eq!(Preference::of_mean(0.25), Preference::Loss);
        let r = PairwiseResult::combine(Pick::A, Pick::A);
        assert_eq!(
            serde_json::to_value(r).unwrap(),
            serde_json::json!({"preference": "tie", "verdicts": ["A", "A"], "followed_position": true})
        );
    }

    #[test]
    fn wilson_matches_known_values() {
        let close = |got: [f64; 2], want: [f64; 2]| {
            assert!(
                (got[0] - want[0]).abs() < 1e-4 && (got[1] - want[1]).abs() < 1e-4,
                "{got:?} vs {want:?}"
            );
        };
        // Textbook values (e.g. statsmodels proportion_confint(k, n, method="wilson")).
        close(wilson95(5, 10).unwrap(), [0.236_593, 0.763_407]);
        close(wilson95(0, 10).unwrap(), [0.0, 0.277_533]);
        close(wilson95(10, 10).unwrap(), [0.722_472, 1.0]);
        close(wilson95(81, 263).unwrap(), [0.255_289, 0.366_210]);
        assert_eq!(wilson95(0, 0), None);
        assert_eq!(wilson95(0, 12).unwrap()[0], 0.0);
        assert_eq!(wilson95(12, 12).unwrap()[1], 1.0);
    }
}
