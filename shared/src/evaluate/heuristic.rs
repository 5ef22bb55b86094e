//! The offline `heuristic` judge: deterministic text-overlap scores standing in for an LLM judge,
//! so `evalfleet run` works with no network and no API key. Every score it gives is labelled
//! `judge: heuristic` in the result and the report.

use crate::record::{JudgeId, Score};
use crate::suite::Dimension;
use crate::{rag, support};

use super::Example;

/// The heuristic's score for one dimension, on the dimension's reported scale (raw rubric score,
/// or [0, 1] for `unit` dimensions). A dimension the heuristic has no rule for is unscored.
pub fn heuristic_verdict(dimension: &Dimension, example: &Example) -> Score {
    let fraction_and_reason: Option<(f64, String)> = match (example, dimension.name.as_str()) {
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
