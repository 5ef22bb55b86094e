//! An `items.parquet` opened for queries: its footer read once (with the offset index, so a
//! read of a few rows skips the pages that do not hold them, and the number columns' page
//! statistics, which a sort's first page is pruned by), where each row group starts, and
//! a second view of the same footer that reads low-cardinality text columns as dictionaries (a
//! scan of `status` or `group.model` compares small integer keys, never materialising
//! 10^7 strings).

use std::fs::File;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReader,
    ParquetRecordBatchReaderBuilder, RowSelection,
};
use parquet::arrow::ProjectionMask;
use parquet::basic::Type as PhysicalType;
use parquet::file::metadata::{ColumnChunkMask, PageIndexPolicy};

use crate::ItemsError;

pub(crate) struct Table {
    /// The footer, columns as written (what a page's rows are read with).
    pub(crate) plain: ArrowReaderMetadata,
    /// The same footer, low-cardinality text columns as dictionaries (what scans read with).
    pub(crate) dict: ArrowReaderMetadata,
    /// The first row of each row group, and the row count after the last.
    pub(crate) starts: Vec<u64>,
}

/// Text columns whose values repeat: read as dictionaries when scanned.
fn repeats(name: &str) -> bool {
    name == "status" || name.starts_with("group.") || name.ends_with(".judge")
}

impl Table {
    pub(crate) fn open(path: &Path) -> Result<Table, ItemsError> {
        let file = File::open(path).map_err(|e| ItemsError::io(path, e))?;
        let options = ArrowReaderOptions::new().with_offset_index_policy(PageIndexPolicy::Optional);
        // The page statistics of the number columns, which a sort's first page is pruned by;
        // a text column's (ids, reasonings) would cost memory and prune nothing.
        let footer = ArrowReaderMetadata::load(&file, options.clone())?;
        let numbers = (footer
            .metadata()
            .file_metadata()
            .schema_descr()
            .columns()
            .iter())
        .enumerate()
        .filter(|(_, c)| c.physical_type() != PhysicalType::BYTE_ARRAY)
        .map(|(i, _)| i);
        let options = options
            .with_column_index_policy(PageIndexPolicy::Optional)
            .with_column_index_mask(ColumnChunkMask::columns(numbers));
        let plain = ArrowReaderMetadata::load(&file, options.clone())?;
        let dict = || DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
        let hinted: Vec<Field> = (plain.schema().fields().iter())
            .map(|f| match f.data_type() {
                DataType::Utf8 if repeats(f.name()) => f.as_ref().clone().with_data_type(dict()),
                // The tags: a list of dictionary keys.
                DataType::List(item) if item.data_type() == &DataType::Utf8 => {
                    let item = item.as_ref().clone().with_data_type(dict());
                    f.as_ref()
                        .clone()
                        .with_data_type(DataType::List(Arc::new(item)))
                }
                _ => f.as_ref().clone(),
            })
            .collect();
        let hinted: SchemaRef = Arc::new(Schema::new(hinted));
        let dict =
            ArrowReaderMetadata::try_new(plain.metadata().clone(), options.with_schema(hinted))?;
        let mut starts = vec![0u64];
        for rg in plain.metadata().row_groups() {
            let last = *starts.last().unwrap_or(&0);
            starts.push(last + rg.num_rows().max(0) as u64);
        }
        if *starts.last().unwrap_or(&0) > u64::from(u32::MAX) {
            return Err(ItemsError::Io {
                path: path.to_owned(),
                source: std::io::Error::other("more than 2^32 rows: too many to page through"),
            });
        }
        Ok(Table {
            plain,
            dict,
            starts,
        })
    }

    /// The footer's size in memory.
    pub(crate) fn bytes(&self) -> usize {
        self.plain.metadata().memory_size()
    }

    pub(crate) fn rows(&self) -> u64 {
        *self.starts.last().unwrap_or(&0)
    }

    pub(crate) fn schema(&self) -> &SchemaRef {
        self.plain.schema()
    }

    /// The row group holding row `pos`.
    pub(crate) fn group_of(&self, pos: u64) -> usize {
        self.starts.partition_point(|s| *s <= pos) - 1
    }

    /// The row groups cut into `parts` runs of about equal length (fewer when there are fewer
    /// groups), for scans in parallel.
    pub(crate) fn parts(&self, parts: usize) -> Vec<Range<usize>> {
        let groups = self.starts.len() - 1;
        let parts = parts.clamp(1, groups.max(1));
        (0..parts)
            .map(|i| groups * i / parts..groups * (i + 1) / parts)
            .collect()
    }

    /// A reader of `columns` (by name, as a scan reads them: dictionaries where they repeat)
    /// over the row groups `groups`.
    pub(crate) fn scan(
        &self,
        path: &Path,
        columns: &[String],
        groups: Range<usize>,
    ) -> Result<ParquetRecordBatchReader, ItemsError> {
        self.scan_selected(path, columns, groups.collect(), None)
    }

    /// A reader of `columns` over the row groups `groups` (ascending), only the rows of
    /// `selection` in them when given.
    pub(crate) fn scan_selected(
        &self,
        path: &Path,
        columns: &[String],
        groups: Vec<usize>,
        selection: Option<RowSelection>,
    ) -> Result<ParquetRecordBatchReader, ItemsError> {
        let file = File::open(path).map_err(|e| ItemsError::io(path, e))?;
        let builder = ParquetRecordBatchReaderBuilder::new_with_metadata(file, self.dict.clone());
        let indices = (builder.schema().fields().iter().enumerate())
            .filter(|(_, f)| columns.contains(f.name()))
            .map(|(i, _)| i);
        let mask = ProjectionMask::roots(builder.parquet_schema(), indices);
        let builder = builder
            .with_row_groups(groups)
            .with_projection(mask)
            .with_batch_size(crate::ROWS_PER_GROUP);
        Ok(match selection {
            Some(selection) => builder.with_row_selection(selection),
            None => builder,
        }
        .build()?)
    }
}
