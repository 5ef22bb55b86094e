//! What a fleet worker needs to know about the runs whose messages it receives: their spec and
//! whether they were cancelled, and where to keep a failed example's message for `retry`. The
//! Redis registry implements it; the trait keeps the worker free of Redis.

use std::future::Future;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::store::StoreError;
use evalfleet_suites::spec::RunSpec;

/// Where a run is in its life: the registry stores it (`run:{id}` field `status`), workers
/// read it to drop a cancelled run's messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    Submitting,
    Running,
    Complete,
    Cancelled,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Submitting => "submitting",
            RunStatus::Running => "running",
            RunStatus::Complete => "complete",
            RunStatus::Cancelled => "cancelled",
        }
    }

    /// Complete or cancelled: the run's keys expire after the retention.
    pub fn is_finished(self) -> bool {
        matches!(self, RunStatus::Complete | RunStatus::Cancelled)
    }
}

impl FromStr for RunStatus {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "submitting" => Ok(RunStatus::Submitting),
            "running" => Ok(RunStatus::Running),
            "complete" => Ok(RunStatus::Complete),
            "cancelled" => Ok(RunStatus::Cancelled),
            other => Err(format!("unknown run status '{other}'")),
        }
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
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
    ) -> impl Future<Output = Result<Option<RunStatus>, StoreError>> + Send;
    /// Keeps the message of an example that failed, so `evalfleet retry` can publish it again.
    fn keep_failed_message(
        &self,
        run_id: &str,
        index: u64,
        message_json: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
}
