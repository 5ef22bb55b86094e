//! The fleet's batch coordinator: every worker runs one, and for each provider the worker that
//! holds the provider's lease in Redis does the work — packs the questions workers parked into
//! provider batches, submits them, polls them, stores their results and re-enqueues the
//! examples whose results are all in. When the holder dies its lease runs out and another
//! worker takes over within `fleet.batch_lease_s`.
//!
//! It lives in the worker rather than in a role of its own so that a fleet needs nothing new to
//! deploy, and any worker can take over (DECISIONS.md, "Batch mode in the fleet").
//!
//! Everything it knows is in the [`BatchStore`]; what it keeps in memory (poll timers, which
//! intents it recorded itself) only saves calls, so a coordinator that starts cold — after a
//! crash at any step — picks up where the store says the work is (`steps.rs`).

mod call;
mod error;
mod lease;
mod pages;
mod steps;

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use evalfleet_contract::batch_store::{BatchPhase, BatchStore};
use evalfleet_contract::queue::WorkQueue;

use crate::judge::batch::BatchOptions;
use crate::judge::provider::ProviderClient;
use crate::metrics::metrics;
use lease::Leases;
use steps::{Progress, Step};
use tokio_util::sync::CancellationToken;

/// How often the coordinator looks at the store.
const TICK: Duration = Duration::from_millis(500);

/// A run's batch-mode providers (its judges' and its chat target's), each with its client and
/// batch options.
pub type BatchProviders = Vec<(Arc<ProviderClient>, BatchOptions)>;

/// Where a run's batch work comes from: the worker's run registry.
pub trait BatchRuns: Send + Sync + 'static {
    /// The run's batch-mode providers ([`crate::Pipeline::batch_providers`]) and whether the
    /// run was cancelled; None when the run is unknown (expired) or sends nothing in batches.
    fn batch_providers(
        &self,
        run: &str,
    ) -> impl Future<Output = Option<(BatchProviders, bool)>> + Send;
}

/// How this worker coordinates.
#[derive(Clone)]
pub struct CoordinatorOptions {
    /// This worker's name in the leases (unique per process).
    pub holder: String,
    /// How long a lease lasts unrenewed.
    pub lease: Duration,
}

/// Runs until `shutdown` is cancelled; a step under way is finished first (each is safe to
/// cut short anyway: the next holder of the lease repairs it).
pub async fn coordinate<Q, R>(
    store: Arc<dyn BatchStore>,
    queue: Q,
    runs: Arc<R>,
    options: CoordinatorOptions,
    shutdown: CancellationToken,
) where
    Q: WorkQueue,
    R: BatchRuns,
{
    let mut leases = Leases::new(store.clone(), options.clone());
    let mut progress: HashMap<(String, String), Progress> = HashMap::new();
    loop {
        tokio::select! {
            () = shutdown.cancelled() => break,
            () = tokio::time::sleep(TICK) => {}
        }
        let run_ids = match store.runs().await {
            Ok(ids) => ids,
            Err(e) => {
                tracing::warn!(error = %e, "cannot list the runs with batch work");
                continue;
            }
        };
        let mut gauges = Gauges::default();
        for run in run_ids {
            let Some((providers, cancelled)) = runs.batch_providers(&run).await else {
                tracing::warn!(
                    run,
                    "a run with batch work is gone from the registry; forgetting it"
                );
                let _ = store.retire(&run, true).await;
                continue;
            };
            let mut open = false;
            for (client, batcher) in providers {
                let provider = batcher.provider.clone();
                if !leases.held(&provider) {
                    continue;
                }
                let key = (run.clone(), provider.clone());
                let progress = progress.entry(key).or_default();
                let step = Step {
                    store: store.as_ref(),
                    queue: &queue,
                    run: &run,
                    client: &client,
                    options: &batcher,
                    holder: &options.holder,
                    cancelled,
                };
                match step.run(progress).await {
                    Ok(seen) => {
                        open |= seen.open;
                        gauges.add(&provider, &seen);
                    }
                    Err(e) => {
                        open = true;
                        tracing::warn!(run, provider, error = %e, "a batch step failed; trying again");
                    }
                }
            }
            if cancelled || !open {
                match store.retire(&run, cancelled).await {
                    Ok(true) => {
                        progress.retain(|(r, _), _| r != &run);
                        tracing::info!(run, "no batch work left for the run");
                    }
                    Ok(false) => {}
                    Err(e) => tracing::warn!(run, error = %e, "cannot retire the run's batch work"),
                }
            }
        }
        gauges.publish(&leases);
    }
    leases.stop();
}

/// What one tick saw of one provider's batches, for the gauges.
#[derive(Default)]
pub(crate) struct Seen {
    /// Work is left (questions pending, batches open).
    pub open: bool,
    pub pending: u64,
    pub submitting: i64,
    pub running: i64,
    pub in_batches: u64,
    /// When the oldest running batch was collected (unix s).
    pub oldest_running: Option<f64>,
}

/// The batch gauges of the providers this worker coordinates, summed over runs.
#[derive(Default)]
struct Gauges(HashMap<String, Seen>);

impl Gauges {
    fn add(&mut self, provider: &str, seen: &Seen) {
        let sum = self.0.entry(provider.to_owned()).or_default();
        sum.pending += seen.pending;
        sum.submitting += seen.submitting;
        sum.running += seen.running;
        sum.in_batches += seen.in_batches;
        sum.oldest_running = match (sum.oldest_running, seen.oldest_running) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }

    /// Sets the gauges of every provider this worker holds (zero for one without work).
    fn publish(&self, leases: &Leases) {
        let m = metrics();
        let empty = Seen::default();
        for provider in leases.held_providers() {
            let seen = self.0.get(&provider).unwrap_or(&empty);
            let p = provider.as_str();
            m.batches
                .with_label_values(&[p, "submitting"])
                .set(seen.submitting);
            m.batches
                .with_label_values(&[p, BatchPhase::Running.as_str()])
                .set(seen.running);
            m.batch_requests
                .with_label_values(&[p, "pending"])
                .set(seen.pending as i64);
            m.batch_requests
                .with_label_values(&[p, "in_batches"])
                .set(seen.in_batches as i64);
            m.batch_oldest_running
                .with_label_values(&[p])
                .set(seen.oldest_running.unwrap_or(0.0));
        }
    }
}

/// A test hook: `EVALFLEET_CRASH_AT=<step>` makes the process die at once at that step, with no
/// cleanup, as `kill -9` would (the fault tests use it to crash a coordinator between two
/// writes). Steps: `batch-collected`, `batch-created`, `batch-polled`, `batch-downloading`.
pub(crate) fn crash_point(step: &str) {
    if std::env::var("EVALFLEET_CRASH_AT").is_ok_and(|at| at == step) {
        tracing::error!(step, "EVALFLEET_CRASH_AT: dying here");
        std::process::abort();
    }
}
