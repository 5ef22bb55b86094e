//! evalfleet workers: take example messages off a [`WorkQueue`], evaluate them, store the result
//! and only then acknowledge the message — so a crash anywhere before the write means the
//! message is delivered again, and the store's at-most-once write means it is never counted
//! twice.

pub mod consume;
pub mod coordinator;
pub mod http;
mod json_call;
pub mod judge;
pub mod metrics;
mod one_run;
mod process;
pub mod rate_limit;
mod scenarios;
pub mod scorer;
pub mod service;
mod store_retry;
pub mod target;

use std::sync::atomic::AtomicU64;

use evalfleet_contract::queue::QueueError;

pub use consume::{run_consumers, Resolution, Runs};
pub use judge::{build_judge, Judge, JudgeMode, LiveJudge, LiveParts};
pub use one_run::{run_workers, OneRun};
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
