//! The offline `heuristic` judge: deterministic text-overlap scores standing in for an LLM judge,
//! so `evalfleet run` works with no network and no API key. Every score it gives is labelled
//! `judge: heuristic` in the result and the report.

use std::collections::HashSet;

use crate::{rag, support};
use evalfleet_model::record::{JudgeId, Score};
use evalfleet_model::suite::Dimension;
use evalfleet_model::text::answer_tokens;

use super::{Example, JudgeTask};

/// The heuristic's score for one judge question, on the dimension's reported scale (raw rubric
/// score, or [0, 1] for `unit` dimensions). A dimension the heuristic has no rule for is
/// unscored.
pub fn heuristic_verdict(task: &JudgeTask<'_>, example: &Example) -> Score {
    let dimension = task.dimension;
    if let Some(custom) = task.custom.filter(|_| task.is_pairwise()) {
        return super::pairwise::heuristic(&custom);
    }
    let fraction_and_reason: Option<(f64, String)> = match (example, dimension.name.as_str()) {
        (Example::Custom(_), _) => Some(custom_overlap(task)),
        (Example::Support(e), "relevance") => Some(rubric_fraction(support::heuristic_relevance(
            &e.ticket,
            &e.response,
        ))),
        (Example::Support(e), "tone") => {
            Some(rubric_fraction(support::heuristic_tone(&e.response)))
        }
        (Example::Rag(e), name @ ("groundedness" | "relevance")) => {
            let trace = e.trace.as_ref();
            let answer = trace.and_then(|t| t.answer.as_deref()).unwrap_or("");
            let context = trace.and_then(|t| t.context.as_deref()).unwrap_or("");
            Some(if name == "groundedness" {
                let f = rag::heuristic_groundedness(answer, context);
                (
                    f,
                    format!(
                        "heuristic: {:.0}% of the answer's tokens appear in the context",
                        f * 100.0
                    ),
                )
            } else {
                let f = rag::heuristic_relevance(&e.question, answer);
                (
                    f,
                    format!(
                        "heuristic: {:.0}% of the question's tokens appear in the answer",
                        f * 100.0
                    ),
                )
            })
        }
        _ => None,
    };
    match fraction_and_reason {
        Some((f, reasoning)) => {
            Score::scored(on_scale(dimension, f), reasoning, JudgeId::heuristic())
        }
        None => Score::unscored(
            JudgeId::heuristic(),
            format!(
                "the heuristic judge has no rule for dimension '{}'",
                dimension.name
            ),
        ),
    }
}

/// A custom dimension: the share of the judged fields' distinct tokens that also occur in the
/// other fields its template shows (the context the judged text should agree with). With no
/// other field, the first judged field is the context of the rest (a ticket for its response).
fn custom_overlap(task: &JudgeTask<'_>) -> (f64, String) {
    let others: Vec<String> = task
        .custom
        .map(|c| c.suite.context(c.dimension, c.example))
        .unwrap_or_default()
        .into_iter()
        .map(|(_, t)| t.into_owned())
        .collect();
    let texts: Vec<&str> = task.fields.iter().map(|(_, t)| t.as_ref()).collect();
    let (judged, context): (&[&str], Vec<&str>) = match (others.is_empty(), texts.split_first()) {
        (true, Some((first, rest))) => (rest, vec![*first]),
        _ => (&texts, others.iter().map(String::as_str).collect()),
    };
    let vocabulary: HashSet<String> = context.iter().flat_map(|t| answer_tokens(t)).collect();
    let tokens: HashSet<String> = judged.iter().flat_map(|t| answer_tokens(t)).collect();
    let fraction = if tokens.is_empty() {
        0.0
    } else {
        tokens.iter().filter(|t| vocabulary.contains(*t)).count() as f64 / tokens.len() as f64
    };
    (
        fraction,
        format!(
            "heuristic: {:.0}% of the judged text's words appear in its context",
            fraction * 100.0
        ),
    )
}

/// A 1–5 rubric score as a fraction of its range.
fn rubric_fraction((score, reasoning): (u8, String)) -> (f64, String) {
    ((f64::from(score) - 1.0) / 4.0, reasoning)
}

/// A fraction of the range on the dimension's reported scale: unit dimensions keep it (the
/// heuristic is continuous, as the seed's stub was), rubric dimensions round to a whole score.
fn on_scale(d: &Dimension, f: f64) -> f64 {
    if d.unit {
        f
    } else {
        d.min as f64 + (f * (d.max - d.min) as f64).round()
    }
}
