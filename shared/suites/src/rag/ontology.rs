//! L4 ontology compliance: constraint-violation rate and type-consistency rate (docs/DESIGN.md §2.2, §9).
//!
//! Inferences are judged on their raw JSON, because the failures L4 exists to catch are exactly
//! the malformed ones: a null `insight`, a `confidence` of `"high"`, an insight type the ontology
//! does not define. The rate is (violating inferences + explicit violations) / max(1, inferences),
//! capped at 1, so a system that reports its own violations is charged for them even when it
//! emitted no inferences.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use evalfleet_model::text::norm;

/// Whether one raw inference entry violates the ontology rules:
/// - `rule_name`, `insight_type`: missing, null, not a string, or empty after trim;
/// - `insight`: missing, null, or empty (a string empty after trim, `[]` or `{}`);
/// - `insight_type` not in `allowed` (compared after lowercase + trim);
/// - `confidence`: present and not null, but not a number in [0, 1] (missing/null = 1.0).
///
/// A non-object entry lacks every field and so violates.
pub fn inference_violates(inference: &Value, allowed: &BTreeSet<String>) -> bool {
    let Some(obj) = inference.as_object() else {
        return true;
    };
    let text = |key: &str| {
        obj.get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
    };
    let Some(_rule_name) = text("rule_name") else {
        return true;
    };
    let Some(insight_type) = text("insight_type") else {
        return true;
    };
    let insight_missing = match obj.get("insight") {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.trim().is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        Some(Value::Object(o)) => o.is_empty(),
        Some(_) => false,
    };
    if insight_missing || !allowed.contains(&norm(insight_type)) {
        return true;
    }
    match obj.get("confidence") {
        None | Some(Value::Null) => false,
        Some(Value::Number(n)) => !n.as_f64().is_some_and(|c| (0.0..=1.0).contains(&c)),
        Some(_) => true,
    }
}

/// constraint_violation_rate = (violating inferences + explicit violations) / max(1, inferences),
/// capped at 1.0.
pub fn constraint_violation_rate(
    inferences: &[Value],
    explicit_violations: &[Value],
    insight_types: &[String],
) -> f64 {
    let allowed: BTreeSet<String> = insight_types.iter().map(|t| norm(t)).collect();
    let violating = inferences
        .iter()
        .filter(|i| inference_violates(i, &allowed))
        .count();
    let rate = (violating + explicit_violations.len()) as f64 / inferences.len().max(1) as f64;
    rate.min(1.0)
}

/// type_consistency_rate = agreeing / entities present in both maps, entity names and types
/// compared after lowercase + trim; 1.0 when either map is absent or they share no entity.
/// Within one map, keys that collide after normalisation keep the first in key order.
pub fn type_consistency_rate(
    gold: Option<&BTreeMap<String, String>>,
    trace: Option<&BTreeMap<String, String>>,
) -> f64 {
    let (Some(gold), Some(trace)) = (gold, trace) else {
        return 1.0;
    };
    let normalise = |m: &BTreeMap<String, String>| {
        let mut out = BTreeMap::new();
        for (entity, ty) in m {
            let entity = norm(entity);
            if !entity.is_empty() {
                out.entry(entity).or_insert_with(|| norm(ty));
            }
        }
        out
    };
    let (gold, trace) = (normalise(gold), normalise(trace));
    let mut shared = 0usize;
    let mut agreeing = 0usize;
    for (entity, gold_type) in &gold {
        if let Some(trace_type) = trace.get(entity) {
            shared += 1;
            if trace_type == gold_type {
                agreeing += 1;
            }
        }
    }
    if shared == 0 {
        1.0
    } else {
        agreeing as f64 / shared as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rag::options::DEFAULT_INSIGHT_TYPES;
    use serde_json::json;

    fn types() -> Vec<String> {
        DEFAULT_INSIGHT_TYPES
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    fn good() -> Value {
        json!({"rule_name": "r1", "insight_type": "market_share", "insight": "x", "confidence": 0.9})
    }

    fn with(key: &str, value: Value) -> Value {
        let mut v = good();
        v[key] = value;
        v
    }

    fn without(key: &str) -> Value {
        let mut v = good();
        v.as_object_mut().unwrap().remove(key);
        v
    }

    fn rate_of(inference: Value) -> f64 {
        constraint_violation_rate(&[inference], &[], &types())
    }

    #[test]
    fn a_clean_inference_does_not_violate() {
        assert_eq!(rate_of(good()), 0.0);
        assert_eq!(rate_of(with("insight_type", json!(" Market_Share "))), 0.0);
        assert_eq!(rate_of(with("insight", json!({"share": 0.05}))), 0.0);
        assert_eq!(rate_of(with("confidence", json!(0))), 0.0);
        assert_eq!(rate_of(with("confidence", json!(1.0))), 0.0);
    }

    #[test]
    fn missing_null_or_empty_required_fields_violate() {
        for key in ["rule_name", "insight_type", "insight"] {
            assert_eq!(rate_of(without(key)), 1.0, "missing {key}");
            assert_eq!(rate_of(with(key, Value::Null)), 1.0, "null {key}");
            assert_eq!(rate_of(with(key, json!("  "))), 1.0, "empty {key}");
        }
        assert_eq!(rate_of(with("rule_name", json!(7))), 1.0);
        assert_eq!(rate_of(with("insight", json!([]))), 1.0);
        assert_eq!(rate_of(json!("not an object")), 1.0);
        assert_eq!(rate_of(Value::Null), 1.0);
    }

    #[test]
    fn insight_type_outside_the_allow_list_violates() {
        assert_eq!(rate_of(with("insight_type", json!("made_up"))), 1.0);
        let custom = vec!["made_up".to_string()];
        let inf = with("insight_type", json!("made_up"));
        assert_eq!(constraint_violation_rate(&[inf], &[], &custom), 0.0);
        assert_eq!(constraint_violation_rate(&[good()], &[], &custom), 1.0);
    }

    #[test]
    fn confidence_rules() {
        assert_eq!(rate_of(without("confidence")), 0.0);
        assert_eq!(rate_of(with("confidence", Value::Null)), 0.0);
        assert_eq!(rate_of(with("confidence", json!(1.5))), 1.0);
        assert_eq!(rate_of(with("confidence", json!(-0.1))), 1.0);
        assert_eq!(rate_of(with("confidence", json!("0.9"))), 1.0);
        assert_eq!(rate_of(with("confidence", json!("high"))), 1.0);
        assert_eq!(rate_of(with("confidence", json!(true))), 1.0);
    }

    #[test]
    fn rate_counts_explicit_violations_and_caps_at_one() {
        let t = types();
        let bad = with("confidence", json!(2));
        // 1 of 4 inferences violates.
        let infs = [good(), good(), bad.clone(), good()];
        assert_eq!(constraint_violation_rate(&infs, &[], &t), 0.25);
        // + 1 explicit violation → 2 / 4.
        assert_eq!(constraint_violation_rate(&infs, &[json!("x")], &t), 0.5);
        // No inferences: explicit violations over max(1, 0) = 1, capped.
        assert_eq!(constraint_violation_rate(&[], &[], &t), 0.0);
        assert_eq!(
            constraint_violation_rate(&[], &[json!({"rule": "r"})], &t),
            1.0
        );
        assert_eq!(
            constraint_violation_rate(&[], &[json!(1), json!(2)], &t),
            1.0
        );
        assert_eq!(constraint_violation_rate(&[bad], &[json!(1)], &t), 1.0);
    }

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn type_consistency_is_over_shared_entities() {
        let gold = map(&[
            ("laneige", "Brand"),
            ("lip_care", "Category"),
            ("cosrx", "Brand"),
        ]);
        let trace = map(&[
            ("LANEIGE ", "brand"),
            ("lip_care", "Product"),
            ("tirtir", "Brand"),
        ]);
        assert_eq!(type_consistency_rate(Some(&gold), Some(&trace)), 0.5);
        assert_eq!(type_consistency_rate(Some(&gold), Some(&gold)), 1.0);
    }

    #[test]
    fn type_consistency_is_one_without_evidence() {
        let gold = map(&[("laneige", "Brand")]);
        assert_eq!(type_consistency_rate(None, Some(&gold)), 1.0);
        assert_eq!(type_consistency_rate(Some(&gold), None), 1.0);
        assert_eq!(type_consistency_rate(None, None), 1.0);
        let other = map(&[("cosrx", "Brand")]);
        assert_eq!(type_consistency_rate(Some(&gold), Some(&other)), 1.0);
        assert_eq!(type_consistency_rate(Some(&gold), Some(&map(&[]))), 1.0);
    }
}
