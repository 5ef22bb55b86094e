//! Anomaly detection: did the agent report the scenario's anomalies (docs/DESIGN.md §2.3, §9)?
//!
//! A scenario without anomalies scores 1.0 (nothing to miss), so healthy-system scenarios do not
//! drag comprehensiveness down. Structured anomalies match by type compared as words
//! (`recurring_warning` = "Recurring Warning"), one to one in ground-truth order; freeform text
//! uses the seed's keyword rule.

use serde_json::{json, Value};

use super::prose::Prose;
use super::scenario::GtAnomaly;
use super::schema::AgentAnomaly;
use super::Method;
use evalfleet_model::text::words;

/// Generic words that signal the agent noticed something wrong.
const GENERIC: [&str; 6] = ["warning", "error", "issue", "problem", "anomaly", "unusual"];

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AnomalyScores {
    pub method: Method,
    pub rate: f64,
    pub details: Value,
}

pub(crate) fn score(
    gt: &[GtAnomaly],
    agent: Option<&[AgentAnomaly]>,
    prose: &Prose,
) -> AnomalyScores {
    if gt.is_empty() {
        return AnomalyScores {
            method: Method::None,
            rate: 1.0,
            details: json!({"total": 0}),
        };
    }
    let (method, detected, extra) = match agent {
        Some(agent) => {
            let mut used = vec![false; agent.len()];
            let detected = gt
                .iter()
                .filter(|g| {
                    let want = words(&g.anomaly_type);
                    let hit = (0..agent.len())
                        .find(|&i| !used[i] && words(&agent[i].anomaly_type) == want);
                    hit.inspect(|&i| used[i] = true).is_some()
                })
                .count();
            (
                Method::Structured,
                detected,
                json!({"agent_anomalies": agent.len()}),
            )
        }
        None => {
            let detected = gt.iter().filter(|g| indicators(g, prose) >= 2).count();
            (Method::Freeform, detected, json!({}))
        }
    };
    let mut details = json!({"detected": detected, "total": gt.len()});
    if let (Some(d), Value::Object(extra)) = (details.as_object_mut(), extra) {
        d.extend(extra);
    }
    AnomalyScores {
        method,
        rate: detected as f64 / gt.len() as f64,
        details,
    }
}

/// One each for: a word of the type, a generic word, a description word longer than 5
/// characters.
fn indicators(g: &GtAnomaly, prose: &Prose) -> u32 {
    let type_word = words(&g.anomaly_type).iter().any(|w| prose.contains(w));
    let generic = GENERIC.iter().any(|w| prose.contains(w));
    let description = words(g.description.as_deref().unwrap_or(""))
        .iter()
        .any(|w| w.chars().count() > 5 && prose.contains(w));
    u32::from(type_word) + u32::from(generic) + u32::from(description)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gt(t: &str, d: &str) -> GtAnomaly {
        GtAnomaly {
            anomaly_type: t.into(),
            description: Some(d.into()),
        }
    }

    fn ag(t: &str) -> AgentAnomaly {
        AgentAnomaly {
            anomaly_type: t.into(),
            description: None,
            severity: None,
        }
    }

    #[test]
    fn empty_ground_truth_scores_one() {
        let s = score(&[], None, &Prose::new(""));
        assert_eq!((s.method, s.rate), (Method::None, 1.0));
        let s = score(&[], Some(&[ag("x")]), &Prose::new(""));
        assert_eq!((s.method, s.rate), (Method::None, 1.0));
    }

    #[test]
    fn structured_types_compare_as_words_one_to_one() {
        let g = [
            gt("recurring_warning", ""),
            gt("state_mismatch", ""),
            gt("state_mismatch", ""),
        ];
        let a = [
            ag("Recurring Warning"),
            ag("STATE-MISMATCH"),
            ag("state mismatch detected"),
        ];
        let s = score(&g, Some(&a), &Prose::new(""));
        assert_eq!(s.method, Method::Structured);
        // the second state_mismatch finds no unused agent anomaly of that type
        assert_eq!(s.rate, 2.0 / 3.0);
        assert_eq!(
            s.details,
            json!({"detected": 2, "total": 3, "agent_anomalies": 3})
        );
        let s = score(
            &g,
            Some(&[]),
            &Prose::new("recurring warning state mismatch"),
        );
        assert_eq!(s.rate, 0.0, "structured mode ignores the prose");
    }

    #[test]
    fn freeform_needs_two_of_three_indicators() {
        let g = [gt(
            "state_mismatch",
            "Database shows 1 instance but hypervisor shows 0",
        )];
        let rate = |text: &str| score(&g, None, &Prose::new(text)).rate;
        assert_eq!(rate("a state problem"), 1.0); // type word + generic
        assert_eq!(rate("the mismatch in the database"), 1.0); // type word + "database"
        assert_eq!(rate("an error in the hypervisor"), 1.0); // generic + "hypervisor"
        assert_eq!(rate("an error occurred"), 0.0); // generic only
        assert_eq!(rate("shows instance"), 0.0); // a description word only
        assert_eq!(rate("an error, it shows"), 0.0); // "shows" has only 5 characters
        assert_eq!(rate("a STATE_MISMATCH"), 0.0); // both type words count once
    }
}
