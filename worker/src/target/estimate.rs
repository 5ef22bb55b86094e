//! `--estimate` of a target run: the target's calls, tokens and cost, and the judge calls on the
//! records it would complete — before anything is sent, and without reading the environment
//! (the plan keeps `${VAR}`s as written).
//!
//! The outputs the judges read do not exist before the target answers, so:
//! - a chat target's prompt is rendered per record and counted as the judges' prompts are; its
//!   reply is assumed to be `params.max_tokens` long, else [`TYPICAL_TARGET_REPLY_TOKENS`]; the
//!   record is completed with a placeholder answer of that length (the model, the `set`
//!   fields as a real reply would) and validated by the suite, and its judge calls are counted
//!   as a recorded example's;
//! - an http target costs its `price_per_call`; what it fills comes from its reply (a trace,
//!   say), whose shape nothing before the call tells, so its judge calls are not estimated.
//!
//! A chat target on a batch-mode provider generates through its batches: its calls are priced
//! as the judges' are, at the provider's `batch_discount`, and counted with the batched ones.

use std::sync::Arc;

use evalfleet_config::{CallMode, JudgeConfig, Target};
use evalfleet_model::routing::ProviderRules;
use evalfleet_suites::evaluate::Evaluator;
use evalfleet_suites::suite::Suite;
use evalfleet_suites::target::{PendingRecord, Reply, Secrets, TargetPlan};
use serde::Serialize;
use serde_json::Value;

use crate::judge::accounting::Accounting;
use crate::judge::estimate::{
    add_example, estimated_tokens, CallEstimate, Estimate, ModelEstimate,
};

/// A chat target's expected reply when its `params` set no `max_tokens`: a few paragraphs.
/// (The bundled support answers average about 75 tokens; a chat model's answer to an open
/// question often runs to a few hundred.) The maximum is then the provider's `max_tokens`.
pub const TYPICAL_TARGET_REPLY_TOKENS: u64 = 250;

/// The calls of a run's target, and what the estimate could not count.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TargetEstimate {
    /// `target NAME (MODEL)`, or `target NAME (http)`.
    pub label: String,
    pub row: ModelEstimate,
    /// Records the target would be asked for.
    pub records: u64,
    /// A chat target's reply length; None for an http target, whose tokens are the agent's
    /// own and whose outputs the judges are not estimated on.
    pub reply: Option<ReplyTokens>,
    /// Records the target would be asked for whose example fails before any judge (the
    /// request does not render, or the suite rejects the completed record).
    pub failing: u64,
    pub first_failure: Option<String>,
}

impl TargetEstimate {
    fn fail(&mut self, reason: String) {
        self.failing += 1;
        self.first_failure.get_or_insert(reason);
    }
}

/// The output tokens a chat target's reply is assumed to have, and where each number comes
/// from (for the reader: `params.max_tokens`, `typical`, `providers.openai.max_tokens`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplyTokens {
    pub expected: u64,
    pub expected_from: String,
    pub max: u64,
    pub max_from: String,
}

/// A chat target's call as the estimate makes it.
struct ChatAssumption {
    /// The model asked (`--target-model` applied): what the call is priced by.
    model: String,
    reply: ReplyTokens,
    /// The provider's `batch_discount`, and whether its calls go through batches.
    batch_discount: f64,
    batch: bool,
}

/// Counts a run's target calls, record by record.
pub struct TargetEstimator {
    plan: Arc<TargetPlan>,
    /// None for an http target.
    chat: Option<ChatAssumption>,
    /// Validates a completed record as the worker does.
    evaluator: Evaluator,
    judges: JudgeConfig,
    /// The judges' prices.
    accounting: Accounting,
}

impl TargetEstimator {
    /// `model` is `--target-model`; `judges` gives the providers, prices and judge routing;
    /// `suite` and `rules` validate the completed records. Err when the target cannot be
    /// compiled or names a provider that is not configured.
    pub fn new(
        target: Target,
        model: Option<String>,
        judges: &JudgeConfig,
        suite: Arc<Suite>,
        rules: ProviderRules,
    ) -> Result<Self, String> {
        let plan = Arc::new(TargetPlan::compile(target, Secrets::Keep)?);
        let chat = match &plan.target {
            Target::Chat(t) => {
                let provider = judges.providers.get(&t.provider).ok_or_else(|| {
                    format!(
                        "target {}: provider '{}' is not under providers:",
                        t.name, t.provider
                    )
                })?;
                let cap = u64::from(provider.max_tokens);
                let reply = match t.params.get("max_tokens").and_then(Value::as_u64) {
                    Some(n) => ReplyTokens {
                        expected: n,
                        expected_from: "params.max_tokens".into(),
                        max: n,
                        max_from: "params.max_tokens".into(),
                    },
                    None => ReplyTokens {
                        expected: TYPICAL_TARGET_REPLY_TOKENS.min(cap),
                        expected_from: "typical".into(),
                        max: cap,
                        max_from: format!("providers.{}.max_tokens", t.provider),
                    },
                };
                Some(ChatAssumption {
                    model: model.unwrap_or_else(|| t.model.clone()),
                    reply,
                    batch_discount: provider.batch_discount,
                    batch: judges.mode_of(&t.provider) == CallMode::Batch,
                })
            }
            Target::Http(_) => None,
        };
        Ok(TargetEstimator {
            plan,
            chat,
            evaluator: Evaluator::new(suite, rules, None),
            judges: judges.clone(),
            accounting: Accounting::new(judges.prices.clone(), None),
        })
    }

    /// The target's compiled plan: what the records are checked with.
    pub fn plan(&self) -> Arc<TargetPlan> {
        self.plan.clone()
    }

    /// An estimate with the target's row and no call yet.
    pub fn start(&self) -> Estimate {
        Estimate {
            target: Some(self.empty_row()),
            ..Estimate::default()
        }
    }

    fn empty_row(&self) -> TargetEstimate {
        let name = self.plan.name().to_owned();
        let (label, priced) = match &self.chat {
            Some(chat) => (
                format!("target {name} ({})", chat.model),
                self.accounting.has_price(&chat.model),
            ),
            None => (
                format!("target {name} (http)"),
                self.price_per_call().is_some(),
            ),
        };
        TargetEstimate {
            label,
            row: ModelEstimate::new(priced),
            records: 0,
            reply: self.chat.as_ref().map(|c| c.reply.clone()),
            failing: 0,
            first_failure: None,
        }
    }

    /// Adds the target's calls for `pending` (one per epoch) and, for a chat target, the judge
    /// calls on the record it would complete, once per epoch.
    pub fn add_record(&mut self, estimate: &mut Estimate, pending: &PendingRecord) {
        let epochs = self.plan.target.epochs().unwrap_or(1);
        let row = estimate.target.get_or_insert_with(|| self.empty_row());
        row.records += 1;
        let Some(chat) = &self.chat else {
            for _ in 0..epochs {
                row.row.add_call(self.http_call());
            }
            return;
        };
        let call = match self.plan.chat(&pending.record, Some(&chat.model)) {
            Ok(call) => call,
            Err(reason) => return row.fail(reason),
        };
        let input = estimated_tokens(&[call.system.as_deref().unwrap_or(""), &call.prompt]);
        let reply = &chat.reply;
        for _ in 0..epochs {
            row.row.add_call(CallEstimate {
                input_tokens: input,
                output_tokens_expected: reply.expected,
                output_tokens_max: reply.max,
                cost_usd_expected: self.accounting.cost(&call.model, input, reply.expected),
                cost_usd_max: self.accounting.cost(&call.model, input, reply.max),
                batch_discount: chat.batch_discount,
                batch: chat.batch,
            });
        }
        let answer = Reply::Chat {
            text: placeholder(reply.expected),
            model: call.model,
        };
        let example = self
            .plan
            .complete(pending.record.clone(), answer)
            .and_then(|completed| {
                (self.evaluator)
                    .parse_completed(&completed.record, pending)
                    .map_err(|reason| {
                        format!(
                            "target {}: the completed record: {reason}",
                            self.plan.name()
                        )
                    })
            });
        match example {
            Ok(example) => {
                for _ in 0..epochs {
                    add_example(estimate, &self.judges, &self.evaluator.suite, &example);
                }
            }
            Err(reason) => row.fail(reason),
        }
    }

    /// An http target's `price_per_call`.
    fn price_per_call(&self) -> Option<f64> {
        match &self.plan.target {
            Target::Http(t) => t.price_per_call,
            Target::Chat(_) => None,
        }
    }

    /// One http call: its `price_per_call` (0 without one), tokens unknown.
    fn http_call(&self) -> CallEstimate {
        let price = self.price_per_call().unwrap_or(0.0);
        CallEstimate {
            input_tokens: 0,
            output_tokens_expected: 0,
            output_tokens_max: 0,
            cost_usd_expected: price,
            cost_usd_max: price,
            batch_discount: 1.0,
            batch: false,
        }
    }
}

/// A stand-in answer of `tokens` estimated tokens (four characters each), so that the judges'
/// prompts are as long as with a real answer.
fn placeholder(tokens: u64) -> String {
    "lorem ipsum dolor sit amet "
        .chars()
        .cycle()
        .take(usize::try_from(tokens.saturating_mul(4)).unwrap_or(usize::MAX))
        .collect()
}

#[cfg(test)]
mod tests;
