//! Timeline: did the agent put the events it found in the right order (docs/DESIGN.md §2.3, §9)?
//!
//! The seed's accuracy is all-or-nothing (1.0 iff at least two events were matched and their
//! ground-truth order is kept), which hides how close a nearly-right timeline is; the
//! longest-increasing-subsequence fraction says how much of the ground truth the agent ordered
//! correctly. Freeform text has no entries to align, so it gets the accuracy only.

use std::collections::HashSet;

use serde_json::{json, Value};

use super::prose::Prose;
use super::scenario::GtTimelineEntry;
use super::schema::AgentTimelineEntry;
use super::Method;
use evalfleet_model::text::{word_overlap, words};

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TimelineScores {
    pub method: Method,
    pub accuracy: f64,
    pub lis_fraction: Option<f64>,
    pub details: Value,
}

pub(crate) fn score(
    gt: &[GtTimelineEntry],
    agent: Option<&[AgentTimelineEntry]>,
    prose: &Prose,
) -> TimelineScores {
    if gt.is_empty() {
        return TimelineScores {
            method: Method::None,
            accuracy: 0.0,
            lis_fraction: Some(0.0),
            details: json!({"total": 0}),
        };
    }
    match agent {
        Some(agent) => structured(gt, agent),
        None => freeform(gt, prose),
    }
}

/// Each agent entry, in agent order, takes the first unused ground-truth entry whose words
/// overlap it by ≥ 0.5.
fn structured(gt: &[GtTimelineEntry], agent: &[AgentTimelineEntry]) -> TimelineScores {
    let gt_words: Vec<Vec<String>> = gt.iter().map(|e| words(&e.event)).collect();
    let mut used = vec![false; gt.len()];
    let mut matched = Vec::new();
    for a in agent {
        let aw = words(&a.event);
        if let Some(j) = (0..gt.len()).find(|&j| !used[j] && word_overlap(&aw, &gt_words[j]) >= 0.5)
        {
            used[j] = true;
            matched.push(j);
        }
    }
    let lis = longest_increasing(&matched);
    TimelineScores {
        method: Method::Structured,
        accuracy: in_order(&matched),
        lis_fraction: Some(lis as f64 / gt.len() as f64),
        details: json!({
            "matched": matched.len(),
            "total": gt.len(),
            "agent_entries": agent.len(),
            "matched_indices": matched,
            "in_order": lis,
        }),
    }
}

/// A ground-truth entry is mentioned when ≥ 2 of its keywords (distinct words longer than 3
/// characters) occur; its position is the earliest of them.
fn freeform(gt: &[GtTimelineEntry], prose: &Prose) -> TimelineScores {
    let mut positions = Vec::new();
    let mut mentioned = Vec::new();
    for (j, e) in gt.iter().enumerate() {
        let keywords: HashSet<String> = words(&e.event)
            .into_iter()
            .filter(|w| w.chars().count() > 3)
            .collect();
        let found: Vec<usize> = keywords.iter().filter_map(|k| prose.find(k)).collect();
        if found.len() >= 2 {
            positions.push(*found.iter().min().expect("non-empty"));
            mentioned.push(j);
        }
    }
    TimelineScores {
        method: Method::Freeform,
        accuracy: in_order(&positions),
        lis_fraction: None,
        details: json!({
            "mentioned": mentioned.len(),
            "total": gt.len(),
            "mentioned_indices": mentioned,
            "positions": positions,
        }),
    }
}

/// 1.0 iff there are ≥ 2 values and they strictly increase.
fn in_order(values: &[usize]) -> f64 {
    if values.len() >= 2 && values.windows(2).all(|w| w[0] < w[1]) {
        1.0
    } else {
        0.0
    }
}

/// Length of the longest strictly increasing (not necessarily contiguous) subsequence.
fn longest_increasing(values: &[usize]) -> usize {
    // tails[k] = smallest tail of an increasing subsequence of length k + 1.
    let mut tails: Vec<usize> = Vec::new();
    for &v in values {
        let k = tails.partition_point(|&t| t < v);
        if k == tails.len() {
            tails.push(v);
        } else {
            tails[k] = v;
        }
    }
    tails.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gt(events: &[&str]) -> Vec<GtTimelineEntry> {
        events
            .iter()
            .map(|e| GtTimelineEntry {
                time: None,
                event: e.to_string(),
            })
            .collect()
    }

    fn ag(events: &[&str]) -> Vec<AgentTimelineEntry> {
        events
            .iter()
            .map(|e| AgentTimelineEntry {
                event: e.to_string(),
                time: None,
            })
            .collect()
    }

    fn structured_of(g: &[&str], a: &[&str]) -> TimelineScores {
        score(&gt(g), Some(&ag(a)), &Prose::new(""))
    }

    const GT: [&str; 4] = [
        "VM Started",
        "VM Paused (spawning)",
        "Network VIF plugged",
        "Instance destroyed",
    ];

    #[test]
    fn structured_in_order_and_lis() {
        let s = structured_of(&GT, &["vm_started", "Network vif", "instance destroyed"]);
        assert_eq!(s.accuracy, 1.0);
        assert_eq!(s.lis_fraction, Some(3.0 / 4.0));
        assert_eq!(s.details["matched_indices"], json!([0, 2, 3]));
    }

    #[test]
    fn structured_out_of_order_keeps_partial_lis() {
        // "VM paused" overlaps "VM Started" only 1/2 = 0.5 but entry 0 is already used, so it
        // takes "VM Paused (spawning)" (2/2); "nothing" matches nothing.
        let s = structured_of(
            &GT,
            &["Instance destroyed", "VM started", "VM paused", "nothing"],
        );
        assert_eq!(s.details["matched_indices"], json!([3, 0, 1]));
        assert_eq!(s.accuracy, 0.0);
        assert_eq!(s.lis_fraction, Some(2.0 / 4.0));
    }

    #[test]
    fn first_unused_entry_with_half_overlap_wins() {
        // "vm" overlaps "VM Started" (1/1) and is taken first; the second "vm paused" then
        // overlaps "VM Paused (spawning)" 2/2.
        let s = structured_of(&GT, &["vm", "vm paused"]);
        assert_eq!(s.details["matched_indices"], json!([0, 1]));
        // Overlap below 0.5: {"network", "down", "again"} vs {"network", "vif", "plugged"} = 1/3.
        let s = structured_of(&GT, &["network down again"]);
        assert_eq!(s.details["matched"], 0);
    }

    #[test]
    fn half_overlap_with_an_earlier_entry_is_enough() {
        // The seed's rule is greedy: "VM Paused" shares 1 of 2 words with "VM Started" (0.5),
        // so it takes entry 0, and "VM Started" then takes "VM Paused (spawning)" (1/2).
        let s = structured_of(&GT, &["VM Paused", "VM Started"]);
        assert_eq!(s.details["matched_indices"], json!([0, 1]));
        assert_eq!(s.accuracy, 1.0);
    }

    #[test]
    fn one_match_is_not_an_order() {
        let s = structured_of(&GT, &["VM Started"]);
        assert_eq!(s.accuracy, 0.0);
        assert_eq!(s.lis_fraction, Some(0.25));
        let s = structured_of(&GT, &[]);
        assert_eq!((s.accuracy, s.lis_fraction), (0.0, Some(0.0)));
    }

    #[test]
    fn lis_is_strict_and_not_contiguous() {
        assert_eq!(longest_increasing(&[]), 0);
        assert_eq!(longest_increasing(&[3, 0, 1, 4, 2]), 3);
        assert_eq!(longest_increasing(&[2, 2, 2]), 1);
        assert_eq!(longest_increasing(&[5, 1, 6, 2, 7, 3, 8]), 4);
    }

    #[test]
    fn freeform_positions_must_strictly_increase() {
        let g = gt(&[
            "Network VIF plugged",
            "VM Resumed after network",
            "Instance destroyed now",
        ]);
        let text = "First the network vif was plugged, then the vm resumed, finally the instance was destroyed.";
        let s = score(&g, None, &Prose::new(text));
        assert_eq!(s.method, Method::Freeform);
        // entry 1's keywords: resumed, after, network → "network" (pos 10) and "resumed" → its
        // position is 10, the same as entry 0's → not strictly increasing.
        assert_eq!(s.details["mentioned"], 3);
        assert_eq!(s.accuracy, 0.0);
        assert_eq!(s.lis_fraction, None);

        let g = gt(&["Network VIF plugged", "VM Resumed", "Instance destroyed"]);
        // "vm resumed": only "resumed" is a keyword (> 3 chars) → never mentioned.
        let s = score(&g, None, &Prose::new(text));
        assert_eq!(s.details["mentioned_indices"], json!([0, 2]));
        assert_eq!(s.accuracy, 1.0);
        let s = score(
            &g,
            None,
            &Prose::new("instance destroyed, then network plugged"),
        );
        assert_eq!(s.accuracy, 0.0);
        // Keywords are longer than 3 characters: "vif" is not one.
        let g = gt(&["VM vif plugged", "Instance destroyed"]);
        let s = score(&g, None, &Prose::new("vif plugged; instance destroyed"));
        assert_eq!(s.details["mentioned_indices"], json!([1]));
    }

    #[test]
    fn empty_ground_truth_is_none() {
        let s = score(&[], Some(&ag(&["x"])), &Prose::new(""));
        assert_eq!(s.method, Method::None);
        assert_eq!((s.accuracy, s.lis_fraction), (0.0, Some(0.0)));
    }
}
