//! The loader's verdict on each raw record: valid, or skipped with its position and reason.
//!
//! Duplicate ids are detected here, among valid records only, after trimming (DESIGN §9). Only a
//! 128-bit hash of each id is kept (16 bytes an example), so a 10^7-example dataset costs
//! ~160 MB less than keeping the ids themselves.

use std::collections::HashSet;
use std::hash::{Hash, Hasher};

use crate::dataset::{Position, RawRecord};

use super::{Evaluator, Example};

/// A record after validation.
#[derive(Debug)]
pub enum Checked {
    Valid { ordinal: u64, position: Position, example: Example },
    Skipped { ordinal: u64, position: Position, id: String, reason: String },
}

pub struct Validator {
    pub evaluator: Evaluator,
    seen: HashSet<u128>,
}

impl Validator {
    pub fn new(evaluator: Evaluator) -> Self {
        Validator { evaluator, seen: HashSet::new() }
    }

    pub fn check(&mut self, raw: RawRecord) -> Checked {
        let RawRecord { ordinal, position, value } = raw;
        let skipped = |id: String, reason: String| Checked::Skipped { ordinal, position, id, reason };
        let value = match value {
            Ok(v) => v,
            Err(reason) => return skipped(String::new(), reason),
        };
        let raw_id = || value.get("id").and_then(|v| v.as_str()).unwrap_or("").to_owned();
        match self.evaluator.parse(&value) {
            Err(reason) => skipped(raw_id(), reason),
            Ok(example) => {
                if self.seen.insert(id_hash(example.id().trim())) {
                    Checked::Valid { ordinal, position, example }
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
