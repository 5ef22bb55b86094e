//! The consumer loop: the one road every example takes, in the embedded `run` and in fleet
//! workers alike. Take a delivery, find the run's pipeline, evaluate, store the result durably,
//! and only then settle the delivery:
//!
//! | what happened | settle |
//! |---|---|
//! | the result is stored (or was already: a redelivery) | ack |
//! | batch mode: the example waits for batch replies, and is parked | ack (re-enqueued once they are in) |
//! | the run was cancelled | ack, without judging |
//! | the store is unavailable | retried with backoff a few times, then requeue |
//! | the example's scenario cannot be read (store unavailable) | retried as a store write, then requeue |
//! | the store refused the result for good, or the run is unknown | reject (dead-letter queue) |
//! | the run registry cannot be read | requeue |
//! | a judge API key was rejected | requeue, and this worker stops |
//!
//! Stopping: when the shutdown token is cancelled (or a consumer must stop), [`run_consumers`]
//! calls [`WorkQueue::stop_consuming`]; the queue hands out nothing more and gives the messages
//! it prefetched back, and every consumer finishes the example it holds.

use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use evalfleet_contract::batch_store::{Parking, Question};
use evalfleet_contract::queue::{Delivery, Message, WorkQueue};
use evalfleet_contract::store::{PutOutcome, ResultStore, StoreError};
use evalfleet_model::record::{Outcome, ResultRecord};
use tokio_util::sync::CancellationToken;

use crate::metrics::metrics;
use crate::process::{process, Pipeline, Processed};
use crate::store_retry::retry_store;
use crate::{WorkerError, WorkerStats};

/// How long a consumer waits before requeueing a message whose run it cannot look up.
const REGISTRY_PAUSE: Duration = Duration::from_millis(500);

/// What to do with a message of some run.
pub enum Resolution {
    /// Evaluate it with this pipeline.
    Evaluate(Arc<Pipeline>),
    /// The run was cancelled: drop the message without judging it.
    Cancelled,
    /// No such run (or it expired): the message is poison.
    Unknown,
    /// The registry could not be read: try again later.
    Unavailable,
}

/// Where a message's pipeline comes from: one fixed pipeline in `run` ([`crate::OneRun`]), the
/// run registry in the fleet ([`crate::service`]).
pub trait Runs: Send + Sync + 'static {
    fn resolve(&self, msg: &Message) -> impl Future<Output = Resolution> + Send;
    /// Keeps a failed example's message so `evalfleet retry` can re-enqueue it.
    fn keep_failed(&self, msg: &Message) -> impl Future<Output = ()> + Send;
    /// Parks an example that waits for batch replies (batch mode).
    fn park(
        &self,
        msg: &Message,
        questions: &[Question],
    ) -> impl Future<Output = Result<Parking, StoreError>> + Send;
}

/// How a delivery is settled.
enum Settle {
    Ack,
    Requeue,
    Reject,
}

/// Runs `concurrency` consumers until the queue ends, a consumer must stop (a rejected judge
/// key), or `shutdown` is cancelled; then stops consuming and gives in-flight examples up to
/// `deadline` to finish. Returns the first consumer error.
pub async fn run_consumers<Q, S, R>(
    queue: Q,
    store: Arc<S>,
    runs: Arc<R>,
    concurrency: usize,
    stats: Arc<WorkerStats>,
    shutdown: CancellationToken,
    deadline: Duration,
) -> Result<(), WorkerError>
where
    Q: WorkQueue + Clone,
    S: ResultStore,
    R: Runs,
{
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..concurrency.max(1) {
        let (queue, store, runs, stats) =
            (queue.clone(), store.clone(), runs.clone(), stats.clone());
        tasks.spawn(async move { consume(&queue, store.as_ref(), runs.as_ref(), &stats).await });
    }
    let joined = |done: Result<Result<(), WorkerError>, tokio::task::JoinError>| {
        done.map_err(|e| WorkerError::Task(e.to_string()))
            .and_then(|r| r)
    };
    let mut failure = None;
    loop {
        tokio::select! {
            () = shutdown.cancelled() => {
                tracing::info!("shutdown requested: finishing in-flight examples");
                break;
            }
            done = tasks.join_next() => match done {
                None => return Ok(()),
                Some(done) => if let Err(e) = joined(done) {
                    failure = Some(e);
                    break;
                },
            },
        }
    }
    if let Err(e) = queue.stop_consuming().await {
        tracing::warn!(error = %e, "could not stop consuming; unsettled messages come back when the connection closes");
    }
    let drain = async {
        while let Some(done) = tasks.join_next().await {
            if let Err(e) = joined(done) {
                failure.get_or_insert(e);
            }
        }
    };
    if tokio::time::timeout(deadline, drain).await.is_err() {
        tracing::warn!(
            ?deadline,
            "in-flight examples did not finish in time; the queue redelivers them"
        );
    }
    failure.map_or(Ok(()), Err)
}

/// One consumer: deliveries until the queue ends or is stopped.
async fn consume<Q: WorkQueue, S: ResultStore, R: Runs>(
    queue: &Q,
    store: &S,
    runs: &R,
    stats: &WorkerStats,
) -> Result<(), WorkerError> {
    while let Some(delivery) = queue.next().await? {
        if delivery.redelivered() {
            stats.redelivered.fetch_add(1, Ordering::Relaxed);
            metrics().redelivered.inc();
        }
        let handled = handle(delivery.message(), store, runs, stats).await;
        // Settling fails when the channel died under the delivery (a broker restart): the
        // broker redelivers the message, and the store's at-most-once write absorbs it.
        let settled = match &handled {
            Ok(Settle::Ack) => delivery.ack().await,
            Ok(Settle::Requeue) | Err(_) => delivery.requeue().await,
            Ok(Settle::Reject) => {
                metrics().dead_lettered.inc();
                delivery.reject().await
            }
        };
        if let Err(e) = settled {
            tracing::warn!(error = %e, "could not settle a delivery; the queue will redeliver it");
        }
        handled?;
    }
    Ok(())
}

/// What to do with one message; Err only when this worker must stop.
async fn handle<S: ResultStore, R: Runs>(
    msg: &Message,
    store: &S,
    runs: &R,
    stats: &WorkerStats,
) -> Result<Settle, WorkerError> {
    let pipeline = match runs.resolve(msg).await {
        Resolution::Evaluate(p) => p,
        Resolution::Cancelled => return Ok(Settle::Ack),
        Resolution::Unknown => {
            tracing::warn!(message_id = %msg.message_id(), "message of an unknown run: rejected to the dead-letter queue");
            return Ok(Settle::Reject);
        }
        Resolution::Unavailable => {
            tokio::time::sleep(REGISTRY_PAUSE).await;
            return Ok(Settle::Requeue);
        }
    };
    let record = loop {
        match process(&pipeline, store, msg).await {
            Ok(Processed::Record(record)) => break record,
            Ok(Processed::Awaiting(questions)) => match runs.park(msg, &questions).await {
                Ok(Parking::Parked) => return Ok(Settle::Ack),
                // Every reply came in meanwhile: evaluate again (each round gets further).
                Ok(Parking::Answered) => continue,
                Err(e) => return Ok(store_failed(&e, msg, stats)),
            },
            Err(e) => return Ok(store_failed(&e, msg, stats)),
        }
    };
    if let Some(reason) = pipeline.judge.stopped() {
        // The example was not judged: give it back for a worker whose key works.
        return Err(WorkerError::Stopped(reason.to_owned()));
    }
    if record.outcome == Outcome::Failed {
        runs.keep_failed(msg).await;
    }
    Ok(match store_result(store, record).await {
        Ok(outcome) => {
            if outcome == PutOutcome::AlreadyStored {
                stats.duplicates.fetch_add(1, Ordering::Relaxed);
            }
            stats.processed.fetch_add(1, Ordering::Relaxed);
            Settle::Ack
        }
        Err(e) => store_failed(&e, msg, stats),
    })
}

/// How a message is settled when the store failed it: requeued when the error is transient,
/// dead-lettered otherwise.
fn store_failed(e: &StoreError, msg: &Message, stats: &WorkerStats) -> Settle {
    if e.is_transient() {
        tracing::warn!(error = %e, message_id = %msg.message_id(), "the result store failed; requeueing the message");
        stats.requeued.fetch_add(1, Ordering::Relaxed);
        Settle::Requeue
    } else {
        tracing::error!(error = %e, message_id = %msg.message_id(), "the result store refused the message; rejecting it to the dead-letter queue");
        Settle::Reject
    }
}

/// Stores a result, retrying transient store errors with backoff (the record is cloned per
/// attempt: `put` takes it, so that the event carries it on without a copy).
async fn store_result<S: ResultStore>(
    store: &S,
    record: ResultRecord,
) -> Result<PutOutcome, StoreError> {
    retry_store("storing a result", || store.put(record.clone())).await
}

#[cfg(test)]
mod tests;
