//! What a fleet worker needs to know about the runs whose messages it receives: their spec and
//! whether they were cancelled, and where to keep a failed example's message for `retry`. The
//! Redis registry implements it; the trait keeps the worker free of Redis.

use std::future::Future;

use serde::{Deserialize, Serialize};

use crate::spec::RunSpec;
use crate::store::StoreError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunState {
    Submitting,
    Running,
    Complete,
    Cancelled,
}

pub trait RunDirectory: Send + Sync + 'static {
    /// The run's spec, None for a run nobody registered (or that expired).
    fn spec(
        &self,
        run_id: &str,
    ) -> impl Future<Output = Result<Option<RunSpec>, StoreError>> + Send;
    fn state(
        &self,
        run_id: &str,
    ) -> impl Future<Output = Result<Option<RunState>, StoreError>> + Send;
    /// Keeps the message of an example that failed, so `evalfleet retry` can publish it again.
    fn keep_failed_message(
        &self,
        run_id: &str,
        index: u64,
        message_json: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
}
