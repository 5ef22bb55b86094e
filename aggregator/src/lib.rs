//! The aggregator: folds result events into the run's incremental aggregates as they arrive
//! and, once the run is complete, writes its reports from those aggregates plus the stored
//! items. It never holds more than one item, so its memory is O(groups) for a run of any size.

pub mod completion;
mod fold;
mod gauges;
pub mod http;
pub mod metrics;
pub mod queue_gauges;
pub mod report_writer;
mod results_log;
mod run_dir;
pub mod service;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use evalfleet_contract::store::StoreError;
use evalfleet_model::record::ResultRecord;
use evalfleet_report::aggregate::RunAggregator;
use evalfleet_report::{ItemsAhead, ReportError, ReportInput};

#[derive(Debug, thiserror::Error)]
pub enum AggregatorError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("writing the reports of run '{run}': {message}")]
    Report { run: String, message: String },
    /// Results could not be written durably: their events are not acknowledged.
    #[error("logging results of run '{run}': {source}")]
    Log { run: String, source: std::io::Error },
}

/// Folds every event batch into `agg` until the event channel closes, keeping `ahead`'s
/// columns those of `agg`; `seen` counts records.
pub async fn follow(
    events: async_channel::Receiver<Vec<ResultRecord>>,
    agg: &mut RunAggregator,
    seen: &AtomicU64,
    ahead: &mut ItemsAhead,
) {
    while let Ok(batch) = events.recv().await {
        batch.iter().for_each(|record| agg.observe(record));
        seen.fetch_add(batch.len() as u64, Ordering::Relaxed);
        if let Err(e) = ahead.keep_up(agg) {
            tracing::warn!(error = %e, "cannot write items.parquet as the run goes; the report will write it whole");
        }
    }
}

/// Writes `report.json`, `summary.md`, `report.html` and `junit.xml` into `dir`.
pub fn write_reports(dir: &Path, input: &ReportInput<'_>) -> Result<Vec<PathBuf>, ReportError> {
    evalfleet_report::write_all(dir, input)
}
