//! Judge backends: `none` asks nobody, `heuristic` scores offline and deterministically, `live`
//! asks real providers (OpenAI, Anthropic, any OpenAI-compatible server) through [`LiveJudge`].

pub mod accounting;
pub mod batch;
mod build;
pub mod estimate;
pub mod limit;
pub mod live;
pub mod pairwise;
pub mod prompt;
pub mod provider;
pub mod reply;

use std::sync::Arc;
use std::time::Duration;

use backon::ExponentialBuilder;
use evalfleet_config::{JudgeConfig, RetryConfig};
use evalfleet_contract::batch_store::{BatchStore, Question};

use evalfleet_model::record::{Scores, Usage};
use evalfleet_suites::evaluate::{heuristic_verdict, Example, JudgeTask};

use accounting::Accounting;
pub use build::{build_judge, LiveParts};
pub use evalfleet_contract::judge_cache as cache;
pub use live::LiveJudge;

pub use evalfleet_suites::spec::JudgeMode;

/// What judging one example produced and cost. `attempts` counts judge calls made.
#[derive(Debug, Clone, Default)]
pub struct JudgeOutcome {
    pub scores: Scores,
    pub usage: Usage,
    pub attempts: u32,
    /// Batch replies used, for [`Judge::charge`] once the example is complete.
    pub deferred: Deferred,
}

/// Batch replies an evaluation used, not yet charged to the run's budget and the metrics. They
/// are charged ([`Judge::charge`]) once the whole example is complete: a parked example is
/// evaluated again from the start, and a target run's epochs are judged apart, so an epoch
/// judged before its example was parked would otherwise be charged at each evaluation.
#[derive(Debug, Clone, Default)]
pub struct Deferred(pub(crate) Vec<(String, provider::TokenUsage, f64)>);

impl Deferred {
    /// Adds another evaluation's (an epoch's) charges.
    pub fn extend(&mut self, other: Deferred) {
        self.0.extend(other.0);
    }
}

/// Judging an example failed: the example is `failed` with this reason (judge errors after
/// retries, the budget). `fatal` failures stop the whole run (a rejected API key). A failure
/// with `awaiting` questions is no failure: in fleet batch mode the example waits (is parked)
/// for those questions' batches.
#[derive(Debug, Clone)]
pub struct JudgeFailure {
    pub reason: String,
    pub fatal: bool,
    pub attempts: u32,
    pub last_status: Option<u16>,
    pub usage: Usage,
    pub awaiting: Vec<Question>,
    /// Batch replies used before it failed, for [`Judge::charge`].
    pub deferred: Deferred,
}

impl JudgeFailure {
    pub fn new(reason: String, fatal: bool) -> Self {
        JudgeFailure {
            reason,
            fatal,
            attempts: 0,
            last_status: None,
            usage: Usage::default(),
            awaiting: Vec::new(),
            deferred: Deferred::default(),
        }
    }

    /// The example waits for these questions' batch replies.
    pub fn awaiting(questions: Vec<Question>) -> Self {
        JudgeFailure {
            awaiting: questions,
            ..JudgeFailure::new("waiting for batch replies".into(), false)
        }
    }
}

#[derive(Clone)]
pub enum Judge {
    None,
    Heuristic,
    Live(Arc<LiveJudge>),
}

impl Judge {
    /// The batch store a batch-mode judge parks its examples in: where the batch coordinator
    /// finds its work. None without a batch-mode provider.
    pub fn batch_store(&self) -> Option<Arc<dyn BatchStore>> {
        match self {
            Judge::Live(live) if !live.batch_providers().is_empty() => live.parking(),
            _ => None,
        }
    }

    /// What the run's spend is charged to and its budget checked against: a live judge's own
    /// accounting, so that the run's target draws on the same `--budget` as its judges (and, in
    /// the fleet, as the runs that share the judge); an offline judge spends nothing, so the
    /// target gets a new one with `judges`' prices and budget.
    pub fn accounting(&self, judges: &JudgeConfig) -> Arc<Accounting> {
        match self {
            Judge::Live(live) => live.accounting.clone(),
            Judge::None | Judge::Heuristic => {
                Arc::new(Accounting::new(judges.prices.clone(), judges.budget_usd))
            }
        }
    }

    /// The reason the run must stop, once a live judge's key was rejected.
    pub fn stopped(&self) -> Option<&str> {
        match self {
            Judge::Live(live) => live.stopped(),
            _ => None,
        }
    }

    /// Scores every task of one example, at its evaluation `at`.
    pub async fn judge(
        &self,
        example: &Example,
        tasks: &[JudgeTask<'_>],
        at: batch::ExampleAt<'_>,
    ) -> Result<JudgeOutcome, JudgeFailure> {
        match self {
            Judge::None => Ok(JudgeOutcome::default()),
            Judge::Heuristic => {
                let scores = tasks
                    .iter()
                    .map(|t| (t.dimension.name.clone(), heuristic_verdict(t, example)))
                    .collect();
                Ok(JudgeOutcome {
                    scores: Scores(scores),
                    ..JudgeOutcome::default()
                })
            }
            Judge::Live(live) => live.judge(example, tasks, at).await,
        }
    }

    /// Charges an example's batch replies to the run and the metrics: call it once the example
    /// is complete (recorded, not parked).
    pub fn charge(&self, deferred: Deferred) {
        if let Judge::Live(live) = self {
            live.charge_deferred(deferred);
        }
    }
}

/// The backoff of `judges.retry`: exponential from `base_delay_ms` to `max_delay_ms`, at most
/// `max_attempts` attempts in all. Live calls add full jitter; batch API calls do not need it.
pub(crate) fn retry_schedule(retry: &RetryConfig) -> ExponentialBuilder {
    ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(retry.base_delay_ms))
        .with_max_delay(Duration::from_millis(retry.max_delay_ms))
        .with_max_times(retry.max_attempts.saturating_sub(1) as usize)
}
