//! L5 answer quality: exact match and SQuAD-style token F1 (docs/DESIGN.md §2.2, §9).
//!
//! Both compare token lists from `evalfleet_model::text::answer_tokens` (lowercase, every non-word
//! character — Unicode-aware, so Hangul stays — to a space, whitespace collapsed and trimmed).
//! F1 counts tokens as multisets, as the SQuAD script does, so repeating a right word does not
//! earn extra credit. Two answers that normalise to nothing agree perfectly; an absent gold
//! answer cannot be missed, so it scores 1.0 and is flagged so reports can tell it apart.

use std::collections::HashMap;

use evalfleet_model::text::answer_tokens;

/// The two L5 deterministic numbers of one item.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AnswerScores {
    pub exact_match: f64,
    pub answer_f1: f64,
    /// The gold answer was absent (`null` or missing), so both scores are 1.0 by rule.
    pub gold_absent: bool,
}

/// Scores the system's answer (`None` = no answer, scored as "") against the gold answer
/// (`None` = absent).
pub fn answer_scores(predicted: Option<&str>, gold: Option<&str>) -> AnswerScores {
    let Some(gold) = gold else {
        return AnswerScores {
            exact_match: 1.0,
            answer_f1: 1.0,
            gold_absent: true,
        };
    };
    let predicted = predicted.unwrap_or("");
    AnswerScores {
        exact_match: exact_match(predicted, gold),
        answer_f1: token_f1(predicted, gold),
        gold_absent: false,
    }
}

/// 1.0 when both answers normalise to the same token sequence, else 0.0.
pub fn exact_match(predicted: &str, gold: &str) -> f64 {
    if answer_tokens(predicted) == answer_tokens(gold) {
        1.0
    } else {
        0.0
    }
}

/// Token F1 over multisets; both without tokens → 1.0, exactly one without tokens → 0.0.
pub fn token_f1(predicted: &str, gold: &str) -> f64 {
    let p = answer_tokens(predicted);
    let g = answer_tokens(gold);
    if p.is_empty() || g.is_empty() {
        return if p.is_empty() && g.is_empty() {
            1.0
        } else {
            0.0
        };
    }
    let mut gold_counts: HashMap<&str, usize> = HashMap::new();
    for t in &g {
        *gold_counts.entry(t).or_default() += 1;
    }
    let mut common = 0usize;
    for t in &p {
        if let Some(n) = gold_counts.get_mut(t.as_str()) {
            if *n > 0 {
                *n -= 1;
                common += 1;
            }
        }
    }
    if common == 0 {
        return 0.0;
    }
    let precision = common as f64 / p.len() as f64;
    let recall = common as f64 / g.len() as f64;
    2.0 * precision * recall / (precision + recall)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn absent_gold_scores_one_and_is_flagged() {
        let s = answer_scores(Some("anything"), None);
        assert_eq!(
            (s.exact_match, s.answer_f1, s.gold_absent),
            (1.0, 1.0, true)
        );
        let s = answer_scores(None, None);
        assert_eq!(
            (s.exact_match, s.answer_f1, s.gold_absent),
            (1.0, 1.0, true)
        );
    }

    #[test]
    fn empty_gold_is_a_real_answer() {
        let s = answer_scores(Some(""), Some(""));
        assert_eq!(
            (s.exact_match, s.answer_f1, s.gold_absent),
            (1.0, 1.0, false)
        );
        let s = answer_scores(None, Some("  ?! "));
        assert_eq!((s.exact_match, s.answer_f1), (1.0, 1.0));
        let s = answer_scores(Some("5%"), Some(""));
        assert_eq!((s.exact_match, s.answer_f1), (0.0, 0.0));
    }

    #[test]
    fn a_missing_answer_is_scored_as_empty() {
        let s = answer_scores(None, Some("laneige"));
        assert_eq!(
            (s.exact_match, s.answer_f1, s.gold_absent),
            (0.0, 0.0, false)
        );
    }

    #[test]
    fn exact_match_ignores_case_punctuation_and_spacing() {
        assert_eq!(exact_match("  The SoS is 5.2%! ", "the sos is 5 2"), 1.0);
        assert_eq!(exact_match("the sos is 5.2", "the sos is 5.3"), 0.0);
        assert_eq!(exact_match("lip_care", "lip care"), 0.0); // `_` is a word character
    }

    #[test]
    fn f1_counts_tokens_as_multisets() {
        // pred [a a b], gold [a b c]: common = min(2,1)+min(1,1) = 2; P = 2/3, R = 2/3.
        assert!(close(token_f1("a a b", "a b c"), 2.0 / 3.0));
        // pred [a a a], gold [a]: common 1, P = 1/3, R = 1 → 0.5.
        assert!(close(token_f1("a a a", "a"), 0.5));
        assert_eq!(token_f1("x y", "a b"), 0.0);
    }

    #[test]
    fn korean_answers_keep_their_tokens() {
        let gold = "LANEIGE의 Lip Care 카테고리 SoS는 약 5.2%입니다.";
        assert_eq!(
            exact_match("laneige의 lip care 카테고리 sos는 약 5 2 입니다", gold),
            1.0
        );
        // The particle is part of the token: "laneige" ≠ "laneige의".
        assert_eq!(
            exact_match("laneige lip care 카테고리 sos는 약 5 2 입니다", gold),
            0.0
        );
        // gold tokens: laneige의 lip care 카테고리 sos는 약 5 2 입니다 (9)
        // pred tokens: sos는 약 5 2 입니다 (5), all common → P = 1, R = 5/9 → F1 = 10/14.
        let f = token_f1("SoS는 약 5.2%입니다", gold);
        assert!(close(f, 10.0 / 14.0), "{f}");
        // "라네즈" and "laneige" are different tokens: no partial credit at token level.
        assert_eq!(token_f1("라네즈", "laneige"), 0.0);
    }
}
