//! A log-analysis example's ground truth as it travels: the scenario itself inside a process,
//! only its content digest between processes.
//!
//! A dataset of 10^6 agent runs usually covers a handful of scenarios of a few KiB each. Copying
//! the scenario into every message multiplied the queue's bytes and made every worker parse it
//! again per message. Instead the producer stores each distinct scenario once per run, keyed by
//! [`ScenarioRef::digest`]; a message carries the digest alone, and a worker loads each scenario
//! once and [attaches](ScenarioRef::attach) it to the examples that name it.

use std::fmt;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest, Sha256};

use super::Scenario;

/// A scenario by content digest, with the scenario itself once it is known in this process.
#[derive(Clone)]
pub struct ScenarioRef {
    digest: Arc<str>,
    loaded: OnceLock<Arc<Scenario>>,
}

impl ScenarioRef {
    /// The reference of a scenario this process holds.
    pub fn new(scenario: Arc<Scenario>) -> Self {
        let digest = digest_of(&canonical_json(&scenario)).into();
        ScenarioRef {
            digest,
            loaded: OnceLock::from(scenario),
        }
    }

    /// The SHA-256 (lowercase hex) of the scenario's [`canonical_json`].
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// The scenario, once this process has it.
    pub fn get(&self) -> Option<&Arc<Scenario>> {
        self.loaded.get()
    }

    /// Gives a reference that came off the wire its scenario (loaded by digest). A reference that
    /// already has one keeps it.
    pub fn attach(&self, scenario: Arc<Scenario>) {
        let _ = self.loaded.set(scenario);
    }
}

/// Two references are equal when they name the same content.
impl PartialEq for ScenarioRef {
    fn eq(&self, other: &Self) -> bool {
        self.digest == other.digest
    }
}

impl fmt::Debug for ScenarioRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScenarioRef")
            .field("digest", &self.digest)
            .field("loaded", &self.loaded.get().is_some())
            .finish()
    }
}

/// The stored form of a scenario: its typed sections as JSON, which read back to the same value.
pub fn canonical_json(scenario: &Scenario) -> String {
    serde_json::to_string(scenario).expect("a scenario always serialises")
}

/// The digest a stored scenario is keyed by: SHA-256 of its canonical JSON, lowercase hex.
pub fn digest_of(canonical: &str) -> String {
    format!("{:x}", Sha256::digest(canonical.as_bytes()))
}

/// Reads a stored scenario back, checking that it is the one `digest` names: a store holding
/// something else under that key must not score examples against the wrong ground truth.
pub fn load_stored(digest: &str, stored: &str) -> Result<Arc<Scenario>, String> {
    if digest_of(stored) != digest {
        return Err(format!(
            "the stored scenario {digest} does not match its digest"
        ));
    }
    serde_json::from_str(stored)
        .map(Arc::new)
        .map_err(|e| format!("the stored scenario {digest} does not parse: {e}"))
}

impl Serialize for ScenarioRef {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.digest)
    }
}

impl<'de> Deserialize<'de> for ScenarioRef {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let digest = String::deserialize(d)?;
        let well_formed = digest.len() == 64
            && digest
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if !well_formed {
            return Err(serde::de::Error::custom(format!(
                "'{digest}' is not a scenario digest (64 lowercase hex digits)"
            )));
        }
        Ok(ScenarioRef {
            digest: digest.into(),
            loaded: OnceLock::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn scenario(metric: f64) -> Arc<Scenario> {
        Arc::new(serde_json::from_value(json!({"metrics": {"m": metric}})).unwrap())
    }

    #[test]
    fn the_wire_carries_the_digest_and_the_store_gives_the_scenario_back() {
        let original = ScenarioRef::new(scenario(1.5));
        let wire = serde_json::to_string(&original).unwrap();
        assert_eq!(wire, format!("\"{}\"", original.digest()));
        let received: ScenarioRef = serde_json::from_str(&wire).unwrap();
        assert!(received.get().is_none());
        let stored = canonical_json(original.get().unwrap());
        received.attach(load_stored(received.digest(), &stored).unwrap());
        assert_eq!(received.get().unwrap(), original.get().unwrap());
    }

    #[test]
    fn equal_content_has_one_digest_and_other_content_another() {
        assert_eq!(
            ScenarioRef::new(scenario(1.0)).digest(),
            ScenarioRef::new(scenario(1.0)).digest()
        );
        assert_ne!(
            ScenarioRef::new(scenario(1.0)).digest(),
            ScenarioRef::new(scenario(2.0)).digest()
        );
    }

    #[test]
    fn a_stored_scenario_that_is_not_the_named_one_is_refused() {
        let a = ScenarioRef::new(scenario(1.0));
        let other = canonical_json(&scenario(2.0));
        let err = load_stored(a.digest(), &other).unwrap_err();
        assert!(err.contains("does not match its digest"), "{err}");
        assert!(serde_json::from_str::<ScenarioRef>("\"abc\"").is_err());
    }
}
