//! Event detection: did the agent find the scenario's key events (docs/DESIGN.md §2.3, §9 "Events")?
//!
//! Structured mode compares the agent's `events_detected` entries with the ground truth one to
//! one: accuracy (= recall), precision, F1, confidence-weighted recall and a partial-credit
//! score that still rewards an event of the right type with the wrong or missing details.
//! Freeform mode can only tell whether an event is mentioned, so it reports accuracy alone and
//! the structured-only numbers are null rather than a misleading 0.

use std::collections::HashSet;

use serde_json::{json, Value};

use super::prose::{fold, Prose};
use super::scenario::GtEvent;
use super::schema::AgentEvent;
use super::timestamps::same_second;
use super::Method;
use evalfleet_model::text::words;

/// The five event numbers, in metric order, plus what explains them.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct EventScores {
    pub method: Method,
    pub accuracy: f64,
    pub precision: Option<f64>,
    pub f1: Option<f64>,
    pub weighted_recall: Option<f64>,
    pub partial_credit: Option<f64>,
    pub details: Value,
}

pub(crate) fn score(gt: &[GtEvent], agent: Option<&[AgentEvent]>, prose: &Prose) -> EventScores {
    if gt.is_empty() {
        return EventScores {
            method: Method::None,
            accuracy: 0.0,
            precision: Some(0.0),
            f1: Some(0.0),
            weighted_recall: Some(0.0),
            partial_credit: Some(0.0),
            details: json!({"total": 0}),
        };
    }
    match agent {
        Some(agent) => structured(gt, agent),
        None => freeform(gt, prose),
    }
}

fn structured(gt: &[GtEvent], agent: &[AgentEvent]) -> EventScores {
    let total = gt.len() as f64;
    let mut used = vec![false; agent.len()];
    let mut matched = 0usize;
    let mut weighted = 0.0;
    for g in gt {
        let hit = (0..agent.len())
            .find(|&i| !used[i] && same_type(g, &agent[i]) && instance_compatible(g, &agent[i]));
        if let Some(i) = hit {
            used[i] = true;
            matched += 1;
            weighted += agent[i].confidence.map_or(1.0, |c| c.weight());
        }
    }
    let recall = matched as f64 / total;
    let precision = if agent.is_empty() {
        0.0
    } else {
        matched as f64 / agent.len() as f64
    };
    let f1 = if precision + recall == 0.0 {
        0.0
    } else {
        2.0 * precision * recall / (precision + recall)
    };
    let credit = partial_credit_sum(gt, agent);
    EventScores {
        method: Method::Structured,
        accuracy: recall,
        precision: Some(precision),
        f1: Some(f1),
        weighted_recall: Some(weighted / total),
        partial_credit: Some(credit / total),
        details: json!({
            "matched": matched,
            "total": gt.len(),
            "agent_events": agent.len(),
            "confidence_weighted_sum": weighted,
            "partial_credit_sum": credit,
        }),
    }
}

/// Σ credit: each ground-truth event, in order, takes the best unused agent event of the same
/// type (1.0 instance match, else 0.75 same second, else 0.5; ties to the first in agent order).
fn partial_credit_sum(gt: &[GtEvent], agent: &[AgentEvent]) -> f64 {
    let mut used = vec![false; agent.len()];
    let mut sum = 0.0;
    for g in gt {
        let mut best: Option<(f64, usize)> = None;
        for (i, a) in agent.iter().enumerate() {
            if used[i] || !same_type(g, a) {
                continue;
            }
            let credit = if instance_matches(g, a) {
                1.0
            } else if same_second(g.timestamp.as_deref(), a.timestamp.as_deref()) {
                0.75
            } else {
                0.5
            };
            if best.is_none_or(|(b, _)| credit > b) {
                best = Some((credit, i));
            }
        }
        if let Some((credit, i)) = best {
            used[i] = true;
            sum += credit;
        }
    }
    sum
}

/// Event types equal case-insensitively with `_` ≡ space (ends trimmed).
fn same_type(g: &GtEvent, a: &AgentEvent) -> bool {
    fold(&g.event_type).trim() == fold(&a.event_type).trim()
}

/// The ground truth id's first 8 characters, lowercased; `None` without a (non-blank) id.
fn id_prefix(g: &GtEvent) -> Option<String> {
    let id = g.instance_id.as_deref()?.trim();
    (!id.is_empty()).then(|| id.chars().take(8).collect::<String>().to_lowercase())
}

fn agent_id(a: &AgentEvent) -> Option<String> {
    let id = a.instance_id.as_deref()?.trim();
    (!id.is_empty()).then(|| id.to_lowercase())
}

/// The matching rule: ids are only compared when both sides have one.
fn instance_compatible(g: &GtEvent, a: &AgentEvent) -> bool {
    match (id_prefix(g), agent_id(a)) {
        (Some(prefix), Some(id)) => id.contains(&prefix),
        _ => true,
    }
}

/// The partial-credit rule: the ground truth has an id and the agent's id carries its prefix.
fn instance_matches(g: &GtEvent, a: &AgentEvent) -> bool {
    matches!((id_prefix(g), agent_id(a)), (Some(prefix), Some(id)) if id.contains(&prefix))
}

fn freeform(gt: &[GtEvent], prose: &Prose) -> EventScores {
    let found = gt.iter().filter(|g| indicators(g, prose) >= 2).count();
    EventScores {
        method: Method::Freeform,
        accuracy: found as f64 / gt.len() as f64,
        precision: None,
        f1: None,
        weighted_recall: None,
        partial_credit: None,
        details: json!({"found": found, "total": gt.len()}),
    }
}

/// +1 type text, +2 instance prefix, +1 when ≥ 2 distinct description words longer than 4
/// characters occur.
fn indicators(g: &GtEvent, prose: &Prose) -> u32 {
    let mut n = 0;
    if prose.contains(fold(&g.event_type).trim()) {
        n += 1;
    }
    if id_prefix(g).is_some_and(|p| prose.contains(&p)) {
        n += 2;
    }
    let desc = words(g.description.as_deref().unwrap_or(""));
    let present = desc
        .iter()
        .filter(|w| w.chars().count() > 4)
        .collect::<HashSet<_>>()
        .into_iter()
        .filter(|w| prose.contains(w))
        .count();
    if present >= 2 {
        n += 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::super::schema::Confidence;
    use super::*;

    fn gt(t: &str, id: Option<&str>, ts: Option<&str>, desc: &str) -> GtEvent {
        GtEvent {
            event_type: t.into(),
            instance_id: id.map(Into::into),
            timestamp: ts.map(Into::into),
            description: Some(desc.into()),
        }
    }

    fn ag(t: &str, id: Option<&str>, ts: Option<&str>, c: Option<Confidence>) -> AgentEvent {
        AgentEvent {
            event_type: t.into(),
            instance_id: id.map(Into::into),
            timestamp: ts.map(Into::into),
            description: None,
            confidence: c,
            line_number: None,
        }
    }

    const ID: &str = "b9000564-fe1a-409b-b8cc-1e88b294cd1d";

    #[test]
    fn structured_matching_is_one_to_one_greedy_with_id_prefix() {
        let gt = [
            gt("vm_started", Some(ID), None, ""),
            gt("vm_started", Some(ID), None, ""),
            gt("vm_paused", Some(ID), None, ""),
            gt("instance_spawned", Some("ffffffff-0000"), None, ""),
        ];
        let agent = [
            ag(
                "VM Started",
                Some("B9000564"),
                None,
                Some(Confidence::Medium),
            ),
            ag("vm_paused", Some("other-id"), None, None), // id present but wrong
            ag("instance spawned", None, None, Some(Confidence::Low)), // no id: type is enough
            ag("network_vif_plugged", None, None, None),
        ];
        let s = score(&gt, Some(&agent), &Prose::new(""));
        // matched: gt0↔a0 (medium 0.7), gt1 none (a0 used), gt2 none (bad id), gt3↔a2 (low 0.4)
        assert_eq!(s.method, Method::Structured);
        assert_eq!(s.accuracy, 0.5);
        assert_eq!(s.precision, Some(0.5));
        assert_eq!(s.f1, Some(0.5));
        assert_eq!(s.weighted_recall, Some((0.7 + 0.4) / 4.0));
        // partial: gt0 a0 1.0; gt1 nothing left of its type; gt2 a1 0.5 (type only);
        // gt3 a2 0.5 (no agent id → no instance credit, no timestamps)
        assert_eq!(s.partial_credit, Some(2.0 / 4.0));
        assert_eq!(s.details["matched"], 2);
        assert_eq!(s.details["agent_events"], 4);
    }

    #[test]
    fn instance_prefix_is_exactly_eight_characters_case_insensitive() {
        let g = [gt("vm_started", Some(ID), None, "")];
        let matched = |id: &str| {
            score(
                &g,
                Some(&[ag("vm_started", Some(id), None, None)]),
                &Prose::new(""),
            )
            .accuracy
        };
        assert_eq!(matched("B9000564"), 1.0);
        assert_eq!(matched("instance-b9000564-zz"), 1.0);
        assert_eq!(matched("b900056Z-fe1a-409b"), 0.0); // 8th character differs
        assert_eq!(matched("  "), 1.0); // a blank agent id is no id
                                        // Short ground-truth ids use all their characters.
        let g = [gt("vm_started", Some("AB1"), None, "")];
        let s = score(
            &g,
            Some(&[ag("vm_started", Some("xab1y"), None, None)]),
            &Prose::new(""),
        );
        assert_eq!(s.accuracy, 1.0);
    }

    #[test]
    fn missing_confidence_weighs_one_and_precision_without_agent_events_is_zero() {
        let gt = [gt("a", None, None, ""), gt("b", None, None, "")];
        let s = score(&gt, Some(&[ag("a", None, None, None)]), &Prose::new(""));
        assert_eq!(s.weighted_recall, Some(0.5));
        assert_eq!(s.precision, Some(1.0));
        assert!((s.f1.unwrap() - 2.0 / 3.0).abs() < 1e-12);
        let s = score(&gt, Some(&[]), &Prose::new(""));
        assert_eq!((s.accuracy, s.precision, s.f1), (0.0, Some(0.0), Some(0.0)));
        assert_eq!(s.partial_credit, Some(0.0));
    }

    #[test]
    fn partial_credit_prefers_instance_then_timestamp_ties_to_agent_order() {
        let ts = "2017-05-16 00:00:04.500";
        let g = [gt("vm_started", Some(ID), Some(ts), "")];
        let credit = |agent: &[AgentEvent]| {
            score(&g, Some(agent), &Prose::new(""))
                .partial_credit
                .unwrap()
        };
        let plain = ag("vm_started", None, None, None);
        let same_sec = ag("vm_started", None, Some("2017-05-16 00:00:04.9"), None);
        let time_only = ag("vm_started", None, Some("00:00:04"), None);
        let iso = ag("vm_started", None, Some("2017-05-16T00:00:04Z"), None);
        let other_day = ag("vm_started", None, Some("2017-05-17 00:00:04"), None);
        let with_id = ag("vm_started", Some(ID), Some("1999-01-01 00:00:00"), None);
        assert_eq!(credit(std::slice::from_ref(&plain)), 0.5);
        assert_eq!(credit(&[plain.clone(), same_sec.clone()]), 0.75);
        assert_eq!(credit(&[time_only]), 0.75);
        assert_eq!(credit(&[iso]), 0.75);
        assert_eq!(credit(&[other_day]), 0.5);
        assert_eq!(credit(&[plain.clone(), same_sec, with_id]), 1.0);
        assert_eq!(credit(&[ag("vm_paused", Some(ID), Some(ts), None)]), 0.0);
        // Without a ground-truth id the best is 0.75 even when the agent gives one.
        let g2 = [gt("vm_started", None, Some(ts), "")];
        let a = ag("vm_started", Some(ID), Some("2017-05-16 00:00:04"), None);
        assert_eq!(
            score(&g2, Some(&[a]), &Prose::new("")).partial_credit,
            Some(0.75)
        );
    }

    #[test]
    fn partial_credit_ties_take_the_first_agent_event_leaving_the_rest() {
        // gt0 has no timestamp: a0 and a1 tie at 0.5 and it takes a0, leaving a1 (same second
        // as gt1) for 0.75. Taking the last tied candidate would leave gt1 only 0.5.
        let ts = "2017-05-16 00:00:04";
        let g = [gt("x", None, None, ""), gt("x", None, Some(ts), "")];
        let a = [
            ag("x", None, Some("2017-05-16 00:00:01"), None),
            ag("x", None, Some(ts), None),
        ];
        let s = score(&g, Some(&a), &Prose::new(""));
        assert_eq!(s.partial_credit, Some((0.5 + 0.75) / 2.0));
    }

    #[test]
    fn freeform_indicators() {
        let g = [
            // type (1) + instance (2)
            gt("vm_started", Some(ID), None, "x"),
            // type (1) + description words "paused", "spawn" (1)
            gt("vm_paused", None, None, "VM paused during spawn process"),
            // type only (1): not found
            gt("instance_destroyed", None, None, "gone"),
            // description words only, one of them: not found
            gt("other", None, None, "network interface"),
            // instance prefix alone is enough (2)
            gt("zzz", Some("B9000564-xxxx"), None, ""),
        ];
        let prose = Prose::new(
            "The VM_STARTED for b9000564; later the VM Paused while spawning. Instance destroyed. A network glitch.",
        );
        let s = score(&g, None, &prose);
        assert_eq!(s.method, Method::Freeform);
        assert_eq!(s.accuracy, 3.0 / 5.0);
        assert_eq!(
            (s.precision, s.f1, s.weighted_recall, s.partial_credit),
            (None, None, None, None)
        );
        assert_eq!(s.details, json!({"found": 3, "total": 5}));
    }

    #[test]
    fn freeform_description_words_count_once_each() {
        // "paused" twice in the description is one word; "VM" is too short.
        let g = [gt("zzz", None, None, "paused paused VM")];
        assert_eq!(indicators(&g[0], &Prose::new("paused vm")), 0);
        // Words of exactly 4 characters do not count.
        let g = gt("zzz", None, None, "boot disk fails");
        assert_eq!(indicators(&g, &Prose::new("boot disk fails")), 0);
        assert_eq!(indicators(&g, &Prose::new("boot disk fails, ")), 0);
        let g = gt("zzz", None, None, "booted disks fails");
        assert_eq!(indicators(&g, &Prose::new("booted disks")), 1);
    }

    #[test]
    fn empty_ground_truth_is_method_none_with_zeros() {
        let s = score(&[], Some(&[ag("a", None, None, None)]), &Prose::new("a"));
        assert_eq!(s.method, Method::None);
        assert_eq!(s.accuracy, 0.0);
        assert_eq!(s.precision, Some(0.0));
        assert_eq!(s.partial_credit, Some(0.0));
    }
}
