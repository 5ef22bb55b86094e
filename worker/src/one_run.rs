//! The embedded run's side of the consumer loop (`evalfleet run`): every message belongs to
//! the one run being evaluated, and in batch mode the fleet's batch coordinator runs beside
//! the consumers over the judge's in-process batch store.
//!
//! An example waiting for its batches is parked in that store and leaves the queue, as in the
//! fleet; the in-process queue holds it ([`InProcessQueue::hold`]) so that the run does not
//! end while it is away, and the coordinator's publish brings it back.

use std::sync::Arc;
use std::time::Duration;

use evalfleet_contract::batch_store::{BatchStore, Parking, Question};
use evalfleet_contract::queue::{InProcessQueue, Message};
use evalfleet_contract::store::{ResultStore, StoreError};
use tokio_util::sync::CancellationToken;

use crate::consume::{run_consumers, Resolution, Runs};
use crate::coordinator::{coordinate, BatchProviders, BatchRuns, CoordinatorOptions};
use crate::{Pipeline, WorkerError, WorkerStats};

/// How long the embedded run lets in-flight examples finish once a consumer had to stop.
const EMBEDDED_DRAIN: Duration = Duration::from_secs(60);

/// The embedded run's coordinator is the only one: its lease needs no renewing to speak of.
const EMBEDDED_LEASE: Duration = Duration::from_secs(3600);

/// The one run of `evalfleet run`.
pub struct OneRun {
    pipeline: Arc<Pipeline>,
    /// Batch mode: where examples park, and the queue that holds them meanwhile.
    parking: Option<(Arc<dyn BatchStore>, InProcessQueue)>,
}

impl OneRun {
    /// Every message is evaluated with `pipeline`; a batch-mode judge's examples park in its
    /// batch store and are held in `queue` meanwhile.
    pub fn new(pipeline: Arc<Pipeline>, queue: &InProcessQueue) -> Self {
        let parking = pipeline.batch_store().map(|store| (store, queue.clone()));
        OneRun { pipeline, parking }
    }
}

impl Runs for OneRun {
    async fn resolve(&self, _: &Message) -> Resolution {
        Resolution::Evaluate(self.pipeline.clone())
    }

    async fn keep_failed(&self, _: &Message) {}

    async fn park(&self, msg: &Message, questions: &[Question]) -> Result<Parking, StoreError> {
        let Some((store, queue)) = &self.parking else {
            return Err(StoreError::Backend(
                "the run's judge has no batch store to park examples in".into(),
            ));
        };
        let json = serde_json::to_string(msg)
            .map_err(|e| StoreError::Backend(format!("the message does not serialise: {e}")))?;
        // Held before it is parked: the coordinator may publish it back at once.
        queue.hold(msg);
        let parked = store.park(&msg.run_id, msg.index, &json, questions).await;
        if !matches!(parked, Ok(Parking::Parked)) {
            queue.unhold(msg);
        }
        parked
    }
}

impl BatchRuns for OneRun {
    async fn batch_providers(&self, _: &str) -> Option<(BatchProviders, bool)> {
        let providers = self.pipeline.batch_providers();
        (!providers.is_empty()).then_some((providers, false))
    }
}

/// The embedded run's consumers: `concurrency` of them until the queue is drained and closed,
/// and in batch mode the batch coordinator until then.
pub async fn run_workers<S: ResultStore>(
    queue: InProcessQueue,
    store: Arc<S>,
    pipeline: Arc<Pipeline>,
    concurrency: usize,
    stats: Arc<WorkerStats>,
) -> Result<(), WorkerError> {
    let runs = Arc::new(OneRun::new(pipeline, &queue));
    let stop = CancellationToken::new();
    let coordinator = runs.parking.as_ref().map(|(batches, _)| {
        let options = CoordinatorOptions {
            holder: "run".into(),
            lease: EMBEDDED_LEASE,
        };
        tokio::spawn(coordinate(
            batches.clone(),
            queue.clone(),
            runs.clone(),
            options,
            stop.clone(),
        ))
    });
    let served = run_consumers(
        queue,
        store,
        runs,
        concurrency,
        stats,
        CancellationToken::new(),
        EMBEDDED_DRAIN,
    )
    .await;
    stop.cancel();
    if let Some(coordinator) = coordinator {
        let _ = coordinator.await;
    }
    served
}
