//! The settle rules of the consumer loop, on the in-process queue with a store that fails on
//! command.

use std::sync::Mutex;

use async_trait::async_trait;
use evalfleet_contract::conformance::message;
use evalfleet_contract::queue::InProcessQueue;
use evalfleet_contract::store::Counts;
use evalfleet_model::record::ResultRecord;
use evalfleet_model::suite::SuiteKind;
use evalfleet_suites::suite::Suite;

use super::*;
use crate::store_retry::STORE_ATTEMPTS;
use crate::Judge;
use crate::OneRun;
use tokio_util::sync::CancellationToken;

/// A store that answers its first `fail` puts with `error` and then stores.
struct Store {
    fail: Mutex<u32>,
    transient: bool,
    stored: Mutex<Vec<ResultRecord>>,
}

impl Store {
    fn failing(fail: u32, transient: bool) -> Arc<Store> {
        Arc::new(Store {
            fail: Mutex::new(fail),
            transient,
            stored: Mutex::new(Vec::new()),
        })
    }

    fn stored(&self) -> usize {
        self.stored.lock().unwrap().len()
    }
}

#[async_trait]
impl ResultStore for Store {
    async fn put(&self, rec: ResultRecord) -> Result<PutOutcome, StoreError> {
        let mut fail = self.fail.lock().unwrap();
        if *fail > 0 {
            *fail -= 1;
            return Err(if self.transient {
                StoreError::Unavailable("redis restarting".into())
            } else {
                StoreError::Backend("script error".into())
            });
        }
        self.stored.lock().unwrap().push(rec);
        Ok(PutOutcome::Stored)
    }

    async fn counts(&self, _: &str) -> Result<Counts, StoreError> {
        Ok(Counts::default())
    }

    async fn stored(&self, _: &str, indices: &[u64]) -> Result<Vec<bool>, StoreError> {
        Ok(vec![false; indices.len()])
    }

    async fn put_scenario(&self, _: &str, _: &str, _: &str) -> Result<(), StoreError> {
        Err(StoreError::Backend("these tests store no scenarios".into()))
    }

    async fn scenario(&self, _: &str, _: &str) -> Result<Option<String>, StoreError> {
        Ok(None)
    }
}

/// Every message resolves to `resolution` (the pipeline: support-judge, heuristic judge).
struct Fixed(fn(Arc<Pipeline>) -> Resolution, Arc<Pipeline>);

impl Runs for Fixed {
    async fn resolve(&self, _: &Message) -> Resolution {
        (self.0)(self.1.clone())
    }

    async fn keep_failed(&self, _: &Message) {}

    async fn park(
        &self,
        _: &Message,
        _: &[evalfleet_contract::batch_store::Question],
    ) -> Result<evalfleet_contract::batch_store::Parking, StoreError> {
        Err(StoreError::Backend("a heuristic judge never parks".into()))
    }
}

fn pipeline() -> Arc<Pipeline> {
    Arc::new(Pipeline::new(
        Arc::new(Suite::builtin(SuiteKind::SupportJudge)),
        Judge::Heuristic,
    ))
}

/// Publishes `n` messages, runs one consumer over them and returns the queue and the stats.
async fn run(
    n: u64,
    store: Arc<Store>,
    resolve: fn(Arc<Pipeline>) -> Resolution,
) -> (InProcessQueue, Arc<WorkerStats>) {
    let queue = InProcessQueue::new(16, 1);
    queue
        .publish((0..n).map(|i| message("r", i)).collect())
        .await
        .unwrap();
    queue.finish_publishing();
    let stats = Arc::new(WorkerStats::default());
    let runs = Arc::new(Fixed(resolve, pipeline()));
    let consumers = run_consumers(
        queue.clone(),
        store,
        runs,
        1,
        stats.clone(),
        CancellationToken::new(),
        Duration::from_secs(5),
    );
    tokio::time::timeout(Duration::from_secs(20), consumers)
        .await
        .expect("the queue drains")
        .expect("no consumer error");
    (queue, stats)
}

#[tokio::test]
async fn a_transient_store_error_is_retried_then_acked() {
    let store = Store::failing(2, true);
    let (queue, stats) = run(1, store.clone(), Resolution::Evaluate).await;
    assert_eq!(store.stored(), 1);
    assert_eq!(stats.requeued.load(Ordering::Relaxed), 0);
    assert!(queue.dead_letters().is_empty());
}

#[tokio::test]
async fn a_store_unavailable_past_the_retries_requeues_the_message() {
    let store = Store::failing(STORE_ATTEMPTS as u32, true);
    let (queue, stats) = run(1, store.clone(), Resolution::Evaluate).await;
    assert_eq!(stats.requeued.load(Ordering::Relaxed), 1);
    assert_eq!(stats.redelivered.load(Ordering::Relaxed), 1);
    assert_eq!(store.stored(), 1, "stored on the redelivery");
    assert!(queue.dead_letters().is_empty());
}

#[tokio::test]
async fn a_permanent_store_error_rejects_to_the_dead_letter_queue() {
    let store = Store::failing(1, false);
    let (queue, stats) = run(2, store.clone(), Resolution::Evaluate).await;
    assert_eq!(store.stored(), 1, "the other message is stored");
    assert_eq!(queue.dead_letters().len(), 1);
    assert_eq!(stats.requeued.load(Ordering::Relaxed), 0);
}

#[tokio::test]
async fn unknown_runs_are_rejected_and_cancelled_ones_acked_unjudged() {
    let store = Store::failing(0, true);
    let (queue, _) = run(3, store.clone(), |_| Resolution::Unknown).await;
    assert_eq!(queue.dead_letters().len(), 3);
    let (queue, _) = run(3, store.clone(), |_| Resolution::Cancelled).await;
    assert!(queue.dead_letters().is_empty());
    assert_eq!(store.stored(), 0, "nothing evaluated or stored");
}

#[tokio::test]
async fn a_shutdown_stops_consuming_and_leaves_the_rest_unstarted() {
    let queue = InProcessQueue::new(64, 1);
    queue
        .publish((0..20).map(|i| message("r", i)).collect())
        .await
        .unwrap();
    let store = Store::failing(0, true);
    let stats = Arc::new(WorkerStats::default());
    let consumers = run_consumers(
        queue.clone(),
        store.clone(),
        Arc::new(OneRun::new(pipeline(), &queue)),
        2,
        stats,
        cancelled(),
        Duration::from_secs(5),
    );
    tokio::time::timeout(Duration::from_secs(10), consumers)
        .await
        .expect("stops at once")
        .expect("no consumer error");
    assert!(store.stored() < 20, "stopped before the end of the queue");
}

/// A token already cancelled: the shutdown was asked for before the consumers started.
fn cancelled() -> CancellationToken {
    let token = CancellationToken::new();
    token.cancel();
    token
}
