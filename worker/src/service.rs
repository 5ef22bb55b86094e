//! The fleet worker (`evalfleet worker`): consumes example messages of any run, evaluates them
//! with that run's spec, stores the result and only then acknowledges the message.
//!
//! Failure handling, message by message:
//! - a message of an unknown (or expired) run is poison: rejected to the dead-letter queue;
//! - a message of a cancelled run is acked and dropped without any judge call;
//! - a result that cannot be stored (Redis away) is retried a few times, then the message is
//!   requeued: the broker redelivers it and the store's at-most-once write keeps counts exact;
//! - a rejected judge API key stops this worker (the message is requeued for a worker whose key
//!   works), instead of failing every example;
//! - on shutdown the worker stops taking messages, finishes what it holds within a deadline,
//!   acks, and returns; anything unacked goes back to the broker.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use evalfleet_shared::judge_cache::{JudgeCache, NoCache};
use evalfleet_shared::queue::{Delivery, WorkQueue};
use evalfleet_shared::runs::{RunDirectory, RunState};
use evalfleet_shared::shared_limit::SharedLimiter;
use evalfleet_shared::spec::RunSpec;
use evalfleet_shared::store::{PutOutcome, ResultStore};
use tokio::sync::watch;

use crate::judge::{Judge, LiveJudge};
use crate::metrics::metrics;
use crate::{process, Pipeline, WorkerError, WorkerStats};

/// How long a run's cancelled/not-cancelled state is trusted before it is read again.
const STATE_TTL: Duration = Duration::from_secs(2);
/// Attempts to store one result before the message is handed back to the broker.
const STORE_ATTEMPTS: u32 = 5;

pub struct ServiceOptions {
    /// Messages processed at once.
    pub concurrency: usize,
    /// How long in-flight work may take to finish after a shutdown signal.
    pub shutdown_deadline: Duration,
}

/// Shared by every consumer task: the run contexts, and the live judges (one per distinct
/// judge configuration, so runs with the same providers share rate limits).
pub struct FleetWorker<Q, S, D> {
    queue: Q,
    store: Arc<S>,
    runs: Arc<D>,
    cache: Arc<dyn JudgeCache>,
    limiter: Option<Arc<dyn SharedLimiter>>,
    contexts: Mutex<HashMap<String, Arc<RunContext>>>,
    judges: Mutex<HashMap<String, Arc<LiveJudge>>>,
    pub stats: Arc<WorkerStats>,
}

struct RunContext {
    pipeline: Arc<Pipeline>,
    state: Mutex<(RunState, Instant)>,
}

enum Handling {
    Ack,
    Requeue,
    Reject,
}

impl<Q, S, D> FleetWorker<Q, S, D>
where
    Q: WorkQueue + Clone,
    S: ResultStore,
    D: RunDirectory,
{
    pub fn new(
        queue: Q,
        store: Arc<S>,
        runs: Arc<D>,
        cache: Arc<dyn JudgeCache>,
        limiter: Option<Arc<dyn SharedLimiter>>,
    ) -> Self {
        FleetWorker {
            queue,
            store,
            runs,
            cache,
            limiter,
            contexts: Mutex::new(HashMap::new()),
            judges: Mutex::new(HashMap::new()),
            stats: Arc::new(WorkerStats::default()),
        }
    }

    /// Consumes until `shutdown` resolves (then drains within the deadline) or a judge key is
    /// rejected.
    pub async fn serve(
        self: Arc<Self>,
        opts: ServiceOptions,
        shutdown: impl Future<Output = ()> + Send,
    ) -> Result<(), WorkerError> {
        let (stop_tx, stop_rx) = watch::channel(false);
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..opts.concurrency.max(1) {
            let (me, mut stop) = (self.clone(), stop_rx.clone());
            tasks.spawn(async move { me.consume(&mut stop).await });
        }
        let mut failure = None;
        tokio::select! {
            _ = shutdown => tracing::info!("shutdown requested: finishing in-flight examples"),
            Some(done) = tasks.join_next() => failure = done.map_err(|e| WorkerError::Task(e.to_string())).and_then(|r| r).err(),
        }
        let _ = stop_tx.send(true);
        let drain = async {
            while let Some(done) = tasks.join_next().await {
                if let Err(e) = done
                    .map_err(|e| WorkerError::Task(e.to_string()))
                    .and_then(|r| r)
                {
                    failure.get_or_insert(e);
                }
            }
        };
        if tokio::time::timeout(opts.shutdown_deadline, drain)
            .await
            .is_err()
        {
            tracing::warn!(deadline = ?opts.shutdown_deadline, "in-flight examples did not finish in time; the broker redelivers them");
        }
        failure.map_or(Ok(()), Err)
    }

    async fn consume(&self, stop: &mut watch::Receiver<bool>) -> Result<(), WorkerError> {
        loop {
            let delivery = tokio::select! {
                biased;
                _ = stop.changed() => return Ok(()),
                next = self.queue.next() => match next? {
                    Some(d) => d,
                    None => return Ok(()),
                },
            };
            if delivery.redelivered() {
                self.stats.redelivered.fetch_add(1, Ordering::Relaxed);
                metrics().redelivered.inc();
            }
            let handling = self.handle(&delivery).await;
            // Settling fails when the channel died under the delivery (a broker restart): the
            // broker redelivers the message, and the store's at-most-once write absorbs it.
            let settled = match &handling {
                Ok(Handling::Ack) => delivery.ack().await,
                Ok(Handling::Requeue) | Err(_) => delivery.requeue().await,
                Ok(Handling::Reject) => {
                    metrics().dead_lettered.inc();
                    delivery.reject().await
                }
            };
            if let Err(e) = settled {
                tracing::warn!(error = %e, "could not settle a delivery; the broker will redeliver it");
            }
            handling?;
            if *stop.borrow() {
                return Ok(());
            }
        }
    }

    /// What to do with one delivery; Err only when this worker must stop.
    async fn handle(&self, delivery: &Q::Delivery) -> Result<Handling, WorkerError> {
        let msg = delivery.message();
        let ctx = match self.context(&msg.run_id).await {
            Ok(Some(ctx)) => ctx,
            Ok(None) => {
                tracing::warn!(message_id = %msg.message_id(), "message of an unknown run: rejected to the dead-letter queue");
                return Ok(Handling::Reject);
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the run registry; requeueing");
                tokio::time::sleep(Duration::from_millis(500)).await;
                return Ok(Handling::Requeue);
            }
        };
        if self.state(&msg.run_id, &ctx).await == RunState::Cancelled {
            return Ok(Handling::Ack);
        }
        let mut evaluator = ctx.pipeline.evaluator();
        let record = process(&mut evaluator, &ctx.pipeline.judge, msg).await;
        if let Some(reason) = ctx.pipeline.judge.stopped() {
            return Err(WorkerError::Stopped(reason.to_owned()));
        }
        if record.outcome == evalfleet_shared::record::Outcome::Failed {
            if let Ok(json) = serde_json::to_string(msg) {
                if let Err(e) = self
                    .runs
                    .keep_failed_message(&msg.run_id, msg.index, &json)
                    .await
                {
                    tracing::warn!(error = %e, "cannot keep the failed example's message for retry");
                }
            }
        }
        let mut backoff = Duration::from_millis(100);
        for attempt in 1..=STORE_ATTEMPTS {
            match self.store.put(record.clone()).await {
                Ok(outcome) => {
                    if outcome == PutOutcome::AlreadyStored {
                        self.stats.duplicates.fetch_add(1, Ordering::Relaxed);
                    }
                    self.stats.processed.fetch_add(1, Ordering::Relaxed);
                    return Ok(Handling::Ack);
                }
                Err(e) if attempt < STORE_ATTEMPTS => {
                    tracing::warn!(error = %e, attempt, "storing a result failed; retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "storing a result failed; requeueing the message")
                }
            }
        }
        self.stats.requeued.fetch_add(1, Ordering::Relaxed);
        Ok(Handling::Requeue)
    }

    async fn context(&self, run_id: &str) -> Result<Option<Arc<RunContext>>, WorkerError> {
        if let Some(ctx) = self.contexts.lock().map_err(poisoned)?.get(run_id) {
            return Ok(Some(ctx.clone()));
        }
        let Some(spec) = self
            .runs
            .spec(run_id)
            .await
            .map_err(|e| WorkerError::Task(e.to_string()))?
        else {
            return Ok(None);
        };
        let judge = self.judge_for(&spec)?;
        let pipeline = Arc::new(Pipeline {
            suite: Arc::new(spec.suite.clone()),
            rules: spec.model_prefixes.clone(),
            dataset_dir: None,
            judge,
        });
        let ctx = Arc::new(RunContext {
            pipeline,
            state: Mutex::new((RunState::Running, Instant::now() - STATE_TTL)),
        });
        self.contexts
            .lock()
            .map_err(poisoned)?
            .insert(run_id.to_owned(), ctx.clone());
        Ok(Some(ctx))
    }

    fn judge_for(&self, spec: &RunSpec) -> Result<Judge, WorkerError> {
        Ok(match spec.judge.as_str() {
            "none" => Judge::None,
            "heuristic" => Judge::Heuristic,
            _ => {
                let key = serde_json::to_string(&spec.judges).unwrap_or_default();
                let mut judges = self.judges.lock().map_err(poisoned)?;
                if let Some(live) = judges.get(&key) {
                    return Ok(Judge::Live(live.clone()));
                }
                // The run's spec decides whether its verdicts may come from the shared cache.
                let cache: Arc<dyn JudgeCache> = if spec.judges.cache {
                    self.cache.clone()
                } else {
                    Arc::new(NoCache)
                };
                let mut live = LiveJudge::new(&spec.judges, cache).map_err(WorkerError::Stopped)?;
                if let Some(limiter) = &self.limiter {
                    live = live.with_shared_limiter(limiter.clone());
                }
                let live = Arc::new(live);
                judges.insert(key, live.clone());
                Judge::Live(live)
            }
        })
    }

    /// The run's state, read again from the registry when older than [`STATE_TTL`].
    async fn state(&self, run_id: &str, ctx: &RunContext) -> RunState {
        let cached = ctx
            .state
            .lock()
            .map(|s| *s)
            .unwrap_or((RunState::Running, Instant::now()));
        if cached.1.elapsed() < STATE_TTL {
            return cached.0;
        }
        let fresh = self
            .runs
            .state(run_id)
            .await
            .ok()
            .flatten()
            .unwrap_or(cached.0);
        if let Ok(mut s) = ctx.state.lock() {
            *s = (fresh, Instant::now());
        }
        fresh
    }
}

fn poisoned<T>(_: std::sync::PoisonError<T>) -> WorkerError {
    WorkerError::Task("a worker lock was poisoned".into())
}
