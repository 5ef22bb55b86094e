//! The result store seam: where result records live until the report is written, and the inputs
//! a run's examples share (log-analysis scenarios, stored once per run by content digest).
//!
//! `ResultStore` has two implementations: Redis for the fleet and [`InProcessStore`] for the
//! embedded `run`. Both store a record at most once per (run, index) — a redelivered message is
//! never counted twice — and hand every stored record to the aggregator as an event.
//!
//! The in-process store keeps records in a [`Spill`] file, so a 10^6-example run costs ~16 MB
//! of memory instead of the records themselves, and reports stream them back in dataset order.

use std::io;
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::spill::Spill;
use evalfleet_model::record::{Outcome, ResultRecord};
use evalfleet_report::{GrowingItems, ItemSource, ReportError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PutOutcome {
    Stored,
    /// The index was stored before (a redelivery): nothing was counted.
    AlreadyStored,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub ok: u64,
    pub failed: u64,
    pub skipped: u64,
}

impl Counts {
    pub fn done(&self) -> u64 {
        self.ok + self.failed + self.skipped
    }

    pub fn add(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Ok => self.ok += 1,
            Outcome::Failed => self.failed += 1,
            Outcome::Skipped => self.skipped += 1,
        }
    }
}

/// Why a store operation failed. [`StoreError::is_transient`] is the one rule a consumer settles
/// a message by: a transient error is retried, then the message is requeued; any other is
/// permanent and the message goes to the dead-letter queue.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store is unreachable or did not answer in time (a Redis restart): worth retrying.
    #[error("result store unavailable: {0}")]
    Unavailable(String),
    #[error("result store I/O: {0}")]
    Io(#[from] io::Error),
    #[error("result store: {0}")]
    Backend(String),
    #[error("stored result {index} of run '{run}' does not parse: {message}")]
    Corrupt {
        run: String,
        index: u64,
        message: String,
    },
}

impl StoreError {
    /// Whether another attempt may succeed.
    pub fn is_transient(&self) -> bool {
        matches!(self, StoreError::Unavailable(_))
    }
}

#[async_trait]
pub trait ResultStore: Send + Sync + 'static {
    /// Stores a record, counts it and emits its event, atomically and at most once per index.
    /// Takes the record: the event carries it on to the aggregator without a copy.
    async fn put(&self, rec: ResultRecord) -> Result<PutOutcome, StoreError>;
    /// The outcome counts of a run.
    async fn counts(&self, run_id: &str) -> Result<Counts, StoreError>;
    /// Which of `indices` already have a stored result: re-submitting a run publishes only the
    /// others (resume = submit).
    async fn stored(&self, run_id: &str, indices: &[u64]) -> Result<Vec<bool>, StoreError>;
    /// Stores a scenario of the run under its digest (the producer does, before publishing the
    /// first example that names it). Storing the same digest again changes nothing.
    async fn put_scenario(&self, run_id: &str, digest: &str, json: &str) -> Result<(), StoreError>;
    /// The scenario stored under `digest` for the run, if any.
    async fn scenario(&self, run_id: &str, digest: &str) -> Result<Option<String>, StoreError>;
}

/// What the embedded store holds besides the records: counts, and stored records not yet
/// handed to the aggregator.
#[derive(Default)]
struct Tally {
    counts: Counts,
    pending: Vec<ResultRecord>,
}

/// The embedded store for one run. Stored records are also sent to the aggregator's channel,
/// in batches of `event_batch` (one channel hand-over per record would cost a thread wake-up
/// each, more than folding the record).
pub struct InProcessStore {
    run_id: String,
    spill: Arc<Spill>,
    tally: Mutex<Tally>,
    events: async_channel::Sender<Vec<ResultRecord>>,
    event_batch: usize,
    /// The run's scenarios by digest (a handful, whatever the dataset's size).
    scenarios: Mutex<std::collections::HashMap<String, String>>,
}

impl InProcessStore {
    /// A store for `run_id` and the receiving end of its event channel: batches of up to
    /// `event_batch` records, at most `capacity` batches waiting before `put` waits too.
    pub fn new(
        run_id: &str,
        capacity: usize,
        event_batch: usize,
    ) -> io::Result<(Self, async_channel::Receiver<Vec<ResultRecord>>)> {
        let (tx, rx) = async_channel::bounded(capacity.max(1));
        let store = InProcessStore {
            run_id: run_id.to_owned(),
            spill: Arc::new(Spill::new(run_id)?),
            tally: Mutex::default(),
            events: tx,
            event_batch: event_batch.max(1),
            scenarios: Mutex::default(),
        };
        Ok((store, rx))
    }

    /// The stored records as they are stored, for `items.parquet` written as the run goes.
    pub fn growing(&self) -> Arc<dyn GrowingItems> {
        self.spill.clone()
    }

    /// No more results will be stored: hands over the last events; the channel ends once drained.
    pub async fn close_events(&self) {
        let rest = self
            .lock()
            .map(|mut s| std::mem::take(&mut s.pending))
            .unwrap_or_default();
        if !rest.is_empty() {
            let _ = self.events.send(rest).await;
        }
        self.events.close();
    }

    fn scenarios_lock(
        &self,
    ) -> Result<std::sync::MutexGuard<'_, std::collections::HashMap<String, String>>, StoreError>
    {
        self.scenarios
            .lock()
            .map_err(|_| StoreError::Backend("scenario map lock poisoned".into()))
    }

    fn lock(&self) -> Result<MutexGuard<'_, Tally>, StoreError> {
        self.tally
            .lock()
            .map_err(|_| StoreError::Backend("store tally lock poisoned".into()))
    }

    /// Stores the record; returns a full batch of events to hand over, if this one filled it.
    fn write(
        &self,
        rec: ResultRecord,
    ) -> Result<(PutOutcome, Option<Vec<ResultRecord>>), StoreError> {
        let bytes = serde_json::to_vec(&rec).map_err(|e| StoreError::Backend(e.to_string()))?;
        if !self.spill.put(rec.index, rec.outcome, &bytes)? {
            return Ok((PutOutcome::AlreadyStored, None));
        }
        let mut tally = self.lock()?;
        tally.counts.add(rec.outcome);
        tally.pending.push(rec);
        let full =
            (tally.pending.len() >= self.event_batch).then(|| std::mem::take(&mut tally.pending));
        Ok((PutOutcome::Stored, full))
    }
}

#[async_trait]
impl ResultStore for InProcessStore {
    async fn put(&self, rec: ResultRecord) -> Result<PutOutcome, StoreError> {
        if rec.run_id != self.run_id {
            return Err(StoreError::Backend(format!(
                "this store holds run '{}', not '{}'",
                self.run_id, rec.run_id
            )));
        }
        let (outcome, events) = self.write(rec)?;
        if let Some(events) = events {
            // A closed channel means nobody aggregates: the record is stored all the same.
            let _ = self.events.send(events).await;
        }
        Ok(outcome)
    }

    async fn counts(&self, _run_id: &str) -> Result<Counts, StoreError> {
        Ok(self.lock()?.counts)
    }

    async fn stored(&self, _run_id: &str, indices: &[u64]) -> Result<Vec<bool>, StoreError> {
        Ok(self.spill.stored(indices)?)
    }

    async fn put_scenario(
        &self,
        _run_id: &str,
        digest: &str,
        json: &str,
    ) -> Result<(), StoreError> {
        self.scenarios_lock()?
            .entry(digest.to_owned())
            .or_insert_with(|| json.to_owned());
        Ok(())
    }

    async fn scenario(&self, _run_id: &str, digest: &str) -> Result<Option<String>, StoreError> {
        Ok(self.scenarios_lock()?.get(digest).cloned())
    }
}

impl ItemSource for InProcessStore {
    fn for_each_item(
        &self,
        only: Option<Outcome>,
        f: &mut dyn FnMut(&ResultRecord) -> Result<(), ReportError>,
    ) -> Result<(), ReportError> {
        self.spill.for_each_item(only, f)
    }

    fn for_each_where(
        &self,
        wanted: &(dyn Fn(u64) -> bool + Sync),
        f: &mut dyn FnMut(&ResultRecord) -> Result<(), ReportError>,
    ) -> Result<(), ReportError> {
        self.spill.for_each_where(wanted, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(index: u64, outcome: Outcome) -> ResultRecord {
        let mut r = ResultRecord::skipped(
            "r1",
            "support-judge",
            index,
            None,
            format!("id{index}"),
            "x".into(),
        );
        r.outcome = outcome;
        r
    }

    fn collect(store: &InProcessStore, only: Option<Outcome>) -> Vec<u64> {
        let mut seen = Vec::new();
        store
            .for_each_item(only, &mut |r| {
                seen.push(r.index);
                Ok(())
            })
            .unwrap();
        seen
    }

    #[test]
    fn stores_once_per_index_and_streams_in_index_order() {
        let (store, events) = InProcessStore::new("r1", 16, 3).unwrap();
        for i in [3, 0, 2, 1] {
            let o = if i == 2 { Outcome::Failed } else { Outcome::Ok };
            assert_eq!(
                crate::testing::block_on(store.put(rec(i, o))).unwrap(),
                PutOutcome::Stored
            );
        }
        assert_eq!(
            crate::testing::block_on(store.put(rec(2, Outcome::Ok))).unwrap(),
            PutOutcome::AlreadyStored
        );
        assert_eq!(
            crate::testing::block_on(store.counts("r1")).unwrap(),
            Counts {
                ok: 3,
                failed: 1,
                skipped: 0
            }
        );
        assert_eq!(events.len(), 1, "one full batch of three so far");
        crate::testing::block_on(store.close_events());
        let handed: Vec<u64> = std::iter::from_fn(|| events.try_recv().ok())
            .flatten()
            .map(|r| r.index)
            .collect();
        assert_eq!(handed, vec![3, 0, 2, 1], "the redelivery emitted no event");
        assert_eq!(collect(&store, None), vec![0, 1, 2, 3]);
        assert_eq!(collect(&store, Some(Outcome::Failed)), vec![2]);
        assert!(crate::testing::block_on(store.put(ResultRecord {
            run_id: "other".into(),
            ..rec(9, Outcome::Ok)
        }))
        .is_err());
    }

    #[test]
    fn large_runs_read_back_across_chunks() {
        let (store, events) = InProcessStore::new("r1", 1, 1).unwrap();
        crate::testing::block_on(store.close_events());
        drop(events);
        let big = "z".repeat(3000);
        for i in (0..2000).rev() {
            let mut r = rec(i, Outcome::Ok);
            r.reason = Some(big.clone());
            crate::testing::block_on(store.put(r)).unwrap();
        }
        let all = collect(&store, None);
        assert_eq!(all.len(), 2000);
        assert!(all.windows(2).all(|w| w[0] < w[1]));
    }
}
