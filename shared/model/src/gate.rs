//! Per-item gates: one mechanism for every suite.
//!
//! A gate names a metric, a strict comparison and a threshold (a value equal to the threshold
//! passes, docs/DESIGN.md §2.2), an optional condition on the item's facts (`requires_kg: false`) and the
//! tag it adds. A metric that is null — a judge that did not run — never trips its gate.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum GateOp {
    /// Fails when the value is strictly below the threshold.
    #[serde(rename = "<")]
    Below,
    /// Fails when the value is strictly above the threshold.
    #[serde(rename = ">")]
    Above,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gate {
    pub tag: String,
    pub metric: String,
    pub op: GateOp,
    pub threshold: f64,
    /// Facts the item must have for the gate to apply, e.g. `{requires_kg: true}`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub when: BTreeMap<String, Value>,
    /// One line for `summary.md`: what a failure of this gate means.
    #[serde(default)]
    pub meaning: String,
}

impl Gate {
    /// Whether the item fails this gate. `facts` looks up the item's condition facts.
    pub fn fails(&self, value: Option<f64>, facts: &dyn Fn(&str) -> Option<Value>) -> bool {
        let applies = self
            .when
            .iter()
            .all(|(k, want)| facts(k).as_ref() == Some(want));
        match value {
            Some(v) if applies => match self.op {
                GateOp::Below => v < self.threshold,
                GateOp::Above => v > self.threshold,
            },
            _ => false,
        }
    }
}

/// The fail tags of one item, in gate order. `metric` looks up a metric value by name.
pub fn fail_tags(
    gates: &[Gate],
    metric: &dyn Fn(&str) -> Option<f64>,
    facts: &dyn Fn(&str) -> Option<Value>,
) -> Vec<String> {
    gates
        .iter()
        .filter(|g| g.fails(metric(&g.metric), facts))
        .map(|g| g.tag.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn gate(op: GateOp, threshold: f64) -> Gate {
        Gate {
            tag: "t".into(),
            metric: "m".into(),
            op,
            threshold,
            when: BTreeMap::new(),
            meaning: String::new(),
        }
    }

    #[test]
    fn comparisons_are_strict() {
        let no_facts = |_: &str| None;
        assert!(!gate(GateOp::Below, 0.5).fails(Some(0.5), &no_facts));
        assert!(gate(GateOp::Below, 0.5).fails(Some(0.4999), &no_facts));
        assert!(!gate(GateOp::Above, 0.05).fails(Some(0.05), &no_facts));
        assert!(gate(GateOp::Above, 0.05).fails(Some(0.0501), &no_facts));
    }

    #[test]
    fn null_metric_never_fails() {
        assert!(!gate(GateOp::Below, 0.7).fails(None, &|_| None));
    }

    #[test]
    fn condition_must_hold() {
        let mut g = gate(GateOp::Below, 0.8);
        g.when.insert("requires_kg".into(), json!(false));
        assert!(g.fails(Some(0.1), &|_| Some(json!(false))));
        assert!(!g.fails(Some(0.1), &|_| Some(json!(true))));
        assert!(!g.fails(Some(0.1), &|_| None));
    }

    #[test]
    fn tags_come_in_gate_order() {
        let mut a = gate(GateOp::Below, 1.0);
        a.tag = "first".into();
        let mut b = gate(GateOp::Above, 0.0);
        b.tag = "second".into();
        let tags = fail_tags(&[a, b], &|_| Some(0.5), &|_| None);
        assert_eq!(tags, vec!["first", "second"]);
    }
}
