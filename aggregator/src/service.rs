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

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use evalfleet_fleet::redis::{EventStream, RedisError, RedisStore, RunItems, RunMeta, RunStatus};
use evalfleet_shared::aggregate::RunAggregator;
use evalfleet_shared::record::ResultRecord;
use evalfleet_shared::report::{self, ItemSource, ReportInput, RunInfo};
use evalfleet_shared::spec::RunSpec;
use evalfleet_shared::store::ResultStore;

use crate::metrics::metrics;
use evalfleet_fleet::amqp::depth::QueueDepthReader;

/// How often running runs are checked for completion: it bounds the delay between a run's last
/// result and its report.
const SWEEP_EVERY: Duration = Duration::from_millis(250);

/// How often queue depths are read. The management API refreshes its counts every 5 s by
/// default, so polling faster would only repeat them.
const QUEUE_DEPTH_EVERY: Duration = Duration::from_secs(1);

/// The consumer group every aggregator joins.
pub const GROUP: &str = "aggregators";

pub struct AggregatorOptions {
    pub reports_dir: PathBuf,
    /// This aggregator's name in the consumer group (host and pid by default).
    pub consumer: String,
    /// Entries unacked this long by another aggregator are taken over.
    pub claim_after: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum AggregatorError {
    #[error(transparent)]
    Redis(#[from] RedisError),
    #[error("writing the reports of run '{run}': {message}")]
    Report { run: String, message: String },
}

/// One run being followed.
struct Tracked {
    spec: RunSpec,
    agg: RunAggregator,
    /// Indices folded, so a redelivered event is never folded twice.
    folded: Vec<u64>,
    folded_count: u64,
    /// The run's record count, once its submission has finished (learnt by the sweep).
    total: Option<u64>,
    /// A sweep was started early for this run because it looked complete (done only once, so
    /// a run another aggregator is finishing does not make every loop sweep).
    nudged: bool,
}

impl Tracked {
    fn new(spec: RunSpec) -> Self {
        Tracked {
            agg: RunAggregator::new(&spec.suite),
            spec,
            folded: Vec::new(),
            folded_count: 0,
            total: None,
            nudged: false,
        }
    }

    fn fold(&mut self, rec: &ResultRecord) {
        let (word, bit) = ((rec.index / 64) as usize, rec.index % 64);
        if self.folded.len() <= word {
            self.folded.resize(word + 1, 0);
        }
        if self.folded[word] & (1 << bit) == 0 {
            self.folded[word] |= 1 << bit;
            self.folded_count += 1;
            self.agg.observe(rec);
        }
    }

    /// Whether this aggregator has just folded the run's last result, so it can be finished
    /// without waiting for the next sweep; true once per run.
    fn take_all_folded(&mut self) -> bool {
        let all = !self.nudged && self.total.is_some_and(|n| self.folded_count >= n);
        self.nudged |= all;
        all
    }
}

pub struct Aggregator {
    store: RedisStore,
    opts: AggregatorOptions,
    tracked: Mutex<HashMap<String, Tracked>>,
    /// Where queue-depth metrics come from; the aggregator works without any.
    queue_depths: Option<QueueDepthReader>,
}

impl Aggregator {
    pub fn new(store: RedisStore, opts: AggregatorOptions) -> Self {
        Aggregator {
            store,
            opts,
            tracked: Mutex::new(HashMap::new()),
            queue_depths: None,
        }
    }

    /// Reports the work and dead-letter queue depths as metrics, from these sources.
    pub fn with_queue_depths(mut self, depths: QueueDepthReader) -> Self {
        self.queue_depths = Some(depths).filter(|d| !d.is_empty());
        self
    }

    pub fn store(&self) -> &RedisStore {
        &self.store
    }

    /// Follows the events stream until `shutdown` resolves.
    pub async fn serve(
        self: Arc<Self>,
        shutdown: impl Future<Output = ()> + Send,
    ) -> Result<(), AggregatorError> {
        let mut events = EventStream::new(&self.store, GROUP, &self.opts.consumer).await?;
        // Its own task: a slow management API must never hold up folding results.
        let depths = self
            .queue_depths
            .is_some()
            .then(|| tokio::spawn(self.clone().follow_queue_depths()));
        let _stop_depths = AbortOnDrop(depths);
        let mut shutdown = std::pin::pin!(shutdown);
        let mut last_claim = Instant::now();
        let mut last_sweep = Instant::now();
        loop {
            let batch = tokio::select! {
                _ = &mut shutdown => return Ok(()),
                read = events.read(512, SWEEP_EVERY) => read,
            };
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
            if last_sweep.elapsed() >= SWEEP_EVERY || self.any_all_folded() {
                last_sweep = Instant::now();
                carry_on("finishing complete runs", self.finish_complete_runs().await).await;
            }
        }
    }

    async fn fold_and_ack(
        &self,
        events: &mut EventStream,
        batch: Vec<evalfleet_fleet::redis::Event>,
    ) -> Result<(), AggregatorError> {
        if batch.is_empty() {
            return Ok(());
        }
        let mut ids = Vec::with_capacity(batch.len());
        for event in batch {
            ids.push(event.id.clone());
            let Some(record) = event.record else { continue };
            if !self.is_tracked(&event.run_id) {
                match self.store.spec(&event.run_id).await? {
                    Some(json) => match serde_json::from_str::<RunSpec>(&json) {
                        Ok(spec) => self.track(&event.run_id, spec),
                        Err(e) => {
                            tracing::warn!(run = %event.run_id, error = %e, "unreadable run spec; events skipped");
                            continue;
                        }
                    },
                    None => continue,
                }
            }
            if let Ok(mut tracked) = self.tracked.lock() {
                if let Some(t) = tracked.get_mut(&event.run_id) {
                    t.fold(&record);
                }
            }
        }
        events.ack(&ids).await?;
        Ok(())
    }

    /// Whether some run has all its results folded since the last look.
    fn any_all_folded(&self) -> bool {
        let Ok(mut tracked) = self.tracked.lock() else {
            return false;
        };
        // Every run is looked at (no short cut), so each one's flag is taken.
        let mut any = false;
        for run in tracked.values_mut() {
            any |= run.take_all_folded();
        }
        any
    }

    fn is_tracked(&self, run_id: &str) -> bool {
        self.tracked.lock().is_ok_and(|t| t.contains_key(run_id))
    }

    fn track(&self, run_id: &str, spec: RunSpec) {
        if let Ok(mut t) = self.tracked.lock() {
            t.entry(run_id.to_owned())
                .or_insert_with(|| Tracked::new(spec));
        }
    }

    /// Run-level gauges of an active run, and the mean judge scores its results show so far.
    fn publish_run_metrics(&self, meta: &RunMeta, counts: evalfleet_shared::store::Counts) {
        let m = metrics();
        let run = meta.id.as_str();
        for (outcome, n) in [
            ("ok", counts.ok),
            ("failed", counts.failed),
            ("skipped", counts.skipped),
        ] {
            m.run_examples
                .with_label_values(&[run, outcome])
                .set(n as i64);
        }
        if let Some(total) = meta.total.filter(|t| *t > 0) {
            m.run_total.with_label_values(&[run]).set(total as i64);
            m.run_progress
                .with_label_values(&[run])
                .set(counts.done() as f64 / total as f64);
        }
        let Ok(tracked) = self.tracked.lock() else {
            return;
        };
        let Some(t) = tracked.get(run) else { return };
        if let Some(rate) = t.agg.all.pass_rate() {
            m.run_pass.with_label_values(&[run]).set(rate);
        }
        let suite = t.spec.suite.name.as_str();
        for (grouping, groups) in t.agg.grouped() {
            if grouping.keys != ["model", "prompt_version"] {
                continue;
            }
            for (key, g) in groups {
                for (slot, dim) in t.agg.dimensions().iter().enumerate() {
                    if let Some(mean) = g.scores[slot].mean() {
                        m.score_mean
                            .with_label_values(&[suite, dim, &key[0], &key[1]])
                            .set(mean);
                    }
                }
            }
        }
    }

    /// Publishes the queue depths every [`QUEUE_DEPTH_EVERY`] until the task is aborted.
    async fn follow_queue_depths(self: Arc<Self>) {
        let mut management_failing = false;
        loop {
            management_failing = self.publish_queue_metrics(management_failing).await;
            tokio::time::sleep(QUEUE_DEPTH_EVERY).await;
        }
    }

    /// Reads the work and dead-letter queue depths once and sets their gauges. Returns whether
    /// the management API failed, so that a failure is logged when it starts and when it ends,
    /// not on every poll.
    pub async fn publish_queue_metrics(&self, management_was_failing: bool) -> bool {
        let Some(sources) = &self.queue_depths else {
            return false;
        };
        let (depths, management_error) = sources.read().await;
        match (&management_error, management_was_failing) {
            (Some(e), false) => tracing::warn!(
                error = %e,
                "management API unreadable: queue depths fall back to a passive declare (ready only)"
            ),
            (None, true) if sources.management.is_some() => {
                tracing::info!("management API readable again: unacked counts are back")
            }
            _ => {}
        }
        match depths {
            Ok((d, _source)) => {
                let m = metrics();
                m.set_queue_depth(&sources.names.work, d.work);
                m.set_queue_depth(&sources.names.dead, d.dead);
            }
            Err(e) => tracing::debug!(error = %e, "queue depths unavailable"),
        }
        management_error.is_some()
    }

    /// Finishes every running run whose results are all stored.
    pub async fn finish_complete_runs(&self) -> Result<(), AggregatorError> {
        for meta in self.store.runs(1000).await? {
            if meta.status != RunStatus::Running {
                continue;
            }
            let counts =
                self.store
                    .counts(&meta.id)
                    .await
                    .map_err(|e| AggregatorError::Report {
                        run: meta.id.clone(),
                        message: e.to_string(),
                    })?;
            self.publish_run_metrics(&meta, counts);
            let Some(total) = meta.total else { continue };
            if let Some(t) = self
                .tracked
                .lock()
                .ok()
                .as_mut()
                .and_then(|t| t.get_mut(&meta.id))
            {
                t.total = Some(total);
            }
            if counts.done() < total
                || !self
                    .store
                    .try_lock_report(&meta.id, &self.opts.consumer, Duration::from_secs(600))
                    .await?
            {
                continue;
            }
            let finished = async {
                // Another aggregator may have finished the run between our look and our lock.
                let still_running = self
                    .store
                    .run(&meta.id)
                    .await?
                    .is_some_and(|m| m.status == RunStatus::Running);
                if still_running {
                    self.finish(meta.clone(), total, counts.done()).await
                } else {
                    Ok(())
                }
            };
            // Released whatever happened, so a failed attempt is retried by the next sweep.
            let finished = finished.await;
            self.store
                .release_report_lock(&meta.id, &self.opts.consumer)
                .await?;
            finished?;
        }
        Ok(())
    }

    async fn finish(&self, meta: RunMeta, total: u64, done: u64) -> Result<(), AggregatorError> {
        let run = meta.id.clone();
        let report_err = |message: String| AggregatorError::Report {
            run: run.clone(),
            message,
        };
        let tracked = self.tracked.lock().ok().and_then(|mut t| t.remove(&run));
        let spec: RunSpec = match &tracked {
            Some(t) => t.spec.clone(),
            None => {
                let json = self
                    .store
                    .spec(&run)
                    .await?
                    .ok_or_else(|| report_err("the run's spec is gone".into()))?;
                serde_json::from_str(&json)
                    .map_err(|e| report_err(format!("unreadable run spec: {e}")))?
            }
        };
        let incremental = tracked.filter(|t| t.folded_count == done).map(|t| t.agg);
        let store = self.store.clone();
        let dir = self.opts.reports_dir.join(&run);
        let finished_at = jiff::Timestamp::now();
        let writing = Instant::now();
        let rebuilt = incremental.is_none();
        let written =
            tokio::task::spawn_blocking(move || -> Result<(bool, String, PathBuf), String> {
                let items = RunItems::new(&store, &meta.id, total).map_err(|e| e.to_string())?;
                let agg = match incremental {
                    Some(agg) => agg,
                    None => {
                        let mut agg = RunAggregator::new(&spec.suite);
                        items
                            .for_each_item(None, &mut |r| {
                                agg.observe(r);
                                Ok(())
                            })
                            .map_err(|e| e.to_string())?;
                        agg
                    }
                };
                let started = meta
                    .created_at
                    .parse::<jiff::Timestamp>()
                    .unwrap_or(finished_at);
                let info = RunInfo {
                    id: meta.id.clone(),
                    suite: spec.suite.name.clone(),
                    dataset: spec.dataset.clone(),
                    judge: spec.judge,
                    started_at: meta.created_at.clone(),
                    finished_at: finished_at.to_string(),
                    duration_seconds: finished_at.duration_since(started).as_secs_f64().max(0.0),
                };
                let input = ReportInput {
                    info: &info,
                    suite: &spec.suite,
                    agg: &agg,
                    items: &items,
                };
                report::write_all(&dir, &input).map_err(|e| e.to_string())?;
                let summary = report::render(report::ReportFile::Summary, &input)
                    .map_err(|e| e.to_string())?;
                Ok((input.gates_passed(), summary, dir))
            })
            .await
            .map_err(|e| report_err(e.to_string()))?
            .map_err(report_err)?;
        let (gates_passed, summary, dir) = written;
        self.store
            .finish_run(&run, gates_passed, &summary, &dir.display().to_string())
            .await?;
        let m = metrics();
        m.reports_written.inc();
        m.forget_run(&run);
        tracing::info!(
            run = %run,
            gates_passed,
            dir = %dir.display(),
            report_seconds = writing.elapsed().as_secs_f64(),
            aggregates_rebuilt = rebuilt,
            "run complete: reports written"
        );
        Ok(())
    }
}

/// Aborts the task it holds when dropped, so a background loop ends with `serve`.
struct AbortOnDrop(Option<tokio::task::JoinHandle<()>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if let Some(task) = &self.0 {
            task.abort();
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use evalfleet_shared::suite::{Suite, SuiteKind};

    fn skipped(index: u64) -> ResultRecord {
        ResultRecord::skipped(
            "r",
            "support-judge",
            index,
            None,
            format!("e{index}"),
            "x".into(),
        )
    }

    #[test]
    fn a_run_is_reported_all_folded_once_when_its_last_result_arrives() {
        let spec = RunSpec {
            suite: Suite::builtin(SuiteKind::SupportJudge),
            judge: evalfleet_shared::spec::JudgeMode::Heuristic,
            judges: Default::default(),
            model_prefixes: Default::default(),
            dataset: "d.jsonl".into(),
        };
        let mut t = Tracked::new(spec);
        t.fold(&skipped(0));
        assert!(!t.take_all_folded(), "the total is not known yet");
        t.total = Some(3);
        t.fold(&skipped(1));
        t.fold(&skipped(1));
        assert!(!t.take_all_folded(), "a redelivered result counts once");
        t.fold(&skipped(2));
        assert!(t.take_all_folded());
        assert!(!t.take_all_folded(), "only once per run");
    }
}
