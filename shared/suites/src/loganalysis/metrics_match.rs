//! Metrics: did the agent report the scenario's numbers (docs/DESIGN.md §2.3, §9 "Metrics")?
//!
//! Agents name metrics their own way (`build_time` for `total_build_time_seconds`) and round
//! values, so names match exactly first and by word overlap second, values within 10%, and
//! every agent metric (or number in prose) is used at most once so one number cannot satisfy
//! several ground-truth metrics.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{json, Value};

use super::prose::Prose;
use super::scenario::MetricValue;
use super::Method;
use evalfleet_model::text::{norm, word_overlap, words};

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MetricScores {
    pub method: Method,
    pub accuracy: f64,
    pub details: Value,
}

pub(crate) fn score(
    gt: &[(String, MetricValue)],
    agent: Option<&[(String, MetricValue)]>,
    prose: &Prose,
) -> MetricScores {
    if gt.is_empty() {
        return MetricScores {
            method: Method::None,
            accuracy: 0.0,
            details: json!({"total": 0}),
        };
    }
    match agent {
        Some(agent) => structured(gt, agent),
        None => freeform(gt, prose),
    }
}

/// |a − g| ≤ 0.1·|g| + 1e-9.
fn within_tolerance(agent: f64, gt: f64) -> bool {
    (agent - gt).abs() <= 0.1 * gt.abs() + 1e-9
}

/// A numeric ground truth (a numeric string included) compares numbers within tolerance; a text
/// ground truth compares case-insensitively (ends trimmed) with a text agent value.
fn values_match(gt: &MetricValue, agent: &MetricValue) -> bool {
    match (gt.as_number(), gt) {
        (Some(g), _) => agent.as_number().is_some_and(|a| within_tolerance(a, g)),
        (None, MetricValue::Text(g)) => {
            matches!(agent, MetricValue::Text(a) if norm(a) == norm(g))
        }
        (None, MetricValue::Number(_)) => unreachable!("a number always has a value"),
    }
}

fn structured(gt: &[(String, MetricValue)], agent: &[(String, MetricValue)]) -> MetricScores {
    let mut agent_used = vec![false; agent.len()];
    let mut pairs: Vec<Option<usize>> = vec![None; gt.len()];
    // Pass 1: exact names whose values match.
    for (gi, (gname, gval)) in gt.iter().enumerate() {
        if let Some(ai) = (0..agent.len()).find(|&ai| {
            !agent_used[ai] && agent[ai].0 == *gname && values_match(gval, &agent[ai].1)
        }) {
            agent_used[ai] = true;
            pairs[gi] = Some(ai);
        }
    }
    // Pass 2: the remaining agent metric with the highest name overlap ≥ 0.5 whose value
    // matches; ties go to agent order.
    for (gi, (gname, gval)) in gt.iter().enumerate() {
        if pairs[gi].is_some() {
            continue;
        }
        let gwords = words(gname);
        let mut best: Option<(f64, usize)> = None;
        for (ai, (aname, aval)) in agent.iter().enumerate() {
            if agent_used[ai] {
                continue;
            }
            let overlap = word_overlap(&gwords, &words(aname));
            if overlap >= 0.5 && values_match(gval, aval) && best.is_none_or(|(b, _)| overlap > b) {
                best = Some((overlap, ai));
            }
        }
        if let Some((_, ai)) = best {
            agent_used[ai] = true;
            pairs[gi] = Some(ai);
        }
    }
    let matched: Vec<Value> = pairs
        .iter()
        .enumerate()
        .filter_map(|(gi, p)| p.map(|ai| json!([gt[gi].0, agent[ai].0])))
        .collect();
    MetricScores {
        method: Method::Structured,
        accuracy: matched.len() as f64 / gt.len() as f64,
        details: json!({
            "matched": matched.len(),
            "total": gt.len(),
            "agent_metrics": agent.len(),
            "pairs": matched,
        }),
    }
}

static NUMBER: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"-?\d+(\.\d+)?").unwrap());

/// Numbers are the `-?\d+(\.\d+)?` tokens of the text, each usable once: ground-truth metrics in
/// order take the first unused token within tolerance. A text ground truth is found as a
/// case-insensitive substring (it uses no token).
fn freeform(gt: &[(String, MetricValue)], prose: &Prose) -> MetricScores {
    let tokens: Vec<f64> = NUMBER
        .find_iter(prose.text())
        .filter_map(|m| m.as_str().parse().ok())
        .collect();
    let mut used = vec![false; tokens.len()];
    let mut found = Vec::new();
    for (name, value) in gt {
        let hit = match (value.as_number(), value) {
            (Some(g), _) => {
                let t = (0..tokens.len()).find(|&t| !used[t] && within_tolerance(tokens[t], g));
                t.inspect(|&t| used[t] = true).is_some()
            }
            (None, MetricValue::Text(text)) => prose.contains(text.trim()),
            (None, MetricValue::Number(_)) => false,
        };
        if hit {
            found.push(name.clone());
        }
    }
    MetricScores {
        method: Method::Freeform,
        accuracy: found.len() as f64 / gt.len() as f64,
        details: json!({"found": found.len(), "total": gt.len(), "found_names": found}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(name: &str, v: f64) -> (String, MetricValue) {
        (name.into(), MetricValue::Number(v))
    }

    fn t(name: &str, v: &str) -> (String, MetricValue) {
        (name.into(), MetricValue::Text(v.into()))
    }

    fn structured_of(
        gt: &[(String, MetricValue)],
        agent: &[(String, MetricValue)],
    ) -> MetricScores {
        score(gt, Some(agent), &Prose::new(""))
    }

    #[test]
    fn tolerance_is_ten_percent_inclusive() {
        assert!(within_tolerance(22.0, 20.0));
        assert!(within_tolerance(18.0, 20.0));
        assert!(!within_tolerance(22.01, 20.0));
        assert!(within_tolerance(0.0, 0.0));
        assert!(!within_tolerance(0.001, 0.0));
        assert!(!within_tolerance(5e-7, 0.0));
        assert!(within_tolerance(5e-10, 0.0));
        assert!(within_tolerance(-1.05, -1.0));
    }

    #[test]
    fn values_numeric_strings_and_text() {
        let num = MetricValue::Number(19.84);
        assert!(values_match(&num, &MetricValue::Text(" 19.8 ".into())));
        assert!(!values_match(&num, &MetricValue::Text("19.84s".into())));
        assert!(values_match(
            &MetricValue::Text("12".into()),
            &MetricValue::Number(12.5)
        ));
        let text = MetricValue::Text("0673DD71-abc".into());
        assert!(values_match(
            &text,
            &MetricValue::Text("0673dd71-ABC ".into())
        ));
        assert!(!values_match(&text, &MetricValue::Text("0673dd71".into())));
        assert!(!values_match(&text, &MetricValue::Number(673.0)));
    }

    #[test]
    fn exact_names_first_then_best_overlap() {
        let gt = [
            n("total_build_time_seconds", 19.84),
            n("hypervisor_spawn_time_seconds", 19.05),
            n("termination_time_seconds", 0.25),
            n("api_requests_during_lifecycle", 12.0),
        ];
        let agent = [
            n("spawn_time", 19.5), // overlap with hypervisor_spawn_time_seconds 2/2
            n("total_build_time_seconds", 19.0), // exact name, within 10% of 19.84 and of 19.05
            n("termination_seconds", 0.3), // overlap 2/2 but 0.3 > 0.275
            n("requests", 12.0),   // overlap 1/1
        ];
        let s = structured_of(&gt, &agent);
        assert_eq!(s.accuracy, 3.0 / 4.0);
        assert_eq!(
            s.details["pairs"],
            json!([
                ["total_build_time_seconds", "total_build_time_seconds"],
                ["hypervisor_spawn_time_seconds", "spawn_time"],
                ["api_requests_during_lifecycle", "requests"]
            ])
        );
    }

    #[test]
    fn exact_pass_runs_before_overlap_pass_for_every_metric() {
        // Greedy per metric would let gt0 take "b_time" by overlap; the exact pass gives it
        // to gt1 first, and gt0 then takes "a_time".
        let gt = [n("time", 10.0), n("b_time", 10.0)];
        let agent = [n("b_time", 10.0), n("a_time", 10.0)];
        let s = structured_of(&gt, &agent);
        assert_eq!(
            s.details["pairs"],
            json!([["time", "a_time"], ["b_time", "b_time"]])
        );
        assert_eq!(s.accuracy, 1.0);
    }

    #[test]
    fn overlap_ties_go_to_agent_order_and_higher_overlap_wins() {
        let gt = [n("warning_count", 19.0)];
        let tie = [n("count_x", 19.0), n("count_y", 19.0)];
        assert_eq!(
            structured_of(&gt, &tie).details["pairs"],
            json!([["warning_count", "count_x"]])
        );
        // count_x 1/2, warnings_count_total 1/2 ("warnings" ≠ "warning"), count_warning 2/2.
        let better = [
            n("count_x", 19.0),
            n("warnings_count_total", 19.0),
            n("count_warning", 19.0),
        ];
        let s = structured_of(&gt, &better);
        assert_eq!(
            s.details["pairs"],
            json!([["warning_count", "count_warning"]])
        );
        let gt = [n("warning_frequency_seconds", 30.5)];
        let agent = [n("warning_seconds_x_y", 30.0), n("warning_frequency", 30.0)];
        // 2/3 vs 2/2: the higher overlap wins although it comes later.
        let s = structured_of(&gt, &agent);
        assert_eq!(
            s.details["pairs"],
            json!([["warning_frequency_seconds", "warning_frequency"]])
        );
    }

    #[test]
    fn exact_name_with_wrong_value_stays_available() {
        let gt = [n("a_count", 5.0), n("count", 100.0)];
        let agent = [n("count", 5.0)];
        let s = structured_of(&gt, &agent);
        assert_eq!(s.details["pairs"], json!([["a_count", "count"]]));
    }

    #[test]
    fn text_ground_truth_in_structured_and_prose() {
        let gt = [t("affected_image", "0673dd71-34c5"), n("count", 19.0)];
        let s = structured_of(&gt, &[t("affected_image", "0673DD71-34C5")]);
        assert_eq!(s.accuracy, 0.5);
        let s = score(&gt, None, &Prose::new("Image 0673dd71-34C5 seen 19 times"));
        assert_eq!(s.method, Method::Freeform);
        assert_eq!(s.accuracy, 1.0);
    }

    #[test]
    fn freeform_tokens_are_whole_and_used_once() {
        // 19.05s → 19.05; 00:00:20 → 0, 0, 20; "119" is one token, not a "19" substring.
        let gt = [
            n("spawn", 19.05),
            n("build", 19.84),
            n("count", 20.0),
            n("zero", 0.0),
            n("n", 19.0),
        ];
        let s = score(
            &gt,
            None,
            &Prose::new("spawned in 19.05s at 00:00:20, 119 calls"),
        );
        // tokens 19.05, 0, 0, 20, 119. spawn ← 19.05; build ← 20 (|20 − 19.84| = 0.16 ≤ 1.984);
        // count ← nothing (20 used, 119 too far); zero ← the first 0; n ← nothing.
        assert_eq!(s.details["found_names"], json!(["spawn", "build", "zero"]));
        assert_eq!(s.accuracy, 3.0 / 5.0);
        let s = score(
            &[n("neg", -5.0)],
            None,
            &Prose::new("delta -5 and 2017-05-16"),
        );
        assert_eq!(s.accuracy, 1.0);
        let s = score(&[n("day", 16.0)], None, &Prose::new("2017-05-16"));
        assert_eq!(s.accuracy, 0.0, "the token is -16");
    }

    #[test]
    fn empty_ground_truth_is_none() {
        let s = score(&[], Some(&[n("a", 1.0)]), &Prose::new("1"));
        assert_eq!((s.method, s.accuracy), (Method::None, 0.0));
    }
}
