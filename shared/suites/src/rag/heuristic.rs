//! The offline `heuristic` judge for `rag-layers` (docs/DESIGN.md §2.5): the seed-003 stub rules.
//!
//! With `--judge heuristic` nothing leaves the machine, yet groundedness and relevance still get
//! deterministic, explainable numbers: word overlap, as the seed's stub judge scores them, but
//! over the same Unicode-aware answer tokens L5 uses and without the stub's squashing into
//! 0.3–0.7, so the full [0, 1] range (and the 0.70 gates) stay meaningful. Results carry the
//! `judge: heuristic` label elsewhere; these functions only compute the scores.
//!
//! Rules (tokens = `evalfleet_model::text::answer_tokens`, compared as sets of distinct tokens):
//! - groundedness(answer, context) = |answer ∩ context| / |answer|: the share of the answer's
//!   distinct tokens that occur in the context;
//! - relevance(question, answer) = |question ∩ answer| / |question|: the share of the question's
//!   distinct tokens that occur in the answer;
//! - an answer without tokens scores 0.0 on both (an empty answer is neither grounded nor
//!   relevant), as does a question without tokens on relevance.

use std::collections::HashSet;

use evalfleet_model::text::answer_tokens;

fn token_set(s: &str) -> HashSet<String> {
    answer_tokens(s).into_iter().collect()
}

/// |from ∩ within| / |from|; 0.0 when `from` is empty.
fn share_found(from: &HashSet<String>, within: &HashSet<String>) -> f64 {
    if from.is_empty() {
        return 0.0;
    }
    from.intersection(within).count() as f64 / from.len() as f64
}

/// Share of the answer's distinct tokens found in the context; 0.0 for an answer without tokens.
pub fn heuristic_groundedness(answer: &str, context: &str) -> f64 {
    share_found(&token_set(answer), &token_set(context))
}

/// Share of the question's distinct tokens found in the answer; 0.0 when the answer (or the
/// question) has no tokens.
pub fn heuristic_relevance(question: &str, answer: &str) -> f64 {
    let answer = token_set(answer);
    if answer.is_empty() {
        return 0.0;
    }
    share_found(&token_set(question), &answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groundedness_is_the_share_of_answer_tokens_in_context() {
        let context = "LANEIGE Lip Care SoS is 5.2% in the Top 100.";
        assert_eq!(heuristic_groundedness("SoS is 5.2%", context), 1.0);
        // answer tokens {sos, is, 7, 1}: sos and is found → 2/4.
        assert_eq!(heuristic_groundedness("SoS is 7.1", context), 0.5);
        // Repeats count once: {sos, x} → 1/2.
        assert_eq!(heuristic_groundedness("sos sos sos x", context), 0.5);
        assert_eq!(heuristic_groundedness("unrelated", context), 0.0);
    }

    #[test]
    fn relevance_is_the_share_of_question_tokens_in_answer() {
        let q = "LANEIGE Lip Care SoS는?";
        // question tokens {laneige, lip, care, sos는}; answer has laneige, sos는 → 2/4.
        assert_eq!(heuristic_relevance(q, "Laneige SoS는 5%입니다"), 0.5);
        assert_eq!(heuristic_relevance(q, "laneige lip care sos는 5%"), 1.0);
        assert_eq!(heuristic_relevance(q, "모름"), 0.0);
    }

    #[test]
    fn an_answer_without_tokens_scores_zero() {
        assert_eq!(heuristic_groundedness("", "context"), 0.0);
        assert_eq!(heuristic_groundedness(" ?! ", "?!"), 0.0);
        assert_eq!(heuristic_relevance("question", ""), 0.0);
        assert_eq!(heuristic_relevance("", ""), 0.0);
        assert_eq!(heuristic_relevance("???", "answer"), 0.0);
        assert_eq!(heuristic_groundedness("answer", ""), 0.0);
    }

    #[test]
    fn scores_stay_in_the_unit_interval() {
        let pairs = [
            ("a b c", "a"),
            ("a", "a b c"),
            ("x", "y"),
            ("라네즈 립", "라네즈"),
        ];
        for (a, b) in pairs {
            for s in [heuristic_groundedness(a, b), heuristic_relevance(a, b)] {
                assert!((0.0..=1.0).contains(&s), "{a} / {b}: {s}");
            }
        }
    }
}
