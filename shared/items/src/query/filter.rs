//! Which rows a query keeps: `status`, `tag` (in `fail_tags`), `group` (`group.<key>` columns)
//! and `q` (a case-insensitive substring of the id, the reason, every reasoning, the outputs or
//! the metadata), all of them together. Evaluated batch by batch on the projected columns,
//! cheapest first: the text search looks only at rows every other filter kept.

use arrow_array::cast::AsArray;
use arrow_array::types::Int32Type;
use arrow_array::{Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Schema};

use super::{bad, ItemQuery};
use crate::ItemsError;

/// A query's filters, resolved against the file's columns.
#[derive(Debug)]
pub(crate) struct Filter {
    /// (column, value) pairs that must be equal.
    equal: Vec<(String, String)>,
    tag: Option<String>,
    q: Option<Needle>,
    /// The columns `q` searches.
    q_columns: Vec<String>,
}

/// The columns a text search looks in: the id, the reason, every `<dimension>.reasoning`, the
/// outputs and the metadata.
fn searched(name: &str) -> bool {
    matches!(name, "id" | "reason" | "outputs" | "metadata")
        || (name.ends_with(".reasoning") && !name.starts_with("target."))
}

impl Filter {
    pub(crate) fn resolve(query: &ItemQuery, schema: &Schema) -> Result<Filter, ItemsError> {
        let has = |name: &str| schema.field_with_name(name).is_ok();
        let mut equal = Vec::new();
        if let Some(status) = &query.status {
            equal.push(("status".to_owned(), status.clone()));
        }
        for (key, value) in &query.group {
            let column = format!("group.{key}");
            if !has(&column) {
                let keys: Vec<&str> = (schema.fields().iter())
                    .filter_map(|f| f.name().strip_prefix("group."))
                    .collect();
                let known = if keys.is_empty() {
                    "the run has no groupings".to_owned()
                } else {
                    format!("the run's: {}", keys.join(", "))
                };
                return Err(bad("group", format!("no grouping '{key}' ({known})")));
            }
            equal.push((column, value.clone()));
        }
        let q_columns = match &query.q {
            Some(_) => (schema.fields().iter())
                .filter(|f| searched(f.name()) && f.data_type() == &DataType::Utf8)
                .map(|f| f.name().clone())
                .collect(),
            None => Vec::new(),
        };
        Ok(Filter {
            equal,
            tag: query.tag.clone(),
            q: query.q.as_deref().map(Needle::new),
            q_columns,
        })
    }

    /// The columns the filter reads.
    pub(crate) fn columns(&self) -> Vec<String> {
        let mut names: Vec<String> = self.equal.iter().map(|(c, _)| c.clone()).collect();
        if self.tag.is_some() {
            names.push("fail_tags".to_owned());
        }
        names.extend(self.q_columns.iter().cloned());
        names
    }

    /// A text identifying the filter, for the cache.
    pub(crate) fn key(&self) -> String {
        format!("{:?}|{:?}|{:?}", self.equal, self.tag, self.q)
    }

    /// Clears `keep[r]` for every row of `batch` the filter drops.
    pub(crate) fn apply(&self, batch: &RecordBatch, keep: &mut [bool]) {
        for (column, value) in &self.equal {
            if let Some(c) = batch.column_by_name(column) {
                keep_equal(c.as_ref(), value, keep);
            }
        }
        if let (Some(tag), Some(c)) = (&self.tag, batch.column_by_name("fail_tags")) {
            keep_tagged(c.as_ref(), tag, keep);
        }
        if let Some(needle) = &self.q {
            let columns: Vec<&StringArray> = (self.q_columns.iter())
                .filter_map(|n| batch.column_by_name(n))
                .filter_map(|c| c.as_string_opt::<i32>())
                .collect();
            for (r, k) in keep.iter_mut().enumerate() {
                if *k {
                    *k = columns
                        .iter()
                        .any(|c| !c.is_null(r) && needle.found_in(c.value(r)));
                }
            }
        }
    }
}

/// Keeps the rows whose `column` (text, or dictionary-encoded text) equals `value`.
fn keep_equal(column: &dyn Array, value: &str, keep: &mut [bool]) {
    if let Some(dict) = column.as_dictionary_opt::<Int32Type>() {
        let Some(values) = dict.values().as_string_opt::<i32>() else {
            keep.fill(false);
            return;
        };
        let hit: Vec<bool> = (0..values.len())
            .map(|i| !values.is_null(i) && values.value(i) == value)
            .collect();
        let keys = dict.keys();
        for (r, k) in keep.iter_mut().enumerate() {
            *k = *k && !keys.is_null(r) && hit[keys.value(r) as usize];
        }
    } else if let Some(text) = column.as_string_opt::<i32>() {
        for (r, k) in keep.iter_mut().enumerate() {
            *k = *k && !text.is_null(r) && text.value(r) == value;
        }
    } else {
        keep.fill(false);
    }
}

/// Keeps the rows whose list of tags holds `tag`. The tags are read as dictionary keys: a row
/// is kept when one of its keys is the tag's.
fn keep_tagged(column: &dyn Array, tag: &str, keep: &mut [bool]) {
    let Some(list) = column.as_list_opt::<i32>() else {
        keep.fill(false);
        return;
    };
    let offsets = list.value_offsets();
    let values = list.values();
    let hit: Box<dyn Fn(usize) -> bool + '_> =
        if let Some(dict) = values.as_dictionary_opt::<Int32Type>() {
            let Some(names) = dict.values().as_string_opt::<i32>() else {
                keep.fill(false);
                return;
            };
            let wanted: Vec<bool> = (0..names.len())
                .map(|i| !names.is_null(i) && names.value(i) == tag)
                .collect();
            let keys = dict.keys();
            Box::new(move |i| !keys.is_null(i) && wanted[keys.value(i) as usize])
        } else if let Some(tags) = values.as_string_opt::<i32>() {
            Box::new(move |i| !tags.is_null(i) && tags.value(i) == tag)
        } else {
            keep.fill(false);
            return;
        };
    for (r, k) in keep.iter_mut().enumerate() {
        if *k {
            let (start, end) = (offsets[r] as usize, offsets[r + 1] as usize);
            *k = (start..end).any(&hit);
        }
    }
}

/// A text searched for without regard to case.
#[derive(Debug)]
pub(crate) struct Needle {
    lower: String,
}

impl Needle {
    pub(crate) fn new(text: &str) -> Needle {
        Needle {
            lower: text.to_lowercase(),
        }
    }

    /// Whether `hay` holds the needle, in any case. An ASCII needle is compared byte by byte
    /// without lower-casing `hay` (no allocation: this runs on every cell of a scan), the
    /// candidates found by `memchr`.
    pub(crate) fn found_in(&self, hay: &str) -> bool {
        let needle = self.lower.as_bytes();
        if needle.is_empty() {
            return true;
        }
        if self.lower.is_ascii() {
            let bytes = hay.as_bytes();
            let Some(last) = bytes.len().checked_sub(needle.len()) else {
                return false;
            };
            let (first, rest) = (needle[0], &needle[1..]);
            memchr::memchr2_iter(first, first.to_ascii_uppercase(), &bytes[..=last])
                .any(|i| bytes[i + 1..i + needle.len()].eq_ignore_ascii_case(rest))
        } else {
            hay.to_lowercase().contains(&self.lower)
        }
    }
}
