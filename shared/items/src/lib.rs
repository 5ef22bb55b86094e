//! # evalfleet-items
//! Owns: a run's item table as Parquet — `items.parquet` in the run's report directory, one row
//! per result in the dataset's order, written row group by row group ([`ItemsWriter`]), its
//! columns ([`ItemsLayout`], documented in `docs/ITEMS.md`) — its export to JSON lines and CSV
//! ([`export`]), and pages of it filtered and sorted ([`query`]: what the aggregator's
//! `GET /runs/{id}/items` serves). Depends on `evalfleet-model` only; its only I/O is the
//! files it is given.
//!
//! Why a file of its own: `report.json` carries every item as JSON, which `pandas`, DuckDB or a
//! warehouse must parse whole; Parquet is what they read natively, by column, compressed.

mod columns;
mod export;
pub mod query;
mod reader;
mod writer;

use std::path::{Path, PathBuf};

pub use columns::ItemsLayout;
pub use export::{export, ExportFormat};
pub use query::{query, Facets, ItemPage, ItemQuery, ItemsCache};
pub use reader::{read_rows, ItemRow};
pub use writer::{ItemsWriter, ROWS_PER_GROUP};

/// The item table's file name in a report directory.
pub const FILE_NAME: &str = "items.parquet";

#[derive(Debug, thiserror::Error)]
pub enum ItemsError {
    #[error("'{path}': {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("parquet: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
    #[error("arrow: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
    /// A query's parameter `param` cannot be answered (the API's 400).
    #[error("{param}: {message}")]
    Query {
        param: &'static str,
        message: String,
    },
}

impl ItemsError {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        ItemsError::Io {
            path: path.to_owned(),
            source,
        }
    }
}

#[cfg(test)]
mod tests;
