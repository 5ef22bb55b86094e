//! What a run's item table can be filtered by: its columns, the fail tags its rows carry and
//! the values of each grouping — what the item viewer offers in its filters. One pass over
//! `fail_tags` and the `group.*` columns (read as dictionaries: a row group costs its
//! dictionary, not its rows).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::Int32Type;
use arrow_array::{Array, StringArray};

use super::table::Table;
use crate::ItemsError;

/// Values listed per facet at most; `truncated` says when one had more.
pub const MAX_FACET_VALUES: usize = 1000;

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Facets {
    /// Every column of the file, in its order.
    pub columns: Vec<String>,
    /// The fail tags any row carries, sorted.
    pub tags: Vec<String>,
    /// Each grouping key (the `group.<key>` columns) and its values, sorted.
    pub groups: BTreeMap<String, Vec<String>>,
    /// Whether a list stopped at [`MAX_FACET_VALUES`].
    pub truncated: bool,
}

/// Adds the values of `values` to `set`, up to the bound.
fn gather(values: &StringArray, set: &mut BTreeSet<String>, truncated: &mut bool) {
    for v in values.iter().flatten() {
        if set.len() >= MAX_FACET_VALUES {
            *truncated |= !set.contains(v);
        } else if !set.contains(v) {
            set.insert(v.to_owned());
        }
    }
}

pub(crate) fn facets(table: &Table, path: &Path) -> Result<Facets, ItemsError> {
    let columns: Vec<String> = (table.schema().fields().iter())
        .map(|f| f.name().clone())
        .collect();
    let keys: Vec<String> = (columns.iter())
        .filter(|c| c.starts_with("group."))
        .cloned()
        .collect();
    let mut read = keys.clone();
    read.push("fail_tags".to_owned());
    let mut tags = BTreeSet::new();
    let mut groups: Vec<BTreeSet<String>> = vec![BTreeSet::new(); keys.len()];
    let mut truncated = false;
    for batch in table.scan(path, &read, 0..table.starts.len() - 1)? {
        let batch = batch?;
        if let Some(list) = (batch.column_by_name("fail_tags")).and_then(|c| c.as_list_opt::<i32>())
        {
            if let Some(dict) = list.values().as_dictionary_opt::<Int32Type>() {
                if let Some(values) = dict.values().as_string_opt::<i32>() {
                    gather(values, &mut tags, &mut truncated);
                }
            } else if let Some(values) = list.values().as_string_opt::<i32>() {
                // The values of the batch's rows only (a sliced list may hold more).
                let offsets = list.value_offsets();
                let (start, end) = (offsets[0] as usize, offsets[list.len()] as usize);
                gather(&values.slice(start, end - start), &mut tags, &mut truncated);
            }
        }
        for (key, set) in keys.iter().zip(groups.iter_mut()) {
            let Some(column) = batch.column_by_name(key) else {
                continue;
            };
            if let Some(dict) = column.as_dictionary_opt::<Int32Type>() {
                if let Some(values) = dict.values().as_string_opt::<i32>() {
                    gather(values, set, &mut truncated);
                }
            } else if let Some(values) = column.as_string_opt::<i32>() {
                gather(values, set, &mut truncated);
            }
        }
    }
    Ok(Facets {
        columns,
        tags: tags.into_iter().collect(),
        groups: (keys.iter())
            .map(|k| k.trim_start_matches("group.").to_owned())
            .zip(groups.into_iter().map(|s| s.into_iter().collect()))
            .collect(),
        truncated,
    })
}
