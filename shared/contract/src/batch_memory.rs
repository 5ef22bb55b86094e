//! The batch store in memory ([`InProcessBatchStore`]). It exists so that the in-process
//! `evalfleet run` can coordinate its batches through the same [`BatchStore`] contract, and so
//! the same coordinator, as the fleet does over Redis: one set of rules for parking, collecting
//! and releasing, held to the same conformance suite by both stores.
//!
//! Each method does under one lock what the Redis store does in one script, so every step is
//! as atomic here as it is there. The state lives as long as the store: a crash loses it, which
//! for `run` loses nothing more than the process already did.
//!
//! Where the Redis store has a quirk, this one copies it so that a caller sees no difference: a
//! page or a collection of `count` 0 reaches to the end of the list (Redis `LRANGE 0 -1`), a
//! collection from an empty queue still numbers a new, empty batch, a later answer for a
//! custom_id replaces the earlier one, and a question once asked stays asked (it is never
//! queued again, even when its batch ended). Runs are listed in name order (Redis: any order).

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use async_trait::async_trait;

use crate::batch_store::{
    parking_value, BatchOverview, BatchRecord, BatchStore, Parking, Question, Queued,
};
use crate::store::StoreError;

/// One run's batch work (the Redis store's `run:{id}:batch:*` keys).
#[derive(Default)]
struct RunBatches {
    /// Every question ever asked, by custom_id: its batch line, blanked once the provider has
    /// its batch (the entry stays: it marks the question as asked).
    questions: HashMap<String, Vec<u8>>,
    /// Stored results by custom_id.
    answers: HashMap<String, String>,
    /// Parked examples: index → parking ([`parking_value`]).
    parked: BTreeMap<u64, String>,
    /// Questions waiting for a batch, per provider, oldest first.
    pending: HashMap<String, VecDeque<String>>,
    /// The last batch number handed out.
    next: u64,
    batches: BTreeMap<u64, BatchRecord>,
    /// Each batch's custom_ids, in batch order.
    cids: HashMap<u64, Vec<String>>,
}

impl RunBatches {
    /// A page of `list`: `count` custom_ids from the `start`th (count 0: to the end), with
    /// their lines.
    fn page<'a>(
        &self,
        list: impl Iterator<Item = &'a String>,
        start: usize,
        count: usize,
    ) -> Vec<Queued> {
        let take = if count == 0 { usize::MAX } else { count };
        list.skip(start)
            .take(take)
            .map(|cid| {
                let line = self.questions.get(cid).cloned().unwrap_or_default();
                (cid.clone(), line)
            })
            .collect()
    }

    /// Whether every custom_id the parking awaits has a result.
    fn answered(&self, parking: &str) -> bool {
        let head = parking.split_once('\n').map_or(parking, |(head, _)| head);
        head.split_whitespace()
            .all(|cid| self.answers.contains_key(cid))
    }
}

#[derive(Default)]
struct State {
    runs: HashMap<String, RunBatches>,
    /// Runs with batch work (the Redis store's `batch:runs`).
    working: BTreeSet<String>,
    /// Coordinator leases per provider: holder and expiry.
    leases: HashMap<String, (String, Instant)>,
}

impl State {
    fn run(&mut self, run: &str) -> &mut RunBatches {
        self.runs.entry(run.to_owned()).or_default()
    }

    /// Whether `holder` has `provider`'s lease now.
    fn holds(&self, provider: &str, holder: &str) -> bool {
        self.leases
            .get(provider)
            .is_some_and(|(h, until)| h == holder && *until > Instant::now())
    }
}

/// [`BatchStore`] in memory, for the in-process `run` (and tests): a `Mutex` around plain maps,
/// leases that expire by [`Instant`]. Runs are never forgotten, only retired from
/// [`BatchStore::runs`].
#[derive(Default)]
pub struct InProcessBatchStore {
    state: Mutex<State>,
}

impl InProcessBatchStore {
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> Result<MutexGuard<'_, State>, StoreError> {
        self.state
            .lock()
            .map_err(|_| StoreError::Backend("batch store lock poisoned".into()))
    }

    /// Reads `run`'s batch work, or `empty` when the store never heard of it.
    fn read<T>(
        &self,
        run: &str,
        empty: T,
        f: impl FnOnce(&RunBatches) -> T,
    ) -> Result<T, StoreError> {
        Ok(self.state()?.runs.get(run).map_or(empty, f))
    }
}

#[async_trait]
impl BatchStore for InProcessBatchStore {
    async fn answer(&self, run: &str, custom_id: &str) -> Result<Option<String>, StoreError> {
        self.read(run, None, |r| r.answers.get(custom_id).cloned())
    }

    async fn put_answers(&self, run: &str, answers: &[(String, String)]) -> Result<(), StoreError> {
        let mut state = self.state()?;
        let r = state.run(run);
        for (cid, answer) in answers {
            r.answers.insert(cid.clone(), answer.clone());
        }
        Ok(())
    }

    async fn park(
        &self,
        run: &str,
        index: u64,
        message: &str,
        questions: &[Question],
    ) -> Result<Parking, StoreError> {
        let mut state = self.state()?;
        let r = state.run(run);
        let mut awaited = Vec::new();
        for q in questions {
            if r.answers.contains_key(&q.custom_id) {
                continue;
            }
            awaited.push(q.custom_id.as_str());
            // The first to ask queues the question; later askers only wait for it.
            if !r.questions.contains_key(&q.custom_id) {
                r.questions.insert(q.custom_id.clone(), q.line.clone());
                r.pending
                    .entry(q.provider.clone())
                    .or_default()
                    .push_back(q.custom_id.clone());
            }
        }
        if awaited.is_empty() {
            return Ok(Parking::Answered);
        }
        r.parked.insert(index, parking_value(&awaited, message));
        state.working.insert(run.to_owned());
        Ok(Parking::Parked)
    }

    async fn lease(&self, provider: &str, holder: &str, ttl_ms: u64) -> Result<bool, StoreError> {
        let mut state = self.state()?;
        let now = Instant::now();
        if let Some((current, until)) = state.leases.get(provider) {
            if *until > now && current != holder {
                return Ok(false);
            }
        }
        let until = now + Duration::from_millis(ttl_ms.max(1));
        state
            .leases
            .insert(provider.to_owned(), (holder.to_owned(), until));
        Ok(true)
    }

    async fn runs(&self) -> Result<Vec<String>, StoreError> {
        Ok(self.state()?.working.iter().cloned().collect())
    }

    async fn pending_len(&self, run: &str, provider: &str) -> Result<u64, StoreError> {
        self.read(run, 0, |r| {
            r.pending.get(provider).map_or(0, |p| p.len() as u64)
        })
    }

    async fn pending(
        &self,
        run: &str,
        provider: &str,
        start: usize,
        count: usize,
    ) -> Result<Vec<Queued>, StoreError> {
        self.read(run, Vec::new(), |r| match r.pending.get(provider) {
            Some(list) => r.page(list.iter(), start, count),
            None => Vec::new(),
        })
    }

    async fn collect(
        &self,
        run: &str,
        holder: &str,
        count: usize,
        record: &BatchRecord,
    ) -> Result<Option<u64>, StoreError> {
        let mut state = self.state()?;
        if !state.holds(&record.provider, holder) {
            return Ok(None);
        }
        let r = state.run(run);
        r.next += 1;
        let n = r.next;
        let cids: Vec<String> = match r.pending.get_mut(&record.provider) {
            Some(list) => {
                let take = if count == 0 { list.len() } else { count };
                list.drain(..take.min(list.len())).collect()
            }
            None => Vec::new(),
        };
        if !cids.is_empty() {
            r.cids.insert(n, cids);
        }
        r.batches.insert(n, record.clone());
        Ok(Some(n))
    }

    async fn batch_cids(&self, run: &str, n: u64) -> Result<Vec<String>, StoreError> {
        self.read(run, Vec::new(), |r| {
            r.cids.get(&n).cloned().unwrap_or_default()
        })
    }

    async fn batch_questions(
        &self,
        run: &str,
        n: u64,
        start: usize,
        count: usize,
    ) -> Result<Vec<Queued>, StoreError> {
        self.read(run, Vec::new(), |r| match r.cids.get(&n) {
            Some(list) => r.page(list.iter(), start, count),
            None => Vec::new(),
        })
    }

    async fn batches(&self, run: &str) -> Result<Vec<(u64, BatchRecord)>, StoreError> {
        self.read(run, Vec::new(), |r| {
            r.batches.iter().map(|(n, b)| (*n, b.clone())).collect()
        })
    }

    async fn set_batch(
        &self,
        run: &str,
        n: u64,
        holder: &str,
        record: &BatchRecord,
    ) -> Result<bool, StoreError> {
        let mut state = self.state()?;
        if !state.holds(&record.provider, holder) {
            return Ok(false);
        }
        let r = state.run(run);
        r.batches.insert(n, record.clone());
        // Once the provider has the batch its lines are no longer needed; the questions stay
        // asked.
        if record.provider_id.is_some() {
            let RunBatches {
                questions, cids, ..
            } = r;
            for cid in cids.get(&n).into_iter().flatten() {
                questions.insert(cid.clone(), Vec::new());
            }
        }
        Ok(true)
    }

    async fn ready(&self, run: &str, indexes: &[u64]) -> Result<Vec<(u64, String)>, StoreError> {
        self.read(run, Vec::new(), |r| {
            indexes
                .iter()
                .filter_map(|index| {
                    let parking = r.parked.get(index)?;
                    r.answered(parking).then(|| (*index, parking.clone()))
                })
                .collect()
        })
    }

    async fn unpark(&self, run: &str, parked: &[(u64, String)]) -> Result<(), StoreError> {
        let mut state = self.state()?;
        let Some(r) = state.runs.get_mut(run) else {
            return Ok(());
        };
        for (index, parking) in parked {
            if r.parked.get(index) == Some(parking) {
                r.parked.remove(index);
            }
        }
        Ok(())
    }

    async fn retire(&self, run: &str, force: bool) -> Result<bool, StoreError> {
        let mut state = self.state()?;
        let parked = state.runs.get(run).is_some_and(|r| !r.parked.is_empty());
        if force || !parked {
            state.working.remove(run);
            return Ok(true);
        }
        Ok(false)
    }

    async fn overview(&self, run: &str, providers: &[String]) -> Result<BatchOverview, StoreError> {
        let state = self.state()?;
        let Some(r) = state.runs.get(run) else {
            return Ok(BatchOverview {
                pending: providers.iter().map(|p| (p.clone(), 0)).collect(),
                ..BatchOverview::default()
            });
        };
        Ok(BatchOverview {
            pending: providers
                .iter()
                .map(|p| (p.clone(), r.pending.get(p).map_or(0, |l| l.len() as u64)))
                .collect(),
            parked: r.parked.len() as u64,
            batches: r.batches.iter().map(|(n, b)| (*n, b.clone())).collect(),
        })
    }
}
