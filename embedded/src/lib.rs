//! The embedded mode (`evalfleet run`): the fleet's three roles for one run in one process —
//! the producer streams and validates the dataset into the in-process queue, the workers run
//! the same consumer loop as fleet workers, and the aggregator folds the in-process store's
//! events — so a run needs no RabbitMQ and no Redis and still takes the fleet's one road.
//!
//! The caller (the CLI) owns what a person sees: it builds the judge, watches the counters in
//! [`EmbeddedRun`] for a progress bar, and writes the reports from [`Finished`].

use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use evalfleet_aggregator::follow;
use evalfleet_contract::queue::InProcessQueue;
use evalfleet_contract::store::InProcessStore;
use evalfleet_dataset::ReadOptions;
use evalfleet_model::routing::ProviderRules;
use evalfleet_producer::{open_dataset, produce, ProduceError, ProduceOptions, Progress};
use evalfleet_report::aggregate::RunAggregator;
use evalfleet_report::ItemsAhead;
use evalfleet_suites::custom::BaselineSource;
use evalfleet_suites::evaluate::{Evaluator, Validator};
use evalfleet_suites::suite::Suite;
use evalfleet_worker::scorer::Scorers;
use evalfleet_worker::target::RunTarget;
use evalfleet_worker::{run_workers, Judge, Pipeline, WorkerError, WorkerStats};

/// One embedded run, as the caller configured it.
pub struct EmbeddedRun<'a> {
    pub run_id: &'a str,
    pub dataset: &'a Path,
    pub read: ReadOptions,
    pub suite: Arc<Suite>,
    pub rules: ProviderRules,
    pub judge: Judge,
    /// A target run: the outputs come from this target.
    pub target: Option<RunTarget>,
    /// A pairwise suite comparing with a baseline run: each item's baseline answers.
    pub baseline: Option<Arc<dyn BaselineSource>>,
    /// The suite's code scorers (`Scorers::none()` when it has none).
    pub scorers: Scorers,
    pub concurrency: usize,
    /// Records read, bytes consumed, skipped (the producer's counters).
    pub progress: Arc<Progress>,
    /// Results folded by the aggregator so far.
    pub evaluated: Arc<AtomicU64>,
    pub stats: Arc<WorkerStats>,
    /// The report directory, where `items.parquet` is written as the run goes.
    pub report_dir: &'a Path,
}

/// A finished run: its aggregates, and the store that holds its records (for the reports).
pub struct Finished {
    pub agg: RunAggregator,
    pub store: Arc<InProcessStore>,
    /// `items.parquet` written as the run went, for the reports to finish.
    pub items_ahead: ItemsAhead,
}

#[derive(Debug, thiserror::Error)]
pub enum EmbeddedError {
    #[error("producing the run's examples failed: {0}")]
    Produce(#[source] ProduceError),
    #[error("the workers stopped: {0}")]
    Worker(#[source] WorkerError),
    #[error("creating the result spill file: {0}")]
    Spill(#[source] std::io::Error),
    #[error("a task of the run panicked: {0}")]
    Task(String),
}

/// Runs producer, workers and aggregator until every record of the dataset has a result.
pub async fn run_embedded(run: EmbeddedRun<'_>) -> Result<Finished, EmbeddedError> {
    // Live judges, targets and code scorers wait on the network or other processes; offline
    // judges are CPU-bound.
    let live =
        matches!(run.judge, Judge::Live(_)) || run.target.is_some() || run.suite.has_scorers();
    let reader = open_dataset(run.dataset, &run.read, run.progress.clone())
        .map_err(|e| EmbeddedError::Produce(e.into()))?;
    let dataset_dir = run.dataset.parent().map(Path::to_path_buf);
    let mut validator = Validator::new(Evaluator::new(
        run.suite.clone(),
        run.rules.clone(),
        dataset_dir,
    ));
    if let Some(target) = &run.target {
        validator = validator.with_target(target.plan());
    }
    if let Some(baseline) = run.baseline {
        validator = validator.with_baseline(baseline);
    }
    // Offline judges are CPU-bound: hand work over in chunks to save thread wake-ups. A live
    // judge's examples go one by one, so one slow call never holds other examples back.
    let (chunk, event_batch) = if live { (1, 16) } else { (64, 256) };
    let queue = InProcessQueue::new(run.concurrency * chunk * 4, chunk);
    let (store, events) =
        InProcessStore::new(run.run_id, 64, event_batch).map_err(EmbeddedError::Spill)?;
    let store = Arc::new(store);
    let mut pipeline = Pipeline::new(run.suite.clone(), run.judge).with_scorers(run.scorers);
    if let Some(target) = run.target {
        pipeline = pipeline.with_target(target);
    }
    let pipeline = Arc::new(pipeline);
    let mut workers = tokio::spawn(run_workers(
        queue.clone(),
        store.clone(),
        pipeline,
        run.concurrency,
        run.stats,
    ));
    let (agg_suite, seen) = (run.suite.clone(), run.evaluated.clone());
    let mut ahead = ItemsAhead::new(run.report_dir, store.growing());
    let aggregator = tokio::spawn(async move {
        let mut agg = RunAggregator::new(&agg_suite);
        follow(events, &mut agg, &seen, &mut ahead).await;
        (agg, ahead)
    });
    // The workers can stop early (a rejected API key): then stop producing too, or the
    // producer would wait forever on a full queue.
    let options = ProduceOptions::default();
    let producing = produce(
        reader,
        validator,
        run.run_id,
        &queue,
        store.as_ref(),
        &run.progress,
        &options,
    );
    let task = |e: tokio::task::JoinError| EmbeddedError::Task(e.to_string());
    let workers_done = tokio::select! {
        produced = producing => {
            queue.finish_publishing();
            if let Err(e) = produced {
                // Stopping workers close the queue under the producer: their reason (a
                // rejected key) is the one to report, not the closed queue.
                workers.await.map_err(task)?.map_err(EmbeddedError::Worker)?;
                return Err(EmbeddedError::Produce(e));
            }
            workers.await
        }
        early = &mut workers => early,
    };
    workers_done.map_err(task)?.map_err(EmbeddedError::Worker)?;
    store.close_events().await;
    let (agg, items_ahead) = aggregator.await.map_err(task)?;
    Ok(Finished {
        agg,
        store,
        items_ahead,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use evalfleet_model::suite::SuiteKind;
    use evalfleet_report::ItemSource;

    use super::*;

    fn run<'a>(dataset: &'a Path, judge: Judge) -> EmbeddedRun<'a> {
        EmbeddedRun {
            run_id: "embedded-test",
            dataset,
            read: ReadOptions::default(),
            suite: Arc::new(Suite::builtin(SuiteKind::SupportJudge)),
            rules: ProviderRules::default(),
            judge,
            target: None,
            baseline: None,
            scorers: Scorers::none(),
            concurrency: 2,
            progress: Arc::new(Progress::default()),
            evaluated: Arc::new(AtomicU64::new(0)),
            stats: Arc::new(WorkerStats::default()),
            report_dir: dataset.parent().expect("a dataset in a directory"),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_record_of_the_dataset_ends_with_one_result() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("d.jsonl");
        let line = |id: &str, model: &str| {
            format!(
                r#"{{"id":"{id}","ticket":"VPN drops","response":"Renew the lease.","model":"{model}","prompt_version":"v1"}}"#
            )
        };
        let text = [
            line("a", "gpt-4o"),
            line("b", "llama-3"),
            line("a", "gpt-4o"),
            line("c", "claude-3"),
        ]
        .join("\n");
        std::fs::write(&data, text).unwrap();
        let embedded = run(&data, Judge::Heuristic);
        let evaluated = embedded.evaluated.clone();
        let Finished { agg, store, .. } = run_embedded(embedded).await.unwrap();
        assert_eq!((agg.totals.ok, agg.totals.skipped), (2, 2));
        assert_eq!(
            evaluated.load(Ordering::Relaxed),
            4,
            "every record was folded"
        );
        let mut ids = Vec::new();
        store
            .for_each_item(None, &mut |r| {
                ids.push((r.id.clone(), r.outcome.as_str()));
                Ok(())
            })
            .unwrap();
        assert_eq!(
            ids,
            [
                ("a".into(), "ok"),
                ("b".into(), "skipped"),
                ("a".into(), "skipped"),
                ("c".into(), "ok")
            ]
        );
    }

    #[tokio::test]
    async fn a_missing_dataset_is_a_produce_error() {
        let err = run_embedded(run(Path::new("/nonexistent.jsonl"), Judge::None))
            .await
            .err()
            .expect("an error");
        assert!(matches!(err, EmbeddedError::Produce(_)), "{err}");
    }
}
