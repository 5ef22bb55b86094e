//! The order of a page: a column, ascending or (`-` before it) descending, nulls last either
//! way, ties by dataset order; and the bounded heap that finds the best `k` rows of a scan
//! without holding the rest ([`TopK`]).

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int32Type, UInt32Type, UInt64Type};
use arrow_array::{
    Array, BooleanArray, Float64Array, Int32Array, RecordBatch, StringArray, UInt32Array,
    UInt64Array,
};
use arrow_schema::{DataType, Schema};

use super::bad;
use crate::ItemsError;

/// A resolved `sort`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Order {
    /// Dataset order (`index`, or no `sort`), ascending or descending.
    Index { desc: bool },
    /// Another column.
    Column { name: String, desc: bool },
}

impl Order {
    pub(crate) fn resolve(sort: Option<&str>, schema: &Schema) -> Result<Order, ItemsError> {
        let Some(sort) = sort else {
            return Ok(Order::Index { desc: false });
        };
        let (desc, name) = match sort.strip_prefix('-') {
            Some(name) => (true, name),
            None => (false, sort),
        };
        if name == "index" {
            return Ok(Order::Index { desc });
        }
        let field = schema.field_with_name(name).map_err(|_| {
            bad(
                "sort",
                format!("no column '{name}' (index, id, status, overall_score, <dimension>.score, metric.<name>, latency_ms, cost_usd, ...)"),
            )
        })?;
        match field.data_type() {
            DataType::UInt64
            | DataType::UInt32
            | DataType::Float64
            | DataType::Boolean
            | DataType::Utf8 => Ok(Order::Column {
                name: name.to_owned(),
                desc,
            }),
            other => Err(bad(
                "sort",
                format!("column '{name}' holds {other}, which has no order"),
            )),
        }
    }

    /// A text identifying the order, for the cache.
    pub(crate) fn key(&self) -> String {
        format!("{self:?}")
    }
}

/// One row's sort key as read: a number mapped to an order-preserving `u64`, a text, or null.
#[derive(Debug, Clone, Copy)]
pub(crate) enum KeyRef<'a> {
    Num(u64),
    Text(&'a str),
    Null,
}

/// `v` as a `u64` in the same order as `f64::total_cmp`.
pub(crate) fn f64_key(v: f64) -> u64 {
    let bits = v.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    }
}

/// The sort column of one batch, its type resolved once (not per row).
pub(crate) enum KeyColumn<'a> {
    U64(&'a UInt64Array),
    U32(&'a UInt32Array),
    F64(&'a Float64Array),
    Bool(&'a BooleanArray),
    Text(&'a StringArray),
    Dict(&'a Int32Array, &'a StringArray),
    Missing,
}

impl<'a> KeyColumn<'a> {
    pub(crate) fn of(batch: &'a RecordBatch, name: &str) -> KeyColumn<'a> {
        let Some(c) = batch.column_by_name(name) else {
            return KeyColumn::Missing;
        };
        match c.data_type() {
            DataType::UInt64 => KeyColumn::U64(c.as_primitive::<UInt64Type>()),
            DataType::UInt32 => KeyColumn::U32(c.as_primitive::<UInt32Type>()),
            DataType::Float64 => KeyColumn::F64(c.as_primitive::<Float64Type>()),
            DataType::Boolean => KeyColumn::Bool(c.as_boolean()),
            DataType::Utf8 => KeyColumn::Text(c.as_string::<i32>()),
            DataType::Dictionary(_, _) => {
                let dict = c.as_dictionary::<Int32Type>();
                match dict.values().as_string_opt::<i32>() {
                    Some(values) => KeyColumn::Dict(dict.keys(), values),
                    None => KeyColumn::Missing,
                }
            }
            _ => KeyColumn::Missing,
        }
    }

    pub(crate) fn key(&self, row: usize) -> KeyRef<'a> {
        let num = |null: bool, v: u64| if null { KeyRef::Null } else { KeyRef::Num(v) };
        match *self {
            KeyColumn::U64(c) => num(c.is_null(row), c.value(row)),
            KeyColumn::U32(c) => num(c.is_null(row), c.value(row).into()),
            KeyColumn::F64(c) => num(c.is_null(row), f64_key(c.value(row))),
            KeyColumn::Bool(c) => num(c.is_null(row), c.value(row).into()),
            KeyColumn::Text(c) if !c.is_null(row) => KeyRef::Text(c.value(row)),
            KeyColumn::Dict(keys, values) if !keys.is_null(row) => {
                let k = keys.value(row) as usize;
                if values.is_null(k) {
                    KeyRef::Null
                } else {
                    KeyRef::Text(values.value(k))
                }
            }
            _ => KeyRef::Null,
        }
    }
}

/// A key held in the heap. Variants in this order: numbers and texts before nulls (nulls
/// last); a descending text is a `Reverse` and a descending number its complement, so the
/// derived order is always the page's.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    Num(u64),
    Text(Box<str>),
    TextDesc(Reverse<Box<str>>),
    Null,
}

#[derive(Debug, PartialEq, Eq)]
struct Entry {
    key: Key,
    pos: u32,
    /// The heap keeps the last `k` of the page's order rather than the first.
    flip: bool,
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        let c = self.key.cmp(&other.key).then(self.pos.cmp(&other.pos));
        if self.flip {
            c.reverse()
        } else {
            c
        }
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The first `k` rows of a scan in the page's order (or, flipped, the last `k`), in a max-heap
/// of at most `k` entries: a row enters only when it beats the worst held, and only then is
/// its text copied.
pub(crate) struct TopK {
    heap: BinaryHeap<Entry>,
    k: usize,
    desc: bool,
    flip: bool,
}

impl TopK {
    pub(crate) fn new(k: usize, desc: bool, flip: bool) -> TopK {
        TopK {
            heap: BinaryHeap::with_capacity(k.min(1 << 16)),
            k,
            desc,
            flip,
        }
    }

    fn owned(&self, key: KeyRef<'_>) -> Key {
        match key {
            KeyRef::Num(n) if self.desc => Key::Num(!n),
            KeyRef::Num(n) => Key::Num(n),
            KeyRef::Text(t) if self.desc => Key::TextDesc(Reverse(t.into())),
            KeyRef::Text(t) => Key::Text(t.into()),
            KeyRef::Null => Key::Null,
        }
    }

    /// `(key, pos)` against a held entry, in the heap's order.
    fn cmp_held(&self, key: KeyRef<'_>, pos: u32, held: &Entry) -> Ordering {
        let c = match (key, &held.key) {
            (KeyRef::Null, Key::Null) => Ordering::Equal,
            (KeyRef::Null, _) => Ordering::Greater,
            (_, Key::Null) => Ordering::Less,
            (KeyRef::Num(n), Key::Num(h)) => (if self.desc { !n } else { n }).cmp(h),
            (KeyRef::Text(t), Key::Text(h)) => t.cmp(h),
            (KeyRef::Text(t), Key::TextDesc(Reverse(h))) => h.as_ref().cmp(t),
            // One column, one kind of key.
            _ => Ordering::Equal,
        }
        .then(pos.cmp(&held.pos));
        if self.flip {
            c.reverse()
        } else {
            c
        }
    }

    pub(crate) fn offer(&mut self, key: KeyRef<'_>, pos: u32) {
        if self.k == 0 {
            return;
        }
        if self.heap.len() < self.k {
            let key = self.owned(key);
            self.heap.push(Entry {
                key,
                pos,
                flip: self.flip,
            });
            return;
        }
        let beats = self
            .heap
            .peek()
            .is_some_and(|worst| self.cmp_held(key, pos, worst) == Ordering::Less);
        if beats {
            let key = self.owned(key);
            if let Some(mut worst) = self.heap.peek_mut() {
                *worst = Entry {
                    key,
                    pos,
                    flip: self.flip,
                };
            }
        }
    }

    /// Whether a row at `pos` or after it with key `key` (or a worse one) could still enter:
    /// always while fewer than `k` are held; then only when it beats the worst held.
    pub(crate) fn could_take(&self, key: KeyRef<'_>, pos: u32) -> bool {
        self.heap.len() < self.k
            || (self.heap.peek()).is_some_and(|worst| self.cmp_held(key, pos, worst).is_lt())
    }

    /// Rows held.
    pub(crate) fn len(&self) -> usize {
        self.heap.len()
    }

    fn push(&mut self, entry: Entry) {
        if self.heap.len() < self.k {
            self.heap.push(entry);
        } else if let Some(mut worst) = self.heap.peek_mut() {
            if entry < *worst {
                *worst = entry;
            }
        }
    }

    /// Adds what `other` (a scan of other rows, with the same `k` and order) holds.
    pub(crate) fn merge(&mut self, other: TopK) {
        if self.k == 0 {
            return;
        }
        for entry in other.heap {
            self.push(entry);
        }
    }

    /// The positions held, in the page's order.
    pub(crate) fn into_positions(self) -> Vec<u32> {
        let flip = self.flip;
        let mut positions: Vec<u32> = self
            .heap
            .into_sorted_vec()
            .into_iter()
            .map(|e| e.pos)
            .collect();
        if flip {
            positions.reverse();
        }
        positions
    }
}
