//! Run ids: one rule, checked wherever an id enters (the CLI, the HTTP API, the aggregator
//! before it writes), because an id becomes a directory under `reports_dir` and part of every
//! Redis key of its run. The rule, `^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`, keeps an id one plain
//! path component (no `/`, no `..`, not absolute, not hidden) and free of `:`, the Redis key
//! separator, so no id can escape `reports_dir` or share keys with another run's parts.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize};

/// The rule, as every error states it.
pub const RULE: &str = "^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$";

/// The longest id, in bytes (all of its characters are ASCII).
pub const MAX_LEN: usize = 128;

/// A run id that follows [`RULE`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct RunId(String);

/// Why an id breaks the rule; the message names the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("run id {shown} is not allowed: {why}; a run id must match {RULE}")]
pub struct BadRunId {
    /// The id as shown in the message: quoted, escaped, cut when long.
    shown: String,
    why: String,
}

impl RunId {
    /// `id` as a run id, or why it breaks the rule.
    pub fn new(id: impl Into<String>) -> Result<RunId, BadRunId> {
        let id = id.into();
        check(&id)?;
        Ok(RunId(id))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

/// Whether `id` follows [`RULE`]; Err says which part of it does not.
pub fn check(id: &str) -> Result<(), BadRunId> {
    let bad = |why: String| {
        Err(BadRunId {
            shown: shown(id),
            why,
        })
    };
    let Some(first) = id.chars().next() else {
        return bad("it is empty".into());
    };
    if !first.is_ascii_alphanumeric() {
        return bad(format!(
            "it starts with {first:?}, not an ASCII letter or digit"
        ));
    }
    if let Some(c) = id
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return bad(format!(
            "it contains {c:?} (allowed: ASCII letters, digits, '.', '_', '-')"
        ));
    }
    if id.len() > MAX_LEN {
        return bad(format!(
            "it is {} characters long, more than {MAX_LEN}",
            id.len()
        ));
    }
    Ok(())
}

/// The id quoted and escaped, at most 40 characters of it (an id can be anything a user or a
/// request sent, of any length).
fn shown(id: &str) -> String {
    let mut cut: String = id.chars().take(40).collect();
    if cut.len() < id.len() {
        cut.push('…');
    }
    format!("{cut:?}")
}

impl FromStr for RunId {
    type Err = BadRunId;

    fn from_str(s: &str) -> Result<RunId, BadRunId> {
        RunId::new(s)
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for RunId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::ops::Deref for RunId {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for RunId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<RunId, D::Error> {
        RunId::new(String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_the_rule_allows() {
        for id in [
            "a",
            "0",
            "run-20261123-071702-3f9a",
            "A.b_c-D",
            "v1.2",
            "x..y",
            &"a".repeat(128),
        ] {
            assert_eq!(RunId::new(id).unwrap().as_str(), id);
        }
    }

    #[test]
    fn ids_the_rule_refuses_say_why_and_name_the_rule() {
        let long = "a".repeat(129);
        for (id, why) in [
            ("", "it is empty"),
            ("..", "it starts with '.'"),
            (".hidden", "it starts with '.'"),
            ("-flag", "it starts with '-'"),
            ("_x", "it starts with '_'"),
            ("a/b", "it contains '/'"),
            ("/abs", "it starts with '/'"),
            ("../../x/evil", "it starts with '.'"),
            ("a:b", "it contains ':'"),
            ("a b", "it contains ' '"),
            ("a\\b", "it contains '\\\\'"),
            ("a\nb", "it contains '\\n'"),
            ("é", "it starts with 'é'"),
            ("aé", "it contains 'é'"),
            ("a\0", "it contains '\\0'"),
            (long.as_str(), "it is 129 characters long, more than 128"),
        ] {
            let err = RunId::new(id).unwrap_err().to_string();
            assert!(err.contains(why), "{id:?}: {err}");
            assert!(err.contains(RULE), "{id:?}: {err}");
        }
    }

    #[test]
    fn a_long_id_is_shown_cut() {
        let err = RunId::new(format!("/{}", "x".repeat(10_000)))
            .unwrap_err()
            .to_string();
        assert!(err.len() < 200, "{err}");
        assert!(err.contains('…'), "{err}");
    }

    #[test]
    fn parses_and_deserialises_through_the_rule() {
        assert_eq!("ok-1".parse::<RunId>().unwrap().to_string(), "ok-1");
        assert!("a:b".parse::<RunId>().is_err());
        let id: RunId = serde_json::from_str("\"r.1\"").unwrap();
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"r.1\"");
        let err = serde_json::from_str::<RunId>("\"../x\"").unwrap_err();
        assert!(err.to_string().contains(RULE), "{err}");
    }
}
