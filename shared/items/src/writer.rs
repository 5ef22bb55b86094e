//! Writing `items.parquet` row group by row group: rows are gathered in column builders and
//! written as one zstd-compressed row group every [`ROWS_PER_GROUP`] rows, so a run of any size
//! needs memory for one row group, never for the run.

use std::io::Write;

use arrow_array::RecordBatch;
use evalfleet_model::record::ResultRecord;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;

use crate::columns::{Columns, ItemsLayout};
use crate::ItemsError;

/// Rows per row group: large enough for columnar compression and fast scans, small enough that
/// a row group of long reasonings stays a few MiB.
pub const ROWS_PER_GROUP: usize = 8192;

/// Rows per data page at most: a query that reads one row of a row group (a sorted page's rows
/// are spread over the file) decompresses this many of each column, not the whole group.
pub const ROWS_PER_PAGE: usize = 1024;

/// Whether a column's values repeat within a row group (a status, a group, a judge, a score on
/// a 1–5 scale): only those are written with a dictionary. A dictionary of an id, a reasoning or
/// a latency holds nearly every value of its row group, and a reader of one row (a sorted page's
/// rows are spread over the file) must decode it whole; without one, reading a row costs its
/// page.
fn repeats(name: &str) -> bool {
    matches!(
        name,
        "status" | "fail_tags" | "overall_score" | "attempts" | "target.name" | "target.attempts"
    ) || name.starts_with("group.")
        || name.starts_with("metric.")
        || name.ends_with(".judge")
        || (name.ends_with(".score") && !name.starts_with("target."))
        || name.ends_with(".human")
}

/// An `items.parquet` being written.
pub struct ItemsWriter<W: Write + Send> {
    columns: Columns,
    writer: ArrowWriter<W>,
}

impl<W: Write + Send> ItemsWriter<W> {
    /// Starts the file in `out`, with the columns of `layout`.
    pub fn new(out: W, layout: &ItemsLayout) -> Result<Self, ItemsError> {
        let columns = Columns::new(layout);
        let mut props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .set_max_row_group_row_count(Some(ROWS_PER_GROUP))
            .set_data_page_row_count_limit(ROWS_PER_PAGE)
            .set_created_by(format!("evalfleet {}", env!("CARGO_PKG_VERSION")));
        for field in columns.schema().fields() {
            if !repeats(field.name()) {
                props = props
                    .set_column_dictionary_enabled(ColumnPath::from(field.name().as_str()), false);
            }
        }
        let props = props.build();
        let writer = ArrowWriter::try_new(out, columns.schema(), Some(props))?;
        Ok(ItemsWriter { columns, writer })
    }

    /// Adds one result as a row; a full row group goes to the file.
    pub fn push(&mut self, rec: &ResultRecord) -> Result<(), ItemsError> {
        self.columns.push(rec);
        if self.columns.rows() >= ROWS_PER_GROUP {
            self.write_group()?;
        }
        Ok(())
    }

    /// Writes the rows gathered so far as one row group.
    fn write_group(&mut self) -> Result<(), ItemsError> {
        if self.columns.rows() == 0 {
            return Ok(());
        }
        let batch = RecordBatch::try_new(self.columns.schema(), self.columns.take())?;
        self.writer.write(&batch)?;
        self.writer.flush()?;
        Ok(())
    }

    /// Writes the last row group and the footer; the file is complete.
    pub fn finish(mut self) -> Result<W, ItemsError> {
        self.write_group()?;
        Ok(self.writer.into_inner()?)
    }
}
