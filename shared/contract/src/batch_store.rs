//! The durable state of batch mode in the fleet: which judge questions wait for a batch, which
//! batches exist and where each is, the replies that came back, and the examples parked until
//! their replies are in. Behind a trait because it lives in Redis (`evalfleet-fleet`), while the
//! worker that parks examples and the coordinator that runs batches stay free of Redis.
//!
//! The rules that make a crash anywhere harmless are the store's, each one atomic:
//! - a question is queued for a batch once: the first [`BatchStore::park`] that names its
//!   `custom_id` queues it, later ones only wait for it;
//! - parking checks the replies in the same step, so an example never waits for a reply that
//!   is already there (nobody would wake it);
//! - [`BatchStore::collect`] moves questions from the queue into a new batch record in one step,
//!   and only for the holder of the provider's lease: a question is in at most one batch;
//! - a parked example is released by value ([`BatchStore::unpark`] removes exactly the parking
//!   that was read), so a re-park in between is never lost.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::store::StoreError;

/// One judge request waiting for a batch: its provider, its `custom_id`, and the encoded batch
/// line the provider will get.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    pub provider: String,
    pub custom_id: String,
    pub line: Vec<u8>,
}

/// A question as queued: its custom_id and its batch line.
pub type Queued = (String, Vec<u8>);

/// What parking an example did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parking {
    /// The example waits; the coordinator re-enqueues it once every reply is in.
    Parked,
    /// Every reply it would wait for is already in: evaluate it again now.
    Answered,
}

/// Where a batch is, as the fleet records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BatchPhase {
    /// Its questions are taken from the queue; the provider may or may not have it yet (a
    /// coordinator that finds it in this phase looks for it at the provider before creating).
    Collected,
    /// The provider has it (`provider_id`); polled until it ends.
    Running,
    /// Its replies are stored; its examples are being re-enqueued.
    Downloaded,
    /// Every example waiting on it was re-enqueued.
    Done,
    /// The run was cancelled: the provider batch was cancelled and nobody waits for it.
    Cancelled,
}

impl BatchPhase {
    pub const ALL: [BatchPhase; 5] = [
        BatchPhase::Collected,
        BatchPhase::Running,
        BatchPhase::Downloaded,
        BatchPhase::Done,
        BatchPhase::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            BatchPhase::Collected => "collected",
            BatchPhase::Running => "running",
            BatchPhase::Downloaded => "downloaded",
            BatchPhase::Done => "done",
            BatchPhase::Cancelled => "cancelled",
        }
    }

    /// Whether the coordinator still has something to do with it.
    pub fn open(self) -> bool {
        matches!(
            self,
            BatchPhase::Collected | BatchPhase::Running | BatchPhase::Downloaded
        )
    }
}

/// One batch of one run, as recorded before and after each step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchRecord {
    pub provider: String,
    /// The name the batch carries at the provider (OpenAI `metadata.evalfleet_tag`).
    pub tag: String,
    pub phase: BatchPhase,
    /// Requests in it.
    pub requests: u64,
    /// When its questions were collected (unix ms): a batch found at the provider after a crash
    /// was created after this.
    pub collected_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_id: Option<String>,
    /// The provider's own status word, as last polled (`in_progress`, `ended` …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_status: Option<String>,
}

/// A run's batch work at a glance, for `status RUN`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BatchOverview {
    /// Questions waiting for a batch, per provider.
    pub pending: Vec<(String, u64)>,
    /// Examples parked until their replies are in.
    pub parked: u64,
    /// The run's batches.
    pub batches: Vec<(u64, BatchRecord)>,
}

#[async_trait]
pub trait BatchStore: Send + Sync {
    /// The stored result of question `custom_id` of `run` (what the coordinator wrote), if in.
    async fn answer(&self, run: &str, custom_id: &str) -> Result<Option<String>, StoreError>;

    /// Stores results by custom_id (a reply of a live fallback, or a downloaded batch's).
    async fn put_answers(&self, run: &str, answers: &[(String, String)]) -> Result<(), StoreError>;

    /// Parks example `index` of `run` (its message `message`) until every one of `questions`
    /// has a result, queueing those no one asked before.
    async fn park(
        &self,
        run: &str,
        index: u64,
        message: &str,
        questions: &[Question],
    ) -> Result<Parking, StoreError>;

    /// Takes or keeps the lease of `provider`'s coordinator for `ttl_ms`; true while `holder`
    /// has it.
    async fn lease(&self, provider: &str, holder: &str, ttl_ms: u64) -> Result<bool, StoreError>;

    /// Runs with batch work (questions queued, batches open, examples parked).
    async fn runs(&self) -> Result<Vec<String>, StoreError>;

    /// How many questions of `run` wait for a batch of `provider`.
    async fn pending_len(&self, run: &str, provider: &str) -> Result<u64, StoreError>;

    /// A page of the questions of `run` queued for `provider`, with their lines, oldest first:
    /// `count` of them from the `start`th.
    async fn pending(
        &self,
        run: &str,
        provider: &str,
        start: usize,
        count: usize,
    ) -> Result<Vec<Queued>, StoreError>;

    /// Moves the first `count` queued questions into a new batch with `record`; returns its
    /// number, or None when `holder` lost the lease.
    async fn collect(
        &self,
        run: &str,
        holder: &str,
        count: usize,
        record: &BatchRecord,
    ) -> Result<Option<u64>, StoreError>;

    /// The custom_ids of batch `n`, in batch order.
    async fn batch_cids(&self, run: &str, n: u64) -> Result<Vec<String>, StoreError>;

    /// A page of the questions of batch `n` with their lines, in batch order: `count` of them
    /// from the `start`th.
    async fn batch_questions(
        &self,
        run: &str,
        n: u64,
        start: usize,
        count: usize,
    ) -> Result<Vec<Queued>, StoreError>;

    /// The run's batches, by number.
    async fn batches(&self, run: &str) -> Result<Vec<(u64, BatchRecord)>, StoreError>;

    /// Records batch `n`'s new state; false (nothing written) when `holder` lost the lease.
    async fn set_batch(
        &self,
        run: &str,
        n: u64,
        holder: &str,
        record: &BatchRecord,
    ) -> Result<bool, StoreError>;

    /// Of the parked examples `indexes`, those whose every awaited result is in: (index, the
    /// parking as stored), to re-enqueue and then [`BatchStore::unpark`].
    async fn ready(&self, run: &str, indexes: &[u64]) -> Result<Vec<(u64, String)>, StoreError>;

    /// Removes these parkings, each only if it is still the one that was read.
    async fn unpark(&self, run: &str, parked: &[(u64, String)]) -> Result<(), StoreError>;

    /// Forgets `run` as a run with batch work when no example of it is parked, or always with
    /// `force` (a cancelled run); true when forgotten.
    async fn retire(&self, run: &str, force: bool) -> Result<bool, StoreError>;

    /// The run's batch work, for `status`.
    async fn overview(&self, run: &str, providers: &[String]) -> Result<BatchOverview, StoreError>;
}

/// A parking as stored: the awaited custom_ids on the first line, the example's message after.
pub fn parking_value(awaited: &[&str], message: &str) -> String {
    format!("{}\n{message}", awaited.join(" "))
}

/// The message of a parking read back.
pub fn parked_message(value: &str) -> &str {
    value.split_once('\n').map_or("", |(_, message)| message)
}

/// The example index a custom_id belongs to (`e<run hash>-<index>-…`, or
/// `e<run hash>-<index>k<epoch>-…` for a later epoch of a target run; see the worker's
/// `ExampleAt::key`).
pub fn index_of(custom_id: &str) -> Option<u64> {
    let part = custom_id.split('-').nth(1)?;
    part.split_once('k')
        .map_or(part, |(index, _)| index)
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parking_keeps_its_message_whole() {
        let v = parking_value(&["e1-3-0-0-a0", "e1-3-1-0-a0"], "{\"v\":2,\n\"x\":1}");
        assert_eq!(v.lines().next(), Some("e1-3-0-0-a0 e1-3-1-0-a0"));
        assert_eq!(parked_message(&v), "{\"v\":2,\n\"x\":1}");
    }

    #[test]
    fn custom_ids_name_their_example() {
        assert_eq!(index_of("e0a1b2c3d-17-0-1-r2"), Some(17));
        assert_eq!(index_of("e0a1b2c3d-17-0-1-L"), Some(17));
        assert_eq!(index_of("e0a1b2c3d-17k2-0-1-a0"), Some(17), "a later epoch");
        assert_eq!(index_of("nonsense"), None);
    }

    #[test]
    fn only_unfinished_phases_are_open() {
        let open: Vec<_> = BatchPhase::ALL.iter().filter(|p| p.open()).collect();
        assert_eq!(open.len(), 3);
        assert!(!BatchPhase::Done.open() && !BatchPhase::Cancelled.open());
    }
}
