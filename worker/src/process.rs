//! Processing one message: in a target run, have the target generate the record's outputs and
//! the suite validate the completed record; give the example what it shares with others (its
//! scenario), ask the judges and the code scorers (at once), finish the record. The same
//! function serves the embedded `run` and fleet workers, so both produce the same records. A
//! recorded example arrives typed: the producer validated it.

use std::sync::Arc;
use std::time::Instant;

use evalfleet_contract::batch_store::{BatchStore, Question};
use evalfleet_contract::queue::Message;
use evalfleet_contract::store::{ResultStore, StoreError};
use evalfleet_model::epochs;
use evalfleet_model::record::{RawJson, ResultRecord, TargetCall};
use evalfleet_suites::evaluate::{finish, judge_tasks, scorer_tasks, Effort, Example, Work};
use evalfleet_suites::suite::Suite;
use evalfleet_suites::target::PendingRecord;
use serde_json::{Map, Value};

use crate::judge::batch::{BatchOptions, ExampleAt};
use crate::judge::provider::ProviderClient;
use crate::judge::{Deferred, Judge};
use crate::metrics::metrics;
use crate::scenarios::{Scenarios, Unattached};
use crate::scorer::Scorers;
use crate::target::{Generation, RunTarget};

/// Everything a worker needs to evaluate examples of one run.
pub struct Pipeline {
    pub suite: Arc<Suite>,
    pub judge: Judge,
    /// The suite's code scorers (none until [`Pipeline::with_scorers`]).
    pub scorers: Scorers,
    /// A target run: what generates the outputs.
    pub target: Option<RunTarget>,
    /// A target run whose target this worker refuses to call: why (each example fails so).
    refused: Option<String>,
    scenarios: Scenarios,
}

impl Pipeline {
    pub fn new(suite: Arc<Suite>, judge: Judge) -> Self {
        Pipeline {
            suite,
            judge,
            scorers: Scorers::none(),
            target: None,
            refused: None,
            scenarios: Scenarios::default(),
        }
    }

    /// The suite's code scorers are asked through `scorers` (built for this process's policy).
    pub fn with_scorers(mut self, scorers: Scorers) -> Self {
        self.scorers = scorers;
        self
    }

    /// The outputs of the run's records come from `target`.
    pub fn with_target(mut self, target: RunTarget) -> Self {
        self.target = Some(target);
        self
    }

    /// The run's target may not be called here, for `reason`: its examples fail with it.
    pub fn refusing_target(mut self, reason: String) -> Self {
        self.refused = Some(reason);
        self
    }

    /// Where the run's examples park while batch-mode judges or a batch-mode chat target wait
    /// for their batches; None when nothing of the run goes through batches.
    pub fn batch_store(&self) -> Option<Arc<dyn BatchStore>> {
        let target = || self.target.as_ref().and_then(RunTarget::batch_store);
        self.judge.batch_store().or_else(target)
    }

    /// The run's batch-mode providers, each once (judges and a chat target on the same
    /// provider share its batches): what the batch coordinator works through.
    pub fn batch_providers(&self) -> Vec<(Arc<ProviderClient>, BatchOptions)> {
        let mut providers = match &self.judge {
            Judge::Live(live) => live.batch_providers(),
            _ => Vec::new(),
        };
        if let Some((client, options)) = self.target.as_ref().and_then(RunTarget::batch_provider) {
            if !providers
                .iter()
                .any(|(_, o)| o.provider == options.provider)
            {
                providers.push((client, options));
            }
        }
        providers
    }
}

/// What evaluating one example came to.
// Unboxed: a record is the common case and is moved once; boxing it would cost an allocation
// per example for the rare parked one.
#[allow(clippy::large_enum_variant)]
pub enum Processed {
    /// Its result record.
    Record(ResultRecord),
    /// Fleet batch mode: it waits for these questions' batch replies (the caller parks it).
    Awaiting(Vec<Question>),
}

/// One evaluation (an example, or one epoch of a target run's) and the batch replies it used,
/// charged to the run once the whole example is complete.
struct Evaluated {
    processed: Processed,
    deferred: Deferred,
}

impl From<ResultRecord> for Evaluated {
    fn from(record: ResultRecord) -> Self {
        Evaluated {
            processed: Processed::Record(record),
            deferred: Deferred::default(),
        }
    }
}

/// Evaluates one example message. Err only when the store could not be read for the example's
/// scenario (the caller settles it as any store error). A target run's record is generated and
/// evaluated once per epoch, the epochs at once, and folded into one item.
pub async fn process<S: ResultStore>(
    pipeline: &Pipeline,
    store: &S,
    msg: &Message,
) -> Result<Processed, StoreError> {
    let Evaluated {
        processed,
        deferred,
    } = evaluate_message(pipeline, store, msg).await?;
    if let Processed::Record(_) = processed {
        pipeline.judge.charge(deferred);
    }
    Ok(processed)
}

async fn evaluate_message<S: ResultStore>(
    pipeline: &Pipeline,
    store: &S,
    msg: &Message,
) -> Result<Evaluated, StoreError> {
    let pending = match &msg.work {
        Work::Evaluate(example) => {
            return process_example(pipeline, store, msg, example, None, 0).await
        }
        Work::Generate(pending) => pending,
    };
    let k = pipeline.target.as_ref().map_or(1, RunTarget::epochs);
    if k == 1 {
        return generate_and_process(pipeline, store, msg, pending, 0).await;
    }
    let epochs = (0..k).map(|e| generate_and_process(pipeline, store, msg, pending, e));
    let mut records = Vec::with_capacity(k as usize);
    let mut awaiting = Vec::new();
    let mut deferred = Deferred::default();
    for evaluated in futures_util::future::join_all(epochs).await {
        let evaluated = evaluated?;
        deferred.extend(evaluated.deferred);
        match evaluated.processed {
            Processed::Record(record) => records.push(record),
            // Batch-mode judges: the example waits for every epoch's questions at once (each
            // epoch's have their own custom_ids); the epochs already judged find their
            // replies in the store when it is evaluated again.
            Processed::Awaiting(questions) => awaiting.extend(questions),
        }
    }
    let processed = if awaiting.is_empty() {
        Processed::Record(epochs::fold(records).expect("a run of K > 1 epochs has records"))
    } else {
        Processed::Awaiting(awaiting)
    };
    Ok(Evaluated {
        processed,
        deferred,
    })
}

/// One epoch of a target run's record: generated, then processed as a recorded example.
async fn generate_and_process<S: ResultStore>(
    pipeline: &Pipeline,
    store: &S,
    msg: &Message,
    pending: &PendingRecord,
    epoch: u32,
) -> Result<Evaluated, StoreError> {
    match generate(pipeline, msg, pending, epoch).await {
        Ok(Generation {
            example,
            outputs,
            call,
        }) => process_example(pipeline, store, msg, &example, Some((outputs, call)), epoch).await,
        Err(not) => Ok(not),
    }
}

/// An example's scenario, judges and record; a generated one's record carries what the target
/// produced (`generated`: the outputs and the call) at its `epoch`.
async fn process_example<S: ResultStore>(
    pipeline: &Pipeline,
    store: &S,
    msg: &Message,
    example: &Example,
    generated: Option<(Map<String, Value>, TargetCall)>,
    epoch: u32,
) -> Result<Evaluated, StoreError> {
    let suite = &pipeline.suite;
    let started = Instant::now();
    match pipeline.scenarios.attach(store, &msg.run_id, example).await {
        Ok(()) => {}
        Err(Unattached::Store(e)) => return Err(e),
        Err(Unattached::Missing(reason)) => {
            let id = example.id().to_owned();
            let mut rec =
                ResultRecord::failed(&msg.run_id, &suite.name, msg.index, msg.line, id, reason);
            rec.group = example.group();
            return Ok(rec.into());
        }
    }
    let m = metrics();
    m.inflight.inc();
    let at = ExampleAt {
        run_id: &msg.run_id,
        index: msg.index,
        epoch,
    };
    let evaluated = evaluate(pipeline, msg, example, at, started).await;
    m.inflight.dec();
    let mut record = match evaluated.processed {
        Processed::Record(record) => record,
        Processed::Awaiting(_) => return Ok(evaluated),
    };
    if let (Some((outputs, call)), Work::Generate(pending)) = (generated, &msg.work) {
        record.outputs = Some(outputs);
        record.target = Some(call);
        record.dataset_record = RawJson::of(&pending.record).ok();
    }
    m.examples_processed
        .with_label_values(&[&record.suite, record.outcome.as_str()])
        .inc();
    m.example_duration.observe(started.elapsed().as_secs_f64());
    Ok(Evaluated {
        processed: Processed::Record(record),
        deferred: evaluated.deferred,
    })
}

/// A target run's example: generated and validated; or the failed record saying why not, or
/// the batch request its example waits for.
async fn generate(
    pipeline: &Pipeline,
    msg: &Message,
    pending: &PendingRecord,
    epoch: u32,
) -> Result<Generation, Evaluated> {
    let suite = &pipeline.suite;
    let failed = |reason: String, call: Option<TargetCall>| {
        let mut rec = ResultRecord::failed(
            &msg.run_id,
            &suite.name,
            msg.index,
            msg.line,
            pending.id.clone(),
            reason,
        );
        rec.latency_ms = call.as_ref().map_or(0.0, |c| c.latency_ms);
        rec.target = call;
        Evaluated::from(rec)
    };
    let Some(target) = &pipeline.target else {
        let reason = pipeline.refused.clone().unwrap_or_else(|| {
            "the message asks for a target's outputs, but the run has no target".into()
        });
        return Err(failed(reason, None));
    };
    let at = ExampleAt {
        run_id: &msg.run_id,
        index: msg.index,
        epoch,
    };
    target
        .generate(suite, pending, at)
        .await
        .map_err(|not| match not.awaiting {
            Some(question) => Evaluated {
                processed: Processed::Awaiting(vec![*question]),
                deferred: Deferred::default(),
            },
            None => failed(not.reason, not.call),
        })
}

/// Judges and code scorers of one example, asked at once, and its record.
async fn evaluate(
    pipeline: &Pipeline,
    msg: &Message,
    example: &Example,
    at: ExampleAt<'_>,
    started: Instant,
) -> Evaluated {
    let (suite, judge) = (pipeline.suite.as_ref(), &pipeline.judge);
    let tasks = judge_tasks(suite, example);
    let scoring = scorer_tasks(suite, example);
    let latency_ms = || started.elapsed().as_secs_f64() * 1000.0;
    let (judged, external) = tokio::join!(
        judge.judge(example, &tasks, at),
        pipeline.scorers.score(&scoring)
    );
    match judged {
        Ok(judged) => {
            let effort = Effort {
                usage: judged.usage,
                latency_ms: latency_ms(),
                attempts: judged.attempts,
            };
            let record = finish(
                suite,
                &msg.run_id,
                msg.index,
                msg.line,
                example,
                judged.scores,
                &external,
                effort,
            );
            Evaluated {
                processed: Processed::Record(record),
                deferred: judged.deferred,
            }
        }
        Err(failure) if !failure.awaiting.is_empty() => Evaluated {
            processed: Processed::Awaiting(failure.awaiting),
            deferred: failure.deferred,
        },
        Err(failure) => {
            let mut rec = ResultRecord::failed(
                &msg.run_id,
                &suite.name,
                msg.index,
                msg.line,
                example.id().to_owned(),
                failure.reason,
            );
            rec.group = example.group();
            rec.details
                .insert("inputs".into(), example.inputs(suite).into());
            rec.attempts = failure.attempts;
            rec.usage = failure.usage;
            rec.latency_ms = latency_ms();
            if let Some(status) = failure.last_status {
                rec.details.insert("last_status".into(), status.into());
            }
            Evaluated {
                processed: Processed::Record(rec),
                deferred: failure.deferred,
            }
        }
    }
}
