//! What pass 1 keeps of a report while its items stream past: one column per score or metric
//! (f64, NaN where absent), the group fields as interned values, and each item's id, outcome,
//! overall score and byte span, allocated once at the size the totals announce.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use super::{Column, Kind};

#[derive(Default)]
pub(super) struct Interner {
    pub(super) index: HashMap<String, u32>,
    pub(super) values: Vec<String>,
}

impl Interner {
    pub(super) fn intern(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.values.len() as u32;
        self.values.push(s.to_owned());
        self.index.insert(s.to_owned(), i);
        i
    }
}

#[derive(Default)]
pub(super) struct Builder {
    /// The expected number of items (from `totals`), 0 when unknown.
    pub(super) capacity: usize,
    /// The byte offset of the item being read.
    pub(super) item_offset: u64,
    pub(super) offsets: Vec<u64>,
    pub(super) lens: Vec<u32>,
    pub(super) run_id: Option<String>,
    pub(super) config: Option<Value>,
    pub(super) saw_items: bool,
    /// `items_file`: the report names its items' Parquet file instead of listing them.
    pub(super) items_file: Option<String>,
    pub(super) ids: Vec<Box<str>>,
    pub(super) passed: Vec<u8>,
    pub(super) overall: Vec<f64>,
    pub(super) columns: Vec<Column>,
    pub(super) column_index: HashMap<(Kind, String), usize>,
    pub(super) group_fields: BTreeMap<String, Vec<u32>>,
    pub(super) interned: Interner,
    pub(super) failed: Vec<Box<str>>,
    /// `aggregates.human_agreement`, when the report has it.
    pub(super) human: std::collections::BTreeMap<String, crate::human::HumanFigures>,
}

impl Builder {
    /// Reserves room for `items` items, once: the skeleton read after the items names the
    /// totals again, and reserving then would double every column.
    pub(super) fn reserve(&mut self, items: usize) {
        if self.capacity > 0 {
            return;
        }
        self.capacity = items;
        self.ids.reserve_exact(items);
        self.passed.reserve_exact(items);
        self.overall.reserve_exact(items);
        self.offsets.reserve_exact(items);
        self.lens.reserve_exact(items);
    }

    pub(super) fn set_value(&mut self, kind: Kind, name: &str, item: usize, value: f64) {
        let slot = match self.column_index.get(&(kind, name.to_owned())) {
            Some(&s) => s,
            None => {
                self.columns.push(Column {
                    kind,
                    name: name.to_owned(),
                    values: Vec::with_capacity(self.capacity),
                });
                self.column_index
                    .insert((kind, name.to_owned()), self.columns.len() - 1);
                self.columns.len() - 1
            }
        };
        let values = &mut self.columns[slot].values;
        if values.len() <= item {
            values.resize(item + 1, f64::NAN);
        }
        values[item] = value;
    }

    pub(super) fn set_group(&mut self, key: &str, item: usize, value: &str) {
        let v = self.interned.intern(value);
        let capacity = self.capacity;
        let values = self
            .group_fields
            .entry(key.to_owned())
            .or_insert_with(|| Vec::with_capacity(capacity));
        if values.len() <= item {
            values.resize(item + 1, u32::MAX);
        }
        values[item] = v;
    }
}
