//! `evalfleet export`: a run's items as Parquet (the file as it is), JSON lines or CSV, read
//! row group by row group, so that a run of any size streams through in bounded memory.
//!
//! JSON lines keep every column, nulls written as `null`; CSV has no lists, so `fail_tags`
//! becomes one cell of tags joined by `;` (no tag holds one: tags are gate names).

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, ListArray, RecordBatch, StringArray};
use arrow_json::writer::LineDelimited;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::ItemsError;

/// What `export --format` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    Parquet,
    Jsonl,
    Csv,
}

/// Rows read at a time.
const BATCH_ROWS: usize = 4096;

/// Writes the items of `items` (an `items.parquet`) to `out` as `format`; returns the rows
/// written.
pub fn export(items: &Path, format: ExportFormat, out: &mut dyn Write) -> Result<u64, ItemsError> {
    let open = || File::open(items).map_err(|e| ItemsError::io(items, e));
    let builder = ParquetRecordBatchReaderBuilder::try_new(open()?)?;
    let rows = builder.metadata().file_metadata().num_rows().max(0) as u64;
    if format == ExportFormat::Parquet {
        io::copy(&mut open()?, out).map_err(|e| ItemsError::io(items, e))?;
        return Ok(rows);
    }
    let reader = builder.with_batch_size(BATCH_ROWS).build()?;
    match format {
        ExportFormat::Jsonl => {
            let mut writer = arrow_json::WriterBuilder::new()
                .with_explicit_nulls(true)
                .build::<_, LineDelimited>(out);
            for batch in reader {
                writer.write(&batch?)?;
            }
            writer.finish()?;
        }
        ExportFormat::Csv => {
            let mut writer = arrow_csv::Writer::new(out);
            for batch in reader {
                writer.write(&flat(&batch?)?)?;
            }
        }
        ExportFormat::Parquet => unreachable!("copied above"),
    }
    Ok(rows)
}

/// `batch` with its list columns as text (tags joined by `;`), for CSV.
fn flat(batch: &RecordBatch) -> Result<RecordBatch, ItemsError> {
    let schema = batch.schema();
    let mut fields = Vec::with_capacity(batch.num_columns());
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(batch.num_columns());
    for (field, column) in schema.fields().iter().zip(batch.columns()) {
        match column.as_any().downcast_ref::<ListArray>() {
            Some(list) => {
                let joined: StringArray = (0..list.len())
                    .map(|i| {
                        (!list.is_null(i)).then(|| {
                            let tags = list.value(i);
                            let tags = tags.as_any().downcast_ref::<StringArray>();
                            tags.map(|t| t.iter().flatten().collect::<Vec<_>>().join(";"))
                                .unwrap_or_default()
                        })
                    })
                    .collect();
                fields.push(arrow_schema::Field::new(
                    field.name(),
                    arrow_schema::DataType::Utf8,
                    true,
                ));
                columns.push(Arc::new(joined));
            }
            None => {
                fields.push(field.as_ref().clone());
                columns.push(column.clone());
            }
        }
    }
    let schema = Arc::new(arrow_schema::Schema::new(fields));
    Ok(RecordBatch::try_new(schema, columns)?)
}
