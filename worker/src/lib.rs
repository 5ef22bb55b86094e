//! evalfleet workers: take example messages off a [`WorkQueue`], evaluate them, store the result
//! and only then acknowledge the message — so a crash anywhere before the write means the
//! message is delivered again, and the store's at-most-once write means it is never counted
//! twice.

pub mod consume;
pub mod coordinator;
pub mod http;
pub mod judge;
pub mod metrics;
mod process;
mod scenarios;
pub mod service;
mod store_retry;

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use evalfleet_contract::queue::{QueueError, WorkQueue};
use evalfleet_contract::store::ResultStore;
use tokio_util::sync::CancellationToken;

pub use consume::{run_consumers, OneRun, Resolution, Runs};
pub use judge::{build_judge, Judge, JudgeMode, LiveJudge, LiveParts};
pub use process::{process, Pipeline, Processed};

#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error(transparent)]
    Queue(#[from] QueueError),
    #[error("worker task failed: {0}")]
    Task(String),
    /// A judge's API key was rejected: nothing more can be judged.
    #[error("{0}")]
    Stopped(String),
}

/// What the workers did.
#[derive(Debug, Default)]
pub struct WorkerStats {
    pub processed: AtomicU64,
    pub redelivered: AtomicU64,
    pub duplicates: AtomicU64,
    pub requeued: AtomicU64,
}

/// How long the embedded run lets in-flight examples finish once a consumer had to stop.
const EMBEDDED_DRAIN: Duration = Duration::from_secs(60);

/// The embedded run's consumers: `concurrency` of them until the queue is drained and closed.
pub async fn run_workers<Q, S>(
    queue: Q,
    store: Arc<S>,
    pipeline: Arc<Pipeline>,
    concurrency: usize,
    stats: Arc<WorkerStats>,
) -> Result<(), WorkerError>
where
    Q: WorkQueue + Clone,
    S: ResultStore,
{
    run_consumers(
        queue,
        store,
        Arc::new(OneRun(pipeline)),
        concurrency,
        stats,
        CancellationToken::new(),
        EMBEDDED_DRAIN,
    )
    .await
}
