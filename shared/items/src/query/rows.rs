//! The second read of a query: the page's rows, every column, from the row groups that hold
//! them and nothing else (a row selection, with the offset index skipping the pages between),
//! as the JSON objects `evalfleet export --format jsonl` writes.

use std::fs::File;
use std::path::Path;

use arrow_json::writer::LineDelimited;
use parquet::arrow::arrow_reader::{ParquetRecordBatchReaderBuilder, RowSelection, RowSelector};
use serde_json::Value;

use super::table::Table;
use crate::ItemsError;

/// The rows at `positions`, in that order. The row groups they are in are read on up to four
/// threads (a sorted page's rows may be in a hundred row groups).
pub(crate) fn read(
    table: &Table,
    path: &Path,
    positions: &[u64],
) -> Result<Vec<Value>, ItemsError> {
    if positions.is_empty() {
        return Ok(Vec::new());
    }
    let mut wanted: Vec<u64> = positions.to_vec();
    wanted.sort_unstable();
    wanted.dedup();
    // The wanted positions cut at row group boundaries, then into runs of about equal length.
    let mut by_group: Vec<(usize, Vec<u64>)> = Vec::new();
    for p in &wanted {
        let g = table.group_of(*p);
        match by_group.last_mut() {
            Some((last, ps)) if *last == g => ps.push(*p),
            _ => by_group.push((g, vec![*p])),
        }
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
    let per = by_group.len().div_ceil(threads);
    let chunks: Vec<&[(usize, Vec<u64>)]> = by_group.chunks(per.max(1)).collect();
    let rows: Vec<Vec<Value>> = if chunks.len() == 1 {
        vec![read_groups(table, path, chunks[0])?]
    } else {
        std::thread::scope(|s| {
            let running: Vec<_> = (chunks.iter())
                .map(|c| s.spawn(move || read_groups(table, path, c)))
                .collect();
            running
                .into_iter()
                .map(|t| t.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                .collect::<Result<_, _>>()
        })?
    };
    let rows: Vec<Value> = rows.into_iter().flatten().collect();
    if rows.len() != wanted.len() {
        return Err(ItemsError::Arrow(arrow_schema::ArrowError::ComputeError(
            format!("read {} rows for {} positions", rows.len(), wanted.len()),
        )));
    }
    Ok(positions
        .iter()
        .map(|p| rows[wanted.partition_point(|w| w < p)].clone())
        .collect())
}

/// The rows at the positions of `groups` (row group, its wanted positions ascending), every
/// column, in position order.
fn read_groups(
    table: &Table,
    path: &Path,
    groups: &[(usize, Vec<u64>)],
) -> Result<Vec<Value>, ItemsError> {
    let mut selectors = Vec::new();
    for (g, positions) in groups {
        let (start, end) = (table.starts[*g], table.starts[*g + 1]);
        let mut at = start;
        for p in positions {
            if *p > at {
                selectors.push(RowSelector::skip((*p - at) as usize));
            }
            selectors.push(RowSelector::select(1));
            at = *p + 1;
        }
        if end > at {
            selectors.push(RowSelector::skip((end - at) as usize));
        }
    }
    let wanted: usize = groups.iter().map(|(_, ps)| ps.len()).sum();
    let file = File::open(path).map_err(|e| ItemsError::io(path, e))?;
    let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(file, table.plain.clone())
        .with_row_groups(groups.iter().map(|(g, _)| *g).collect())
        .with_row_selection(RowSelection::from(selectors))
        .with_batch_size(wanted)
        .build()?;
    let mut lines = Vec::new();
    {
        let mut writer = arrow_json::WriterBuilder::new()
            .with_explicit_nulls(true)
            .build::<_, LineDelimited>(&mut lines);
        for batch in reader {
            writer.write(&batch?)?;
        }
        writer.finish()?;
    }
    let rows = (lines.split(|b| *b == b'\n'))
        .filter(|l| !l.is_empty())
        .map(serde_json::from_slice)
        .collect::<Result<_, _>>()
        .map_err(|e| arrow_schema::ArrowError::JsonError(e.to_string()))?;
    Ok(rows)
}
