//! The run registry: what every role knows about a run without reading its results — its
//! metadata ([`RunMeta`]), the spec it was submitted with, its status and the report lock, and
//! the messages of its failed examples (for `retry`).
//!
//! One trait for every role: the producer registers a run and records its progress, workers
//! read its spec and status, the aggregator finds complete runs and finishes them, and the
//! command line reads and operates runs. Redis implements it for the fleet; [`InProcessRegistry`]
//! for tests of the roles and of the rules of what may happen to a run.

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use async_trait::async_trait;
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

/// A run as the registry holds it. Timestamps are RFC 3339 strings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunMeta {
    pub id: String,
    pub suite: String,
    pub status: RunStatus,
    /// Unknown while the dataset is still being read.
    pub total: Option<u64>,
    pub published: u64,
    pub created_at: String,
    pub finished_at: Option<String>,
    pub dataset: String,
    pub judge: String,
    pub gates_passed: Option<bool>,
}

/// What finishing a run records beside its status.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict<'a> {
    pub gates_passed: bool,
    /// The run's `summary.md`, for `evalfleet report RUN`.
    pub summary_md: &'a str,
    /// Where its report files were written.
    pub report_dir: &'a str,
}

#[async_trait]
pub trait RunRegistry: Send + Sync + 'static {
    /// Registers a run with its spec; false when it was registered before (a resumed submit:
    /// nothing changes, the spec a run started with stays its spec).
    async fn register(&self, meta: &RunMeta, spec: &RunSpec) -> Result<bool, StoreError>;
    /// The run's entry; None when unknown or expired.
    async fn run(&self, id: &str) -> Result<Option<RunMeta>, StoreError>;
    /// Up to `limit` runs, newest first.
    async fn runs(&self, limit: usize) -> Result<Vec<RunMeta>, StoreError>;
    /// The spec the run was registered with; None for a run nobody registered (or expired).
    async fn spec(&self, id: &str) -> Result<Option<RunSpec>, StoreError>;
    /// Counts `n` more published messages.
    async fn add_published(&self, id: &str, n: u64) -> Result<(), StoreError>;
    /// Records that every example of the run up to dataset index `index` is published
    /// (confirmed by the queue): a resumed submit publishes only what comes after.
    async fn set_published_through(&self, id: &str, index: u64) -> Result<(), StoreError>;
    /// The index [`RunRegistry::set_published_through`] recorded last, if any.
    async fn published_through(&self, id: &str) -> Result<Option<u64>, StoreError>;
    /// Sets the number of examples (known once the producer has read the whole dataset).
    async fn set_total(&self, id: &str, total: u64) -> Result<(), StoreError>;
    /// Changes the run's status. Complete or cancelled: `finished_at` is set and the run's
    /// data expires after the retention. Submitting or running (a `retry` reopening a finished
    /// run): it is kept again and the old verdict is cleared.
    async fn set_status(&self, id: &str, status: RunStatus) -> Result<(), StoreError>;
    /// Marks the run complete with its verdict (and its retention, as `set_status`).
    async fn finish(&self, id: &str, verdict: &Verdict<'_>) -> Result<(), StoreError>;
    /// The run's `summary.md`, once finished.
    async fn summary(&self, id: &str) -> Result<Option<String>, StoreError>;
    /// Where the run's reports were written, once finished.
    async fn report_dir(&self, id: &str) -> Result<Option<String>, StoreError>;
    /// Takes the run's report lock for `ttl`: true for exactly one caller until the lock
    /// expires or its owner releases it.
    async fn try_lock_report(
        &self,
        id: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<bool, StoreError>;
    /// Releases the report lock if `owner` still holds it; true when released.
    async fn release_report_lock(&self, id: &str, owner: &str) -> Result<bool, StoreError>;
    /// Keeps the message of an example that failed, so `evalfleet retry` can publish it again.
    async fn keep_failed_message(
        &self,
        run_id: &str,
        index: u64,
        message_json: &str,
    ) -> Result<(), StoreError>;
    /// Takes (and forgets) the kept messages of the run's failed examples.
    async fn take_failed(&self, id: &str) -> Result<Vec<String>, StoreError>;
}

/// One run's entry in the in-process registry.
struct Entry {
    meta: RunMeta,
    spec: RunSpec,
    summary: Option<String>,
    report_dir: Option<String>,
    failed: HashMap<u64, String>,
    published_through: Option<u64>,
}

/// The registry in memory: for the roles' and the run operations' tests, and for anything that
/// runs a whole fleet in one process. Runs never expire.
#[derive(Default)]
pub struct InProcessRegistry {
    runs: Mutex<Vec<Entry>>,
    locks: Mutex<HashMap<String, (String, Instant)>>,
}

impl InProcessRegistry {
    fn entries(&self) -> Result<MutexGuard<'_, Vec<Entry>>, StoreError> {
        self.runs
            .lock()
            .map_err(|_| StoreError::Backend("registry lock poisoned".into()))
    }

    fn with_run<T>(&self, id: &str, f: impl FnOnce(&mut Entry) -> T) -> Result<T, StoreError> {
        let mut entries = self.entries()?;
        let entry = entries
            .iter_mut()
            .find(|e| e.meta.id == id)
            .ok_or_else(|| StoreError::Backend(format!("no run '{id}'")))?;
        Ok(f(entry))
    }

    fn read<T>(&self, id: &str, f: impl FnOnce(&Entry) -> T) -> Result<Option<T>, StoreError> {
        Ok(self.entries()?.iter().find(|e| e.meta.id == id).map(f))
    }

    fn change_status(&self, id: &str, status: RunStatus) -> Result<(), StoreError> {
        self.with_run(id, |e| {
            e.meta.status = status;
            if status.is_finished() {
                e.meta.finished_at = Some(now());
            } else {
                e.meta.finished_at = None;
                e.meta.gates_passed = None;
            }
        })
    }
}

fn now() -> String {
    jiff::Timestamp::now().to_string()
}

#[async_trait]
impl RunRegistry for InProcessRegistry {
    async fn register(&self, meta: &RunMeta, spec: &RunSpec) -> Result<bool, StoreError> {
        let mut entries = self.entries()?;
        if entries.iter().any(|e| e.meta.id == meta.id) {
            return Ok(false);
        }
        entries.push(Entry {
            meta: meta.clone(),
            spec: spec.clone(),
            summary: None,
            report_dir: None,
            failed: HashMap::new(),
            published_through: None,
        });
        Ok(true)
    }

    async fn run(&self, id: &str) -> Result<Option<RunMeta>, StoreError> {
        self.read(id, |e| e.meta.clone())
    }

    async fn runs(&self, limit: usize) -> Result<Vec<RunMeta>, StoreError> {
        Ok(self
            .entries()?
            .iter()
            .rev()
            .take(limit)
            .map(|e| e.meta.clone())
            .collect())
    }

    async fn spec(&self, id: &str) -> Result<Option<RunSpec>, StoreError> {
        self.read(id, |e| e.spec.clone())
    }

    async fn add_published(&self, id: &str, n: u64) -> Result<(), StoreError> {
        self.with_run(id, |e| e.meta.published += n)
    }

    async fn set_published_through(&self, id: &str, index: u64) -> Result<(), StoreError> {
        self.with_run(id, |e| e.published_through = Some(index))
    }

    async fn published_through(&self, id: &str) -> Result<Option<u64>, StoreError> {
        Ok(self.read(id, |e| e.published_through)?.flatten())
    }

    async fn set_total(&self, id: &str, total: u64) -> Result<(), StoreError> {
        self.with_run(id, |e| e.meta.total = Some(total))
    }

    async fn set_status(&self, id: &str, status: RunStatus) -> Result<(), StoreError> {
        self.change_status(id, status)
    }

    async fn finish(&self, id: &str, verdict: &Verdict<'_>) -> Result<(), StoreError> {
        self.change_status(id, RunStatus::Complete)?;
        self.with_run(id, |e| {
            e.meta.gates_passed = Some(verdict.gates_passed);
            e.summary = Some(verdict.summary_md.to_owned());
            e.report_dir = Some(verdict.report_dir.to_owned());
        })
    }

    async fn summary(&self, id: &str) -> Result<Option<String>, StoreError> {
        Ok(self.read(id, |e| e.summary.clone())?.flatten())
    }

    async fn report_dir(&self, id: &str) -> Result<Option<String>, StoreError> {
        Ok(self.read(id, |e| e.report_dir.clone())?.flatten())
    }

    async fn try_lock_report(
        &self,
        id: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        let mut locks = self
            .locks
            .lock()
            .map_err(|_| StoreError::Backend("lock table poisoned".into()))?;
        let now = Instant::now();
        if locks.get(id).is_some_and(|(_, until)| *until > now) {
            return Ok(false);
        }
        locks.insert(id.to_owned(), (owner.to_owned(), now + ttl));
        Ok(true)
    }

    async fn release_report_lock(&self, id: &str, owner: &str) -> Result<bool, StoreError> {
        let mut locks = self
            .locks
            .lock()
            .map_err(|_| StoreError::Backend("lock table poisoned".into()))?;
        if locks.get(id).is_some_and(|(o, _)| o == owner) {
            locks.remove(id);
            return Ok(true);
        }
        Ok(false)
    }

    async fn keep_failed_message(
        &self,
        run_id: &str,
        index: u64,
        message_json: &str,
    ) -> Result<(), StoreError> {
        self.with_run(run_id, |e| {
            e.failed.insert(index, message_json.to_owned());
        })
    }

    async fn take_failed(&self, id: &str) -> Result<Vec<String>, StoreError> {
        self.with_run(id, |e| {
            let mut kept: Vec<(u64, String)> = e.failed.drain().collect();
            kept.sort_unstable_by_key(|(i, _)| *i);
            kept.into_iter().map(|(_, m)| m).collect()
        })
    }
}
