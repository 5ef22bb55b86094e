//! Processing one message: give the example what it shares with others (its scenario), ask the
//! judges, finish the record. The same function serves the embedded `run` and fleet workers, so
//! both produce the same records. The example arrives typed: the producer validated it, and
//! nothing here parses raw JSON.

use std::sync::Arc;
use std::time::Instant;

use evalfleet_contract::batch_store::Question;
use evalfleet_contract::queue::Message;
use evalfleet_contract::store::{ResultStore, StoreError};
use evalfleet_model::record::ResultRecord;
use evalfleet_suites::evaluate::{finish, judge_tasks, Effort};
use evalfleet_suites::suite::Suite;

use crate::judge::Judge;
use crate::metrics::metrics;
use crate::scenarios::{Scenarios, Unattached};

/// Everything a worker needs to evaluate examples of one run.
pub struct Pipeline {
    pub suite: Arc<Suite>,
    pub judge: Judge,
    scenarios: Scenarios,
}

impl Pipeline {
    pub fn new(suite: Arc<Suite>, judge: Judge) -> Self {
        Pipeline {
            suite,
            judge,
            scenarios: Scenarios::default(),
        }
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

/// Evaluates one example message. Err only when the store could not be read for the example's
/// scenario (the caller settles it as any store error).
pub async fn process<S: ResultStore>(
    pipeline: &Pipeline,
    store: &S,
    msg: &Message,
) -> Result<Processed, StoreError> {
    let suite = &pipeline.suite;
    match pipeline
        .scenarios
        .attach(store, &msg.run_id, &msg.example)
        .await
    {
        Ok(()) => {}
        Err(Unattached::Store(e)) => return Err(e),
        Err(Unattached::Missing(reason)) => {
            let id = msg.example.id().to_owned();
            let mut rec =
                ResultRecord::failed(&msg.run_id, &suite.name, msg.index, msg.line, id, reason);
            rec.group = msg.example.group();
            return Ok(Processed::Record(rec));
        }
    }
    let m = metrics();
    m.inflight.inc();
    let started = Instant::now();
    let record = evaluate(suite, &pipeline.judge, msg, started).await;
    m.inflight.dec();
    let record = match record {
        Processed::Record(record) => record,
        awaiting => return Ok(awaiting),
    };
    m.examples_processed
        .with_label_values(&[&record.suite, record.outcome.as_str()])
        .inc();
    m.example_duration.observe(started.elapsed().as_secs_f64());
    Ok(Processed::Record(record))
}

async fn evaluate(suite: &Suite, judge: &Judge, msg: &Message, started: Instant) -> Processed {
    let example = &msg.example;
    let tasks = judge_tasks(suite, example);
    let latency_ms = || started.elapsed().as_secs_f64() * 1000.0;
    Processed::Record(
        match judge.judge(example, &tasks, &msg.run_id, msg.index).await {
            Ok(judged) => {
                let effort = Effort {
                    usage: judged.usage,
                    latency_ms: latency_ms(),
                    attempts: judged.attempts,
                };
                finish(
                    suite,
                    &msg.run_id,
                    msg.index,
                    msg.line,
                    example,
                    judged.scores,
                    effort,
                )
            }
            Err(failure) if !failure.awaiting.is_empty() => {
                return Processed::Awaiting(failure.awaiting)
            }
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
                rec
            }
        },
    )
}
