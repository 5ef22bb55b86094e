//! Code scorers: checks whose score comes from the user's own code, a long-lived process
//! speaking JSON lines (`type: command`) or an HTTP endpoint (`type: http`).
//!
//! This is their pure half, kept beside the deterministic checks so that a suite file is
//! checked the same way whatever its checks: the spec compiled with errors naming the key, the
//! request an item sends (`{"id", "check", "fields", "args"}`), and the reply
//! (`{"score": <number in [0, 1] or null>, "reason": "..."}`) read back into a score or a
//! null with its reason. Running the processes and making the calls is I/O, so it is the
//! worker's (`worker/src/scorer/`), exactly as judge calls are; [`super::CustomSuite`] then
//! records each score as the check's metric, and each reason under `details.check_reasons`.

use std::collections::BTreeMap;
use std::time::Duration;

use evalfleet_config::RetryConfig;
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use super::checks::CheckSpec;
use crate::target::vars_in;

/// The optional keys of each code scorer type, `None` for every other type.
pub(super) fn keys_of(kind: &str) -> Option<&'static [&'static str]> {
    match kind {
        "command" => Some(&["command", "fields", "args", "processes", "timeout_s"]),
        "http" => Some(&["url", "headers", "fields", "args", "timeout_s", "retry"]),
        _ => None,
    }
}

/// How long a reply may take when the suite does not say.
pub const DEFAULT_TIMEOUT_S: f64 = 30.0;
/// The longest `timeout_s` a suite may set.
const MAX_TIMEOUT_S: f64 = 3600.0;
/// The most processes one `command` scorer may ask for.
pub const MAX_PROCESSES: u32 = 256;
/// How much of a reason a result record keeps, in characters.
pub const REASON_CHARS: usize = 2000;

/// A code scorer, checked and ready for the worker.
#[derive(Debug, Clone, PartialEq)]
pub struct ExternalCheck {
    /// The check's name: its metric, and `check` in each request.
    pub name: String,
    pub scorer: Scorer,
    /// The declared fields each request carries, in the order written.
    pub fields: Vec<String>,
    /// Sent as they are with every request.
    pub args: Map<String, Value>,
    /// How long one reply may take.
    pub timeout: Duration,
}

/// Where a code scorer's replies come from.
#[derive(Debug, Clone, PartialEq)]
pub enum Scorer {
    /// A pool of long-lived processes, one request per line on stdin, one reply per line on
    /// stdout. `processes: None` = one per core of the process that runs them.
    Command {
        command: Vec<String>,
        processes: Option<u32>,
    },
    /// An endpoint each request is POSTed to; `${VAR}` in `url` and header values is read from
    /// the environment of the process that makes the call.
    Http {
        url: String,
        headers: BTreeMap<String, String>,
        retry: RetryConfig,
    },
}

impl ExternalCheck {
    /// Checks a `command` or `http` spec. Errors start with `check '<name>': ` and name the key.
    pub fn compile(spec: &CheckSpec) -> Result<ExternalCheck, String> {
        let name = &spec.name;
        let err = |msg: String| format!("check '{name}': {msg}");
        spec.check_keys()?;
        let kind = spec.kind.as_str();
        if !spec.is_external() {
            return Err(err(format!("type {kind} is not a code scorer")));
        }
        let fields = spec.fields.clone().unwrap_or_default();
        if let Some(f) = fields.iter().find(|f| f.trim().is_empty()) {
            return Err(err(format!("'fields' holds an empty name ('{f}')")));
        }
        let timeout_s = spec.timeout_s.unwrap_or(DEFAULT_TIMEOUT_S);
        if !(timeout_s.is_finite() && timeout_s > 0.0 && timeout_s <= MAX_TIMEOUT_S) {
            return Err(err(format!(
                "'timeout_s' is {timeout_s}: it must be a number of seconds above 0 and at most {MAX_TIMEOUT_S}"
            )));
        }
        let scorer = match kind {
            "command" => {
                let command = spec.command.clone().unwrap_or_default();
                if command.first().is_none_or(|p| p.trim().is_empty()) {
                    return Err(err(
                        "type command needs 'command': the program and its arguments, as a list"
                            .to_owned(),
                    ));
                }
                if let Some(n) = spec.processes {
                    if n == 0 || n > MAX_PROCESSES {
                        return Err(err(format!(
                            "'processes' is {n}: it must be between 1 and {MAX_PROCESSES}"
                        )));
                    }
                }
                Scorer::Command {
                    command,
                    processes: spec.processes,
                }
            }
            _ => {
                let Some(url) = spec.url.clone() else {
                    return Err(err("type http needs 'url'".to_owned()));
                };
                let lower = url.trim_start().to_ascii_lowercase();
                if !(lower.starts_with("http://") || lower.starts_with("https://")) {
                    return Err(err("'url' must start with http:// or https://".to_owned()));
                }
                let retry = spec.retry.clone().unwrap_or_default();
                if retry.max_attempts == 0 {
                    return Err(err("'retry.max_attempts' must be at least 1".to_owned()));
                }
                Scorer::Http {
                    url,
                    headers: spec.headers.clone().unwrap_or_default(),
                    retry,
                }
            }
        };
        Ok(ExternalCheck {
            name: name.clone(),
            scorer,
            fields,
            args: spec.args.clone().unwrap_or_default(),
            timeout: Duration::from_secs_f64(timeout_s),
        })
    }

    /// `command` or `http`.
    pub fn kind(&self) -> &'static str {
        match self.scorer {
            Scorer::Command { .. } => "command",
            Scorer::Http { .. } => "http",
        }
    }

    /// The `${VAR}` names an http scorer reads (url, then header values), each once.
    pub fn secrets(&self) -> Vec<String> {
        let Scorer::Http { url, headers, .. } = &self.scorer else {
            return Vec::new();
        };
        let mut names: Vec<String> = Vec::new();
        for text in std::iter::once(url).chain(headers.values()) {
            for name in vars_in(text) {
                if !names.iter().any(|n| n == name) {
                    names.push(name.to_owned());
                }
            }
        }
        names
    }

    /// The request of one item: its id and, in order, the values of [`ExternalCheck::fields`]
    /// (`None` for an absent field, sent as `null`).
    pub fn request<'a>(&'a self, id: &'a str, values: Vec<Option<&'a Value>>) -> ScorerRequest<'a> {
        ScorerRequest {
            id,
            check: self,
            values,
        }
    }
}

/// One item's request to a code scorer; serialises as
/// `{"id": ..., "check": NAME, "fields": {...}, "args": {...}}` (one line of JSON: strings
/// escape their newlines).
#[derive(Debug)]
pub struct ScorerRequest<'a> {
    id: &'a str,
    check: &'a ExternalCheck,
    values: Vec<Option<&'a Value>>,
}

impl Serialize for ScorerRequest<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct Fields<'a>(&'a [String], &'a [Option<&'a Value>]);
        impl Serialize for Fields<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut m = s.serialize_map(Some(self.0.len()))?;
                for (name, value) in self.0.iter().zip(self.1) {
                    m.serialize_entry(name, value)?;
                }
                m.end()
            }
        }
        let mut m = s.serialize_map(Some(4))?;
        m.serialize_entry("id", self.id)?;
        m.serialize_entry("check", &self.check.name)?;
        m.serialize_entry("fields", &Fields(&self.check.fields, &self.values))?;
        m.serialize_entry("args", &self.check.args)?;
        m.end()
    }
}

/// What a code scorer gave one item: a score in [0, 1], or a null, with a reason.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExternalScore {
    pub score: Option<f64>,
    pub reason: Option<String>,
}

impl ExternalScore {
    /// A null with `reason` (the scorer could not be asked, or gave no usable reply).
    pub fn null(reason: impl Into<String>) -> Self {
        ExternalScore {
            score: None,
            reason: Some(cut(reason.into())),
        }
    }

    /// Reads one reply, as it came (a line of stdout, an HTTP body). Anything but a JSON object
    /// with a `score` that is null or a number in [0, 1] is a null with the reason.
    pub fn from_reply(reply: &[u8]) -> Self {
        match serde_json::from_slice::<Value>(reply) {
            Ok(value) => Self::from_value(&value),
            Err(e) => {
                let text = String::from_utf8_lossy(reply);
                let shown: String = text.chars().take(200).collect();
                let more = if shown.len() < text.len() { "…" } else { "" };
                Self::null(format!("the reply is not JSON ({e}): {shown}{more}"))
            }
        }
    }

    /// [`ExternalScore::from_reply`] of a reply already parsed.
    pub fn from_value(reply: &Value) -> Self {
        let Some(object) = reply.as_object() else {
            return Self::null(format!("the reply is not a JSON object: {}", short(reply)));
        };
        let reason = match object.get("reason") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if s.trim().is_empty() => None,
            Some(Value::String(s)) => Some(cut(s.clone())),
            Some(other) => Some(cut(other.to_string())),
        };
        match object.get("score") {
            None => Self::null("the reply has no 'score'"),
            Some(Value::Null) => ExternalScore {
                score: None,
                reason: reason.or_else(|| Some("the scorer gave no score".to_owned())),
            },
            Some(Value::Number(n)) => match n.as_f64() {
                Some(x) if (0.0..=1.0).contains(&x) => ExternalScore {
                    score: Some(x),
                    reason,
                },
                _ => Self::null(format!("score {n} is outside [0, 1]")),
            },
            Some(other) => Self::null(format!("'score' is not a number or null: {}", short(other))),
        }
    }
}

/// The scores of one item's code scorers, in the order [`super::CustomSuite::external`] lists
/// them; the worker's answer for [`crate::evaluate::finish`]. An item whose suite has none has
/// none.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExternalScores(pub Vec<ExternalScore>);

/// A value's JSON text, cut for a reason.
fn short(v: &Value) -> String {
    let text = v.to_string();
    match text.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

/// A reason cut to [`REASON_CHARS`] characters.
fn cut(reason: String) -> String {
    match reason.char_indices().nth(REASON_CHARS) {
        Some((at, _)) => format!("{}…", &reason[..at]),
        None => reason,
    }
}

#[cfg(test)]
#[path = "external_tests.rs"]
mod tests;
