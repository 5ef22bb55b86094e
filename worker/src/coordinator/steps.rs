//! One coordinator tick for one run and provider: each open batch moves one step along
//!
//! collected → (create at the provider) → running → (poll … download) → downloaded →
//! (re-enqueue its examples) → done
//!
//! and then the questions waiting in the queue are collected into a new batch when it is full,
//! its oldest question waited `max_wait_s`, or no question came for a second. Each step writes
//! its outcome to the store before the next begins, and reads what to do from the store, so a
//! crash between any two writes is repaired by doing the step again:
//! - collected, crash before the create: created now;
//! - created, crash before its id is recorded: a `collected` batch this process did not just
//!   record is looked for at the provider first ([`ProviderClient::find_batch`]), never created
//!   twice;
//! - running, crash mid-poll or mid-download: polled and downloaded again (results are written
//!   by custom_id, so writing them twice changes nothing);
//! - downloaded, crash mid-release: released again (an example re-enqueued twice is stored
//!   once: the result store's write is at-most-once).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use evalfleet_contract::batch_store::{
    index_of, parked_message, BatchPhase, BatchRecord, BatchStore,
};
use evalfleet_contract::queue::{Message, WorkQueue};

use super::call::{error_kind, errored, persist, FIND_SCAN};
use super::error::StepError;
use super::pages::{spool_batch, spool_head, to_json, Answers, Head, SLICE};
use super::{crash_point, Seen};
use crate::judge::batch::BatchOptions;
use crate::judge::provider::batch::{
    now_ms, BatchBody, BatchItem, BatchState, BatchStatus, Shape, Sought,
};
use crate::judge::provider::ProviderClient;
use crate::metrics::metrics;

/// How long the queue of questions may stay unchanged before a partial batch goes anyway:
/// the run has handed over all it has for now (its other examples wait for this batch).
const IDLE: Duration = Duration::from_secs(1);

/// What a coordinator remembers between ticks of one run and provider. Losing it costs calls,
/// never correctness.
#[derive(Default)]
pub(crate) struct Progress {
    polls: HashMap<u64, Poll>,
    /// Batches this process collected and has not tried to create: no need to look for them.
    fresh: HashSet<u64>,
    pending: Option<Pending>,
}

struct Poll {
    next: Instant,
    wait: Duration,
}

/// The queue of questions as last seen: its length, since when, and since when it is not empty.
struct Pending {
    len: u64,
    changed: Instant,
    since: Instant,
}

pub(super) struct Step<'a, Q> {
    pub store: &'a dyn BatchStore,
    pub queue: &'a Q,
    pub run: &'a str,
    pub client: &'a ProviderClient,
    pub options: &'a BatchOptions,
    pub holder: &'a str,
    pub cancelled: bool,
}

impl<Q: WorkQueue> Step<'_, Q> {
    pub async fn run(&self, progress: &mut Progress) -> Result<Seen, StepError> {
        let mut seen = Seen::default();
        let records = self.store.batches(self.run).await?;
        let provider = &self.options.provider;
        for (n, rec) in records {
            if &rec.provider != provider || !rec.phase.open() {
                continue;
            }
            seen.open = true;
            match rec.phase {
                _ if self.cancelled => self.cancel(n, rec).await?,
                BatchPhase::Collected => {
                    seen.submitting += 1;
                    self.submit(n, rec, None, progress).await?;
                }
                BatchPhase::Running => {
                    seen.running += 1;
                    seen.in_batches += rec.requests;
                    let collected = rec.collected_ms as f64 / 1000.0;
                    seen.oldest_running = Some(
                        seen.oldest_running
                            .map_or(collected, |o: f64| o.min(collected)),
                    );
                    self.poll(n, rec, progress).await?;
                }
                BatchPhase::Downloaded => self.release(n, rec).await?,
                BatchPhase::Done | BatchPhase::Cancelled => {}
            }
        }
        if !self.cancelled {
            seen.pending = self.store.pending_len(self.run, provider).await?;
            if seen.pending > 0 {
                seen.open = true;
                self.collect(seen.pending, progress).await?;
            } else {
                progress.pending = None;
            }
        }
        Ok(seen)
    }

    /// Records a batch's new state; a lost lease ends this step (the new holder goes on).
    async fn record(&self, n: u64, rec: &BatchRecord) -> Result<(), StepError> {
        if self.store.set_batch(self.run, n, self.holder, rec).await? {
            Ok(())
        } else {
            Err(StepError::LeaseLost)
        }
    }

    /// Collects the first queued questions into a batch when it is time, and submits it.
    async fn collect(&self, len: u64, progress: &mut Progress) -> Result<(), StepError> {
        let now = Instant::now();
        let pending = progress.pending.get_or_insert(Pending {
            len,
            changed: now,
            since: now,
        });
        if pending.len != len {
            pending.len = len;
            pending.changed = now;
        }
        let api = self.options.api;
        let max_requests = self.options.batch.requests_limit(api);
        let max_bytes = self.options.batch.bytes_limit(api);
        let max_wait = Duration::from_secs_f64(self.options.batch.max_wait_s);
        let due = len as usize >= max_requests
            || pending.since.elapsed() >= max_wait
            || pending.changed.elapsed() >= IDLE.min(max_wait);
        if !due {
            return Ok(());
        }
        let Head { body, oversize } = spool_head(
            self.store,
            self.run,
            &self.options.provider,
            api,
            (max_requests, max_bytes),
        )
        .await?;
        // A question larger than a whole batch may be goes alone, to be answered with an error.
        let count = body.requests().max(usize::from(oversize.is_some()));
        if count == 0 {
            return Ok(());
        }
        let record = BatchRecord {
            provider: self.options.provider.clone(),
            tag: format!("{}-{:016x}", self.options.tag, rand::random::<u64>()),
            phase: BatchPhase::Collected,
            requests: count as u64,
            collected_ms: now_ms(),
            provider_id: None,
            provider_status: None,
        };
        let Some(n) = self
            .store
            .collect(self.run, self.holder, count, &record)
            .await?
        else {
            return Ok(());
        };
        progress.pending = None;
        tracing::info!(run = self.run, provider = %record.provider, batch = n, requests = record.requests, "collected a batch");
        if let Some((cid, len)) = oversize {
            let reason = format!(
                "the request is {len} bytes, more than a whole batch may hold ({max_bytes}, \
                 judges.batch.max_bytes)"
            );
            let item = BatchItem::Errored {
                reason,
                retryable: false,
            };
            return self.answer_all(n, record, &[cid], &item).await;
        }
        progress.fresh.insert(n);
        self.submit(n, record, Some(body.finish()?), progress).await
    }

    /// Creates a collected batch at the provider — unless it is there already.
    async fn submit(
        &self,
        n: u64,
        mut rec: BatchRecord,
        body: Option<BatchBody>,
        progress: &mut Progress,
    ) -> Result<(), StepError> {
        let found = if progress.fresh.remove(&n) {
            None
        } else {
            self.find(&rec).await?
        };
        let status = match found {
            Some(status) => {
                tracing::info!(run = self.run, batch = n, id = %status.id, "found a batch created before a crash");
                status
            }
            None => {
                let body = match body {
                    Some(body) => body,
                    None => spool_batch(self.store, self.run, n, self.options.api).await?,
                };
                crash_point("batch-collected");
                // A create that timed out may have made the batch: each retry looks for it
                // before creating again.
                let known = self.known_ids().await?;
                let sought = sought(&rec, &known);
                let tries = AtomicU32::new(0);
                let created = persist(self.options, || async {
                    if tries.fetch_add(1, Ordering::Relaxed) > 0 {
                        if let Some(found) = self.client.find_batch(&sought, FIND_SCAN).await? {
                            return Ok(found);
                        }
                    }
                    self.client.create_batch(&body, &rec.tag).await
                })
                .await;
                match created {
                    Ok(status) => status,
                    // It may exist: the next tick looks for it before creating it again.
                    Err(e) if e.retryable() => return Err(StepError::Call(e.reason())),
                    Err(e) => {
                        tracing::warn!(run = self.run, batch = n, error = %e.reason(), "the provider refused the batch");
                        let cids = self.cids(n).await?;
                        return self.answer_all(n, rec, &cids, &errored(&e)).await;
                    }
                }
            }
        };
        crash_point("batch-created");
        rec.phase = BatchPhase::Running;
        rec.provider_status = Some(progress_word(&status));
        rec.provider_id = Some(status.id);
        self.record(n, &rec).await?;
        progress.polls.insert(n, self.first_poll());
        tracing::info!(run = self.run, batch = n, id = ?rec.provider_id, "batch submitted");
        Ok(())
    }

    /// The batch `rec` at the provider, if a crash came after its create.
    async fn find(&self, rec: &BatchRecord) -> Result<Option<BatchStatus>, StepError> {
        let known = self.known_ids().await?;
        let sought = sought(rec, &known);
        persist(self.options, || self.client.find_batch(&sought, FIND_SCAN))
            .await
            .map_err(|e| StepError::Call(e.reason()))
    }

    /// The provider ids of every batch recorded for this provider, in any run.
    async fn known_ids(&self) -> Result<HashSet<String>, StepError> {
        let mut known = HashSet::new();
        for run in self.store.runs().await? {
            for (_, rec) in self.store.batches(&run).await? {
                if rec.provider == self.options.provider {
                    known.extend(rec.provider_id);
                }
            }
        }
        Ok(known)
    }

    fn first_poll(&self) -> Poll {
        let wait = Duration::from_secs_f64(self.options.batch.poll_s);
        Poll {
            next: Instant::now() + wait,
            wait,
        }
    }

    /// Polls a running batch when its time has come; downloads it once it ended.
    async fn poll(
        &self,
        n: u64,
        mut rec: BatchRecord,
        progress: &mut Progress,
    ) -> Result<(), StepError> {
        let poll = progress.polls.entry(n).or_insert(Poll {
            next: Instant::now(),
            wait: Duration::from_secs_f64(self.options.batch.poll_s),
        });
        if Instant::now() < poll.next {
            return Ok(());
        }
        poll.wait = (poll.wait * 2).min(Duration::from_secs_f64(self.options.batch.max_poll_s));
        poll.next = Instant::now() + poll.wait;
        let id = rec.provider_id.clone().unwrap_or_default();
        let status = match self.client.batch_status(&id).await {
            Ok(status) => status,
            Err(e) => {
                tracing::warn!(run = self.run, batch = n, error = %e.reason(), "polling the batch failed; polling on");
                return Ok(());
            }
        };
        crash_point("batch-polled");
        match &status.state {
            BatchState::Running => {
                let word = progress_word(&status);
                if rec.provider_status.as_deref() != Some(word.as_str()) {
                    rec.provider_status = Some(word);
                    self.record(n, &rec).await?;
                }
                Ok(())
            }
            BatchState::Ended => {
                // A download that fails is tried again at the pace of the polls.
                self.download(n, rec, &status).await?;
                progress.polls.remove(&n);
                Ok(())
            }
            BatchState::Failed(why) => {
                progress.polls.remove(&n);
                tracing::warn!(run = self.run, batch = n, %why, "the provider failed the batch");
                let cids = self.cids(n).await?;
                let item = BatchItem::Errored {
                    reason: format!("the provider failed batch {id}: {why}"),
                    retryable: false,
                };
                self.answer_all(n, rec, &cids, &item).await
            }
        }
    }

    /// Stores an ended batch's results as they download, a page at a time (a request missing
    /// from them is retryable), then releases its examples.
    async fn download(
        &self,
        n: u64,
        rec: BatchRecord,
        status: &BatchStatus,
    ) -> Result<(), StepError> {
        let m = metrics();
        let provider = self.options.provider.as_str();
        let count_error = |kind: Option<&str>| {
            if let Some(kind) = kind {
                m.batch_request_errors
                    .with_label_values(&[provider, kind])
                    .inc();
            }
        };
        let mut unanswered: HashSet<String> = self.cids(n).await?.into_iter().collect();
        let mut page = Answers::new(self.store, self.run);
        let mut results = self.client.batch_results(status);
        while let Some((cid, item)) = results
            .next()
            .await
            .map_err(|e| StepError::Call(e.reason()))?
        {
            // Only this batch's questions, each once.
            if unanswered.remove(&cid) {
                count_error(error_kind(&item));
                page.push(cid, &item).await?;
            }
        }
        let missing = BatchItem::Errored {
            reason: "missing from the batch's results".into(),
            retryable: true,
        };
        for cid in unanswered {
            count_error(Some("missing"));
            page.push(cid, &missing).await?;
        }
        page.flush().await?;
        m.batches_finished
            .with_label_values(&[provider, "ended"])
            .inc();
        m.batch_turnaround
            .with_label_values(&[provider])
            .observe((now_ms().saturating_sub(rec.collected_ms)) as f64 / 1000.0);
        self.downloaded(n, rec).await
    }

    /// Every question of a batch gets the same result (a batch refused or failed whole).
    async fn answer_all(
        &self,
        n: u64,
        rec: BatchRecord,
        cids: &[String],
        item: &BatchItem,
    ) -> Result<(), StepError> {
        let json = to_json(item);
        let answers: Vec<(String, String)> =
            cids.iter().map(|c| (c.clone(), json.clone())).collect();
        for slice in answers.chunks(SLICE) {
            self.store.put_answers(self.run, slice).await?;
        }
        metrics()
            .batches_finished
            .with_label_values(&[&self.options.provider, "failed"])
            .inc();
        self.downloaded(n, rec).await
    }

    async fn downloaded(&self, n: u64, mut rec: BatchRecord) -> Result<(), StepError> {
        rec.phase = BatchPhase::Downloaded;
        rec.provider_status = Some("ended".into());
        self.record(n, &rec).await?;
        self.release(n, rec).await
    }

    /// Re-enqueues the examples of a downloaded batch whose every result is in.
    async fn release(&self, n: u64, mut rec: BatchRecord) -> Result<(), StepError> {
        let indexes: BTreeSet<u64> = self
            .cids(n)
            .await?
            .iter()
            .filter_map(|c| index_of(c))
            .collect();
        let indexes: Vec<u64> = indexes.into_iter().collect();
        let mut released = 0;
        for slice in indexes.chunks(SLICE) {
            let ready = self.store.ready(self.run, slice).await?;
            let messages: Vec<Message> = ready
                .iter()
                .filter_map(|(index, parking)| {
                    serde_json::from_str(parked_message(parking))
                        .map_err(|e| tracing::error!(run = self.run, index, error = %e, "a parked example's message does not parse"))
                        .ok()
                })
                .collect();
            released += messages.len();
            if !messages.is_empty() {
                self.queue.publish(messages).await?;
            }
            self.store.unpark(self.run, &ready).await?;
        }
        rec.phase = BatchPhase::Done;
        self.record(n, &rec).await?;
        tracing::info!(
            run = self.run,
            batch = n,
            released,
            "batch done; its examples are back in the queue"
        );
        Ok(())
    }

    /// A cancelled run's batch: cancelled at the provider if it is there.
    async fn cancel(&self, n: u64, mut rec: BatchRecord) -> Result<(), StepError> {
        let id = match (&rec.provider_id, rec.phase) {
            (Some(id), BatchPhase::Running) => Some(id.clone()),
            (_, BatchPhase::Collected) => self.find(&rec).await?.map(|s| s.id),
            _ => None,
        };
        if let Some(id) = &id {
            persist(self.options, || self.client.cancel_batch(id))
                .await
                .map_err(|e| StepError::Call(e.reason()))?;
            tracing::info!(
                run = self.run,
                batch = n,
                id,
                "cancelled the run's provider batch"
            );
        }
        rec.provider_id = id.or(rec.provider_id);
        rec.phase = BatchPhase::Cancelled;
        rec.provider_status = Some("cancelling".into());
        self.record(n, &rec).await
    }

    async fn cids(&self, n: u64) -> Result<Vec<String>, StepError> {
        Ok(self.store.batch_cids(self.run, n).await?)
    }
}

/// How batch `rec` is recognised at the provider: by its tag (OpenAI) or its shape (Anthropic
/// batches carry no tag): created since it was collected, with as many requests, and none of
/// the batches recorded already (`known`).
fn sought<'a>(rec: &'a BatchRecord, known: &'a HashSet<String>) -> Sought<'a> {
    Sought {
        tag: &rec.tag,
        shape: Some(Shape {
            collected_ms: rec.collected_ms,
            requests: rec.requests,
            known,
        }),
    }
}

/// How far the provider got, for `status`.
fn progress_word(status: &BatchStatus) -> String {
    format!("{}/{} finished", status.finished, status.total)
}
