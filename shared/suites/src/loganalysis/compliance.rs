//! Compliance: did the agent judge each intent of the scenario correctly (docs/DESIGN.md §2.3, §9)?
//!
//! The ground truth has one status per intent, the agent gives one overall verdict
//! (`compliance_status`) or none; each intent is right when the verdict equals its status, or,
//! without a verdict, when the text's keywords support its status. Unlike the other metrics the
//! value is null when there are no intents: there is nothing to be right about, and a 0 or 1
//! would skew the mean.

use serde_json::{json, Value};

use super::prose::Prose;
use super::scenario::GtIntent;
use super::schema::ComplianceStatus;
use super::Method;

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ComplianceScores {
    pub method: Method,
    pub accuracy: Option<f64>,
    pub details: Value,
}

pub(crate) fn score(
    gt: &[(String, GtIntent)],
    agent: Option<ComplianceStatus>,
    prose: &Prose,
) -> ComplianceScores {
    if gt.is_empty() {
        return ComplianceScores {
            method: Method::None,
            accuracy: None,
            details: json!({"total": 0}),
        };
    }
    let method = if agent.is_some() {
        Method::Structured
    } else {
        Method::Freeform
    };
    let correct: Vec<&str> = gt
        .iter()
        .filter(|(_, intent)| {
            let want = ComplianceStatus::parse(&intent.status);
            match agent {
                Some(verdict) => want == Some(verdict),
                None => want.is_some_and(|w| text_supports(w, prose)),
            }
        })
        .map(|(name, _)| name.as_str())
        .collect();
    ComplianceScores {
        method,
        accuracy: Some(correct.len() as f64 / gt.len() as f64),
        details: json!({
            "correct": correct.len(),
            "total": gt.len(),
            "correct_intents": correct,
            "agent_status": agent.map(label),
        }),
    }
}

fn label(s: ComplianceStatus) -> &'static str {
    match s {
        ComplianceStatus::Compliant => "COMPLIANT",
        ComplianceStatus::Degraded => "DEGRADED",
        ComplianceStatus::NonCompliant => "NON_COMPLIANT",
    }
}

/// The §9 keyword rules (case-insensitive substrings).
fn text_supports(status: ComplianceStatus, prose: &Prose) -> bool {
    let any = |words: &[&str]| words.iter().any(|w| prose.contains(w));
    let negative = ["non-compliant", "non_compliant", "not compliant"];
    match status {
        ComplianceStatus::Compliant => {
            any(&["compliant", "meets", "satisfies", "within threshold"])
                && !any(&negative)
                && !any(&["degraded", "violat"])
        }
        ComplianceStatus::Degraded => any(&["degraded", "exceeds", "violat", "issue"]),
        ComplianceStatus::NonCompliant => any(&negative),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn intents(statuses: &[&str]) -> Vec<(String, GtIntent)> {
        statuses
            .iter()
            .enumerate()
            .map(|(i, s)| {
                (
                    format!("intent_{i}"),
                    GtIntent {
                        status: s.to_string(),
                    },
                )
            })
            .collect()
    }

    fn freeform(status: &str, text: &str) -> f64 {
        score(&intents(&[status]), None, &Prose::new(text))
            .accuracy
            .unwrap()
    }

    #[test]
    fn no_intents_is_null_with_method_none() {
        let s = score(
            &[],
            Some(ComplianceStatus::Compliant),
            &Prose::new("compliant"),
        );
        assert_eq!((s.method, s.accuracy), (Method::None, None));
    }

    #[test]
    fn structured_verdict_is_compared_to_every_intent() {
        let gt = intents(&["COMPLIANT", "degraded", "DEGRADED", "UNKNOWN"]);
        let s = score(
            &gt,
            Some(ComplianceStatus::Degraded),
            &Prose::new("compliant"),
        );
        assert_eq!(s.method, Method::Structured);
        assert_eq!(s.accuracy, Some(0.5));
        assert_eq!(
            s.details["correct_intents"],
            json!(["intent_1", "intent_2"])
        );
        assert_eq!(s.details["agent_status"], "DEGRADED");
    }

    #[test]
    fn freeform_compliant_needs_a_positive_and_no_negative() {
        assert_eq!(
            freeform("COMPLIANT", "The build meets the 35s target."),
            1.0
        );
        assert_eq!(freeform("COMPLIANT", "Startup is within threshold."), 1.0);
        assert_eq!(freeform("COMPLIANT", "System is Compliant."), 1.0);
        assert_eq!(freeform("COMPLIANT", "The system is non-compliant."), 0.0);
        assert_eq!(freeform("COMPLIANT", "NON_COMPLIANT"), 0.0);
        assert_eq!(freeform("COMPLIANT", "It is not compliant."), 0.0);
        assert_eq!(freeform("COMPLIANT", "Compliant but degraded."), 0.0);
        assert_eq!(
            freeform("COMPLIANT", "meets the SLA, nothing violated"),
            0.0
        );
        assert_eq!(freeform("COMPLIANT", "all good"), 0.0);
        assert_eq!(freeform("COMPLIANT", "all within limits"), 0.0);
    }

    #[test]
    fn freeform_degraded_and_non_compliant() {
        assert_eq!(freeform("DEGRADED", "Service is DEGRADED."), 1.0);
        assert_eq!(freeform("DEGRADED", "count exceeds the limit"), 1.0);
        assert_eq!(freeform("DEGRADED", "this violates the intent"), 1.0);
        assert_eq!(freeform("DEGRADED", "a cleanup issue"), 1.0);
        assert_eq!(freeform("DEGRADED", "everything is compliant"), 0.0);
        assert_eq!(
            freeform("NON_COMPLIANT", "the system is Not Compliant"),
            1.0
        );
        assert_eq!(freeform("NON_COMPLIANT", "non_compliant"), 1.0);
        assert_eq!(freeform("NON_COMPLIANT", "degraded"), 0.0);
        assert_eq!(freeform("SOMETHING", "compliant degraded"), 0.0);
    }

    #[test]
    fn freeform_scores_each_intent() {
        let gt = intents(&["COMPLIANT", "DEGRADED", "NON_COMPLIANT"]);
        // "meets" supports COMPLIANT (no negative word), "issue" supports DEGRADED.
        let s = score(
            &gt,
            None,
            &Prose::new("startup meets the target; cache shows an issue"),
        );
        assert_eq!(s.method, Method::Freeform);
        assert_eq!(s.accuracy, Some(2.0 / 3.0));
        assert_eq!(
            s.details["correct_intents"],
            json!(["intent_0", "intent_1"])
        );
        assert_eq!(s.details["agent_status"], Value::Null);
    }
}
