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
//!
//! Here: the report as comparing sees it ([`Report`]) and pass 1 ([`read_report`]). Finding
//! the file is `resolve.rs`; splitting it into items `split.rs`; parsing them `visit.rs` (with
//! `borrowed.rs`) into the columns of `builder.rs`; pass 2 `items_at.rs`.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use evalfleet_model::gate::Gate;
use evalfleet_model::suite::{CompareOptions, Grouping};
use serde::de::DeserializeSeed;
use serde::Deserialize;

use crate::CompareError;
use builder::Builder;
use visit::{Parse, TopLevel};

mod borrowed;
mod builder;
mod items_at;
mod parquet;
mod resolve;
mod split;
mod visit;

pub(crate) use items_at::read_items_at;
pub(crate) use parquet::read_rows_at;
pub use resolve::resolve;
pub(crate) use visit::SEED_OTHER_KEYS;

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
    /// Each item's byte offset in the file (of its `{`) and its length in bytes; for items
    /// read from `items_file`, its dataset index and 0.
    pub offsets: Vec<u64>,
    pub lens: Vec<u32>,
    /// The items' Parquet file, when the report names one instead of listing them.
    pub items_file: Option<PathBuf>,
    /// Agreement with people per labelled dimension (`aggregates.human_agreement`).
    pub human: BTreeMap<String, crate::human::HumanFigures>,
}

/// Where pass 2 reads a report's items again.
#[derive(Debug, Clone)]
pub(crate) enum ItemsAt {
    /// Whole, from their byte spans in report.json.
    Json(PathBuf),
    /// By dataset index, from items.parquet.
    Parquet(PathBuf),
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

    /// Where pass 2 reads this report's items.
    pub(crate) fn items_at(&self) -> ItemsAt {
        match &self.items_file {
            Some(file) => ItemsAt::Parquet(file.clone()),
            None => ItemsAt::Json(self.path.clone()),
        }
    }

    pub(crate) fn column(&self, kind: Kind, name: &str) -> Option<&Column> {
        self.columns
            .iter()
            .find(|c| c.kind == kind && c.name == name)
    }
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
    let config = b.config.take().ok_or_else(|| {
        invalid("it has no `config` (the suite it ran): is it an evalfleet report.json?".into())
    })?;
    let suite: SuiteView = serde_json::from_value(config)
        .map_err(|e| invalid(format!("its `config` is not a suite: {e}")))?;
    if !b.saw_items {
        return Err(invalid(
            "it has neither `results` nor `items`: is it an evalfleet report.json?".into(),
        ));
    }
    let items_file = match b.items_file.take() {
        Some(name) => {
            let file = path.with_file_name(&name);
            parquet::read_items(&file, &mut b)?;
            Some(file)
        }
        None => None,
    };
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
        items_file,
        human: b.human,
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
