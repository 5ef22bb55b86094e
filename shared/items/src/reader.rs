//! Reading `items.parquet` back as rows of named figures: what `evalfleet compare` needs of a
//! report whose `report.json` names the file instead of listing its items. Only the columns
//! asked for are read (a comparison's first pass leaves the reasonings, the bulk of the file,
//! on disk), row group by row group.

use std::fs::File;
use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, UInt64Type};
use arrow_array::{Array, RecordBatch};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;

use crate::ItemsError;

/// One result as read back. Figures are named as in `report.json` (a dimension's name, a
/// metric's, a group key); a null cell is `None`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ItemRow {
    pub index: u64,
    pub id: String,
    /// `ok`, `failed` or `skipped`.
    pub status: String,
    pub passed: Option<bool>,
    pub overall_score: Option<f64>,
    /// Each dimension: its score, and its reasoning when asked for.
    pub scores: Vec<(String, Option<f64>, Option<String>)>,
    pub metrics: Vec<(String, Option<f64>)>,
    pub groups: Vec<(String, Option<String>)>,
}

/// What a column holds, by its name.
enum Role {
    Index,
    Id,
    Status,
    Passed,
    Overall,
    Score(String),
    Reasoning(String),
    Metric(String),
    Group(String),
}

fn role(name: &str, reasoning: bool) -> Option<Role> {
    Some(match name {
        "index" => Role::Index,
        "id" => Role::Id,
        "status" => Role::Status,
        "passed" => Role::Passed,
        "overall_score" => Role::Overall,
        _ => {
            if let Some(m) = name.strip_prefix("metric.") {
                Role::Metric(m.to_owned())
            } else if let Some(k) = name.strip_prefix("group.") {
                Role::Group(k.to_owned())
            } else if name.starts_with("target.") {
                return None;
            } else if let Some(d) = name.strip_suffix(".score") {
                Role::Score(d.to_owned())
            } else if let Some(d) = name.strip_suffix(".reasoning").filter(|_| reasoning) {
                Role::Reasoning(d.to_owned())
            } else {
                return None;
            }
        }
    })
}

/// Calls `row` with every row of `path` in file order (the dataset's). With `reasoning`, each
/// score carries its reasoning.
pub fn read_rows(
    path: &Path,
    reasoning: bool,
    row: &mut dyn FnMut(ItemRow) -> Result<(), ItemsError>,
) -> Result<(), ItemsError> {
    let file = File::open(path).map_err(|e| ItemsError::io(path, e))?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file)?;
    let wanted: Vec<(usize, Role)> = (builder.schema().fields().iter().enumerate())
        .filter_map(|(i, f)| role(f.name(), reasoning).map(|r| (i, r)))
        .collect();
    let mask = ProjectionMask::roots(builder.parquet_schema(), wanted.iter().map(|(i, _)| *i));
    let reader = builder
        .with_projection(mask)
        .with_batch_size(4096)
        .build()?;
    for batch in reader {
        rows_of(&batch?, &wanted, row)?;
    }
    Ok(())
}

fn rows_of(
    batch: &RecordBatch,
    wanted: &[(usize, Role)],
    row: &mut dyn FnMut(ItemRow) -> Result<(), ItemsError>,
) -> Result<(), ItemsError> {
    // The projected batch holds the wanted columns in schema order.
    let columns: Vec<(&Role, &dyn Array)> = wanted
        .iter()
        .zip(batch.columns())
        .map(|((_, role), c)| (role, c.as_ref()))
        .collect();
    for r in 0..batch.num_rows() {
        let mut item = ItemRow::default();
        for (role, column) in &columns {
            let null = column.is_null(r);
            let text = || (!null).then(|| column.as_string::<i32>().value(r).to_owned());
            let number = || (!null).then(|| column.as_primitive::<Float64Type>().value(r));
            match role {
                Role::Index => item.index = column.as_primitive::<UInt64Type>().value(r),
                Role::Id => item.id = text().unwrap_or_default(),
                Role::Status => item.status = text().unwrap_or_default(),
                Role::Passed => item.passed = (!null).then(|| column.as_boolean().value(r)),
                Role::Overall => item.overall_score = number(),
                Role::Score(d) => item.scores.push((d.clone(), number(), None)),
                Role::Reasoning(d) => {
                    if let Some(s) = item.scores.iter_mut().find(|s| &s.0 == d) {
                        s.2 = text();
                    }
                }
                Role::Metric(m) => item.metrics.push((m.clone(), number())),
                Role::Group(k) => item.groups.push((k.clone(), text())),
            }
        }
        row(item)?;
    }
    Ok(())
}
