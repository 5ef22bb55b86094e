//! Deterministic checks of custom suites: each turns one item's field into a metric in [0, 1],
//! or `None` when the field (or a reference the check needs) is absent.
//!
//! A suite file declares checks as flat [`CheckSpec`]s; [`Check::compile`] validates one once,
//! at suite load, and keeps everything costly (regexes, JSON Schema validators, lowercased
//! needles) so that [`Check::eval`], which runs once per item and check over millions of items,
//! only does the comparison itself.
//!
//! Pass/fail types give 1.0 or 0.0 and honour `negate`; `token_f1` and `similarity` give a
//! continuous score, which has no meaningful negation, so they refuse `negate`.
//!
//! The "text" of a value is a JSON string's own text, or the compact JSON of any other value
//! (`42`, `true`, `{"a":1}`), so text checks also work on fields that a dataset stores as numbers
//! or objects.
//!
//! Here: the compiled [`Check`] and its evaluation. What a suite file writes is `spec.rs`; how
//! a value is read (its text, case folding, equality, numbers) `values.rs`.

mod spec;
mod values;

use std::borrow::Cow;

use regex::{Regex, RegexBuilder};
use serde_json::Value;

use crate::rag::{exact_match, token_f1};
#[cfg(test)]
use spec::keys_of;
pub use spec::{CheckSpec, CHECK_TYPES};
use values::{folded, lowercase, number, present, text, values_equal, within};

/// A compiled check, ready to score items.
#[derive(Debug, Clone)]
pub struct Check {
    pub name: String,
    /// The field whose value [`Check::eval`] takes first.
    pub field: String,
    /// The field whose value [`Check::eval`] takes second, when the check compares against one.
    pub reference: Option<String>,
    op: Op,
    /// Flips a pass/fail result; always false for the continuous types.
    negate: bool,
}

/// What a check computes, with its compiled parts. Lowercased strings are stored already
/// lowercased when the check is case-insensitive.
#[derive(Debug, Clone)]
enum Op {
    /// `target` is the `value`, or `None` to compare with the reference field.
    Equals {
        target: Option<Value>,
        case_insensitive: bool,
    },
    /// `value` becomes a one-needle `any`.
    Contains {
        needles: Vec<String>,
        all: bool,
        case_insensitive: bool,
    },
    StartsWith {
        prefix: String,
        case_insensitive: bool,
    },
    Regex(Regex),
    IsJson,
    /// Boxed: a validator is large and this variant is rare.
    JsonSchema(Box<jsonschema::Validator>),
    ExactMatch,
    TokenF1,
    /// `target` is the string `value`, or `None` to compare with the reference field.
    Similarity {
        target: Option<String>,
        case_insensitive: bool,
    },
    Length {
        words: bool,
        min: Option<f64>,
        max: Option<f64>,
    },
    Range {
        min: Option<f64>,
        max: Option<f64>,
    },
}

impl Check {
    /// Validates a spec and compiles what `eval` needs. Errors start with `check '<name>': ` and
    /// say what to change, because the suite loader shows them to the suite's author as is.
    pub fn compile(spec: &CheckSpec) -> Result<Check, String> {
        let name = &spec.name;
        let err = |msg: String| format!("check '{name}': {msg}");
        spec.check_keys()?;
        let kind = spec.kind.as_str();
        if spec.is_external() {
            return Err(err(format!(
                "type {kind} is a code scorer: its score comes from the worker"
            )));
        }
        let field = match spec.field.as_deref() {
            None => return Err(err(format!("type {kind} needs 'field'"))),
            Some(f) if f.trim().is_empty() => return Err(err("'field' is empty".to_owned())),
            Some(f) => f,
        };
        if spec
            .reference
            .as_deref()
            .is_some_and(|r| r.trim().is_empty())
        {
            return Err(err("'reference' is empty".to_owned()));
        }

        let case_insensitive = spec.case_sensitive == Some(false);
        let fold = |s: &str| {
            if case_insensitive {
                lowercase(s).into_owned()
            } else {
                s.to_owned()
            }
        };
        let op = match kind {
            "equals" => {
                let target = match (&spec.value, &spec.reference) {
                    (Some(_), Some(_)) => {
                        return Err(err(
                            "type equals takes 'value' or 'reference', not both".to_owned()
                        ))
                    }
                    (None, None) => {
                        return Err(err("type equals needs 'value' or 'reference'".to_owned()))
                    }
                    (Some(Value::String(s)), None) => Some(Value::String(fold(s))),
                    (Some(v), None) => Some(v.clone()),
                    (None, Some(_)) => None,
                };
                Op::Equals {
                    target,
                    case_insensitive,
                }
            }
            "contains" => {
                let given: Vec<&str> = [
                    ("value", spec.value.is_some()),
                    ("any", spec.any.is_some()),
                    ("all", spec.all.is_some()),
                ]
                .into_iter()
                .filter_map(|(k, set)| set.then_some(k))
                .collect();
                if given.len() != 1 {
                    let got = if given.is_empty() {
                        "none".to_owned()
                    } else {
                        given.join(", ")
                    };
                    return Err(err(format!(
                        "type contains needs exactly one of 'value', 'any', 'all' (got {got})"
                    )));
                }
                let (needles, all) = match (&spec.value, &spec.any, &spec.all) {
                    (Some(v), _, _) => (vec![string_value(v, kind).map_err(err)?], false),
                    (_, Some(any), _) => (non_empty(any, "any").map_err(err)?, false),
                    (_, _, Some(all)) => (non_empty(all, "all").map_err(err)?, true),
                    _ => unreachable!("exactly one of value, any, all is set"),
                };
                Op::Contains {
                    needles: needles.iter().map(|n| fold(n)).collect(),
                    all,
                    case_insensitive,
                }
            }
            "starts_with" => {
                let Some(v) = &spec.value else {
                    return Err(err("type starts_with needs 'value'".to_owned()));
                };
                Op::StartsWith {
                    prefix: fold(&string_value(v, kind).map_err(err)?),
                    case_insensitive,
                }
            }
            "regex" => {
                let Some(pattern) = &spec.pattern else {
                    return Err(err("type regex needs 'pattern'".to_owned()));
                };
                let re = RegexBuilder::new(pattern)
                    .case_insensitive(case_insensitive)
                    .build()
                    // The regex crate's message already quotes the pattern and points at the fault.
                    .map_err(|e| err(format!("invalid 'pattern': {e}")))?;
                Op::Regex(re)
            }
            "is_json" => Op::IsJson,
            "json_schema" => {
                let Some(schema) = &spec.schema else {
                    return Err(err("type json_schema needs 'schema'".to_owned()));
                };
                let validator = jsonschema::validator_for(schema).map_err(|e| {
                    // For a schema that breaks the meta-schema, the "instance" is the schema
                    // itself, so this path says which part of it is wrong.
                    let at = e.instance_path().as_str();
                    let at = if at.is_empty() {
                        String::new()
                    } else {
                        format!(" at '{at}'")
                    };
                    err(format!("invalid JSON Schema{at}: {e}"))
                })?;
                Op::JsonSchema(Box::new(validator))
            }
            "exact_match" | "token_f1" => {
                if spec.reference.is_none() {
                    return Err(err(format!("type {kind} needs 'reference'")));
                }
                if kind == "exact_match" {
                    Op::ExactMatch
                } else {
                    Op::TokenF1
                }
            }
            "similarity" => {
                let target = match (&spec.value, &spec.reference) {
                    (Some(_), Some(_)) => {
                        return Err(err(
                            "type similarity takes 'value' or 'reference', not both".to_owned(),
                        ))
                    }
                    (None, None) => {
                        return Err(err(
                            "type similarity needs 'reference' or a string 'value'".to_owned()
                        ))
                    }
                    (Some(v), None) => Some(fold(&string_value(v, kind).map_err(err)?)),
                    (None, Some(_)) => None,
                };
                Op::Similarity {
                    target,
                    case_insensitive,
                }
            }
            "length" | "range" => {
                let (min, max) = bounds(spec).map_err(err)?;
                if kind == "range" {
                    Op::Range { min, max }
                } else {
                    let words = match spec.unit.as_deref() {
                        None | Some("chars") => false,
                        Some("words") => true,
                        Some(other) => {
                            return Err(err(format!("unit '{other}' is not one of: chars, words")))
                        }
                    };
                    Op::Length { words, min, max }
                }
            }
            _ => unreachable!("keys_of knows only the CHECK_TYPES"),
        };
        Ok(Check {
            name: spec.name.clone(),
            field: field.to_owned(),
            reference: spec.reference.clone(),
            op,
            negate: spec.negate == Some(true),
        })
    }

    /// The check's type, as a suite file writes it.
    pub fn kind(&self) -> &'static str {
        match self.op {
            Op::Equals { .. } => "equals",
            Op::Contains { .. } => "contains",
            Op::StartsWith { .. } => "starts_with",
            Op::Regex(_) => "regex",
            Op::IsJson => "is_json",
            Op::JsonSchema(_) => "json_schema",
            Op::ExactMatch => "exact_match",
            Op::TokenF1 => "token_f1",
            Op::Similarity { .. } => "similarity",
            Op::Length { .. } => "length",
            Op::Range { .. } => "range",
        }
    }

    /// Whether the check compares against a reference field, so [`Check::eval`] gives `None`
    /// for items without one.
    pub fn needs_reference(&self) -> bool {
        self.reference.is_some()
    }

    /// The fields the check reads (its field, then its reference), so the suite loader can
    /// verify each is declared.
    pub fn fields(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.field.as_str()).chain(self.reference.as_deref())
    }

    /// Scores one item: `field` is the item's value of [`Check::field`], `reference` its value of
    /// [`Check::reference`] (ignored when the check has none). An absent or `null` field, or an
    /// absent or `null` reference that the check needs, gives `None`, so missing data is not
    /// counted as a failure.
    pub fn eval(&self, field: Option<&Value>, reference: Option<&Value>) -> Option<f64> {
        let field = present(field)?;
        let pass = match &self.op {
            Op::Equals {
                target,
                case_insensitive,
            } => match target {
                Some(value) => values_equal(field, value, *case_insensitive, true),
                None => values_equal(field, present(reference)?, *case_insensitive, false),
            },
            Op::Contains {
                needles,
                all,
                case_insensitive,
            } => {
                let text = folded(text(field), *case_insensitive);
                if *all {
                    needles.iter().all(|n| text.contains(n.as_str()))
                } else {
                    needles.iter().any(|n| text.contains(n.as_str()))
                }
            }
            Op::StartsWith {
                prefix,
                case_insensitive,
            } => folded(text(field), *case_insensitive).starts_with(prefix.as_str()),
            Op::Regex(re) => re.is_match(&text(field)),
            Op::IsJson => match field {
                // IgnoredAny checks the syntax without building a value.
                Value::String(s) => serde_json::from_str::<serde::de::IgnoredAny>(s).is_ok(),
                _ => true,
            },
            Op::JsonSchema(validator) => match field {
                Value::String(s) => serde_json::from_str::<Value>(s)
                    .map(|v| validator.is_valid(&v))
                    .unwrap_or(false),
                other => validator.is_valid(other),
            },
            Op::ExactMatch => exact_match(&text(field), &text(present(reference)?)) == 1.0,
            Op::TokenF1 => return Some(token_f1(&text(field), &text(present(reference)?))),
            Op::Similarity {
                target,
                case_insensitive,
            } => {
                let ci = *case_insensitive;
                let target = match target {
                    Some(value) => Cow::Borrowed(value.as_str()),
                    None => folded(text(present(reference)?), ci),
                };
                let text = folded(text(field), ci);
                return Some(strsim::normalized_levenshtein(&text, &target));
            }
            Op::Length { words, min, max } => {
                let text = text(field);
                let n = if *words {
                    text.split_whitespace().count()
                } else {
                    text.chars().count()
                };
                within(n as f64, *min, *max)
            }
            Op::Range { min, max } => match number(field) {
                Some(x) => within(x, *min, *max),
                // Not a number is neither inside nor outside the range: it fails whether or not
                // the check is negated, so bad data never passes a negated range.
                None => return Some(0.0),
            },
        };
        Some(if pass != self.negate { 1.0 } else { 0.0 })
    }
}

/// A `value` that must be a string: a number there is most likely a forgotten pair of quotes,
/// which is better said than guessed.
fn string_value(v: &Value, kind: &str) -> Result<String, String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        other => Err(format!(
            "'value' must be a string for type {kind} (got {other}; quote it to match its text)"
        )),
    }
}

/// An empty `any` never passes and an empty `all` always does, which is never what was meant.
fn non_empty(list: &[String], key: &str) -> Result<Vec<String>, String> {
    if list.is_empty() {
        Err(format!("'{key}' is empty"))
    } else {
        Ok(list.to_vec())
    }
}

/// `min`/`max` of `length` and `range`: at least one, neither NaN, and min <= max.
fn bounds(spec: &CheckSpec) -> Result<(Option<f64>, Option<f64>), String> {
    let (min, max) = (spec.min, spec.max);
    if min.is_none() && max.is_none() {
        return Err(format!(
            "type {} needs 'min', 'max' or both",
            spec.kind.as_str()
        ));
    }
    for (key, bound) in [("min", min), ("max", max)] {
        if bound.is_some_and(f64::is_nan) {
            return Err(format!("'{key}' is not a number"));
        }
    }
    if let (Some(lo), Some(hi)) = (min, max) {
        if lo > hi {
            return Err(format!("'min' ({lo}) is greater than 'max' ({hi})"));
        }
    }
    Ok((min, max))
}

#[cfg(test)]
mod eval_tests;
#[cfg(test)]
mod tests;
