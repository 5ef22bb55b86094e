//! The suite file as written: every field optional, so one type reads both the complete
//! built-in files and a user's short file that `extends` one of them.

use serde::Deserialize;

use std::collections::BTreeMap;
use std::sync::Arc;

use evalfleet_model::suite::{CompareOptions, Dimension, Grouping, RunGates, SuiteKind};

use super::Suite;
use crate::custom::{CheckSpec, CustomSpec, CustomSuite, JudgeSpec, RecordSpec};
use crate::rag::RagOptions;
use evalfleet_config::Target;
use evalfleet_model::gate::{Gate, GateOp};

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
    /// `evalfleet compare`'s per-name `max_drop` overrides and lower-is-better metrics.
    pub compare: Option<CompareOptions>,
    pub rag: Option<RagOptions>,
    /// Custom suites: the records' fields, the judge's prompts, the deterministic checks.
    pub record: Option<RecordSpec>,
    pub judge: Option<JudgeSpec>,
    pub checks: Option<Vec<CheckSpec>>,
    /// The system under test, when the suite names one (`--target` overrides it).
    pub target: Option<Target>,
    /// Built-in suites: dimension → the record field holding people's scores of it (a custom
    /// suite writes `human:` on the dimension instead).
    pub human_labels: Option<BTreeMap<String, String>>,
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
        let own_dimensions = self.dimensions.is_some();
        let dimensions = self
            .dimensions
            .or_else(|| base.as_ref().map(|b| b.dimensions.clone()));
        let group_by = self
            .group_by
            .or_else(|| base.as_ref().map(|b| b.group_by.clone()));
        let run_gates = self
            .run_gates
            .or_else(|| base.as_ref().map(|b| b.run_gates.clone()));
        let compare = self
            .compare
            .or_else(|| base.as_ref().map(|b| b.compare.clone()))
            .unwrap_or_default();
        let rag = self
            .rag
            .or_else(|| base.as_ref().map(|b| b.rag.clone()))
            .unwrap_or_default();
        let target = match self.target {
            Some(target) => {
                target.check().map_err(|e| format!("target: {e}"))?;
                Some(target)
            }
            None => base.as_ref().and_then(|b| b.target.clone()),
        };
        let inherited_labels = base
            .as_ref()
            .map(|b| b.human_labels.clone())
            .unwrap_or_default();
        let inherited_custom = base.as_ref().and_then(|b| b.custom.clone());
        let inherited = base.map(|b| b.gates).unwrap_or_default();
        let gates = merge_gates(inherited, self.gates.unwrap_or_default())?;
        if kind == SuiteKind::Custom {
            if own_dimensions {
                return Err("'dimensions' is for built-in suites: a custom suite lists its dimensions under judge.dimensions".to_owned());
            }
            if self.human_labels.is_some() {
                return Err("'human_labels' is for built-in suites: a custom suite names the column on its dimension, as judge.dimensions[].human".to_owned());
            }
            let custom = custom_suite(
                inherited_custom.as_ref().map(|c| c.spec()),
                self.record,
                self.judge,
                self.checks,
            )?;
            let names: Vec<&str> = custom.metric_names().collect();
            if let Some(g) = gates.iter().find(|g| !names.contains(&g.metric.as_str())) {
                return Err(format!(
                    "gate '{}': metric '{}' is neither a judge dimension nor a check of this suite (it has: {})",
                    g.tag,
                    g.metric,
                    names.join(", ")
                ));
            }
            return finish(Suite {
                name,
                kind,
                description: description.unwrap_or_default(),
                dimensions: custom.dimensions()?,
                gates,
                group_by: group_by.unwrap_or_default(),
                run_gates: run_gates.unwrap_or_default(),
                compare,
                rag,
                human_labels: custom.human_labels(),
                custom: Some(Arc::new(custom)),
                target,
            });
        }
        for key in ["record", "judge", "checks"] {
            let given = match key {
                "record" => self.record.is_some(),
                "judge" => self.judge.is_some(),
                _ => self.checks.is_some(),
            };
            if given {
                return Err(format!(
                    "'{key}' is for custom suites ('kind: custom'), not for {}",
                    kind.name()
                ));
            }
        }
        let dimensions = dimensions.ok_or_else(|| missing("dimensions"))?;
        for d in &dimensions {
            if d.min >= d.max {
                return Err(format!(
                    "dimension '{}': min {} must be below max {}",
                    d.name, d.min, d.max
                ));
            }
        }
        let human_labels = human_labels(&dimensions, inherited_labels, self.human_labels)?;
        finish(Suite {
            name,
            kind,
            description: description.unwrap_or_default(),
            human_labels,
            dimensions,
            gates,
            group_by: group_by.ok_or_else(|| missing("group_by"))?,
            run_gates: run_gates.unwrap_or_default(),
            compare,
            rag,
            custom: None,
            target,
        })
    }
}

/// The checks every kind of suite shares.
fn finish(suite: Suite) -> Result<Suite, String> {
    let rg = &suite.run_gates;
    if !(0.0..=1.0).contains(&rg.min_pass_rate) {
        return Err(format!(
            "run_gates.min_pass_rate {} is not in [0, 1]",
            rg.min_pass_rate
        ));
    }
    if !(0.0..=1.0).contains(&rg.max_unscored_rate) {
        return Err(format!(
            "run_gates.max_unscored_rate {} is not in [0, 1]",
            rg.max_unscored_rate
        ));
    }
    if let Some((name, d)) = suite
        .compare
        .max_drop
        .iter()
        .find(|(_, d)| !d.is_finite() || **d < 0.0)
    {
        return Err(format!(
            "compare.max_drop.{name} is {d}: it must be a number ≥ 0"
        ));
    }
    if let Some(k) = rg.min_human_kappa {
        if !(-1.0..=1.0).contains(&k) {
            return Err(format!("run_gates.min_human_kappa {k} is not in [-1, 1]"));
        }
        if suite.human_labels.is_empty() {
            return Err("run_gates.min_human_kappa needs a dimension with human labels: 'human_labels: {dimension: field}' (or 'human: FIELD' on a custom suite's dimension)".to_owned());
        }
    }
    if let Some(w) = rg.min_win_rate {
        if !(0.0..=1.0).contains(&w) {
            return Err(format!("run_gates.min_win_rate {w} is not in [0, 1]"));
        }
        let pairwise = suite
            .custom
            .as_deref()
            .is_some_and(|c| c.pairwise_dimensions().next().is_some());
        if !pairwise {
            return Err("run_gates.min_win_rate needs a pairwise dimension: 'pairwise: {against: FIELD}' on a custom suite's judge dimension".to_owned());
        }
    }
    if suite.rag.top_k == 0 {
        return Err("rag.top_k must be at least 1".to_owned());
    }
    Ok(suite)
}

/// A built-in suite's human labels: the parent's, for the dimensions the suite still has,
/// with the file's own `human_labels` over them; each must name a dimension and a field.
fn human_labels(
    dimensions: &[Dimension],
    inherited: BTreeMap<String, String>,
    own: Option<BTreeMap<String, String>>,
) -> Result<BTreeMap<String, String>, String> {
    let is_dim = |name: &str| dimensions.iter().any(|d| d.name == name);
    let mut labels: BTreeMap<String, String> =
        inherited.into_iter().filter(|(d, _)| is_dim(d)).collect();
    for (dim, field) in own.unwrap_or_default() {
        if !is_dim(&dim) {
            let names: Vec<&str> = dimensions.iter().map(|d| d.name.as_str()).collect();
            return Err(format!(
                "human_labels: '{dim}' is not a judge dimension of this suite (it has: {})",
                if names.is_empty() {
                    "none".to_owned()
                } else {
                    names.join(", ")
                }
            ));
        }
        if field.trim().is_empty() || field.split('.').any(|s| s.trim().is_empty()) {
            return Err(format!("human_labels.{dim}: '{field}' is not a field name"));
        }
        labels.insert(dim, field);
    }
    Ok(labels)
}

/// A custom suite from its own sections and, when it extends another custom suite, the
/// parent's: `record` and `judge` replace the parent's, checks merge by name.
fn custom_suite(
    parent: Option<&CustomSpec>,
    record: Option<RecordSpec>,
    judge: Option<JudgeSpec>,
    checks: Option<Vec<CheckSpec>>,
) -> Result<CustomSuite, String> {
    let record = record
        .or_else(|| parent.map(|p| p.record.clone()))
        .ok_or("'record' is required for a custom suite: it declares the fields of a record")?;
    let judge = judge
        .or_else(|| parent.map(|p| p.judge.clone()))
        .unwrap_or_default();
    let mut merged: Vec<CheckSpec> = parent.map(|p| p.checks.clone()).unwrap_or_default();
    for c in checks.unwrap_or_default() {
        match merged.iter_mut().find(|m| m.name == c.name) {
            Some(m) => *m = c,
            None => merged.push(c),
        }
    }
    CustomSuite::compile(CustomSpec {
        record,
        judge,
        checks: merged,
    })
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
