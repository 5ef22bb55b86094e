//! Reading a `report.json` for comparison, streaming: the items array is split off in large
//! blocks and visited one item at a time and only what pairing and the statistics need is kept (the id, the pass/fail outcome,
//! the overall score, each score and metric as an f64 column, the group fields as interned
//! values, the item's byte offset), so two 10^6-item reports fit in a few hundred MiB. The
//! flipped items are read again, whole, from their offsets ([`read_items_at`]), for their judge
//! reasonings.
//!
//! Both item shapes are read: support-judge's seed shape under `results` (dimensions as
//! top-level `{score, reasoning}` objects, `model`/`prompt_version` beside them) and the result
//! records under `items` (`group`, `metrics`, `scores`).

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::fs::File;
use std::path::{Path, PathBuf};

use evalfleet_model::gate::Gate;
use evalfleet_model::suite::{CompareOptions, Grouping};
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::CompareError;
use borrowed::{Entries, Number, Text};

mod borrowed;
mod items_at;
mod split;

pub(crate) use items_at::read_items_at;

/// What a quantity is: a judge dimension's score or a metric (the pass/fail outcome is kept
/// apart, in [`Report::passed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Score,
    Metric,
    Pass,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Score => "score",
            Kind::Metric => "metric",
            Kind::Pass => "pass",
        }
    }
}

/// One score or metric over every item, NaN where the item has it null or absent.
#[derive(Debug)]
pub(crate) struct Column {
    pub kind: Kind,
    pub name: String,
    pub values: Vec<f64>,
}

/// The suite as the report's `config` records it: what comparing needs of it.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct SuiteView {
    pub name: String,
    pub kind: String,
    #[serde(default)]
    pub group_by: Vec<Grouping>,
    #[serde(default)]
    pub gates: Vec<Gate>,
    #[serde(default)]
    pub compare: CompareOptions,
}

/// A report reduced to what comparing needs.
#[derive(Debug)]
pub(crate) struct Report {
    pub path: PathBuf,
    pub run_id: Option<String>,
    pub suite: SuiteView,
    pub ids: Vec<Box<str>>,
    /// 1 passed, 0 failed.
    pub passed: Vec<u8>,
    pub overall: Vec<f64>,
    pub columns: Vec<Column>,
    /// Group field name → each item's interned value (u32::MAX = absent).
    pub group_fields: BTreeMap<String, Vec<u32>>,
    pub group_values: Vec<String>,
    /// Ids of the items whose evaluation failed (the report's `failed` list).
    pub failed: Vec<Box<str>>,
    /// Each item's byte offset in the file (of its `{`) and its length in bytes.
    pub offsets: Vec<u64>,
    pub lens: Vec<u32>,
}

impl Report {
    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }

    /// The item's value of group field `key`, if it has one.
    pub(crate) fn group_value(&self, key: &str, item: usize) -> Option<&str> {
        let v = *self.group_fields.get(key)?.get(item)?;
        self.group_values.get(v as usize).map(String::as_str)
    }

    pub(crate) fn column(&self, kind: Kind, name: &str) -> Option<&Column> {
        self.columns
            .iter()
            .find(|c| c.kind == kind && c.name == name)
    }
}

/// Finds BASE or NEW: a `report.json` path, a report directory, or a run id under
/// `reports_dir`.
pub fn resolve(arg: &str, reports_dir: &Path) -> Result<PathBuf, CompareError> {
    let path = Path::new(arg);
    if path.is_file() {
        return Ok(path.to_owned());
    }
    if path.is_dir() {
        let file = path.join("report.json");
        if file.is_file() {
            return Ok(file);
        }
        return Err(CompareError::NotFound {
            arg: arg.to_owned(),
            looked: format!("the directory has no report.json ({})", file.display()),
        });
    }
    let by_id = reports_dir.join(arg).join("report.json");
    if !arg.contains('/') && by_id.is_file() {
        return Ok(by_id);
    }
    Err(CompareError::NotFound {
        arg: arg.to_owned(),
        looked: format!(
            "it is not a report.json file or a report directory, and there is no run '{arg}' in the reports directory ({} does not exist)",
            by_id.display()
        ),
    })
}

/// Reads `path` (pass 1): every item's id, outcome, overall score, scores, metrics and groups.
/// The file is split into items and the rest in large blocks ([`split`]) and each item is
/// parsed from its slice.
pub(crate) fn read_report(path: &Path) -> Result<Report, CompareError> {
    let file = File::open(path).map_err(|source| CompareError::Read {
        path: path.to_owned(),
        source,
    })?;
    let parse_err = |message: String| CompareError::Parse {
        path: path.to_owned(),
        message,
    };
    let mut b = Builder::default();
    let skeleton =
        split::split(file, &mut Parse { b: &mut b }).map_err(|e| split_error(path, e))?;
    let mut de = serde_json::Deserializer::from_slice(&skeleton);
    TopLevel { b: &mut b }
        .deserialize(&mut de)
        .and_then(|()| de.end())
        .map_err(|e| parse_err(e.to_string()))?;
    let invalid = |message: String| CompareError::Parse {
        path: path.to_owned(),
        message,
    };
    let config = b.config.ok_or_else(|| {
        invalid("it has no `config` (the suite it ran): is it an evalfleet report.json?".into())
    })?;
    let suite: SuiteView = serde_json::from_value(config)
        .map_err(|e| invalid(format!("its `config` is not a suite: {e}")))?;
    if !b.saw_items {
        return Err(invalid(
            "it has neither `results` nor `items`: is it an evalfleet report.json?".into(),
        ));
    }
    let n = b.ids.len();
    for c in &mut b.columns {
        c.values.resize(n, f64::NAN);
    }
    for v in b.group_fields.values_mut() {
        v.resize(n, u32::MAX);
    }
    Ok(Report {
        path: path.to_owned(),
        run_id: b.run_id,
        suite,
        ids: b.ids,
        passed: b.passed,
        overall: b.overall,
        columns: b.columns,
        group_fields: b.group_fields,
        group_values: b.interned.values,
        failed: b.failed,
        offsets: b.offsets,
        lens: b.lens,
    })
}

/// A split error as the user reads it: with the line and column in the file.
fn split_error(path: &Path, e: split::SplitError) -> CompareError {
    let (at, message, inner) = match e {
        split::SplitError::Io(source) => {
            return CompareError::Read {
                path: path.to_owned(),
                source,
            }
        }
        split::SplitError::Shape { at, message } => (at, message, None),
        split::SplitError::Sink { at, error } => {
            let text = error.to_string();
            let text = text
                .rsplit_once(" at line ")
                .map_or(text.as_str(), |(m, _)| m);
            (
                at,
                text.to_owned(),
                Some((error.line() as u64, error.column() as u64)),
            )
        }
    };
    let start = File::open(path).and_then(|f| split::line_column(f, at));
    let position = match (start, inner) {
        (Ok((line, column)), Some((1, c))) => format!("line {line} column {}", column + c - 1),
        (Ok((line, _)), Some((l, c))) => format!("line {} column {c}", line + l - 1),
        (Ok((line, column)), None) => format!("line {line} column {column}"),
        (Err(_), _) => format!("byte {at}"),
    };
    CompareError::Parse {
        path: path.to_owned(),
        message: format!("{message} at {position}"),
    }
}

/// Pass 1's [`split::Sink`]: what precedes the items (the totals: how many there are) is parsed
/// first, then each item from its slice.
struct Parse<'a> {
    b: &'a mut Builder,
}

impl split::Sink for Parse<'_> {
    fn before_items(&mut self, prefix: &[u8]) -> Result<(), serde_json::Error> {
        // The prefix ends with the items array's `[`: closing it and the document makes it
        // whole. Whatever it holds is read again, whole, from the skeleton at the end.
        let mut doc = Vec::with_capacity(prefix.len() + 2);
        doc.extend_from_slice(prefix);
        doc.extend_from_slice(b"]}");
        TopLevel { b: self.b }.deserialize(&mut serde_json::Deserializer::from_slice(&doc))
    }

    fn item(&mut self, offset: u64, bytes: &[u8]) -> Result<(), serde_json::Error> {
        self.b.item_offset = offset;
        Item { b: self.b }.deserialize(&mut serde_json::Deserializer::from_slice(bytes))?;
        let len = u32::try_from(bytes.len())
            .map_err(|_| <serde_json::Error as de::Error>::custom("an item of more than 4 GiB"))?;
        self.b.lens.push(len);
        Ok(())
    }
}

#[derive(Default)]
struct Interner {
    index: HashMap<String, u32>,
    values: Vec<String>,
}

impl Interner {
    fn intern(&mut self, s: &str) -> u32 {
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
struct Builder {
    /// The expected number of items (from `totals`), 0 when unknown.
    capacity: usize,
    /// The byte offset of the item being read.
    item_offset: u64,
    offsets: Vec<u64>,
    lens: Vec<u32>,
    run_id: Option<String>,
    config: Option<Value>,
    saw_items: bool,
    ids: Vec<Box<str>>,
    passed: Vec<u8>,
    overall: Vec<f64>,
    columns: Vec<Column>,
    column_index: HashMap<(Kind, String), usize>,
    group_fields: BTreeMap<String, Vec<u32>>,
    interned: Interner,
    failed: Vec<Box<str>>,
}

impl Builder {
    /// Reserves room for `items` items, once: the skeleton read after the items names the
    /// totals again, and reserving then would double every column.
    fn reserve(&mut self, items: usize) {
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

    fn set_value(&mut self, kind: Kind, name: &str, item: usize, value: f64) {
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

    fn set_group(&mut self, key: &str, item: usize, value: &str) {
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

struct TopLevel<'a> {
    b: &'a mut Builder,
}

impl<'de> DeserializeSeed<'de> for TopLevel<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for TopLevel<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a report.json object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        #[derive(Deserialize)]
        struct RunView {
            id: Option<String>,
        }
        #[derive(Deserialize)]
        struct TotalsView {
            ok: Option<u64>,
        }
        #[derive(Deserialize)]
        struct FailedView {
            #[serde(default)]
            id: String,
        }
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "run" => self.b.run_id = map.next_value::<RunView>()?.id,
                // The number of items, known before they come: every column is allocated once,
                // at its final size (growing by doubling would need up to twice the memory).
                "totals" => {
                    let hint = map.next_value::<TotalsView>()?.ok.unwrap_or(0);
                    self.b.reserve(hint.min(1 << 28) as usize);
                }
                "results" | "items" => {
                    self.b.saw_items = true;
                    map.next_value_seed(Items { b: self.b })?
                }
                "failed" => {
                    let failed: Vec<FailedView> = map.next_value()?;
                    self.b.failed = failed
                        .into_iter()
                        .filter(|f| !f.id.is_empty())
                        .map(|f| f.id.into_boxed_str())
                        .collect();
                }
                "config" => self.b.config = Some(map.next_value()?),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

struct Items<'a> {
    b: &'a mut Builder,
}

impl<'de> DeserializeSeed<'de> for Items<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Items<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of items")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Item { b: &mut *self.b })?.is_some() {}
        Ok(())
    }
}

struct Item<'a> {
    b: &'a mut Builder,
}

impl<'de> DeserializeSeed<'de> for Item<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

/// Keys of a seed-shape result that are not judge dimensions.
pub(crate) const SEED_OTHER_KEYS: &[&str] = &[
    "index",
    "fail_tags",
    "usage",
    "latency_ms",
    "attempts",
    "metadata",
    "line",
    "run_id",
    "suite",
    "outcome",
    "method_used",
    "reason",
    "details",
];

/// A `{score, ...}` cell: its score, ignoring everything else.
#[derive(Deserialize)]
struct ScoreCell {
    score: Option<f64>,
}

impl<'de> Visitor<'de> for Item<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an item object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let b = self.b;
        let item = b.ids.len();
        let offset = b.item_offset;
        let mut id: Option<String> = None;
        let mut passed: Option<bool> = None;
        let mut overall = f64::NAN;
        // Keys and strings are borrowed from the item's bytes where they have no escapes: a
        // million items would otherwise allocate tens of millions of short strings.
        while let Some(Text(key)) = map.next_key::<Text>()? {
            match key.as_ref() {
                "id" => id = Some(map.next_value::<Text>()?.0.into_owned()),
                "passed" => passed = Some(map.next_value()?),
                "overall_score" => overall = map.next_value::<Option<f64>>()?.unwrap_or(f64::NAN),
                "model" | "prompt_version" => {
                    if let Some(Text(v)) = map.next_value::<Option<Text>>()? {
                        b.set_group(&key, item, &v);
                    }
                }
                "group" => {
                    let group = map.next_value::<Entries<Value>>()?.sorted();
                    for (Text(k), v) in group {
                        match v {
                            Value::String(s) => b.set_group(&k, item, &s),
                            Value::Null => {}
                            other => b.set_group(&k, item, &other.to_string()),
                        }
                    }
                }
                "metrics" => {
                    let metrics = map.next_value::<Entries<Number>>()?.sorted();
                    for (Text(k), Number(v)) in metrics {
                        if let Some(x) = v {
                            b.set_value(Kind::Metric, &k, item, x);
                        }
                    }
                }
                "scores" => {
                    let scores = map.next_value::<Entries<Option<ScoreCell>>>()?.sorted();
                    for (Text(k), cell) in scores {
                        if let Some(x) = cell.and_then(|c| c.score) {
                            b.set_value(Kind::Score, &k, item, x);
                        }
                    }
                }
                k if SEED_OTHER_KEYS.contains(&k) => {
                    map.next_value::<IgnoredAny>()?;
                }
                _ => {
                    // A seed-shape judge dimension: `{score, reasoning, judge}` or null.
                    let v: Value = map.next_value()?;
                    // A null cell or a null score still registers the dimension (NaN), so a
                    // dimension no item was scored on is listed rather than forgotten.
                    if v.is_null() || v.get("score").is_some() {
                        let x = v.get("score").and_then(Value::as_f64).unwrap_or(f64::NAN);
                        b.set_value(Kind::Score, &key, item, x);
                    }
                }
            }
        }
        let id: String = id.ok_or_else(|| de::Error::custom(format!("item {item} has no `id`")))?;
        let passed = passed
            .ok_or_else(|| de::Error::custom(format!("item '{id}' has no `passed` outcome")))?;
        b.ids.push(id.into_boxed_str());
        b.passed.push(u8::from(passed));
        b.overall.push(overall);
        b.offsets.push(offset);
        Ok(())
    }
}
