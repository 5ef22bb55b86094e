//! The validated shape of one `rag-layers` dataset record (docs/DESIGN.md §2.2).
//!
//! These types hold data that has already passed [`super::parse_example`]: constraint and edge
//! objects are canonicalised to strings, so metrics never see the many JSON shapes a dataset may
//! use. Only the inference and explicit-violation entries stay raw JSON, because L4 must judge
//! exactly what the system emitted (nulls, wrong types and all).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One dataset record: the question, its gold evidence, grouping metadata and the system's trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RagExample {
    pub id: String,
    pub question: String,
    pub gold: Gold,
    pub metadata: Metadata,
    /// `None` when the record carries no trace; metrics then evaluate an empty trace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<Trace>,
    /// People's scores of the judge dimensions, when the suite names a column of them.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub human: crate::evaluate::HumanLabels,
}

/// Gold evidence; lists are sets (order and repeats are irrelevant to every metric).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Gold {
    /// `None` = absent (L5 then scores 1.0 and marks `gold_absent`); `Some("")` is a real answer.
    pub answer: Option<String>,
    pub doc_chunk_ids: Vec<String>,
    pub kg_entities: Vec<String>,
    /// Edge strings `subject -predicate-> object` (objects already rendered).
    pub kg_edges: Vec<String>,
    pub concepts: Vec<String>,
    /// Constraint strings; objects already rendered as `field operator value`.
    pub constraints: Vec<String>,
    /// `{entity: type}` for the L4 type-consistency rate.
    pub entity_types: Option<BTreeMap<String, String>>,
}

/// Grouping metadata; fields other than the three named ones are kept in `extra`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metadata {
    /// Selects the L2/L3 formula and gates (default `true`).
    pub requires_kg: bool,
    pub domain: Option<String>,
    pub difficulty: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Default for Metadata {
    fn default() -> Self {
        Metadata {
            requires_kg: true,
            domain: None,
            difficulty: None,
            extra: Map::new(),
        }
    }
}

/// The system's recorded output for one question. `Trace::default()` is "returned nothing".
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Trace {
    pub entities: Vec<String>,
    pub concepts: Vec<String>,
    /// Applied rules, compared with `gold.constraints` (objects rendered the same way).
    pub applied_rules: Vec<String>,
    /// Ranked; may contain repeats (de-duplicated before L2).
    pub retrieved_chunk_ids: Vec<String>,
    /// Ranked; may contain repeats (de-duplicated before hits@k).
    pub kg_entities: Vec<String>,
    /// Edge strings `subject -predicate-> object` (objects already rendered).
    pub kg_edges: Vec<String>,
    /// Raw inference entries `{rule_name, insight_type, insight, confidence}`.
    pub inferences: Vec<Value>,
    /// Raw explicit violations; each entry counts as one violation.
    pub constraint_violations: Vec<Value>,
    /// `None` = the system gave no answer (scored as "").
    pub answer: Option<String>,
    pub context: Option<String>,
    pub latency_ms: Option<f64>,
    pub usage: Option<Usage>,
    /// `{entity: type}` for the L4 type-consistency rate.
    pub entity_types: Option<BTreeMap<String, String>>,
}

/// Token usage and cost the system reported for producing the trace.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_defaults_to_requires_kg() {
        let m = Metadata::default();
        assert!(m.requires_kg);
        assert_eq!(m.domain, None);
        assert!(m.extra.is_empty());
    }

    #[test]
    fn metadata_extra_is_flattened_when_serialised() {
        let mut m = Metadata {
            domain: Some("brand".into()),
            ..Metadata::default()
        };
        m.extra.insert("source".into(), Value::from("v2"));
        let v = serde_json::to_value(&m).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"requires_kg": true, "domain": "brand", "difficulty": null, "source": "v2"})
        );
    }
}
