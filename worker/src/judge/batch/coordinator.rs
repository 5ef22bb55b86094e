//! The coordinator loop of one provider: gather waiting requests into a [`Pack`], send a pack
//! when it is full or its time is up, and see each sent batch through — create, poll with a
//! doubling wait, download — to the answer of every request in it. Batches run concurrently;
//! the loop ends when no handle can send more and every batch has answered.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use backon::Retryable;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use super::pack::{Fit, Pack};
use super::{BatcherOptions, Waiting};
use crate::judge::provider::batch::{
    now_ms, BatchBody, BatchItem, BatchState, BatchStatus, Shape, Sought,
};
use crate::judge::provider::{CallError, ProviderClient};
use crate::judge::retry_schedule;
use crate::metrics::metrics;

/// How many of the newest batches a retried create looks through for its own.
pub(crate) const FIND_SCAN: usize = 200;

pub(super) async fn run(
    client: Arc<ProviderClient>,
    options: BatcherOptions,
    mut arrivals: mpsc::UnboundedReceiver<Waiting>,
) {
    let api = options.api;
    let mut pack = Pack::new(
        api,
        options.batch.requests_limit(api),
        options.batch.bytes_limit(api),
        options.max_wait(),
    );
    let mut batches = JoinSet::new();
    let running = Arc::new(Running::default());
    let mut open = true;
    let pending = || {
        metrics()
            .batch_requests
            .with_label_values(&[&options.provider, "pending"])
    };
    loop {
        let deadline = pack.deadline().map(tokio::time::Instant::from_std);
        tokio::select! {
            arrived = arrivals.recv(), if open => {
                let Some(waiting) = arrived else {
                    open = false;
                    if !pack.is_empty() {
                        send(&mut batches, &mut pack, &client, &options, &running);
                    }
                    continue;
                };
                match pack.fit(waiting.line.len()) {
                    Fit::TooLarge { bytes, limit } => {
                        let reason = format!(
                            "the request is {bytes} bytes, more than a whole batch may hold \
                             ({limit}, judges.batch.max_bytes)"
                        );
                        let _ = waiting.answer.send(BatchItem::Errored { reason, retryable: false });
                        continue;
                    }
                    Fit::SendFirst => send(&mut batches, &mut pack, &client, &options, &running),
                    Fit::Fits => {}
                }
                pack.push(waiting, Instant::now());
                pending().inc();
                if pack.full() {
                    send(&mut batches, &mut pack, &client, &options, &running);
                }
            }
            () = sleep_until(deadline), if deadline.is_some() => {
                send(&mut batches, &mut pack, &client, &options, &running);
            }
            Some(_) = batches.join_next(), if !batches.is_empty() => {}
            else => break,
        }
    }
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Sends what the pack gathered as one batch, seen through on a task of its own.
fn send(
    batches: &mut JoinSet<()>,
    pack: &mut Pack,
    client: &Arc<ProviderClient>,
    options: &BatcherOptions,
    running: &Arc<Running>,
) {
    let waiting = pack.take();
    metrics()
        .batch_requests
        .with_label_values(&[&options.provider, "pending"])
        .sub(waiting.len() as i64);
    batches.spawn(see_through(
        client.clone(),
        options.clone(),
        waiting,
        running.clone(),
    ));
}

/// This process's batches at one provider: the submission times of the running ones, for the
/// "oldest running batch" gauge the stuck-batch alert watches, and the provider ids of those
/// it created.
#[derive(Default)]
pub(super) struct Running {
    submitted: Mutex<BTreeMap<u64, f64>>,
    next: AtomicU64,
    /// Creates are made one at a time under this lock, so that a create retried after a
    /// timeout, looking for the batch it may have made, knows every other batch of ours.
    created: tokio::sync::Mutex<HashSet<String>>,
}

impl Running {
    fn start(&self, provider: &str) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        self.update(provider, |m| {
            m.insert(id, now);
        });
        id
    }

    fn end(&self, provider: &str, id: u64) {
        self.update(provider, |m| {
            m.remove(&id);
        });
    }

    fn update(&self, provider: &str, change: impl FnOnce(&mut BTreeMap<u64, f64>)) {
        let mut map = self.submitted.lock().unwrap_or_else(|e| e.into_inner());
        change(&mut map);
        // Ids grow with time: the first entry is the oldest.
        let oldest = map.values().next().copied().unwrap_or(0.0);
        metrics()
            .batch_oldest_running
            .with_label_values(&[provider])
            .set(oldest);
    }
}

/// One batch from create to the answer of each of its requests.
async fn see_through(
    client: Arc<ProviderClient>,
    options: BatcherOptions,
    waiting: Vec<Waiting>,
    running: Arc<Running>,
) {
    let m = metrics();
    let provider = options.provider.as_str();
    let started = Instant::now();
    let in_batches = m
        .batch_requests
        .with_label_values(&[provider, "in_batches"]);
    in_batches.add(waiting.len() as i64);
    let slot = running.start(provider);
    let tag = format!("{}-{slot}", options.tag);
    let outcome = run_batch(&client, &options, &tag, &waiting, &running).await;
    running.end(provider, slot);
    in_batches.sub(waiting.len() as i64);
    let state = match &outcome {
        Ok(_) => "ended",
        Err(_) => "failed",
    };
    m.batches_finished
        .with_label_values(&[provider, state])
        .inc();
    m.batch_turnaround
        .with_label_values(&[provider])
        .observe(started.elapsed().as_secs_f64());
    let mut answers: HashMap<String, tokio::sync::oneshot::Sender<BatchItem>> = waiting
        .into_iter()
        .map(|w| (w.custom_id, w.answer))
        .collect();
    match outcome {
        Ok(results) => {
            for (custom_id, item) in results {
                if let Some(answer) = answers.remove(&custom_id) {
                    if let Some(kind) = error_kind(&item) {
                        m.batch_request_errors
                            .with_label_values(&[provider, kind])
                            .inc();
                    }
                    let _ = answer.send(item);
                }
            }
            for (_, answer) in answers.drain() {
                m.batch_request_errors
                    .with_label_values(&[provider, "missing"])
                    .inc();
                let _ = answer.send(BatchItem::Errored {
                    reason: "missing from the batch's results".into(),
                    retryable: true,
                });
            }
        }
        Err(item) => {
            for (_, answer) in answers.drain() {
                let _ = answer.send(item.clone());
            }
        }
    }
}

/// Creates, polls and downloads one batch; `Err` is what every request of it gets instead.
async fn run_batch(
    client: &ProviderClient,
    options: &BatcherOptions,
    tag: &str,
    waiting: &[Waiting],
    running: &Running,
) -> Result<Vec<(String, BatchItem)>, BatchItem> {
    let m = metrics();
    let provider = options.provider.as_str();
    let lines: Vec<&[u8]> = waiting.iter().map(|w| w.line.as_slice()).collect();
    let body = BatchBody::of(options.api, &lines).map_err(|e| BatchItem::Errored {
        reason: format!("cannot spool the batch body to a temporary file: {e}"),
        retryable: true,
    })?;
    drop(lines);
    let open = m.batches.with_label_values(&[provider, "submitting"]);
    open.inc();
    // A create that timed out may have created the batch: before trying again, look for it,
    // by its tag (OpenAI) or its shape (Anthropic batches carry no tag): created since, with
    // as many requests, and none of ours.
    let mut created_ids = running.created.lock().await;
    let shape = Shape {
        collected_ms: now_ms(),
        requests: waiting.len() as u64,
        known: &created_ids,
    };
    let tries = AtomicU64::new(0);
    let created = persist(options, || async {
        if tries.fetch_add(1, Ordering::Relaxed) > 0 {
            let sought = Sought {
                tag,
                shape: Some(shape),
            };
            if let Some(found) = client.find_batch(&sought, FIND_SCAN).await? {
                return Ok(found);
            }
        }
        client.create_batch(&body, tag).await
    })
    .await;
    if let Ok(status) = &created {
        created_ids.insert(status.id.clone());
    }
    drop(created_ids);
    open.dec();
    let mut status = created.map_err(|e| errored(&e))?;
    tracing::info!(provider, batch = %status.id, requests = waiting.len(), "batch submitted");
    let running = m.batches.with_label_values(&[provider, "running"]);
    running.inc();
    let ended = poll(client, options, &mut status).await;
    running.dec();
    ended?;
    tracing::info!(provider, batch = %status.id, "batch ended; downloading its results");
    persist(options, || async {
        let mut results = client.batch_results(&status);
        let mut all = Vec::with_capacity(waiting.len());
        while let Some(result) = results.next().await? {
            all.push(result);
        }
        Ok(all)
    })
    .await
    .map_err(|e| errored(&e))
}

/// Polls until the batch ended, waiting `poll_s`, doubling up to `max_poll_s`. A status call
/// that keeps failing does not give the batch up: it is paid for and will end.
async fn poll(
    client: &ProviderClient,
    options: &BatcherOptions,
    status: &mut BatchStatus,
) -> Result<(), BatchItem> {
    let mut wait = Duration::from_secs_f64(options.batch.poll_s);
    let max = Duration::from_secs_f64(options.batch.max_poll_s);
    loop {
        match &status.state {
            BatchState::Ended => return Ok(()),
            BatchState::Failed(why) => {
                tracing::warn!(provider = %options.provider, batch = %status.id, %why, "the provider failed the batch");
                return Err(BatchItem::Errored {
                    reason: format!("the provider failed batch {}: {why}", status.id),
                    retryable: false,
                });
            }
            BatchState::Running => {}
        }
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(max);
        match persist(options, || client.batch_status(&status.id)).await {
            Ok(now) => *status = now,
            Err(e) if e.is_auth() => return Err(errored(&e)),
            Err(e) => {
                tracing::warn!(provider = %options.provider, batch = %status.id, error = %e.reason(), "polling the batch failed; polling on");
            }
        }
    }
}

/// A batch API call, retried on transient errors like a live judge call.
pub(crate) async fn persist<T, F, Fut>(options: &BatcherOptions, call: F) -> Result<T, CallError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, CallError>>,
{
    call.retry(retry_schedule(&options.retry))
        .when(CallError::retryable)
        .adjust(|e: &CallError, step: Option<Duration>| {
            step.map(|d| d.max(e.retry_after().unwrap_or_default()))
        })
        .await
}

pub(crate) fn errored(e: &CallError) -> BatchItem {
    BatchItem::Errored {
        reason: e.reason(),
        retryable: e.retryable(),
    }
}

/// The `kind` label of a request that came back without a reply.
pub(crate) fn error_kind(item: &BatchItem) -> Option<&'static str> {
    match item {
        BatchItem::Reply { .. } => None,
        BatchItem::Errored { .. } => Some("errored"),
        BatchItem::Expired => Some("expired"),
        BatchItem::Canceled => Some("canceled"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::BATCH_ERROR_KINDS;

    /// The metrics create a zero series for each kind; a kind named here but missing there
    /// would only appear once it happened.
    #[test]
    fn every_error_kind_has_a_zero_series() {
        let items = [
            BatchItem::Errored {
                reason: "r".into(),
                retryable: true,
            },
            BatchItem::Expired,
            BatchItem::Canceled,
        ];
        for item in &items {
            let kind = error_kind(item).expect("a kind");
            assert!(BATCH_ERROR_KINDS.contains(&kind), "{kind}");
        }
        assert!(BATCH_ERROR_KINDS.contains(&"missing"));
    }
}
