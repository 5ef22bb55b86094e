//! Pairing BASE and NEW by item id: the items both evaluated are paired; items only one report
//! has are listed (never silently dropped), as are items whose evaluation failed on a side.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use crate::read::Report;
use crate::CompareError;

/// The pairs (BASE position, NEW position) and what could not be paired.
#[derive(Debug, Default)]
pub(crate) struct Pairing {
    pub pairs: Vec<(u32, u32)>,
    pub summary: PairingSummary,
}

#[derive(Debug, Default, Clone, Serialize)]
pub struct PairingSummary {
    pub paired: usize,
    pub base_items: usize,
    pub new_items: usize,
    /// Ids in BASE (evaluated or failed) and not in NEW at all.
    pub only_in_base: Vec<String>,
    /// Ids in NEW (evaluated or failed) and not in BASE at all.
    pub only_in_new: Vec<String>,
    /// Ids in both whose evaluation failed in BASE, in NEW, or in both (no values to compare).
    pub failed_in_base: Vec<String>,
    pub failed_in_new: Vec<String>,
}

pub(crate) fn pair(base: &Report, new: &Report) -> Result<Pairing, CompareError> {
    let base_index = index(base)?;
    let new_index = index(new)?;
    let base_failed: HashSet<&str> = base.failed.iter().map(|s| &**s).collect();
    let new_failed: HashSet<&str> = new.failed.iter().map(|s| &**s).collect();
    let mut p = Pairing::default();
    for (i, id) in base.ids.iter().enumerate() {
        match new_index.get(&**id) {
            Some(&j) => p.pairs.push((i as u32, j)),
            None if new_failed.contains(&**id) => p.summary.failed_in_new.push(id.to_string()),
            None => p.summary.only_in_base.push(id.to_string()),
        }
    }
    for id in &base.failed {
        if new_index.contains_key(&**id) {
            p.summary.failed_in_base.push(id.to_string());
        } else if new_failed.contains(&**id) {
            p.summary.failed_in_base.push(id.to_string());
            p.summary.failed_in_new.push(id.to_string());
        } else {
            p.summary.only_in_base.push(id.to_string());
        }
    }
    for id in new.ids.iter().chain(&new.failed) {
        if !base_index.contains_key(&**id) && !base_failed.contains(&**id) {
            p.summary.only_in_new.push(id.to_string());
        }
    }
    p.summary.paired = p.pairs.len();
    p.summary.base_items = base.len() + base.failed.len();
    p.summary.new_items = new.len() + new.failed.len();
    if p.pairs.is_empty() {
        return Err(CompareError::NoCommonItems {
            base: base.path.clone(),
            new: new.path.clone(),
            base_items: base.len(),
            new_items: new.len(),
        });
    }
    Ok(p)
}

fn index(r: &Report) -> Result<HashMap<&str, u32>, CompareError> {
    let mut index = HashMap::with_capacity(r.len());
    for (i, id) in r.ids.iter().enumerate() {
        if id.is_empty() {
            return Err(CompareError::Parse {
                path: r.path.clone(),
                message: format!("item {i} has an empty id: items are paired by id"),
            });
        }
        if index.insert(&**id, i as u32).is_some() {
            return Err(CompareError::Parse {
                path: r.path.clone(),
                message: format!("item id '{id}' appears twice: items are paired by id"),
            });
        }
    }
    Ok(index)
}
