//! Canonical strings for constraint and KG-edge objects.
//!
//! Datasets and systems write a constraint either as a string or as an object, and an edge either
//! as a string or as a triple object. Set metrics compare strings, so every object is rendered
//! once, at load time, to the one text docs/DESIGN.md §9 fixes: `field operator value` for constraints
//! (`rating >= 4.5`, `brand == laneige`, a number keeping its JSON text: `4.0` stays `4.0`) and
//! `subject -predicate-> object` for edges (the seed's edge-string notation).

use serde_json::Value;

/// Renders a constraint entry: a string as given, an object `{field, operator, value}` as
/// `field operator value` (single spaces, parts trimmed; a string value without quotes, any other
/// value as its compact JSON text). `None` when the entry has neither shape.
/// Keys other than the three are ignored.
pub fn render_constraint(entry: &Value) -> Option<String> {
    match entry {
        Value::String(s) => Some(s.clone()),
        Value::Object(obj) => {
            let field = obj.get("field")?.as_str()?;
            let operator = obj.get("operator")?.as_str()?;
            let value = json_text(obj.get("value")?);
            Some(format!(
                "{} {} {}",
                field.trim(),
                operator.trim(),
                value.trim()
            ))
        }
        _ => None,
    }
}

/// Renders an edge entry: a string as given, an object `{subject, predicate, object}` (all three
/// strings, parts trimmed) as `subject -predicate-> object`. `None` when the entry has neither shape.
pub fn render_edge(entry: &Value) -> Option<String> {
    match entry {
        Value::String(s) => Some(s.clone()),
        Value::Object(obj) => {
            let part = |key: &str| obj.get(key).and_then(Value::as_str).map(str::trim);
            Some(format!(
                "{} -{}-> {}",
                part("subject")?,
                part("predicate")?,
                part("object")?
            ))
        }
        _ => None,
    }
}

/// A JSON value's text without quotes for a string: numbers keep serde_json's rendering of the
/// parsed number (`4.0` → `4.0`, `4.5` → `4.5`, `10` → `10`).
fn json_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parsed(text: &str) -> Value {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn constraint_objects_render_as_field_operator_value() {
        let c = parsed(r#"{"field": "rating", "operator": ">=", "value": 4.5}"#);
        assert_eq!(render_constraint(&c).as_deref(), Some("rating >= 4.5"));
        let c = parsed(r#"{"field": "brand", "operator": "==", "value": "laneige"}"#);
        assert_eq!(render_constraint(&c).as_deref(), Some("brand == laneige"));
        let c = parsed(r#"{"field": "period", "operator": "=", "value": "last_3_months"}"#);
        assert_eq!(
            render_constraint(&c).as_deref(),
            Some("period = last_3_months")
        );
    }

    #[test]
    fn a_number_keeps_its_json_text() {
        let c = parsed(r#"{"field": "rating", "operator": ">=", "value": 4.0}"#);
        assert_eq!(render_constraint(&c).as_deref(), Some("rating >= 4.0"));
        let c = parsed(r#"{"field": "rank", "operator": "<=", "value": 10}"#);
        assert_eq!(render_constraint(&c).as_deref(), Some("rank <= 10"));
        let c = parsed(r#"{"field": "delta", "operator": "<", "value": -0.25}"#);
        assert_eq!(render_constraint(&c).as_deref(), Some("delta < -0.25"));
    }

    #[test]
    fn other_values_render_as_json_and_spaces_are_single() {
        let c = json!({"field": " in_stock ", "operator": " = ", "value": true, "note": "x"});
        assert_eq!(render_constraint(&c).as_deref(), Some("in_stock = true"));
        let c = json!({"operator": "in", "field": "brand", "value": ["a", "b"]});
        assert_eq!(
            render_constraint(&c).as_deref(),
            Some(r#"brand in ["a","b"]"#)
        );
        let c = json!({"field": "x", "operator": "=", "value": null});
        assert_eq!(render_constraint(&c).as_deref(), Some("x = null"));
    }

    #[test]
    fn strings_pass_through_and_bad_shapes_are_rejected() {
        assert_eq!(
            render_constraint(&json!("price < 30")).as_deref(),
            Some("price < 30")
        );
        assert_eq!(
            render_constraint(&json!({"field": "x", "operator": "="})),
            None
        );
        assert_eq!(
            render_constraint(&json!({"field": 1, "operator": "=", "value": 1})),
            None
        );
        assert_eq!(render_constraint(&json!(3)), None);
        assert_eq!(render_constraint(&Value::Null), None);
    }

    #[test]
    fn edges_render_in_the_seed_notation() {
        let e = json!({"subject": "laneige", "predicate": "hasProduct", "object": "B08XYZ"});
        assert_eq!(
            render_edge(&e).as_deref(),
            Some("laneige -hasProduct-> B08XYZ")
        );
        let e = json!("laneige -competesWith-> cosrx");
        assert_eq!(
            render_edge(&e).as_deref(),
            Some("laneige -competesWith-> cosrx")
        );
        assert_eq!(
            render_edge(&json!({"subject": "a", "predicate": "p"})),
            None
        );
        assert_eq!(render_edge(&json!(["a", "p", "b"])), None);
    }
}
