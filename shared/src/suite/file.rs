//! The suite file as written: every field optional, so one type reads both the complete
//! built-in files and a user's short file that `extends` one of them.

use serde::Deserialize;

use super::{Dimension, Grouping, RunGates, Suite, SuiteKind};
use crate::gate::{Gate, GateOp};
use crate::rag::RagOptions;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteFile {
    pub name: Option<String>,
    /// A built-in suite this one starts from.
    pub extends: Option<String>,
    /// The suite's kind when it extends nothing (a complete suite).
    pub kind: Option<SuiteKind>,
    pub description: Option<String>,
    pub dimensions: Option<Vec<Dimension>>,
    pub gates: Option<Vec<GatePatch>>,
    pub group_by: Option<Vec<Grouping>>,
    pub run_gates: Option<RunGates>,
    pub rag: Option<RagOptions>,
}

/// A gate as a suite file gives it: a new gate needs metric, op and threshold; naming an
/// inherited tag changes only the fields given, and `enabled: false` removes it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatePatch {
    pub tag: String,
    pub metric: Option<String>,
    pub op: Option<GateOp>,
    pub threshold: Option<f64>,
    pub when: Option<std::collections::BTreeMap<String, serde_json::Value>>,
    pub meaning: Option<String>,
    #[serde(default = "yes")]
    pub enabled: bool,
}

fn yes() -> bool {
    true
}

impl SuiteFile {
    pub(super) fn into_suite(self, base: Option<Suite>, origin: &str) -> Result<Suite, String> {
        let kind = match (&base, self.kind) {
            (Some(b), Some(k)) if b.kind != k => {
                return Err(format!(
                    "'kind: {}' contradicts 'extends: {}'",
                    k.name(),
                    b.kind.name()
                ))
            }
            (Some(b), _) => b.kind,
            (None, Some(k)) => k,
            (None, None) => return Err("needs 'extends: <built-in suite>' or 'kind'".to_owned()),
        };
        let missing = |field: &str| format!("'{field}' is required when the suite extends nothing");
        let name = self
            .name
            .or_else(|| base.as_ref().map(|b| b.name.clone()))
            .unwrap_or_else(|| origin.to_owned());
        let description = self
            .description
            .or_else(|| base.as_ref().map(|b| b.description.clone()));
        let dimensions = self
            .dimensions
            .or_else(|| base.as_ref().map(|b| b.dimensions.clone()));
        let group_by = self
            .group_by
            .or_else(|| base.as_ref().map(|b| b.group_by.clone()));
        let run_gates = self
            .run_gates
            .or_else(|| base.as_ref().map(|b| b.run_gates.clone()));
        let rag = self
            .rag
            .or_else(|| base.as_ref().map(|b| b.rag.clone()))
            .unwrap_or_default();
        let inherited = base.map(|b| b.gates).unwrap_or_default();
        let gates = merge_gates(inherited, self.gates.unwrap_or_default())?;
        let dimensions = dimensions.ok_or_else(|| missing("dimensions"))?;
        for d in &dimensions {
            if d.min >= d.max {
                return Err(format!(
                    "dimension '{}': min {} must be below max {}",
                    d.name, d.min, d.max
                ));
            }
        }
        let run_gates = run_gates.unwrap_or_default();
        if !(0.0..=1.0).contains(&run_gates.min_pass_rate) {
            return Err(format!(
                "run_gates.min_pass_rate {} is not in [0, 1]",
                run_gates.min_pass_rate
            ));
        }
        if rag.top_k == 0 {
            return Err("rag.top_k must be at least 1".to_owned());
        }
        Ok(Suite {
            name,
            kind,
            description: description.unwrap_or_default(),
            dimensions,
            gates,
            group_by: group_by.ok_or_else(|| missing("group_by"))?,
            run_gates,
            rag,
        })
    }
}

fn merge_gates(mut gates: Vec<Gate>, patches: Vec<GatePatch>) -> Result<Vec<Gate>, String> {
    for patch in patches {
        match gates.iter().position(|g| g.tag == patch.tag) {
            Some(i) if !patch.enabled => {
                gates.remove(i);
            }
            Some(i) => {
                let g = &mut gates[i];
                if let Some(m) = patch.metric {
                    g.metric = m;
                }
                if let Some(op) = patch.op {
                    g.op = op;
                }
                if let Some(t) = patch.threshold {
                    g.threshold = t;
                }
                if let Some(w) = patch.when {
                    g.when = w;
                }
                if let Some(m) = patch.meaning {
                    g.meaning = m;
                }
            }
            None if !patch.enabled => {}
            None => {
                let need = |what: &str| format!("gate '{}' is new and needs '{what}'", patch.tag);
                gates.push(Gate {
                    metric: patch.metric.ok_or_else(|| need("metric"))?,
                    op: patch.op.ok_or_else(|| need("op"))?,
                    threshold: patch.threshold.ok_or_else(|| need("threshold"))?,
                    when: patch.when.unwrap_or_default(),
                    meaning: patch.meaning.unwrap_or_default(),
                    tag: patch.tag,
                });
            }
        }
    }
    Ok(gates)
}
