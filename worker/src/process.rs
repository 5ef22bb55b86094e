//! Processing one message: type the example, ask the judges, finish the record. The same
//! function serves the embedded `run` and fleet workers, so both produce the same records.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use evalfleet_shared::evaluate::{judge_tasks, Effort, Evaluator};
use evalfleet_shared::queue::Message;
use evalfleet_shared::record::ResultRecord;
use evalfleet_shared::routing::ProviderRules;
use evalfleet_shared::suite::Suite;

use crate::judge::Judge;
use crate::metrics::metrics;

/// Everything a worker needs to evaluate examples of one run.
pub struct Pipeline {
    pub suite: Arc<Suite>,
    pub rules: ProviderRules,
    /// Where relative scenario paths of log-analysis examples resolve.
    pub dataset_dir: Option<PathBuf>,
    pub judge: Judge,
}

impl Pipeline {
    /// An evaluator for one consumer task (it caches scenario files, so tasks do not share it).
    pub fn evaluator(&self) -> Evaluator {
        Evaluator::new(
            self.suite.clone(),
            self.rules.clone(),
            self.dataset_dir.clone(),
        )
    }
}

/// Evaluates one example message into its result record. An example that does not validate
/// here (the producer validated it, but a message may come from elsewhere) is `skipped`.
pub async fn process(evaluator: &mut Evaluator, judge: &Judge, msg: &Message) -> ResultRecord {
    let m = metrics();
    m.inflight.inc();
    let started = Instant::now();
    let record = evaluate(evaluator, judge, msg, started).await;
    m.inflight.dec();
    m.examples_processed
        .with_label_values(&[&record.suite, record.outcome.as_str()])
        .inc();
    m.example_duration.observe(started.elapsed().as_secs_f64());
    record
}

async fn evaluate(
    evaluator: &mut Evaluator,
    judge: &Judge,
    msg: &Message,
    started: Instant,
) -> ResultRecord {
    let example = match evaluator.parse(&msg.example) {
        Ok(example) => example,
        Err(reason) => {
            let id = msg
                .example
                .get("id")
                .and_then(|v| v.as_str())
                .unwrap_or("")
                .to_owned();
            return ResultRecord::skipped(
                &msg.run_id,
                &evaluator.suite.name,
                msg.index,
                msg.line,
                id,
                reason,
            );
        }
    };
    let suite = evaluator.suite.clone();
    let tasks = judge_tasks(&suite, &example);
    let latency_ms = || started.elapsed().as_secs_f64() * 1000.0;
    match judge.judge(&example, &tasks).await {
        Ok(judged) => {
            let effort = Effort {
                usage: judged.usage,
                latency_ms: latency_ms(),
                attempts: judged.attempts,
            };
            evaluator.finish(
                &msg.run_id,
                msg.index,
                msg.line,
                &example,
                judged.scores,
                effort,
            )
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
            rec.attempts = failure.attempts;
            rec.usage = failure.usage;
            rec.latency_ms = latency_ms();
            if let Some(status) = failure.last_status {
                rec.details.insert("last_status".into(), status.into());
            }
            rec
        }
    }
}
