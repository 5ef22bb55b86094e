//! The aggregator service (`evalfleet aggregator`): tails the results' events stream with a
//! consumer group, folds each run's results into incremental aggregates, and when a run is
//! complete (ok + failed + skipped == total) writes its four reports and marks it complete.
//!
//! Restart-safe and safe to run several of: entries a crashed aggregator left unacked are
//! claimed after a while; a run's report is written by whoever takes the run's report lock; and
//! the aggregates used for the report are the incremental ones only when this aggregator folded
//! every stored result exactly once — otherwise (after a restart, or with several aggregators
//! sharing the stream) they are rebuilt from Redis in one streaming pass. A failing step (Redis
//! restarting, a report that cannot be written yet) is logged and retried, never fatal.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use evalfleet_contract::depth::QueueDepths;
use evalfleet_contract::events::{EventReader, ResultEvent, ResultEvents};
use evalfleet_contract::registry::{RunMeta, RunRegistry, Verdict};
use evalfleet_contract::store::{Counts, ResultStore};
use evalfleet_suites::spec::RunSpec;

use crate::fold::{worth_following, Folding};
use crate::metrics::metrics;
use crate::report_writer::{write_run_reports, Destination, Written};
use crate::{completion, gauges, queue_gauges, AggregatorError};
use crate::{results_log, run_dir};
use tokio_util::sync::CancellationToken;

/// How often running runs are checked for completion: it bounds the delay between a run's last
/// result and its report.
const SWEEP_EVERY: Duration = Duration::from_millis(250);
/// Events read from the stream at most at once.
const READ_BATCH: usize = 512;
/// How long results may gather after a short read before the next one. Folding is only
/// behind by this much; completion does not wait for it (the last result nudges a sweep).
const GATHER: Duration = Duration::from_millis(50);

/// How long a complete run's report waits for its last events to be folded.
const CATCH_UP: Duration = Duration::from_secs(2);

/// The consumer group every aggregator joins.
pub const GROUP: &str = "aggregators";

pub struct AggregatorOptions {
    pub reports_dir: PathBuf,
    /// `reports.inline_items`: above this many results, report.json names items.parquet.
    pub inline_items: u64,
    /// This aggregator's name in the consumer group (host and pid by default).
    pub consumer: String,
    /// Entries unacked this long by another aggregator are taken over.
    pub claim_after: Duration,
}

/// What the fleet aggregator reads results through: the run registry, the result store and
/// the results' events (Redis in the fleet).
pub trait Results: ResultStore + RunRegistry + ResultEvents + Clone {}

impl<S: ResultStore + RunRegistry + ResultEvents + Clone> Results for S {}

pub struct Aggregator<S, D> {
    store: S,
    opts: AggregatorOptions,
    folding: Mutex<Folding>,
    /// Where queue-depth metrics come from; the aggregator works without any.
    queue_depths: Option<Arc<D>>,
    /// Runs refused (their id breaks the rule, or their directory would not be inside
    /// reports_dir), so each is logged once, not at every sweep.
    refused: Mutex<HashSet<String>>,
}

impl<S: Results, D: QueueDepths> Aggregator<S, D> {
    pub fn new(store: S, opts: AggregatorOptions) -> Self {
        let folding = Folding::new(opts.reports_dir.clone(), &opts.consumer);
        Aggregator {
            store,
            opts,
            folding: Mutex::new(folding),
            queue_depths: None,
            refused: Mutex::new(HashSet::new()),
        }
    }

    /// Reports the work and dead-letter queue depths as metrics, from these sources.
    pub fn with_queue_depths(mut self, depths: D) -> Self {
        self.queue_depths = Some(Arc::new(depths));
        self
    }

    pub fn store(&self) -> &S {
        &self.store
    }

    /// Follows the events stream until `shutdown` is cancelled. A step under way (a fold, a
    /// sweep, a report) is finished first; what was read and not yet acked is read again.
    pub async fn serve(
        self: Arc<Self>,
        shutdown: CancellationToken,
    ) -> Result<(), AggregatorError> {
        let mut events = self.store.join(GROUP, &self.opts.consumer).await?;
        // Its own task: a slow management API must never hold up folding results. It ends with
        // `serve`, however `serve` ends (the guard cancels its token).
        let depths = shutdown.child_token();
        let _stop_depths = depths.clone().drop_guard();
        if let Some(reader) = self.queue_depths.clone() {
            tokio::spawn(queue_gauges::follow(reader, depths));
        }
        let mut last_claim = Instant::now();
        let mut last_sweep = Instant::now();
        loop {
            let batch = tokio::select! {
                () = shutdown.cancelled() => return Ok(()),
                read = events.read(READ_BATCH, SWEEP_EVERY) => read,
            };
            // A short batch means results trickle in: let them gather for a moment, so each
            // read (a round trip, a reply to parse, a wake-up) carries many.
            let gather = matches!(&batch, Ok(b) if !b.is_empty() && b.len() < READ_BATCH);
            let folded = match batch {
                Ok(batch) => self.fold_and_ack(&mut events, batch).await,
                Err(e) => Err(e.into()),
            };
            if !carry_on("following the events stream", folded).await {
                continue;
            }
            if last_claim.elapsed() >= self.opts.claim_after / 2 {
                last_claim = Instant::now();
                let claimed = async {
                    let claimed = events.claim_stale(self.opts.claim_after, 512).await?;
                    if !claimed.is_empty() {
                        tracing::info!(
                            entries = claimed.len(),
                            "took over events left by another aggregator"
                        );
                    }
                    self.fold_and_ack(&mut events, claimed).await
                };
                carry_on("claiming stale events", claimed.await).await;
            }
            let nudged = self.folding().is_some_and(|mut f| f.any_all_folded());
            if last_sweep.elapsed() >= SWEEP_EVERY || nudged {
                last_sweep = Instant::now();
                carry_on("finishing complete runs", self.finish_complete_runs().await).await;
            } else if gather {
                tokio::select! {
                    () = shutdown.cancelled() => return Ok(()),
                    _ = tokio::time::sleep(GATHER) => {}
                }
            }
        }
    }

    fn folding(&self) -> Option<std::sync::MutexGuard<'_, Folding>> {
        self.folding.lock().ok()
    }

    /// Says once that `run` is not followed, finished or written, and why.
    fn refuse(&self, run: &str, why: &str) {
        let Ok(mut refused) = self.refused.lock() else {
            return;
        };
        if refused.len() >= 10_000 {
            refused.clear();
        }
        if refused.insert(run.to_owned()) {
            tracing::error!(run = %run.escape_debug(), reason = %why, "run refused: its results are acknowledged and dropped, its reports never written");
        }
    }

    async fn fold_and_ack(
        &self,
        events: &mut S::Reader,
        batch: Vec<ResultEvent>,
    ) -> Result<(), AggregatorError> {
        if batch.is_empty() {
            return Ok(());
        }
        let mut ids = Vec::with_capacity(batch.len());
        for event in batch {
            ids.push((event.id.clone(), event.run_id.clone()));
            let Some(record) = event.record else { continue };
            let tracked = self.folding().is_some_and(|f| f.is_tracked(&event.run_id));
            if !tracked {
                // A run that may not be written can never be reported: its events are
                // acknowledged without being followed (left pending, they would be claimed
                // again and again).
                if let Err(e) = evalfleet_model::run_id::check(&event.run_id) {
                    self.refuse(&event.run_id, &e.to_string());
                    continue;
                }
                // An event of a run not followed here: of a run finished (by us before a
                // restart, or by another aggregator), not followed again; of a run `retry`
                // reopened, followed again — its results must reach a log.
                let meta = RunRegistry::run(&self.store, &event.run_id).await?;
                if !worth_following(meta.map(|m| m.status)) {
                    if let Some(mut f) = self.folding() {
                        f.end(&event.run_id);
                    }
                    continue;
                }
                match self.store.spec(&event.run_id).await {
                    Ok(Some(spec)) => {
                        // Its directory, made now, must be inside reports_dir.
                        if let Err(why) = run_dir::resolve(&self.opts.reports_dir, &event.run_id) {
                            self.refuse(&event.run_id, &why);
                            continue;
                        }
                        if let Some(mut f) = self.folding() {
                            f.track(&event.run_id, spec).map_err(|source| {
                                AggregatorError::Log {
                                    run: event.run_id.clone(),
                                    source,
                                }
                            })?;
                        }
                    }
                    Ok(None) => continue,
                    Err(e) if e.is_transient() => return Err(e.into()),
                    Err(e) => {
                        tracing::warn!(run = %event.run_id, error = %e, "unreadable run spec; events skipped");
                        continue;
                    }
                }
            }
            if let Some(mut f) = self.folding() {
                f.fold(&event.run_id, &record, &event.json)
                    .map_err(|source| AggregatorError::Log {
                        run: event.run_id.clone(),
                        source,
                    })?;
            }
        }
        // An event is its result's only copy: acknowledged only once the result is on disk.
        if let Some(mut f) = self.folding() {
            f.sync().map_err(|source| AggregatorError::Log {
                run: "(followed runs)".into(),
                source,
            })?;
        }
        events.ack(&ids).await?;
        Ok(())
    }

    /// Reads the queue depths once and sets their gauges; whether the management API failed.
    pub async fn publish_queue_metrics(&self, management_was_failing: bool) -> bool {
        match &self.queue_depths {
            Some(reader) => queue_gauges::publish(reader.as_ref(), management_was_failing).await,
            None => false,
        }
    }

    /// Finishes every running run whose results are all stored.
    pub async fn finish_complete_runs(&self) -> Result<(), AggregatorError> {
        completion::sweep(
            &self.store,
            &self.opts.consumer,
            &mut SweepObserver(self),
            |meta, _total, done| self.finish(meta, done),
        )
        .await
    }

    /// Writes a complete run's reports and marks it complete — unless its results are not all
    /// durable yet (events still being folded here, or pending at an aggregator that died and
    /// not claimed yet): a later sweep does it.
    async fn finish(&self, meta: RunMeta, done: u64) -> Result<(), AggregatorError> {
        let run = meta.id.clone();
        if self
            .folding()
            .is_some_and(|mut f| f.lagging(&run, done, CATCH_UP))
        {
            return Ok(());
        }
        let report_err = |message: String| AggregatorError::Report {
            run: run.clone(),
            message,
        };
        // Results whose events are not acknowledged yet are in no log: not yet.
        if self.store.in_flight(&run).await? > 0 {
            return Ok(());
        }
        let dir = match run_dir::resolve(&self.opts.reports_dir, &run) {
            Ok(dir) => dir,
            Err(why) => {
                self.refuse(&run, &why);
                return Ok(());
            }
        };
        let logs = results_log::dir(&dir);
        // Folded whole here, and nobody else logged part of it (another aggregator, or this
        // one before a restart): the report comes from what was folded. Otherwise from the
        // run's result logs, once they hold every stored result.
        let alone = results_log::logs(&logs).is_ok_and(|l| l.len() <= 1);
        let whole_here = alone
            && self
                .folding()
                .and_then(|f| f.get(&run).map(|t| t.folded_count == done))
                .unwrap_or(false);
        let replayed = if whole_here {
            None
        } else {
            let (id, dir) = (run.clone(), logs.clone());
            let spill = tokio::task::spawn_blocking(move || results_log::replay(&id, &dir))
                .await
                .map_err(|e| report_err(e.to_string()))?
                .map_err(|e| report_err(format!("replaying the result logs: {e}")))?;
            let durable = spill.count().map_err(|e| report_err(e.to_string()))?;
            if durable < done {
                tracing::debug!(run = %run, durable, done, "not every stored result is durable yet; finishing later");
                return Ok(());
            }
            Some(spill)
        };
        let tracked = self.folding().and_then(|mut f| f.take(&run));
        let spec: RunSpec = match &tracked {
            Some(t) => t.spec.clone(),
            None => self
                .store
                .spec(&run)
                .await?
                .ok_or_else(|| report_err("the run's spec is gone".into()))?,
        };
        let (incremental, kept, ahead) = match (replayed, tracked.and_then(|t| t.complete(done))) {
            (None, Some(complete)) => (Some(complete.agg), complete.items, complete.ahead),
            (replayed, _) => (None, replayed.map(Arc::new), None),
        };
        let rebuilt = incremental.is_none();
        let writing = Instant::now();
        let target = dir.clone();
        let logs_dir = logs.clone();
        let inline_items = self.opts.inline_items;
        let written = tokio::task::spawn_blocking(move || -> Result<Written, String> {
            let finished_at = jiff::Timestamp::now();
            let to = Destination {
                dir: &target,
                inline_items,
                items_ahead: ahead.as_ref(),
            };
            let items = match kept {
                Some(items) => items,
                None => Arc::new(
                    results_log::replay(&meta.id, &logs_dir)
                        .map_err(|e| format!("replaying the result logs: {e}"))?,
                ),
            };
            write_run_reports(&spec, &meta, incremental, &*items, to, finished_at)
        })
        .await
        .map_err(|e| report_err(e.to_string()))?
        .map_err(report_err)?;
        let report_dir = dir.display().to_string();
        let verdict = Verdict {
            gates_passed: written.gates_passed,
            summary_md: &written.summary,
            report_dir: &report_dir,
        };
        self.store.finish(&run, &verdict).await?;
        let m = metrics();
        m.reports_written.inc();
        m.forget_run(&run);
        tracing::info!(
            run = %run,
            gates_passed = written.gates_passed,
            dir = %dir.display(),
            report_seconds = writing.elapsed().as_secs_f64(),
            aggregates_rebuilt = rebuilt,
            "run complete: reports written"
        );
        Ok(())
    }
}

/// What the aggregator does with what a sweep sees: run gauges and totals for running runs;
/// runs finished elsewhere are no longer followed.
struct SweepObserver<'a, S, D>(&'a Aggregator<S, D>);

impl<S: Results, D: QueueDepths> completion::Observer for SweepObserver<'_, S, D> {
    fn running(&mut self, meta: &RunMeta, counts: Counts) {
        if let Some(mut f) = self.0.folding() {
            if let Some(total) = meta.total {
                f.set_total(&meta.id, total);
            }
            gauges::publish_run(meta, counts, f.get(&meta.id));
        }
    }

    fn ended(&mut self, meta: &RunMeta) {
        if let Some(mut f) = self.0.folding() {
            if f.is_tracked(&meta.id) {
                f.end(&meta.id);
            }
        }
    }

    fn refused(&mut self, meta: &RunMeta, why: &str) {
        self.0.refuse(&meta.id, why);
    }
}

/// Whether a step of the service loop succeeded. A failure is logged, and the loop goes on after
/// a pause: Redis going away (a restart) or a report that cannot be written yet must not stop
/// the aggregator. Nothing is lost meanwhile: entries not acked stay pending and are claimed
/// again, and a run not finished now is finished by a later sweep.
async fn carry_on(step: &str, result: Result<(), AggregatorError>) -> bool {
    match result {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!(error = %e, "{step} failed; retrying");
            tokio::time::sleep(Duration::from_millis(500)).await;
            false
        }
    }
}
