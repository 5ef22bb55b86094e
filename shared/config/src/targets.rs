//! Targets: the system under test, which generates the outputs a suite evaluates
//! (`config/targets/NAME.yaml`, `--target NAME|FILE`).
//!
//! Two kinds: a `chat` target sends a prompt (templates over the record) to a provider under
//! `providers:` and puts the reply's text into one field of the record; an `http` target sends
//! a JSON body (its strings are templates) to an agent endpoint and copies parts of the reply,
//! found by JSON Pointer, into fields of the record. This module only reads and checks the
//! definition; the calls are the worker's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::judges::RetryConfig;

/// A target as its file defines it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Target {
    Chat(ChatTarget),
    Http(HttpTarget),
}

/// A prompt to an LLM provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChatTarget {
    pub name: String,
    /// A provider under `providers:` (api `openai` or `anthropic`).
    pub provider: String,
    pub model: String,
    /// The system prompt, a template over the record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// The user prompt, a template over the record.
    pub prompt: String,
    /// Passed to the API as they are (`temperature`, `max_tokens`, ...).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub params: Map<String, Value>,
    /// The record field the reply's text fills.
    pub output: String,
    /// The record field set to the model that answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_field: Option<String>,
    /// Constant fields set on every record.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub set: Map<String, Value>,
    /// Generate and evaluate each example this many times.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epochs: Option<u32>,
    /// Answer a repeated request from the cache; unset = when the call is deterministic
    /// (a chat target with `temperature` 0 or absent; an http target always).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<bool>,
}

/// An agent's HTTP endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpTarget {
    pub name: String,
    /// `${VAR}` is read from the environment of the process that makes the call.
    pub url: String,
    #[serde(default = "post")]
    pub method: String,
    /// Values may hold `${VAR}`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Any JSON; its strings are templates over the record and may hold `${VAR}`.
    #[serde(default)]
    pub body: Value,
    /// Record field (a dotted path) ← JSON Pointer (RFC 6901) into the reply.
    pub outputs: BTreeMap<String, String>,
    #[serde(default = "default_timeout_s")]
    pub timeout_s: f64,
    /// The adaptive in-flight cap never goes above it.
    #[serde(default = "default_in_flight")]
    pub max_in_flight: u32,
    /// Requests per minute; 0 = unlimited.
    #[serde(default)]
    pub rpm: u32,
    #[serde(default)]
    pub retry: RetryConfig,
    /// What one call costs (USD), for `--estimate`, the budget and the report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price_per_call: Option<f64>,
    /// Constant fields set on every record.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub set: Map<String, Value>,
    /// Generate and evaluate each example this many times.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epochs: Option<u32>,
    /// Answer a repeated request from the cache; unset = when the call is deterministic
    /// (a chat target with `temperature` 0 or absent; an http target always).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<bool>,
}

fn post() -> String {
    "POST".into()
}
fn default_timeout_s() -> f64 {
    60.0
}
fn default_in_flight() -> u32 {
    32
}

#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("cannot read target file '{path}': {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("target file '{path}': {message}")]
    Invalid { path: PathBuf, message: String },
    #[error("no target '{name}': looked for {looked} (targets_dir)")]
    Unknown { name: String, looked: PathBuf },
}

/// The most epochs a run may ask for: each multiplies the target's and the judges' calls.
pub const MAX_EPOCHS: u32 = 100;

fn check_epochs(k: u32) -> Result<(), String> {
    match k {
        0 => Err("must be at least 1".into()),
        k if k > MAX_EPOCHS => Err(format!("{k} is more than {MAX_EPOCHS}")),
        _ => Ok(()),
    }
}

impl Target {
    pub fn name(&self) -> &str {
        match self {
            Target::Chat(t) => &t.name,
            Target::Http(t) => &t.name,
        }
    }

    /// `--epochs K`: the file's `epochs:` overridden. Err says why K cannot be.
    pub fn set_epochs(&mut self, k: u32) -> Result<(), String> {
        check_epochs(k)?;
        match self {
            Target::Chat(t) => t.epochs = Some(k),
            Target::Http(t) => t.epochs = Some(k),
        }
        Ok(())
    }

    /// `epochs:` as the file gives it.
    pub fn epochs(&self) -> Option<u32> {
        match self {
            Target::Chat(t) => t.epochs,
            Target::Http(t) => t.epochs,
        }
    }

    /// Whether a repeated request is answered from the cache: `cache:` as given, else when the
    /// call is deterministic (a chat target at temperature 0 or without one; an http target).
    pub fn caches(&self) -> bool {
        match self {
            Target::Chat(t) => t.cache.unwrap_or_else(|| {
                t.params
                    .get("temperature")
                    .is_none_or(|v| v.as_f64() == Some(0.0))
            }),
            Target::Http(t) => t.cache.unwrap_or(true),
        }
    }

    /// The record fields this target fills.
    pub fn fills(&self) -> Vec<&str> {
        let (outputs, set): (Vec<&str>, &Map<String, Value>) = match self {
            Target::Chat(t) => {
                let mut outputs = vec![t.output.as_str()];
                outputs.extend(t.model_field.as_deref());
                (outputs, &t.set)
            }
            Target::Http(t) => (t.outputs.keys().map(String::as_str).collect(), &t.set),
        };
        let mut fields = outputs;
        fields.extend(set.keys().map(String::as_str));
        fields
    }

    /// `--target NAME|FILE`: a file when the argument names one (or ends in `.yaml`/`.yml`),
    /// else `<targets_dir>/NAME.yaml`.
    pub fn find(arg: &str, targets_dir: &Path) -> Result<Target, TargetError> {
        let as_path = Path::new(arg);
        let is_file = as_path.is_file()
            || as_path
                .extension()
                .is_some_and(|e| e == "yaml" || e == "yml");
        if is_file {
            return Target::load(as_path);
        }
        let looked = targets_dir.join(format!("{arg}.yaml"));
        if !looked.is_file() {
            return Err(TargetError::Unknown {
                name: arg.to_owned(),
                looked,
            });
        }
        Target::load(&looked)
    }

    /// Reads and checks one target file.
    pub fn load(path: &Path) -> Result<Target, TargetError> {
        let text = std::fs::read_to_string(path).map_err(|source| TargetError::Read {
            path: path.to_owned(),
            source,
        })?;
        Target::parse(&text).map_err(|message| TargetError::Invalid {
            path: path.to_owned(),
            message,
        })
    }

    /// A target from its YAML text; the error names the line and column or the key.
    pub fn parse(text: &str) -> Result<Target, String> {
        let target: Target = serde_norway::from_str(text).map_err(|e| e.to_string())?;
        target.check()?;
        Ok(target)
    }

    /// What serde cannot check (a target read as part of another file, a suite's `target:`,
    /// is checked with this too).
    pub fn check(&self) -> Result<(), String> {
        if self.name().trim().is_empty() {
            return Err("name: must not be empty".into());
        }
        if let Some(k) = self.epochs() {
            check_epochs(k).map_err(|e| format!("epochs: {e}"))?;
        }
        match self {
            Target::Chat(t) => {
                if t.output.trim().is_empty() {
                    return Err("output: must name a record field".into());
                }
            }
            Target::Http(t) => {
                if t.outputs.is_empty() {
                    return Err("outputs: must map at least one record field to a JSON Pointer into the reply".into());
                }
                for (field, pointer) in &t.outputs {
                    if !(pointer.is_empty() || pointer.starts_with('/')) {
                        return Err(format!(
                            "outputs.{field}: '{pointer}' is not a JSON Pointer (it starts with '/', or is empty for the whole reply)"
                        ));
                    }
                }
                let scheme = t.url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
                if !matches!(scheme.as_deref(), Some("http" | "https")) {
                    return Err(format!(
                        "url: must be an http:// or https:// URL, got '{}'",
                        evalfleet_model::redact::redact_url(&t.url)
                    ));
                }
                if !(t.timeout_s > 0.0 && t.timeout_s.is_finite()) {
                    return Err("timeout_s: must be a positive number of seconds".into());
                }
                if t.max_in_flight == 0 {
                    return Err("max_in_flight: must be at least 1".into());
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHAT: &str = r#"
name: support-bot-v2
kind: chat
provider: openai
model: gpt-4o-mini
system: "You are a support engineer."
prompt: "{{ ticket }}"
params: {temperature: 0, max_tokens: 400}
output: response
model_field: model
set: {prompt_version: "v2.0"}
"#;

    const HTTP: &str = r#"
name: laneige-agent
kind: http
url: "http://127.0.0.1:9000/v2/ask"
headers: {X-Agent-Key: "${AGENT_KEY}"}
body: {query: "{{ question }}", conversation: {id: "{{ id }}"}}
outputs:
  trace: /data/trace
  trace.answer: /data/reply/text
timeout_s: 60
retry: {max_attempts: 5, base_delay_ms: 500, max_delay_ms: 30000}
"#;

    #[test]
    fn the_two_kinds_read_as_the_contract_writes_them() {
        let Target::Chat(chat) = Target::parse(CHAT).unwrap() else {
            panic!("a chat target")
        };
        assert_eq!(chat.model, "gpt-4o-mini");
        assert_eq!(chat.params["max_tokens"], 400);
        let chat = Target::Chat(chat);
        assert_eq!(chat.fills(), ["response", "model", "prompt_version"]);
        let Target::Http(http) = Target::parse(HTTP).unwrap() else {
            panic!("an http target")
        };
        assert_eq!(http.method, "POST", "the default method");
        assert_eq!(http.outputs["trace.answer"], "/data/reply/text");
        assert_eq!(http.retry.max_attempts, 5);
        assert_eq!(
            http.headers["X-Agent-Key"], "${AGENT_KEY}",
            "kept unresolved"
        );
    }

    #[test]
    fn bad_definitions_name_the_key_or_the_line() {
        let err = Target::parse(&CHAT.replace("output: response", "outptu: response")).unwrap_err();
        assert!(err.contains("outptu"), "{err}");
        let err = Target::parse(&HTTP.replace("/data/trace", "data.trace")).unwrap_err();
        assert!(
            err.contains("outputs.trace") && err.contains("JSON Pointer"),
            "{err}"
        );
        let err = Target::parse("name: x\nkind: grpc\n").unwrap_err();
        assert!(err.contains("grpc"), "{err}");
        let err = Target::parse(&CHAT.replace("kind: chat", "kind: chat\nepochs: 0")).unwrap_err();
        assert!(err.contains("epochs"), "{err}");
        // Keys of the contract this version does not do yet are refused, never ignored.
        let err = Target::parse(&format!("{CHAT}epochs: 101\n")).unwrap_err();
        assert!(err.contains("epochs: 101 is more than 100"), "{err}");
        assert_eq!(
            Target::parse(&format!("{CHAT}epochs: 3\n"))
                .unwrap()
                .epochs(),
            Some(3)
        );
        let err = Target::parse(&format!("{HTTP}max_in_flight: 0\n")).unwrap_err();
        assert!(err.contains("max_in_flight"), "{err}");
        let err = Target::parse(&HTTP.replace("http://127.0.0.1", "ftp://user:pw@127.0.0.1"))
            .unwrap_err();
        assert!(err.contains("url:") && !err.contains("pw"), "{err}");
        let err = Target::parse("name: x\nkind: chat\nprovider: [\n").unwrap_err();
        assert!(err.contains("line"), "{err}");
    }

    #[test]
    fn a_deterministic_call_is_cached_unless_the_file_says_otherwise() {
        let chat = |extra: &str| Target::parse(&format!("{CHAT}{extra}\n")).unwrap();
        assert!(Target::parse(HTTP).unwrap().caches());
        assert!(chat("").caches(), "temperature 0");
        let unset = CHAT.replace("temperature: 0, ", "");
        assert!(Target::parse(&unset).unwrap().caches(), "no temperature");
        let hot = CHAT.replace("temperature: 0", "temperature: 0.7");
        let hot = Target::parse(&hot).unwrap();
        assert!(!hot.caches(), "a sampled answer is not reused");
        assert!(!chat("cache: false").caches());
        let mut forced = hot.clone();
        if let Target::Chat(t) = &mut forced {
            t.cache = Some(true);
        }
        assert!(forced.caches());
    }

    #[test]
    fn a_target_is_found_by_name_or_by_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("bot.yaml"), CHAT).unwrap();
        let by_name = Target::find("bot", dir.path()).unwrap();
        assert_eq!(by_name.name(), "support-bot-v2");
        let file = dir.path().join("bot.yaml");
        let by_file = Target::find(file.to_str().unwrap(), Path::new("elsewhere")).unwrap();
        assert_eq!(by_file, by_name);
        let err = Target::find("nope", dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("no target 'nope'") && err.contains("nope.yaml"),
            "{err}"
        );
    }
}
