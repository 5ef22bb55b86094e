//! The aggregator service (`evalfleet aggregator`): tails the results' events stream with a
//! consumer group, folds each run's results into incremental aggregates, and when a run is
//! complete (ok + failed + skipped == total) writes its four reports and marks it complete.
//!
//! Restart-safe and safe to run several of: entries a crashed aggregator left unacked are
//! claimed after a while; a run's report is written by whoever takes the run's report lock; and
//! the aggregates used for the report are the incremental ones only when this aggregator folded
//! every stored result exactly once — otherwise (after a restart, or with several aggregators
//! sharing the stream) they are rebuilt from Redis in one streaming pass.

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
}

impl Tracked {
    fn new(spec: RunSpec) -> Self {
        Tracked {
            agg: RunAggregator::new(&spec.suite),
            spec,
            folded: Vec::new(),
            folded_count: 0,
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
}

pub struct Aggregator {
    store: RedisStore,
    opts: AggregatorOptions,
    tracked: Mutex<HashMap<String, Tracked>>,
}

impl Aggregator {
    pub fn new(store: RedisStore, opts: AggregatorOptions) -> Self {
        Aggregator {
            store,
            opts,
            tracked: Mutex::new(HashMap::new()),
        }
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
        let mut shutdown = std::pin::pin!(shutdown);
        let mut last_claim = Instant::now();
        let mut last_sweep = Instant::now();
        loop {
            let batch = tokio::select! {
                _ = &mut shutdown => return Ok(()),
                read = events.read(512, Duration::from_millis(500)) => read,
            };
            match batch {
                Ok(batch) => self.fold_and_ack(&mut events, batch).await?,
                Err(e) => {
                    tracing::warn!(error = %e, "reading the events stream failed; retrying");
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    continue;
                }
            }
            if last_claim.elapsed() >= self.opts.claim_after / 2 {
                last_claim = Instant::now();
                let claimed = events.claim_stale(self.opts.claim_after, 512).await?;
                if !claimed.is_empty() {
                    tracing::info!(
                        entries = claimed.len(),
                        "took over events left by another aggregator"
                    );
                }
                self.fold_and_ack(&mut events, claimed).await?;
            }
            if last_sweep.elapsed() >= Duration::from_secs(1) {
                last_sweep = Instant::now();
                self.finish_complete_runs().await?;
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

    fn is_tracked(&self, run_id: &str) -> bool {
        self.tracked.lock().is_ok_and(|t| t.contains_key(run_id))
    }

    fn track(&self, run_id: &str, spec: RunSpec) {
        if let Ok(mut t) = self.tracked.lock() {
            t.entry(run_id.to_owned())
                .or_insert_with(|| Tracked::new(spec));
        }
    }

    /// Finishes every running run whose results are all stored.
    pub async fn finish_complete_runs(&self) -> Result<(), AggregatorError> {
        for meta in self.store.runs(1000).await? {
            if meta.status != RunStatus::Running {
                continue;
            }
            let Some(total) = meta.total else { continue };
            let counts =
                self.store
                    .counts(&meta.id)
                    .await
                    .map_err(|e| AggregatorError::Report {
                        run: meta.id.clone(),
                        message: e.to_string(),
                    })?;
            if counts.done() < total
                || !self
                    .store
                    .try_lock_report(&meta.id, &self.opts.consumer, Duration::from_secs(600))
                    .await?
            {
                continue;
            }
            // Another aggregator may have finished the run between our look and our lock.
            let still_running = self
                .store
                .run(&meta.id)
                .await?
                .is_some_and(|m| m.status == RunStatus::Running);
            let finished = if still_running {
                self.finish(meta.clone(), total, counts.done()).await
            } else {
                Ok(())
            };
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
                    judge: spec.judge.clone(),
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
                let summary = report::render("summary.md", &input).map_err(|e| e.to_string())?;
                Ok((input.gates_passed(), summary, dir))
            })
            .await
            .map_err(|e| report_err(e.to_string()))?
            .map_err(report_err)?;
        let (gates_passed, summary, dir) = written;
        self.store
            .finish_run(&run, gates_passed, &summary, &dir.display().to_string())
            .await?;
        tracing::info!(run = %run, gates_passed, dir = %dir.display(), "run complete: reports written");
        Ok(())
    }
}
