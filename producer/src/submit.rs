//! `evalfleet submit`: registers a run and its spec in Redis, then streams the dataset into
//! RabbitMQ with publisher confirms. Submitting again under the same run id resumes: only the
//! examples without a stored result are published (a redelivered example is stored once anyway).

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use evalfleet_contract::queue::WorkQueue;
use evalfleet_contract::registry::{RunMeta, RunRegistry, RunStatus};
use evalfleet_contract::store::{ResultStore, StoreError};
use evalfleet_dataset::Format;
use evalfleet_suites::custom::BaselineSource;
use evalfleet_suites::evaluate::{Evaluator, Validator};
use evalfleet_suites::spec::RunSpec;
use evalfleet_suites::target::{Secrets, TargetPlan};

use crate::{open_dataset, produce, ProduceError, ProduceOptions, Progress, Window};

#[derive(Debug, thiserror::Error)]
pub enum SubmitError {
    #[error(transparent)]
    Produce(#[from] ProduceError),
    #[error("run registry: {0}")]
    Registry(#[from] StoreError),
    #[error("run '{run}' already exists with suite '{existing}', not '{wanted}': choose another --run-id")]
    SuiteMismatch {
        run: String,
        existing: String,
        wanted: String,
    },
    #[error("{0}")]
    Target(String),
    /// The id would be a directory and part of Redis keys: it must follow the one rule.
    #[error(transparent)]
    RunId(#[from] evalfleet_model::run_id::BadRunId),
}

pub struct SubmitRequest {
    pub run_id: String,
    pub dataset: PathBuf,
    /// The dataset's format; None = from the file.
    pub format: Option<Format>,
    pub spec: RunSpec,
    /// `fleet.max_queued`: at most this many of the run's messages wait in the queue; None: no
    /// window.
    pub max_queued: Option<u64>,
    /// `max_record_bytes`: a longer record is skipped, never read whole.
    pub max_record: usize,
    /// A pairwise suite comparing with a baseline run: each item's baseline answers, sent with
    /// its message.
    pub baseline: Option<Arc<dyn BaselineSource>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SubmitOutcome {
    /// Records read (valid + skipped): the run's total.
    pub records: u64,
    pub published: u64,
    pub skipped: u64,
    /// The run existed: this submission resumed it.
    pub resumed: bool,
}

/// Registers the run (or finds it registered: a resume), publishes its examples to `queue`,
/// stores its skipped records in `store`, and records the run's size in `store`'s registry.
pub async fn submit<Q, S>(
    req: &SubmitRequest,
    queue: &Q,
    store: &S,
    progress: Arc<Progress>,
) -> Result<SubmitOutcome, SubmitError>
where
    Q: WorkQueue,
    S: ResultStore + RunRegistry,
{
    evalfleet_model::run_id::check(&req.run_id)?;
    let suite = &req.spec.suite;
    let existing = store.run(&req.run_id).await?;
    let resumed = match &existing {
        Some(meta) if meta.suite != suite.name => {
            return Err(SubmitError::SuiteMismatch {
                run: req.run_id.clone(),
                existing: meta.suite.clone(),
                wanted: suite.name.clone(),
            })
        }
        Some(_) => true,
        None => {
            let meta = RunMeta {
                id: req.run_id.clone(),
                suite: suite.name.clone(),
                status: RunStatus::Submitting,
                total: None,
                published: 0,
                created_at: jiff::Timestamp::now().to_string(),
                finished_at: None,
                dataset: req.spec.dataset.clone(),
                judge: req.spec.judge.name().to_owned(),
                gates_passed: None,
            };
            !store.register(&meta, &req.spec).await?
        }
    };
    let mut validator = Validator::new(Evaluator::new(
        Arc::new(suite.clone()),
        req.spec.model_prefixes.clone(),
        req.dataset.parent().map(Path::to_path_buf),
    ));
    if let Some(target) = &req.spec.target {
        // The submitter checks records only: `${VAR}` stays for the workers to resolve.
        let plan =
            TargetPlan::compile(target.clone(), Secrets::Keep).map_err(SubmitError::Target)?;
        validator = validator.with_target(Arc::new(plan));
    }
    if let Some(baseline) = &req.baseline {
        validator = validator.with_baseline(baseline.clone());
    }
    let published_through = if resumed {
        store.published_through(&req.run_id).await?
    } else {
        None
    };
    let options = ProduceOptions {
        resume: resumed,
        published_through,
        window: req.max_queued.map(|max_queued| Window {
            max_queued,
            registry: store,
        }),
    };
    let read = evalfleet_dataset::ReadOptions {
        max_record: req.max_record,
        ..suite.read_options(req.format)
    };
    let reader = open_dataset(&req.dataset, &read, progress.clone()).map_err(ProduceError::from)?;
    produce(
        reader,
        validator,
        &req.run_id,
        queue,
        store,
        &progress,
        &options,
    )
    .await?;
    let outcome = SubmitOutcome {
        records: progress.records.load(Ordering::Relaxed),
        published: progress.published.load(Ordering::Relaxed),
        skipped: progress.skipped.load(Ordering::Relaxed),
        resumed,
    };
    store.add_published(&req.run_id, outcome.published).await?;
    store.set_total(&req.run_id, outcome.records).await?;
    let status = store.run(&req.run_id).await?.map(|m| m.status);
    if matches!(status, Some(RunStatus::Submitting)) {
        store.set_status(&req.run_id, RunStatus::Running).await?;
    }
    Ok(outcome)
}
