//! The fleet worker (`evalfleet worker`): consumes example messages of any run and evaluates
//! each with that run's spec, through the one consumer loop ([`crate::consume`]). What is
//! particular to the fleet lives here, behind [`Runs`]:
//! - a message's run is looked up in the registry (its spec, once per run and process); an
//!   unknown (or expired) run makes the message poison, rejected to the dead-letter queue;
//! - a message of a cancelled run is acked and dropped without any judge call;
//! - live judges are shared by runs with the same judge configuration (so they share rate
//!   limits), and use the fleet-wide limiter and the Redis judge cache;
//! - a failed example's message is kept so `evalfleet retry` can re-enqueue it;
//! - a run's code scorers obey `fleet.targets` as its target does ([`crate::scorer`]);
//! - in batch mode an example waiting for batch replies is parked in the [`BatchStore`], and
//!   this worker takes part in coordinating the fleet's provider batches ([`crate::coordinator`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use evalfleet_config::{HostPolicy, Target, TargetPolicy};
use evalfleet_contract::batch_store::{BatchStore, Parking, Question};
use evalfleet_contract::judge_cache::JudgeCache;
use evalfleet_contract::queue::{Message, WorkQueue};
use evalfleet_contract::registry::{RunRegistry, RunStatus};
use evalfleet_contract::shared_limit::SharedLimiter;
use evalfleet_contract::store::{ResultStore, StoreError};
use evalfleet_suites::spec::RunSpec;
use evalfleet_suites::target::secrets_of;

use crate::consume::{run_consumers, Resolution, Runs};
use crate::coordinator::{coordinate, BatchProviders, BatchRuns, CoordinatorOptions};
use crate::judge::{build_judge, LiveParts};
use crate::scorer::{ScorerPolicy, Scorers};
use crate::target::{RunTarget, TargetParts};
use crate::{Pipeline, WorkerError, WorkerStats};
use tokio_util::sync::CancellationToken;

/// How long a run's cancelled/not-cancelled state is trusted before it is read again.
const STATE_TTL: Duration = Duration::from_secs(2);

pub struct ServiceOptions {
    /// Messages processed at once.
    pub concurrency: usize,
    /// How long in-flight work may take to finish after a shutdown signal.
    pub shutdown_deadline: Duration,
    /// How this worker coordinates provider batches (batch mode).
    pub coordinator: CoordinatorOptions,
}

/// The fleet worker: its queue and store, and the runs it has seen.
pub struct FleetWorker<Q, S, D> {
    queue: Q,
    store: Arc<S>,
    runs: Arc<FleetRuns<D>>,
    pub stats: Arc<WorkerStats>,
}

/// The fleet's [`Runs`]: run contexts from the registry, and the live judges (one per distinct
/// judge configuration, so runs with the same providers share rate limits).
pub struct FleetRuns<D> {
    registry: Arc<D>,
    /// What live judges are built with: the Redis cache, the parking, the fleet limiter; shared
    /// between runs with the same judge configuration.
    live: LiveParts,
    batches: Arc<dyn BatchStore>,
    contexts: Mutex<HashMap<String, Arc<RunContext>>>,
    /// What a run's target may read and call here (`fleet.targets`): a run spec is whoever
    /// submitted it, this worker's environment is not.
    targets: TargetPolicy,
    hosts: Arc<HostPolicy>,
}

struct RunContext {
    pipeline: Arc<Pipeline>,
    state: Mutex<(RunStatus, Instant)>,
}

impl<Q, S, D> FleetWorker<Q, S, D>
where
    Q: WorkQueue + Clone,
    S: ResultStore,
    D: RunRegistry,
{
    pub fn new(
        queue: Q,
        store: Arc<S>,
        registry: Arc<D>,
        cache: Arc<dyn JudgeCache>,
        limiter: Option<Arc<dyn SharedLimiter>>,
        batches: Arc<dyn BatchStore>,
        targets: TargetPolicy,
    ) -> Result<Self, String> {
        let hosts = Arc::new(targets.hosts()?);
        Ok(FleetWorker {
            queue,
            store,
            runs: Arc::new(FleetRuns {
                registry,
                live: LiveParts::new(cache)
                    .with_parking(batches.clone())
                    .with_limiter(limiter)
                    .shared(),
                batches,
                contexts: Mutex::new(HashMap::new()),
                targets,
                hosts,
            }),
            stats: Arc::new(WorkerStats::default()),
        })
    }

    /// Consumes until `shutdown` is cancelled (then stops consuming and drains within the
    /// deadline) or a judge key is rejected. The batch coordinator runs beside the consumers
    /// under a child of the same token, so it stops with them either way.
    pub async fn serve(
        self: Arc<Self>,
        opts: ServiceOptions,
        shutdown: CancellationToken,
    ) -> Result<(), WorkerError> {
        let stop = shutdown.child_token();
        let coordinator = tokio::spawn(coordinate(
            self.runs.batches.clone(),
            self.queue.clone(),
            self.runs.clone(),
            opts.coordinator,
            stop.clone(),
        ));
        let served = run_consumers(
            self.queue.clone(),
            self.store.clone(),
            self.runs.clone(),
            opts.concurrency,
            self.stats.clone(),
            stop.clone(),
            opts.shutdown_deadline,
        )
        .await;
        stop.cancel();
        let _ = coordinator.await;
        served
    }
}

impl<D: RunRegistry> Runs for FleetRuns<D> {
    async fn resolve(&self, msg: &Message) -> Resolution {
        let ctx = match self.context(&msg.run_id).await {
            Ok(Some(ctx)) => ctx,
            Ok(None) => return Resolution::Unknown,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the run registry; requeueing");
                return Resolution::Unavailable;
            }
        };
        if self.state(&msg.run_id, &ctx).await == RunStatus::Cancelled {
            return Resolution::Cancelled;
        }
        Resolution::Evaluate(ctx.pipeline.clone())
    }

    async fn keep_failed(&self, msg: &Message) {
        let Ok(json) = serde_json::to_string(msg) else {
            return;
        };
        if let Err(e) = self
            .registry
            .keep_failed_message(&msg.run_id, msg.index, &json)
            .await
        {
            tracing::warn!(error = %e, "cannot keep the failed example's message for retry");
        }
    }

    async fn park(&self, msg: &Message, questions: &[Question]) -> Result<Parking, StoreError> {
        let json = serde_json::to_string(msg)
            .map_err(|e| StoreError::Backend(format!("the message does not serialise: {e}")))?;
        self.batches
            .park(&msg.run_id, msg.index, &json, questions)
            .await
    }
}

impl<D: RunRegistry> BatchRuns for FleetRuns<D> {
    async fn batch_providers(&self, run: &str) -> Option<(BatchProviders, bool)> {
        let ctx = self.context(run).await.ok().flatten()?;
        let providers = ctx.pipeline.batch_providers();
        if providers.is_empty() {
            return None;
        }
        let cancelled = self.state(run, &ctx).await == RunStatus::Cancelled;
        Some((providers, cancelled))
    }
}

impl<D: RunRegistry> FleetRuns<D> {
    async fn context(&self, run_id: &str) -> Result<Option<Arc<RunContext>>, WorkerError> {
        if let Some(ctx) = self.contexts.lock().map_err(poisoned)?.get(run_id) {
            return Ok(Some(ctx.clone()));
        }
        let Some(spec) = self
            .registry
            .spec(run_id)
            .await
            .map_err(|e| WorkerError::Task(e.to_string()))?
        else {
            return Ok(None);
        };
        let judge =
            build_judge(spec.judge, &spec.judges, &self.live).map_err(WorkerError::Stopped)?;
        let env = |name: &str| std::env::var(name).ok();
        let scorers = Scorers::build(
            &spec.suite,
            &ScorerPolicy::Fleet {
                policy: &self.targets,
                hosts: self.hosts.clone(),
            },
            &env,
        );
        for reason in scorers.refusals() {
            tracing::warn!(run = run_id, "{reason}: its items get nulls");
        }
        let mut pipeline = Pipeline::new(Arc::new(spec.suite.clone()), judge).with_scorers(scorers);
        if let Some(target) = &spec.target {
            pipeline = self.with_target(pipeline, target, &spec)?;
        }
        let pipeline = Arc::new(pipeline);
        let ctx = Arc::new(RunContext {
            pipeline,
            state: Mutex::new((RunStatus::Running, Instant::now() - STATE_TTL)),
        });
        self.contexts
            .lock()
            .map_err(poisoned)?
            .insert(run_id.to_owned(), ctx.clone());
        Ok(Some(ctx))
    }

    /// `pipeline` with the run's target, built from this worker's environment. A `${VAR}`
    /// this worker does not allow fails the run's examples with the reason (the run asked for
    /// what it may not have); a key or an allowed variable the worker lacks stops the worker,
    /// as a judge's key does (it cannot do the run's work, another worker may).
    fn with_target(
        &self,
        pipeline: Pipeline,
        target: &Target,
        spec: &RunSpec,
    ) -> Result<Pipeline, WorkerError> {
        if let Some(var) = secrets_of(target)
            .into_iter()
            .find(|v| !self.targets.allows_env(v))
        {
            let reason = format!(
                "target {}: ${{{var}}} is not allowed on this worker",
                target.name()
            );
            return Ok(pipeline.refusing_target(reason));
        }
        let env = |name: &str| std::env::var(name).ok();
        let built = RunTarget::new(TargetParts {
            target: target.clone(),
            model: spec.target_model.clone(),
            judges: &spec.judges,
            rules: spec.model_prefixes.clone(),
            env: &env,
            cache: self.live.cache(),
            rate_limits: &self.live.rate_limits(),
            hosts: Some(self.hosts.clone()),
            parking: Some(self.live.parking()),
        })
        .map_err(WorkerError::Stopped)?;
        let built = built.serving(&pipeline.judge, &spec.judges);
        Ok(pipeline.with_target(built))
    }

    /// The run's state, read again from the registry when older than [`STATE_TTL`].
    async fn state(&self, run_id: &str, ctx: &RunContext) -> RunStatus {
        let cached = ctx
            .state
            .lock()
            .map(|s| *s)
            .unwrap_or((RunStatus::Running, Instant::now()));
        if cached.1.elapsed() < STATE_TTL {
            return cached.0;
        }
        let fresh = self
            .registry
            .run(run_id)
            .await
            .ok()
            .flatten()
            .map_or(cached.0, |meta| meta.status);
        if let Ok(mut s) = ctx.state.lock() {
            *s = (fresh, Instant::now());
        }
        fresh
    }
}

fn poisoned<T>(_: std::sync::PoisonError<T>) -> WorkerError {
    WorkerError::Task("a worker lock was poisoned".into())
}
