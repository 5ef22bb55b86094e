//! A target's pure half: what a record must hold for the target to be asked, the request the
//! target is asked with, and the record its reply completes. The call itself is the worker's
//! (`worker/src/target/`); what the completed record means is the suite's, exactly as for a
//! recorded one.
//!
//! Templates are minijinja over the raw record (`{{ ticket }}`, `{{ metadata.domain }}`), as in
//! custom suites; a record without a variable a template uses is skipped before any call.

mod complete;
mod request;

use std::collections::BTreeSet;

use minijinja::{AutoEscape, Environment, UndefinedBehavior};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use evalfleet_config::Target;

use crate::loganalysis::ScenarioRef;

pub use complete::{fill, Completed, Reply};
pub use request::{expand_vars, secrets_of, vars_in, ChatCall, HttpCall, Secrets};

/// A record waiting for the run's target to fill its outputs: the message a target run's
/// producer publishes, completed and validated by the worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingRecord {
    pub id: String,
    pub record: Map<String, Value>,
    /// A log-analysis record's scenario, resolved by the producer before any call (a worker has
    /// no dataset directory to read a scenario file from): stored once per run like a recorded
    /// example's, it travels as its digest, and the completed example gets it. `record` keeps
    /// its `scenario` field as written (a path or an object), for `outputs.jsonl`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario: Option<ScenarioRef>,
    /// The baseline run's answers of this item, for a pairwise dimension that compares with
    /// them: found by the producer, given to the example the worker completes.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub baseline: crate::custom::BaselineAnswers,
    /// The fields the target fills that the record already holds (the target's outputs
    /// replace them): for the producer to say so once, never sent.
    #[serde(skip)]
    pub replaced: Vec<String>,
}

/// One target, its templates compiled once per run.
pub struct TargetPlan {
    pub target: Target,
    env: Environment<'static>,
    /// The record's top-level names the templates use.
    uses: BTreeSet<String>,
}

impl std::fmt::Debug for TargetPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TargetPlan")
            .field("target", &self.target.name())
            .field("uses", &self.uses)
            .finish()
    }
}

impl TargetPlan {
    /// Compiles the target's templates; the error names the target and the template. `${VAR}`
    /// in an http target's url, headers and body is read through `secrets` (the environment of
    /// the process that makes the calls) and goes into the template as a literal, so that text
    /// in a record is never taken for a variable; [`Secrets::Keep`] leaves it as it is (for a
    /// process that only checks records).
    pub fn compile(target: Target, secrets: Secrets<'_>) -> Result<TargetPlan, String> {
        let mut env = crate::bounded::environment();
        // Requests are plain text and JSON: never HTML-escape.
        env.set_auto_escape_callback(|_| AutoEscape::None);
        // A variable the record lacks is an error, never a blank in a million prompts.
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        let globals: Vec<String> = env.globals().map(|(k, _)| k.to_owned()).collect();
        let name = target.name().to_owned();
        let mut uses = BTreeSet::new();
        for (key, text) in templates_of(&target) {
            let text = request::resolve_secrets(&text, &secrets).map_err(|var| {
                format!("target {name}: {key}: the environment variable {var} is not set")
            })?;
            env.add_template_owned(key.clone(), text)
                .map_err(|e| format!("target {name}: {key}: {e}"))?;
            let template = env
                .get_template(&key)
                .map_err(|e| format!("target {name}: {key}: {e}"))?;
            uses.extend(
                template
                    .undeclared_variables(false)
                    .into_iter()
                    .filter(|v| !globals.contains(v)),
            );
        }
        Ok(TargetPlan { target, env, uses })
    }

    pub fn name(&self) -> &str {
        self.target.name()
    }

    /// What the producer checks before any call: the record has an id and every field the
    /// templates use. Err is the skip reason.
    pub fn check(&self, record: &Value) -> Result<PendingRecord, String> {
        let Some(object) = record.as_object() else {
            return Err("the record is not a JSON object".into());
        };
        let id = match object.get("id") {
            Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => return Err("missing required field 'id'".into()),
        };
        if let Some(missing) = self
            .uses
            .iter()
            .find(|v| object.get(v.as_str()).is_none_or(Value::is_null))
        {
            return Err(format!(
                "target {}: the record has no '{missing}', which its templates use",
                self.name()
            ));
        }
        Ok(PendingRecord {
            id,
            replaced: (self.target.fills().into_iter())
                .filter(|f| has_path(object, f))
                .map(str::to_owned)
                .collect(),
            record: object.clone(),
            scenario: None,
            baseline: Default::default(),
        })
    }

    fn render(&self, key: &str, record: &minijinja::Value) -> Result<String, String> {
        let template = self
            .env
            .get_template(key)
            .map_err(|e| format!("target {}: {key}: {e}", self.name()))?;
        crate::bounded::render(&template, record)
            .map_err(|e| format!("target {}: {key}: {e}", self.name()))
    }
}

/// Whether `record` holds the dotted path `path` (with a value that is not null).
fn has_path(record: &Map<String, Value>, path: &str) -> bool {
    let mut steps = path.split('.');
    let mut at = steps.next().and_then(|step| record.get(step));
    for step in steps {
        at = at.and_then(|v| v.get(step));
    }
    at.is_some_and(|v| !v.is_null())
}

/// Every template of a target with the name its errors give it: `system`, `prompt`; an http
/// target's `url`, `headers/<name>` and the strings of its body by their path (`body/query`).
fn templates_of(target: &Target) -> Vec<(String, String)> {
    match target {
        Target::Chat(t) => {
            let mut out: Vec<(String, String)> = t
                .system
                .iter()
                .map(|s| ("system".to_owned(), s.clone()))
                .collect();
            out.push(("prompt".into(), t.prompt.clone()));
            out
        }
        Target::Http(t) => {
            let mut out = vec![("url".to_owned(), t.url.clone())];
            for (name, value) in &t.headers {
                out.push((format!("headers/{name}"), value.clone()));
            }
            body_strings(&t.body, "body", &mut out);
            out
        }
    }
}

/// The strings of a JSON body, each with its pointer-like key.
fn body_strings(value: &Value, at: &str, out: &mut Vec<(String, String)>) {
    match value {
        Value::String(s) => out.push((at.to_owned(), s.clone())),
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                body_strings(v, &format!("{at}/{i}"), out);
            }
        }
        Value::Object(map) => {
            for (k, v) in map {
                body_strings(v, &format!("{at}/{k}"), out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests;
