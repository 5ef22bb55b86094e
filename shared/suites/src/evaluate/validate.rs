//! The loader's verdict on each raw record: valid, or skipped with its position and reason.
//!
//! Duplicate ids are detected here, among valid records only, after trimming (docs/DESIGN.md §9). Only a
//! 128-bit hash of each id is kept (16 bytes an example), so a 10^7-example dataset costs
//! ~160 MB less than keeping the ids themselves.

use std::collections::HashSet;
use std::hash::{Hash, Hasher};

use evalfleet_dataset::{Position, RawRecord};

use serde_json::Value;

use super::{Evaluator, Example};

/// A record after validation.
#[derive(Debug)]
pub enum Checked {
    /// A valid record in its typed form, which the queue carries to the workers.
    Valid {
        ordinal: u64,
        position: Position,
        example: Example,
    },
    Skipped {
        ordinal: u64,
        position: Position,
        id: String,
        reason: String,
    },
}

pub struct Validator {
    pub evaluator: Evaluator,
    seen: HashSet<u128>,
}

impl Validator {
    pub fn new(evaluator: Evaluator) -> Self {
        Validator {
            evaluator,
            seen: HashSet::new(),
        }
    }

    pub fn check(&mut self, raw: RawRecord) -> Checked {
        let RawRecord {
            ordinal,
            position,
            value,
        } = raw;
        let skipped = |id: String, reason: String| Checked::Skipped {
            ordinal,
            position,
            id,
            reason,
        };
        let value = match value {
            Ok(v) => v,
            Err(reason) => return skipped(String::new(), reason),
        };
        match self.evaluator.parse(&value) {
            Err(reason) => {
                let id = value
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                skipped(id, reason)
            }
            Ok(example) => {
                if self.seen.insert(id_hash(example.id().trim())) {
                    Checked::Valid {
                        ordinal,
                        position,
                        example,
                    }
                } else {
                    let id = example.id().to_owned();
                    skipped(id.clone(), format!("Duplicate id '{id}'"))
                }
            }
        }
    }
}

fn id_hash(id: &str) -> u128 {
    let half = |salt: u8| {
        let mut h = std::hash::DefaultHasher::new();
        salt.hash(&mut h);
        id.hash(&mut h);
        h.finish() as u128
    };
    (half(1) << 64) | half(2)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::suite::Suite;
    use evalfleet_model::routing::ProviderRules;
    use evalfleet_model::suite::SuiteKind;

    fn validator() -> Validator {
        let suite = Arc::new(Suite::builtin(SuiteKind::SupportJudge));
        Validator::new(Evaluator::new(suite, ProviderRules::default(), None))
    }

    fn raw(ordinal: u64, value: Value) -> RawRecord {
        RawRecord {
            ordinal,
            position: Position::Index(ordinal),
            value: Ok(value),
        }
    }

    fn ex(id: &str) -> Value {
        json!({"id": id, "ticket": "t", "response": "r", "model": "gpt-4o", "prompt_version": "v1"})
    }

    fn reason(c: Checked) -> Option<String> {
        match c {
            Checked::Skipped { reason, .. } => Some(reason),
            Checked::Valid { .. } => None,
        }
    }

    #[test]
    fn duplicates_are_compared_trimmed_among_valid_records_only() {
        let mut v = validator();
        let mut bad = ex("a");
        bad["ticket"] = json!(1);
        assert_eq!(
            reason(v.check(raw(0, bad))).unwrap(),
            "'ticket' must be a string"
        );
        assert_eq!(
            reason(v.check(raw(1, ex("a")))),
            None,
            "an invalid first occurrence does not count"
        );
        assert_eq!(
            reason(v.check(raw(2, ex(" a ")))).unwrap(),
            "Duplicate id ' a '"
        );
        assert_eq!(reason(v.check(raw(3, ex("b")))), None);
    }

    #[test]
    fn unparseable_records_are_skipped_with_their_reason_and_position() {
        let mut v = validator();
        let rec = RawRecord {
            ordinal: 4,
            position: Position::Line(7),
            value: Err("invalid JSON: x".into()),
        };
        match v.check(rec) {
            Checked::Skipped {
                position, reason, ..
            } => {
                assert_eq!(position, Position::Line(7));
                assert_eq!(reason, "invalid JSON: x");
            }
            other => panic!("{other:?}"),
        }
    }
}
