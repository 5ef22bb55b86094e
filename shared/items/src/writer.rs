//! Writing `items.parquet` row group by row group: rows are gathered in column builders and
//! written as one zstd-compressed row group every [`ROWS_PER_GROUP`] rows, so a run of any size
//! needs memory for one row group, never for the run.

use std::io::Write;

use arrow_array::RecordBatch;
use evalfleet_model::record::ResultRecord;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use crate::columns::{Columns, ItemsLayout};
use crate::ItemsError;

/// Rows per row group: large enough for columnar compression and fast scans, small enough that
/// a row group of long reasonings stays a few MiB.
pub const ROWS_PER_GROUP: usize = 8192;

/// An `items.parquet` being written.
pub struct ItemsWriter<W: Write + Send> {
    columns: Columns,
    writer: ArrowWriter<W>,
}

impl<W: Write + Send> ItemsWriter<W> {
    /// Starts the file in `out`, with the columns of `layout`.
    pub fn new(out: W, layout: &ItemsLayout) -> Result<Self, ItemsError> {
        let columns = Columns::new(layout);
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .set_max_row_group_row_count(Some(ROWS_PER_GROUP))
            .set_created_by(format!("evalfleet {}", env!("CARGO_PKG_VERSION")))
            .build();
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
