//! A report too large to list its items (`report.json` with `"items_file": "items.parquet"`,
//! above `reports.inline_items`): pass 1 reads the evaluated rows' figures from the Parquet
//! file into the same columns as a listed report's (reasonings left on disk), and pass 2 reads
//! the flipped items again by dataset index, in the shape `flips.rs` reads a listed item in.

use std::collections::HashSet;
use std::path::Path;

use serde_json::{json, Map, Value};

use super::builder::Builder;
use super::items_at::RawItem;
use super::Kind;
use crate::CompareError;

fn parse_err(file: &Path, e: evalfleet_items::ItemsError) -> CompareError {
    CompareError::Parse {
        path: file.to_owned(),
        message: e.to_string(),
    }
}

/// Pass 1 over `file`: every evaluated row's id, outcome, overall score, scores, metrics and
/// groups, and the failed rows' ids. An item's "offset" is its dataset index.
pub(super) fn read_items(file: &Path, b: &mut Builder) -> Result<(), CompareError> {
    evalfleet_items::read_rows(file, false, &mut |row| {
        match row.status.as_str() {
            "ok" => {
                let item = b.ids.len();
                for (dimension, score, _) in &row.scores {
                    b.set_value(Kind::Score, dimension, item, score.unwrap_or(f64::NAN));
                }
                for (metric, value) in &row.metrics {
                    if let Some(x) = value {
                        b.set_value(Kind::Metric, metric, item, *x);
                    }
                }
                for (key, value) in &row.groups {
                    if let Some(v) = value {
                        b.set_group(key, item, v);
                    }
                }
                b.ids.push(row.id.into_boxed_str());
                b.passed.push(u8::from(row.passed.unwrap_or(false)));
                b.overall.push(row.overall_score.unwrap_or(f64::NAN));
                b.offsets.push(row.index);
                b.lens.push(0);
            }
            "failed" if !row.id.is_empty() => b.failed.push(row.id.into_boxed_str()),
            _ => {}
        }
        Ok(())
    })
    .map_err(|e| parse_err(file, e))
}

/// Pass 2: calls `found` with the items at dataset `indexes` (ascending), each as a listed
/// result record would hold its scores (with reasonings) and metrics.
pub(crate) fn read_rows_at(
    file: &Path,
    indexes: &[u64],
    found: &mut dyn FnMut(&RawItem) -> Result<(), CompareError>,
) -> Result<(), CompareError> {
    let wanted: HashSet<u64> = indexes.iter().copied().collect();
    let mut failure = None;
    evalfleet_items::read_rows(file, true, &mut |row| {
        if failure.is_some() || !wanted.contains(&row.index) {
            return Ok(());
        }
        let scores: Map<String, Value> = (row.scores.into_iter())
            .map(|(d, score, reasoning)| (d, json!({"score": score, "reasoning": reasoning})))
            .collect();
        let metrics: Map<String, Value> = (row.metrics.into_iter())
            .map(|(m, v)| (m, json!(v)))
            .collect();
        let item: RawItem = [
            ("id".to_owned(), json!(row.id)),
            ("index".to_owned(), json!(row.index)),
            ("scores".to_owned(), Value::Object(scores)),
            ("metrics".to_owned(), Value::Object(metrics)),
        ]
        .into_iter()
        .collect();
        if let Err(e) = found(&item) {
            failure = Some(e);
        }
        Ok(())
    })
    .map_err(|e| parse_err(file, e))?;
    failure.map_or(Ok(()), Err)
}
