//! evalfleet workers: take example messages off a [`WorkQueue`], evaluate them, store the result
//! and only then acknowledge the message — so a crash anywhere before the write means the
//! message is delivered again, and the store's at-most-once write means it is never counted
//! twice.

pub mod http;
pub mod judge;
pub mod metrics;
mod process;
pub mod service;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use evalfleet_shared::queue::{Delivery, QueueError, WorkQueue};
use evalfleet_shared::store::{PutOutcome, ResultStore};

pub use judge::{Judge, JudgeMode, LiveJudge};
pub use process::{process, Pipeline};

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

/// Runs `concurrency` consumers until the queue is drained and closed.
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
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..concurrency.max(1) {
        let (queue, store, pipeline, stats) = (
            queue.clone(),
            store.clone(),
            pipeline.clone(),
            stats.clone(),
        );
        tasks.spawn(async move { consume(queue, store, pipeline, stats).await });
    }
    let mut first_error = None;
    while let Some(joined) = tasks.join_next().await {
        let result = joined
            .map_err(|e| WorkerError::Task(e.to_string()))
            .and_then(|r| r);
        if let Err(e) = result {
            first_error.get_or_insert(e);
        }
    }
    first_error.map_or(Ok(()), Err)
}

async fn consume<Q: WorkQueue, S: ResultStore>(
    queue: Q,
    store: Arc<S>,
    pipeline: Arc<Pipeline>,
    stats: Arc<WorkerStats>,
) -> Result<(), WorkerError> {
    let mut evaluator = pipeline.evaluator();
    while let Some(delivery) = queue.next().await? {
        if delivery.redelivered() {
            stats.redelivered.fetch_add(1, Ordering::Relaxed);
        }
        let record = process(&mut evaluator, &pipeline.judge, delivery.message()).await;
        if let Some(reason) = pipeline.judge.stopped() {
            // The example was not judged: give it back rather than store it as failed.
            delivery.requeue().await?;
            return Err(WorkerError::Stopped(reason.to_owned()));
        }
        match store.put(record).await {
            Ok(outcome) => {
                if outcome == PutOutcome::AlreadyStored {
                    stats.duplicates.fetch_add(1, Ordering::Relaxed);
                }
                stats.processed.fetch_add(1, Ordering::Relaxed);
                delivery.ack().await?;
            }
            Err(e) => {
                // The result is not stored: let the message come back rather than lose it.
                tracing::warn!(error = %e, message_id = %delivery.message().message_id(), "storing a result failed; requeueing");
                stats.requeued.fetch_add(1, Ordering::Relaxed);
                delivery.requeue().await?;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
    Ok(())
}
