//! The result store seam: where result records live until the report is written.
//!
//! `ResultStore` has two implementations: Redis for the fleet and [`InProcessStore`] for the
//! embedded `run`. Both store a record at most once per (run, index) — a redelivered message is
//! never counted twice — and hand every stored record to the aggregator as an event.
//!
//! The in-process store keeps records in an anonymous spill file with a 16-byte slot per index,
//! so a 10^6-example run costs ~16 MB of memory instead of the records themselves, and reports
//! stream them back in dataset order.

use std::fs::File;
use std::future::Future;
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::record::{Outcome, ResultRecord};
use crate::report::{ItemSource, ReportError};

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

pub trait ResultStore: Send + Sync + 'static {
    /// Stores a record, counts it and emits its event, atomically and at most once per index.
    /// Takes the record: the event carries it on to the aggregator without a copy.
    fn put(&self, rec: ResultRecord)
        -> impl Future<Output = Result<PutOutcome, StoreError>> + Send;
    /// The outcome counts of a run.
    fn counts(&self, run_id: &str) -> impl Future<Output = Result<Counts, StoreError>> + Send;
    /// Which of `indices` already have a stored result: re-submitting a run publishes only the
    /// others (resume = submit).
    fn stored(
        &self,
        run_id: &str,
        indices: &[u64],
    ) -> impl Future<Output = Result<Vec<bool>, StoreError>> + Send;
}

/// Where a stored record sits in the spill file.
#[derive(Clone, Copy, Default)]
struct Slot {
    offset: u64,
    /// 0 = not stored.
    len: u32,
    outcome: u8,
}

struct Spill {
    writer: BufWriter<File>,
    end: u64,
    slots: Vec<Slot>,
    counts: Counts,
    /// Stored records not yet handed to the aggregator.
    pending: Vec<ResultRecord>,
}

/// The embedded store for one run. Stored records are also sent to the aggregator's channel,
/// in batches of `event_batch` (one channel hand-over per record would cost a thread wake-up
/// each, more than folding the record).
pub struct InProcessStore {
    run_id: String,
    file: File,
    spill: Mutex<Spill>,
    events: async_channel::Sender<Vec<ResultRecord>>,
    event_batch: usize,
}

impl InProcessStore {
    /// A store for `run_id` and the receiving end of its event channel: batches of up to
    /// `event_batch` records, at most `capacity` batches waiting before `put` waits too.
    pub fn new(
        run_id: &str,
        capacity: usize,
        event_batch: usize,
    ) -> io::Result<(Self, async_channel::Receiver<Vec<ResultRecord>>)> {
        let file = tempfile::tempfile()?;
        let writer = BufWriter::with_capacity(1 << 20, file.try_clone()?);
        let (tx, rx) = async_channel::bounded(capacity.max(1));
        let spill = Spill {
            writer,
            end: 0,
            slots: Vec::new(),
            counts: Counts::default(),
            pending: Vec::new(),
        };
        let store = InProcessStore {
            run_id: run_id.to_owned(),
            file,
            spill: Mutex::new(spill),
            events: tx,
            event_batch: event_batch.max(1),
        };
        Ok((store, rx))
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

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, Spill>, StoreError> {
        self.spill
            .lock()
            .map_err(|_| StoreError::Backend("spill file lock poisoned".into()))
    }

    /// Stores the record; returns a full batch of events to hand over, if this one filled it.
    fn write(
        &self,
        rec: ResultRecord,
    ) -> Result<(PutOutcome, Option<Vec<ResultRecord>>), StoreError> {
        let bytes = serde_json::to_vec(&rec).map_err(|e| StoreError::Backend(e.to_string()))?;
        let mut spill = self.lock()?;
        let i = rec.index as usize;
        if spill.slots.get(i).is_some_and(|s| s.len > 0) {
            return Ok((PutOutcome::AlreadyStored, None));
        }
        if spill.slots.len() <= i {
            spill.slots.resize(i + 1, Slot::default());
        }
        spill.writer.write_all(&bytes)?;
        let offset = spill.end;
        spill.end += bytes.len() as u64;
        spill.slots[i] = Slot {
            offset,
            len: bytes.len() as u32,
            outcome: rec.outcome as u8,
        };
        spill.counts.add(rec.outcome);
        spill.pending.push(rec);
        let full =
            (spill.pending.len() >= self.event_batch).then(|| std::mem::take(&mut spill.pending));
        Ok((PutOutcome::Stored, full))
    }
}

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
        let spill = self.lock()?;
        Ok(indices
            .iter()
            .map(|&i| spill.slots.get(i as usize).is_some_and(|s| s.len > 0))
            .collect())
    }
}

impl ItemSource for InProcessStore {
    fn for_each_item(
        &self,
        only: Option<Outcome>,
        f: &mut dyn FnMut(&ResultRecord) -> Result<(), ReportError>,
    ) -> Result<(), ReportError> {
        let source = |e: io::Error| ReportError::Source(e.to_string());
        let slots: Vec<Slot> = {
            let mut spill = self
                .lock()
                .map_err(|e| ReportError::Source(e.to_string()))?;
            spill.writer.flush().map_err(source)?;
            spill.slots.clone()
        };
        let mut reader = ChunkReader {
            file: &self.file,
            buf: Vec::new(),
            start: 0,
        };
        for (index, slot) in slots.iter().enumerate() {
            if slot.len == 0 || only.is_some_and(|o| o as u8 != slot.outcome) {
                continue;
            }
            let bytes = reader.get(slot.offset, slot.len as usize).map_err(source)?;
            let rec: ResultRecord = serde_json::from_slice(bytes).map_err(|e| {
                ReportError::Source(
                    StoreError::Corrupt {
                        run: self.run_id.clone(),
                        index: index as u64,
                        message: e.to_string(),
                    }
                    .to_string(),
                )
            })?;
            f(&rec)?;
        }
        Ok(())
    }
}

/// Reads the spill file in 1 MiB windows: records arrive nearly in index order, so reading
/// them in index order is nearly sequential.
struct ChunkReader<'a> {
    file: &'a File,
    buf: Vec<u8>,
    start: u64,
}

impl ChunkReader<'_> {
    fn get(&mut self, offset: u64, len: usize) -> io::Result<&[u8]> {
        let end = offset + len as u64;
        if offset < self.start || end > self.start + self.buf.len() as u64 {
            let want = len.max(1 << 20);
            self.buf.resize(want, 0);
            let mut filled = 0;
            while filled < want {
                let n = self
                    .file
                    .read_at(&mut self.buf[filled..], offset + filled as u64)?;
                if n == 0 {
                    break;
                }
                filled += n;
            }
            if filled < len {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "spill file shorter than its index",
                ));
            }
            self.buf.truncate(filled);
            self.start = offset;
        }
        let from = (offset - self.start) as usize;
        Ok(&self.buf[from..from + len])
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
