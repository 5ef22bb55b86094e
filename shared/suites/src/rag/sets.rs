//! Set F1 with the docs/DESIGN.md §2.2/§9 edge cases, shared by L1 and kg_edge_f1.
//!
//! Items are normalised (lowercase + trim) before anything else, entries that trim to "" are
//! dropped, and "empty" is judged on what remains: both empty → 1.0 (nothing expected, nothing
//! produced), exactly one empty → 0.0. The edge cases live here once so every set metric agrees.

use std::collections::BTreeSet;

use evalfleet_model::text::norm;

/// The normalised set of `items` (lowercase + trim, empty entries dropped).
pub fn norm_set(items: &[String]) -> BTreeSet<String> {
    items
        .iter()
        .map(|s| norm(s))
        .filter(|s| !s.is_empty())
        .collect()
}

/// Normalised, de-duplicated (first occurrence kept) ranked list; empty entries dropped.
pub fn norm_ranked(items: &[String]) -> Vec<String> {
    let mut seen = BTreeSet::new();
    items
        .iter()
        .map(|s| norm(s))
        .filter(|s| !s.is_empty() && seen.insert(s.clone()))
        .collect()
}

/// F1 from a true-positive count and the two set sizes, with the empty-set rules applied.
pub fn f1_from_counts(tp: usize, predicted: usize, gold: usize) -> f64 {
    match (predicted, gold) {
        (0, 0) => 1.0,
        (0, _) | (_, 0) => 0.0,
        _ if tp == 0 => 0.0,
        _ => {
            let p = tp as f64 / predicted as f64;
            let r = tp as f64 / gold as f64;
            2.0 * p * r / (p + r)
        }
    }
}

/// Exact set F1 of `predicted` against `gold` after normalisation.
pub fn set_f1(predicted: &[String], gold: &[String]) -> f64 {
    let p = norm_set(predicted);
    let g = norm_set(gold);
    f1_from_counts(p.intersection(&g).count(), p.len(), g.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn both_empty_is_perfect_and_one_empty_is_zero() {
        assert_eq!(set_f1(&[], &[]), 1.0);
        assert_eq!(set_f1(&v(&["a"]), &[]), 0.0);
        assert_eq!(set_f1(&[], &v(&["a"])), 0.0);
    }

    #[test]
    fn empty_is_judged_after_normalisation() {
        assert_eq!(set_f1(&v(&["  ", ""]), &[]), 1.0);
        assert_eq!(set_f1(&v(&[" "]), &v(&["laneige"])), 0.0);
        assert_eq!(set_f1(&v(&["laneige", "\t"]), &v(&["LANEIGE"])), 1.0);
    }

    #[test]
    fn case_whitespace_and_repeats_do_not_matter() {
        assert_eq!(
            set_f1(
                &v(&[" LANEIGE ", "laneige", "Lip_Care"]),
                &v(&["laneige", "lip_care"])
            ),
            1.0
        );
    }

    #[test]
    fn partial_overlap_is_harmonic_mean() {
        // P = 1/3, R = 1/2 → F1 = 2·(1/6)/(5/6) = 0.4
        let f = set_f1(&v(&["a", "b", "c"]), &v(&["a", "d"]));
        assert!((f - 0.4).abs() < 1e-12, "{f}");
        assert_eq!(set_f1(&v(&["x"]), &v(&["y"])), 0.0);
    }

    #[test]
    fn internal_whitespace_is_kept() {
        assert_eq!(set_f1(&v(&["lip care"]), &v(&["lip  care"])), 0.0);
    }

    #[test]
    fn ranked_lists_keep_first_occurrences() {
        assert_eq!(
            norm_ranked(&v(&["B", " a", "b", "", "A ", "c"])),
            v(&["b", "a", "c"])
        );
    }
}
