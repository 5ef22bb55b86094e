//! Opt-in fuzzy L1 matching: alias maps plus Ratcliff/Obershelp similarity (docs/DESIGN.md §2.2).
//!
//! Systems often link `라네즈` or `Laneige Inc` where the gold says `laneige`; exact set F1 calls
//! that a miss. Fuzzy mode first rewrites aliases, then lets two names match when their similarity
//! reaches the threshold. Similarity is Python's `difflib.SequenceMatcher(None, a, b).ratio()`
//! over Unicode characters, without the autojunk heuristic (which only ever fires for strings of
//! 200+ characters and would make long names score erratically), so scores can be checked against
//! difflib. Matching is one-to-one and greedy over all candidate pairs in a fixed order — highest
//! similarity first, ties by predicted name then gold name (both sorted) — so the result never
//! depends on input order and exact matches are always taken before near ones.

use std::collections::{BTreeMap, BTreeSet};

use super::options::FuzzyOptions;
use super::sets::f1_from_counts;
use evalfleet_model::text::norm;

/// Ratcliff/Obershelp similarity `2·M / (|a| + |b|)` in [0, 1]; two empty strings → 1.0.
pub fn similarity(a: &str, b: &str) -> f64 {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let total = a.len() + b.len();
    if total == 0 {
        return 1.0;
    }
    2.0 * matching_chars(&a, &b) as f64 / total as f64
}

/// M of Ratcliff/Obershelp: the longest common block, then recursively the parts on its left and
/// on its right (difflib's `get_matching_blocks`, summed).
fn matching_chars(a: &[char], b: &[char]) -> usize {
    let mut total = 0;
    let mut queue = vec![(0, a.len(), 0, b.len())];
    while let Some((alo, ahi, blo, bhi)) = queue.pop() {
        let (i, j, k) = longest_match(a, b, alo, ahi, blo, bhi);
        if k == 0 {
            continue;
        }
        total += k;
        if alo < i && blo < j {
            queue.push((alo, i, blo, j));
        }
        if i + k < ahi && j + k < bhi {
            queue.push((i + k, ahi, j + k, bhi));
        }
    }
    total
}

/// difflib's `find_longest_match` without junk: the longest block `a[i..i+k] == b[j..j+k]`
/// within the bounds; ties go to the smallest `i`, then the smallest `j`.
fn longest_match(
    a: &[char],
    b: &[char],
    alo: usize,
    ahi: usize,
    blo: usize,
    bhi: usize,
) -> (usize, usize, usize) {
    let (mut best_i, mut best_j, mut best_k) = (alo, blo, 0);
    // run[j + 1] = length of the common run ending at a[i - 1], b[j] (previous row).
    let mut prev = vec![0usize; b.len() + 1];
    let mut cur = vec![0usize; b.len() + 1];
    for (i, ca) in a.iter().enumerate().take(ahi).skip(alo) {
        for (j, cb) in b.iter().enumerate().take(bhi).skip(blo) {
            cur[j + 1] = if ca == cb { prev[j] + 1 } else { 0 };
            let k = cur[j + 1];
            if k > best_k {
                (best_i, best_j, best_k) = (i + 1 - k, j + 1 - k, k);
            }
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    (best_i, best_j, best_k)
}

/// Normalised set with aliases applied: lowercase + trim, empty dropped, then an alias (key
/// compared after the same normalisation) is replaced by its normalised canonical name.
pub fn alias_set(items: &[String], aliases: &BTreeMap<String, String>) -> BTreeSet<String> {
    let aliases: BTreeMap<String, String> =
        aliases.iter().map(|(k, v)| (norm(k), norm(v))).collect();
    items
        .iter()
        .map(|s| norm(s))
        .filter(|s| !s.is_empty())
        .map(|s| aliases.get(&s).cloned().unwrap_or(s))
        .filter(|s| !s.is_empty())
        .collect()
}

/// Fuzzy set F1 of `predicted` against `gold` (same empty-set rules as the exact F1).
pub fn fuzzy_set_f1(predicted: &[String], gold: &[String], opts: &FuzzyOptions) -> f64 {
    let p = alias_set(predicted, &opts.aliases);
    let g = alias_set(gold, &opts.aliases);
    let tp = greedy_matches(&p, &g, opts.threshold);
    f1_from_counts(tp, p.len(), g.len())
}

/// Size of the greedy one-to-one matching between the two sets at `threshold` (inclusive).
pub fn greedy_matches(
    predicted: &BTreeSet<String>,
    gold: &BTreeSet<String>,
    threshold: f64,
) -> usize {
    greedy_pairs(predicted, gold, threshold).len()
}

/// The greedy one-to-one matching itself: `(predicted, gold)` pairs in the order they were taken.
pub fn greedy_pairs<'a>(
    predicted: &'a BTreeSet<String>,
    gold: &'a BTreeSet<String>,
    threshold: f64,
) -> Vec<(&'a str, &'a str)> {
    let mut pairs: Vec<(f64, &str, &str)> = Vec::new();
    for p in predicted {
        for g in gold {
            let s = if p == g { 1.0 } else { similarity(p, g) };
            if s >= threshold {
                pairs.push((s, p, g));
            }
        }
    }
    // Sets iterate sorted, so a stable sort by descending score leaves ties in (pred, gold) order.
    pairs.sort_by(|x, y| y.0.total_cmp(&x.0));
    let mut used_p = BTreeSet::new();
    let mut used_g = BTreeSet::new();
    pairs
        .into_iter()
        .filter(|&(_, p, g)| {
            if used_p.contains(p) || used_g.contains(g) {
                return false;
            }
            used_p.insert(p);
            used_g.insert(g);
            true
        })
        .map(|(_, p, g)| (p, g))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn similarity_matches_difflib() {
        // Values from Python's difflib.SequenceMatcher(None, a, b).ratio().
        assert_eq!(similarity("lip_care", "lip care"), 0.875);
        assert!(close(similarity("laneige", "laneige lip"), 7.0 / 9.0));
        assert_eq!(similarity("abcd", "bcde"), 0.75);
        assert_eq!(similarity("라네즈", "라네즈 립"), 0.75);
        assert!(close(similarity("abxcd", "abcd"), 8.0 / 9.0));
        assert_eq!(similarity("aaab", "abaa"), 0.5);
        assert!(close(similarity("qabxcd", "abycdf"), 2.0 / 3.0));
        assert_eq!(similarity("", ""), 1.0);
        assert_eq!(similarity("a", ""), 0.0);
    }

    #[test]
    fn similarity_is_order_sensitive_like_difflib() {
        assert_eq!(similarity("tide", "diet"), 0.25);
        assert_eq!(similarity("diet", "tide"), 0.5);
    }

    #[test]
    fn long_strings_have_no_autojunk() {
        // difflib with autojunk would treat the popular 'a' as junk here and score 0.0.
        let a = "a".repeat(250);
        assert_eq!(similarity(&a, &a), 1.0);
    }

    #[test]
    fn threshold_is_inclusive() {
        let opts = FuzzyOptions::default();
        // "abcab" vs "bcabc": ratio exactly 0.8 → match.
        assert_eq!(fuzzy_set_f1(&v(&["abcab"]), &v(&["bcabc"]), &opts), 1.0);
        // 7/9 ≈ 0.78 < 0.8 → no match.
        assert_eq!(
            fuzzy_set_f1(&v(&["laneige"]), &v(&["laneige lip"]), &opts),
            0.0
        );
    }

    #[test]
    fn aliases_apply_after_normalisation() {
        let mut opts = FuzzyOptions::default();
        opts.aliases.insert(" 라네즈 ".into(), "LANEIGE".into());
        assert_eq!(fuzzy_set_f1(&v(&["라네즈"]), &v(&["laneige"]), &opts), 1.0);
        assert_eq!(
            alias_set(&v(&["라네즈", " Laneige", ""]), &opts.aliases),
            BTreeSet::from(["laneige".to_string()])
        );
    }

    #[test]
    fn matching_is_one_to_one_and_prefers_exact() {
        let opts = FuzzyOptions::default();
        // "lip care" would match both gold names; the exact "lip_care" pair goes first.
        let f = fuzzy_set_f1(&v(&["lip care", "lip_care"]), &v(&["lip_care"]), &opts);
        // tp 1, P = 1/2, R = 1 → 2/3
        assert!(close(f, 2.0 / 3.0), "{f}");
        let f = fuzzy_set_f1(
            &v(&["lip care", "lip_cares"]),
            &v(&["lip_care", "lip-care"]),
            &opts,
        );
        assert_eq!(f, 1.0);
    }

    #[test]
    fn ties_break_by_sorted_names() {
        // "ab" and "ac" are equally close (0.8) to "abc"; one gold → the first sorted name wins.
        let p = BTreeSet::from(["ac".to_string(), "ab".to_string()]);
        let g = BTreeSet::from(["abc".to_string()]);
        assert_eq!(greedy_pairs(&p, &g, 0.8), vec![("ab", "abc")]);
        assert_eq!(greedy_matches(&p, &g, 0.8), 1);
        // Gold ties too: "ab" is 0.8 from both "abc" and "abd" → "abc" (sorted first).
        let p = BTreeSet::from(["ab".to_string()]);
        let g = BTreeSet::from(["abd".to_string(), "abc".to_string()]);
        assert_eq!(greedy_pairs(&p, &g, 0.8), vec![("ab", "abc")]);
    }

    #[test]
    fn empty_rules_hold_in_fuzzy_mode() {
        let opts = FuzzyOptions::default();
        assert_eq!(fuzzy_set_f1(&[], &v(&[" "]), &opts), 1.0);
        assert_eq!(fuzzy_set_f1(&v(&["x"]), &[], &opts), 0.0);
    }
}
