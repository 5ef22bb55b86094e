//! Validation of one `rag-layers` record: raw JSON in, [`RagExample`] or one stable reason out.
//!
//! The reasons follow the support-judge style of docs/DESIGN.md §2.1 (`Missing 'id' field`,
//! `'id' must be a string`, `'id' is empty`) and name the dotted field path, so a user can fix a
//! 10^6-line dataset from the skipped list alone. Only the first problem is reported, checked in
//! the order id, question, gold, metadata, trace (and within each object in field order).
//!
//! Besides `id` and `question`, every field is optional and `null` means absent: a missing or
//! null `gold`/`metadata`/`trace` is the empty default, a null list is an empty list, a null
//! `requires_kg` is the default `true`. Present values must have the right type. Unknown fields
//! are ignored (the seed's `gold.expected_values`), except in `metadata`, where they are kept.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::canon::{render_constraint, render_edge};
use super::example::{Gold, Metadata, RagExample, Trace, Usage};
use evalfleet_model::field::{required_string, Blank};

type Obj = Map<String, Value>;

/// Validate one dataset record. `Err(reason)` names the first offending field. A missing `gold`
/// is an empty gold (all lists empty, answer absent). Duplicate ids are not checked here.
pub fn parse_example(value: &Value) -> Result<RagExample, String> {
    let obj = value.as_object().ok_or("Item is not an object")?;
    let id = required_string(obj, "id", Blank::Rejected)?.to_owned();
    let question = required_string(obj, "question", Blank::Rejected)?.to_owned();
    let gold = match object(obj, "", "gold")? {
        Some(g) => parse_gold(g)?,
        None => Gold::default(),
    };
    let metadata = match object(obj, "", "metadata")? {
        Some(m) => parse_metadata(m)?,
        None => Metadata::default(),
    };
    let trace = match object(obj, "", "trace")? {
        Some(t) => Some(parse_trace(t)?),
        None => None,
    };
    Ok(RagExample {
        id,
        question,
        gold,
        metadata,
        trace,
        human: Default::default(),
    })
}

fn parse_gold(g: &Obj) -> Result<Gold, String> {
    const P: &str = "gold.";
    Ok(Gold {
        answer: optional_string(g, P, "answer")?,
        doc_chunk_ids: strings(g, P, "doc_chunk_ids")?,
        kg_entities: strings(g, P, "kg_entities")?,
        kg_edges: edges(g, P, "kg_edges")?,
        concepts: strings(g, P, "concepts")?,
        constraints: constraints(g, P, "constraints")?,
        entity_types: type_map(g, P, "entity_types")?,
    })
}

fn parse_metadata(m: &Obj) -> Result<Metadata, String> {
    const P: &str = "metadata.";
    let requires_kg = match present(m, "requires_kg") {
        None => true,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(format!("'{P}requires_kg' must be a boolean")),
    };
    let domain = optional_string(m, P, "domain")?;
    let difficulty = optional_string(m, P, "difficulty")?;
    let extra = m
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "requires_kg" | "domain" | "difficulty"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Ok(Metadata {
        requires_kg,
        domain,
        difficulty,
        extra,
    })
}

fn parse_trace(t: &Obj) -> Result<Trace, String> {
    const P: &str = "trace.";
    Ok(Trace {
        entities: strings(t, P, "entities")?,
        concepts: strings(t, P, "concepts")?,
        applied_rules: constraints(t, P, "applied_rules")?,
        retrieved_chunk_ids: strings(t, P, "retrieved_chunk_ids")?,
        kg_entities: strings(t, P, "kg_entities")?,
        kg_edges: edges(t, P, "kg_edges")?,
        inferences: raw_list(t, P, "inferences")?,
        constraint_violations: raw_list(t, P, "constraint_violations")?,
        answer: optional_string(t, P, "answer")?,
        context: optional_string(t, P, "context")?,
        latency_ms: non_negative_number(t, P, "latency_ms")?,
        usage: match object(t, P, "usage")? {
            Some(u) => Some(parse_usage(u)?),
            None => None,
        },
        entity_types: type_map(t, P, "entity_types")?,
    })
}

fn parse_usage(u: &Obj) -> Result<Usage, String> {
    const P: &str = "trace.usage.";
    Ok(Usage {
        input_tokens: token_count(u, P, "input_tokens")?,
        output_tokens: token_count(u, P, "output_tokens")?,
        cost_usd: non_negative_number(u, P, "cost_usd")?,
    })
}

/// The value under `key` unless it is missing or `null`.
fn present<'a>(obj: &'a Obj, key: &str) -> Option<&'a Value> {
    obj.get(key).filter(|v| !v.is_null())
}

fn object<'a>(obj: &'a Obj, prefix: &str, key: &str) -> Result<Option<&'a Obj>, String> {
    match present(obj, key) {
        None => Ok(None),
        Some(Value::Object(o)) => Ok(Some(o)),
        Some(_) => Err(format!("'{prefix}{key}' must be an object")),
    }
}

fn optional_string(obj: &Obj, prefix: &str, key: &str) -> Result<Option<String>, String> {
    match present(obj, key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("'{prefix}{key}' must be a string")),
    }
}

/// A list whose entries are all rendered by `render`; `expected` completes the error message.
fn rendered_list(
    obj: &Obj,
    prefix: &str,
    key: &str,
    expected: &str,
    render: impl Fn(&Value) -> Option<String>,
) -> Result<Vec<String>, String> {
    let err = || format!("'{prefix}{key}' must be an array of {expected}");
    match present(obj, key) {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => items.iter().map(|v| render(v).ok_or_else(err)).collect(),
        Some(_) => Err(err()),
    }
}

fn strings(obj: &Obj, prefix: &str, key: &str) -> Result<Vec<String>, String> {
    rendered_list(obj, prefix, key, "strings", |v| {
        v.as_str().map(str::to_owned)
    })
}

fn constraints(obj: &Obj, prefix: &str, key: &str) -> Result<Vec<String>, String> {
    let expected = "strings or {field, operator, value} objects";
    rendered_list(obj, prefix, key, expected, render_constraint)
}

fn edges(obj: &Obj, prefix: &str, key: &str) -> Result<Vec<String>, String> {
    let expected = "strings or {subject, predicate, object} objects";
    rendered_list(obj, prefix, key, expected, render_edge)
}

fn raw_list(obj: &Obj, prefix: &str, key: &str) -> Result<Vec<Value>, String> {
    match present(obj, key) {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => Ok(items.clone()),
        Some(_) => Err(format!("'{prefix}{key}' must be an array")),
    }
}

fn type_map(
    obj: &Obj,
    prefix: &str,
    key: &str,
) -> Result<Option<BTreeMap<String, String>>, String> {
    let err = || format!("'{prefix}{key}' must be an object mapping entities to type strings");
    match present(obj, key) {
        None => Ok(None),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| Ok((k.clone(), v.as_str().ok_or_else(err)?.to_owned())))
            .collect::<Result<_, String>>()
            .map(Some),
        Some(_) => Err(err()),
    }
}

fn non_negative_number(obj: &Obj, prefix: &str, key: &str) -> Result<Option<f64>, String> {
    match present(obj, key) {
        None => Ok(None),
        Some(v) => match v.as_f64() {
            Some(n) if n >= 0.0 => Ok(Some(n)),
            _ => Err(format!("'{prefix}{key}' must be a non-negative number")),
        },
    }
}

fn token_count(obj: &Obj, prefix: &str, key: &str) -> Result<u64, String> {
    match present(obj, key) {
        None => Ok(0),
        Some(v) => match (v.as_u64(), v.as_f64()) {
            (Some(n), _) => Ok(n),
            (None, Some(f)) if f >= 0.0 && f.fract() == 0.0 && f < u64::MAX as f64 => Ok(f as u64),
            _ => Err(format!("'{prefix}{key}' must be a non-negative integer")),
        },
    }
}

#[cfg(test)]
mod tests;
