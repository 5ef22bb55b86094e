//! The request a target is asked with, rendered from one record, and the `${VAR}` secrets an
//! http target reads from the environment of the process that makes the call.

use serde_json::{Map, Value};

use evalfleet_config::Target;

use super::TargetPlan;

/// Where `${VAR}` comes from.
pub enum Secrets<'a> {
    /// Read each variable through this lookup (the calling process's environment).
    Resolve(&'a dyn Fn(&str) -> Option<String>),
    /// Leave `${VAR}` as written: the plan only checks records.
    Keep,
}

/// A chat target's request for one record.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatCall {
    pub model: String,
    pub system: Option<String>,
    pub prompt: String,
    /// Passed to the API as they are.
    pub params: Map<String, Value>,
}

/// An http target's request for one record, secrets resolved: never log or store it.
#[derive(Clone, PartialEq)]
pub struct HttpCall {
    pub url: String,
    pub method: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl std::fmt::Debug for HttpCall {
    /// Header values may be secrets: only their names are shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("HttpCall")
            .field("method", &self.method)
            .field("headers", &names)
            .finish_non_exhaustive()
    }
}

/// `record` as the templates see it: converted once per request, not once per template.
fn context(record: &Map<String, Value>) -> minijinja::Value {
    minijinja::Value::from_serialize(record)
}

impl TargetPlan {
    /// The chat request for `record`; `model` overrides the target's (`--target-model`).
    pub fn chat(
        &self,
        record: &Map<String, Value>,
        model: Option<&str>,
    ) -> Result<ChatCall, String> {
        let Target::Chat(t) = &self.target else {
            return Err(format!("target {} is not a chat target", self.name()));
        };
        let record = context(record);
        let system = match &t.system {
            Some(_) => Some(self.render("system", &record)?),
            None => None,
        };
        Ok(ChatCall {
            model: model.unwrap_or(&t.model).to_owned(),
            system,
            prompt: self.render("prompt", &record)?,
            params: t.params.clone(),
        })
    }

    /// The http request for `record`.
    pub fn http(&self, record: &Map<String, Value>) -> Result<HttpCall, String> {
        let Target::Http(t) = &self.target else {
            return Err(format!("target {} is not an http target", self.name()));
        };
        let record = context(record);
        let mut headers = Vec::with_capacity(t.headers.len());
        for name in t.headers.keys() {
            headers.push((
                name.clone(),
                self.render(&format!("headers/{name}"), &record)?,
            ));
        }
        Ok(HttpCall {
            url: self.render("url", &record)?,
            method: t.method.to_ascii_uppercase(),
            headers,
            body: self.render_body(&t.body, "body", &record)?,
        })
    }

    fn render_body(
        &self,
        value: &Value,
        at: &str,
        record: &minijinja::Value,
    ) -> Result<Value, String> {
        Ok(match value {
            Value::String(_) => Value::String(self.render(at, record)?),
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| self.render_body(v, &format!("{at}/{i}"), record))
                    .collect::<Result<_, _>>()?,
            ),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| {
                        Ok((
                            k.clone(),
                            self.render_body(v, &format!("{at}/{k}"), record)?,
                        ))
                    })
                    .collect::<Result<_, String>>()?,
            ),
            other => other.clone(),
        })
    }
}

/// The `${VAR}` names a target reads from the environment, for a check at start.
pub fn secrets_of(target: &Target) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for (_, text) in super::templates_of(target) {
        for name in vars_in(&text) {
            if !names.iter().any(|n| n == name) {
                names.push(name.to_owned());
            }
        }
    }
    names
}

/// The `${VAR}` names in `text`, in order of appearance, each once. A `${...}` whose name is
/// not letters, digits and `_` is left as text. The one rule for every `${VAR}` evalfleet
/// reads: http targets' url, headers and body, and http scorers' url and headers.
pub fn vars_in(text: &str) -> Vec<&str> {
    let mut names: Vec<&str> = Vec::new();
    let mut rest = text;
    while let Some((name, after)) = next_var(rest) {
        if !names.contains(&name) {
            names.push(name);
        }
        rest = after;
    }
    names
}

/// `text` with each `${VAR}` replaced by its value, as plain text; Err names the first
/// variable `lookup` does not know.
pub fn expand_vars(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    replace_vars(text, |name| lookup(name).ok_or_else(|| name.to_owned()))
}

/// `text` with each `${VAR}` replaced by what `value` makes of its name.
fn replace_vars(
    text: &str,
    mut value: impl FnMut(&str) -> Result<String, String>,
) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some((name, after)) = next_var(rest) {
        let at = rest.len() - after.len() - name.len() - 3;
        out.push_str(&rest[..at]);
        out.push_str(&value(name)?);
        rest = after;
    }
    out.push_str(rest);
    Ok(out)
}

/// The next `${NAME}` in `text`: its name and the text after it.
fn next_var(text: &str) -> Option<(&str, &str)> {
    let start = text.find("${")?;
    let after = &text[start + 2..];
    let end = after.find('}')?;
    let name = &after[..end];
    let valid = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if valid {
        Some((name, &after[end + 1..]))
    } else {
        next_var(&after[end + 1..])
    }
}

/// `text` with each `${VAR}` replaced by a template literal of its value; Err names a variable
/// that is not set.
pub(super) fn resolve_secrets(text: &str, secrets: &Secrets<'_>) -> Result<String, String> {
    let Secrets::Resolve(lookup) = secrets else {
        return Ok(text.to_owned());
    };
    replace_vars(text, |name| {
        let value = lookup(name).ok_or_else(|| name.to_owned())?;
        // A JSON string is a valid minijinja string literal: the value stays literal text.
        Ok(format!("{{{{ {} }}}}", Value::String(value)))
    })
}
