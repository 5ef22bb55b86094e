//! A check as a suite file writes it ([`CheckSpec`]): flat, so a typo is an unknown-key error
//! naming the key, and which keys each type takes.

use std::collections::BTreeMap;

use evalfleet_config::RetryConfig;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::super::external;
#[cfg(doc)]
use super::super::external::ExternalCheck;
#[cfg(doc)]
use super::Check;

/// Every check type, in the order error messages list them.
pub const CHECK_TYPES: &[&str] = &[
    "equals",
    "contains",
    "starts_with",
    "regex",
    "is_json",
    "json_schema",
    "exact_match",
    "token_f1",
    "similarity",
    "length",
    "range",
    "command",
    "http",
];

/// A check as a suite file writes it. Flat, so a typo is an unknown-key error naming the key,
/// and [`Check::compile`] (or, for a code scorer, [`ExternalCheck::compile`]) then says which
/// keys a type takes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckSpec {
    /// The metric name the check's score is recorded under.
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    /// The declared field the check reads (every type but the code scorers, which send
    /// `fields`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// Another declared field's name, the gold value compared against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub any: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub case_sensitive: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub negate: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    /// `length` only: `chars` (Unicode scalar values, the default) or `words`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    /// Code scorers (`command`, `http`): the declared fields sent to the scorer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fields: Option<Vec<String>>,
    /// Code scorers: constant arguments sent with every request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Map<String, Value>>,
    /// Code scorers: seconds a reply may take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_s: Option<f64>,
    /// `command` only: the program and its arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// `command` only: processes in the pool (default: one per core).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processes: Option<u32>,
    /// `http` only: where the requests are POSTed (may hold `${VAR}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// `http` only: request headers (values may hold `${VAR}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<BTreeMap<String, String>>,
    /// `http` only: attempts and backoff, as an http target's `retry`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryConfig>,
}

/// The optional keys each type takes; any other optional key given is an error, so a key that
/// would silently do nothing (a `pattern` on `contains`) is caught at load time. Every type
/// but the code scorers also takes (and needs) `field`.
pub(in crate::custom) fn keys_of(kind: &str) -> Option<&'static [&'static str]> {
    if let Some(keys) = external::keys_of(kind) {
        return Some(keys);
    }
    Some(match kind {
        "equals" => &["value", "reference", "case_sensitive", "negate"],
        "contains" => &["value", "any", "all", "case_sensitive", "negate"],
        "starts_with" => &["value", "case_sensitive", "negate"],
        "regex" => &["pattern", "case_sensitive", "negate"],
        "is_json" => &["negate"],
        "json_schema" => &["schema", "negate"],
        "exact_match" => &["reference", "negate"],
        "token_f1" => &["reference"],
        "similarity" => &["reference", "value", "case_sensitive"],
        "length" => &["min", "max", "unit", "negate"],
        "range" => &["min", "max", "negate"],
        _ => return None,
    })
}

impl CheckSpec {
    /// The optional keys this spec sets, in declaration order.
    fn given_keys(&self) -> impl Iterator<Item = &'static str> + '_ {
        [
            ("field", self.field.is_some()),
            ("reference", self.reference.is_some()),
            ("value", self.value.is_some()),
            ("any", self.any.is_some()),
            ("all", self.all.is_some()),
            ("pattern", self.pattern.is_some()),
            ("schema", self.schema.is_some()),
            ("case_sensitive", self.case_sensitive.is_some()),
            ("negate", self.negate.is_some()),
            ("min", self.min.is_some()),
            ("max", self.max.is_some()),
            ("unit", self.unit.is_some()),
            ("fields", self.fields.is_some()),
            ("args", self.args.is_some()),
            ("timeout_s", self.timeout_s.is_some()),
            ("command", self.command.is_some()),
            ("processes", self.processes.is_some()),
            ("url", self.url.is_some()),
            ("headers", self.headers.is_some()),
            ("retry", self.retry.is_some()),
        ]
        .into_iter()
        .filter_map(|(key, set)| set.then_some(key))
    }

    /// Whether the check's score comes from the user's code (`command`, `http`), through the
    /// worker, rather than from [`Check::eval`].
    pub fn is_external(&self) -> bool {
        external::keys_of(&self.kind).is_some()
    }

    /// Checks the keys against the type: the type is known, `name` is not empty, and no key is
    /// given that the type does not take. Errors start with `check '<name>': `.
    pub(in crate::custom) fn check_keys(&self) -> Result<&'static [&'static str], String> {
        let name = &self.name;
        let err = |msg: String| format!("check '{name}': {msg}");
        if name.trim().is_empty() {
            return Err(err("'name' is empty".to_owned()));
        }
        let kind = self.kind.as_str();
        let Some(takes) = keys_of(kind) else {
            return Err(err(format!(
                "unknown type '{kind}' (valid types: {})",
                CHECK_TYPES.join(", ")
            )));
        };
        // `field` is every computed type's, needed rather than optional.
        let takes_field = !self.is_external();
        let taken = |k: &str| takes.contains(&k) || (k == "field" && takes_field);
        let refused = self.given_keys().find(|k| !taken(k));
        if let Some(key) = refused {
            let why = match key {
                "negate" if matches!(kind, "token_f1" | "similarity") => {
                    ": its score is continuous, not pass/fail"
                }
                "field" | "reference" => ": a code scorer is sent the declared fields in 'fields'",
                _ => "",
            };
            return Err(err(format!(
                "'{key}' does not apply to type {kind}{why} (it takes: {})",
                takes.join(", ")
            )));
        }
        Ok(takes)
    }
}
