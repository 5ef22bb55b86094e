//! The `log-analysis` suite (seed 002, docs/DESIGN.md §2.3 and §9): scores an agent's explanation of a
//! log excerpt against the scenario's ground truth.
//!
//! Agents are asked for a structured JSON analysis but many answer in prose, so every metric
//! group is scored from the structured object when it carries that group's key and from the
//! text otherwise, and the record says which (`method_used`) so a report never mixes the two
//! silently. Layout: `scenario` (ground truth), `example` (dataset records), `parse` + `schema`
//! (finding and validating the structured output), one module per metric group, and
//! [`evaluate`] here, which assembles the eleven metrics in their fixed order.

mod anomalies;
mod compliance;
mod events;
mod example;
mod metrics_match;
mod parse;
mod prose;
mod scenario;
mod scenario_ref;
mod schema;
mod timeline;
mod timestamps;

#[cfg(test)]
mod fixture_tests;

use serde::Serialize;
use serde_json::{json, Value};

pub use example::{parse_completed, parse_example, resolve_scenario, LogExample, ScenarioCache};
pub use parse::parse_structured_output;
pub use scenario::{GtAnomaly, GtEvent, GtIntent, GtTimelineEntry, MetricValue, Scenario};
pub use scenario_ref::{canonical_json, load_stored, ScenarioRef};
pub use schema::{
    AgentAnomaly, AgentEvent, AgentTimelineEntry, ComplianceStatus, Confidence, ParsedOutput,
};

/// The log-analysis metric names, in record order (docs/DESIGN.md §2.4).
pub const METRIC_NAMES: [&str; 11] = [
    "event_accuracy",
    "event_precision",
    "event_f1",
    "event_weighted_recall",
    "event_partial_credit",
    "timeline_accuracy",
    "timeline_lis_fraction",
    "metrics_accuracy",
    "anomaly_detection_rate",
    "compliance_accuracy",
    "comprehensiveness",
];

/// How one metric group was scored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// From the parsed object, which has this group's key.
    Structured,
    /// From the text: no parsed object, or it lacks this group's key.
    Freeform,
    /// The ground truth for this group is empty.
    None,
}

/// The record's `method_used`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct MethodUsed {
    pub events: Method,
    pub timeline: Method,
    pub metrics: Method,
    pub anomalies: Method,
    pub compliance: Method,
}

/// Everything one example's evaluation produces.
#[derive(Debug, Clone, PartialEq)]
pub struct LogEvaluation {
    /// Exactly [`METRIC_NAMES`], in that order; `None` = null (a freeform-only gap, or no
    /// compliance intents).
    pub metrics: Vec<(&'static str, Option<f64>)>,
    pub method_used: MethodUsed,
    /// Schema errors of the parsed object (its invalid entries were dropped).
    pub parse_errors: Vec<String>,
    /// Counts that explain the numbers, per group.
    pub details: Value,
}

impl LogEvaluation {
    /// The value of metric `name` (`None` when null or not a log-analysis metric).
    pub fn metric(&self, name: &str) -> Option<f64> {
        self.metrics
            .iter()
            .find(|(n, _)| *n == name)
            .and_then(|(_, v)| *v)
    }

    /// The metrics as the record's `metrics` object (nulls kept, order kept).
    pub fn metrics_json(&self) -> serde_json::Map<String, Value> {
        self.metrics
            .iter()
            .map(|(n, v)| (n.to_string(), v.map_or(Value::Null, Value::from)))
            .collect()
    }
}

/// Scores one agent output against a scenario.
pub fn evaluate(scenario: &Scenario, output: &str) -> LogEvaluation {
    let parsed = parse_structured_output(output);
    let p = parsed.as_ref();
    let text = prose::Prose::new(output);

    let ev = events::score(
        &scenario.key_events,
        p.and_then(|p| p.events_detected.as_deref()),
        &text,
    );
    let tl = timeline::score(
        &scenario.timeline,
        p.and_then(|p| p.timeline.as_deref()),
        &text,
    );
    let me = metrics_match::score(
        &scenario.metrics,
        p.and_then(|p| p.metrics.as_deref()),
        &text,
    );
    let an = anomalies::score(
        &scenario.anomalies,
        p.and_then(|p| p.anomalies.as_deref()),
        &text,
    );
    let co = compliance::score(
        &scenario.compliance_evaluation,
        p.and_then(|p| p.compliance_status),
        &text,
    );
    let comprehensiveness =
        0.3 * ev.accuracy + 0.2 * tl.accuracy + 0.2 * me.accuracy + 0.3 * an.rate;

    let values = [
        Some(ev.accuracy),
        ev.precision,
        ev.f1,
        ev.weighted_recall,
        ev.partial_credit,
        Some(tl.accuracy),
        tl.lis_fraction,
        Some(me.accuracy),
        Some(an.rate),
        co.accuracy,
        Some(comprehensiveness),
    ];
    LogEvaluation {
        metrics: METRIC_NAMES.into_iter().zip(values).collect(),
        method_used: MethodUsed {
            events: ev.method,
            timeline: tl.method,
            metrics: me.method,
            anomalies: an.method,
            compliance: co.method,
        },
        parse_errors: parsed
            .as_ref()
            .map(|p| p.errors.clone())
            .unwrap_or_default(),
        details: json!({
            "structured_output": parsed.is_some(),
            "events": ev.details,
            "timeline": tl.details,
            "metrics": me.details,
            "anomalies": an.details,
            "compliance": co.details,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(v: Value) -> Scenario {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn empty_scenario_is_none_everywhere_with_anomalies_one() {
        let e = evaluate(
            &Scenario::default(),
            "```json\n{\"events_detected\": []}\n```",
        );
        let all_none = MethodUsed {
            events: Method::None,
            timeline: Method::None,
            metrics: Method::None,
            anomalies: Method::None,
            compliance: Method::None,
        };
        assert_eq!(e.method_used, all_none);
        let want: Vec<(&str, Option<f64>)> = vec![
            ("event_accuracy", Some(0.0)),
            ("event_precision", Some(0.0)),
            ("event_f1", Some(0.0)),
            ("event_weighted_recall", Some(0.0)),
            ("event_partial_credit", Some(0.0)),
            ("timeline_accuracy", Some(0.0)),
            ("timeline_lis_fraction", Some(0.0)),
            ("metrics_accuracy", Some(0.0)),
            ("anomaly_detection_rate", Some(1.0)),
            ("compliance_accuracy", None),
            ("comprehensiveness", Some(0.3)),
        ];
        assert_eq!(e.metrics, want);
        assert_eq!(e.details["structured_output"], true);
    }

    #[test]
    fn method_is_chosen_per_group_from_the_keys_present() {
        let s = scenario(json!({
            "key_events": [{"event_type": "vm_started"}],
            "timeline": [{"event": "Network VIF plugged"}, {"event": "Instance destroyed"}],
            "metrics": {"m": 5},
            "anomalies": [{"type": "slow_start", "description": "unusually slow startup"}],
            "compliance_evaluation": {"i": {"status": "DEGRADED"}}
        }));
        // The object carries timeline and a bad compliance_status; everything else is prose.
        let out = "The vm started, then the VM paused. It took 5 seconds: a slow start problem, \
                   the system is degraded.\n{\"timeline\": [{\"event\": \"instance destroyed\"}, \
                   {\"event\": \"network vif plugged\"}], \"compliance_status\": \"bad\"}";
        let e = evaluate(&s, out);
        assert_eq!(e.method_used.events, Method::Freeform);
        assert_eq!(e.method_used.timeline, Method::Structured);
        assert_eq!(e.method_used.metrics, Method::Freeform);
        assert_eq!(e.method_used.anomalies, Method::Freeform);
        assert_eq!(e.method_used.compliance, Method::Freeform);
        // events: "vm started" is the only indicator (no id, no description) → not found.
        assert_eq!(e.metric("event_accuracy"), Some(0.0));
        assert_eq!(e.metric("event_precision"), None);
        // timeline: agent order [1, 0] → out of order; LIS 1 of 2.
        assert_eq!(e.metric("timeline_accuracy"), Some(0.0));
        assert_eq!(e.metric("timeline_lis_fraction"), Some(0.5));
        assert_eq!(e.metric("metrics_accuracy"), Some(1.0));
        // anomaly: "slow" (type word) + "problem" (generic) → detected.
        assert_eq!(e.metric("anomaly_detection_rate"), Some(1.0));
        assert_eq!(e.metric("compliance_accuracy"), Some(1.0));
        // 0.3·0 + 0.2·0 + 0.2·1 + 0.3·1
        assert!((e.metric("comprehensiveness").unwrap() - 0.5).abs() < 1e-12);
        assert_eq!(
            e.parse_errors,
            ["compliance_status: 'bad' is not COMPLIANT, DEGRADED or NON_COMPLIANT"]
        );
    }

    #[test]
    fn no_structured_output_means_freeform_and_no_parse_errors() {
        let s = scenario(json!({"key_events": [{"event_type": "a_b"}], "metrics": {"x": 1}}));
        let e = evaluate(&s, "");
        assert_eq!(e.method_used.events, Method::Freeform);
        assert_eq!(e.method_used.metrics, Method::Freeform);
        assert!(e.parse_errors.is_empty());
        assert_eq!(e.details["structured_output"], false);
        assert_eq!(e.metric("comprehensiveness"), Some(0.3));
    }

    #[test]
    fn metrics_json_keeps_order_and_nulls() {
        let e = evaluate(&Scenario::default(), "");
        let m = e.metrics_json();
        assert_eq!(m.keys().cloned().collect::<Vec<_>>(), METRIC_NAMES);
        assert_eq!(m["compliance_accuracy"], Value::Null);
        assert_eq!(m["anomaly_detection_rate"], json!(1.0));
        assert_eq!(
            serde_json::to_value(e.method_used).unwrap(),
            json!({"events": "none", "timeline": "none", "metrics": "none",
                   "anomalies": "none", "compliance": "none"})
        );
        assert_eq!(e.metric("not_a_metric"), None);
    }
}
