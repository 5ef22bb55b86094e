//! A run's target in a worker: the caller of its kind, and the road from a record waiting for
//! its outputs to an example the suite validated — or to the reason the example failed.

use std::collections::BTreeMap;
use std::sync::Arc;

use evalfleet_config::{Price, ProviderConfig, RetryConfig, Target};
use evalfleet_model::record::TargetCall;
use evalfleet_model::routing::ProviderRules;
use evalfleet_suites::evaluate::{Evaluator, Example};
use evalfleet_suites::suite::Suite;
use evalfleet_suites::target::{PendingRecord, Reply, Secrets, TargetPlan};
use serde_json::{Map, Value};

use super::{ChatTarget, HttpTarget};
use crate::judge::accounting::Accounting;
use crate::metrics::metrics;

/// How a run's target is called.
enum Caller {
    Chat(Box<ChatTarget>),
    Http(HttpTarget),
}

/// A run's target, ready to generate.
pub struct RunTarget {
    plan: Arc<TargetPlan>,
    caller: Caller,
    /// `--target-model`: a chat target's model, overridden.
    model: Option<String>,
    /// What the completed record is validated with.
    rules: ProviderRules,
    /// Chat targets' cost per model (the judges' prices table).
    accounting: Accounting,
}

/// An example the target completed.
pub struct Generation {
    pub example: Example,
    pub outputs: Map<String, Value>,
    pub call: TargetCall,
}

/// Why an example got no outputs, and the call when there was one.
pub struct NotGenerated {
    pub reason: String,
    pub call: Option<TargetCall>,
}

/// What a run's target is built from in a worker.
pub struct TargetParts<'a> {
    pub target: Target,
    pub model: Option<String>,
    pub providers: &'a BTreeMap<String, ProviderConfig>,
    pub retry: &'a RetryConfig,
    pub prices: &'a BTreeMap<String, Price>,
    pub rules: ProviderRules,
    /// Reads `${VAR}` and API keys: the environment of this process.
    pub env: &'a dyn Fn(&str) -> Option<String>,
}

impl RunTarget {
    /// Builds the target's caller; the error names what is missing (a provider, a key, a
    /// `${VAR}`).
    pub fn new(parts: TargetParts<'_>) -> Result<Self, String> {
        let plan = Arc::new(TargetPlan::compile(
            parts.target,
            Secrets::Resolve(parts.env),
        )?);
        let caller = match &plan.target {
            Target::Chat(t) => {
                let provider = parts.providers.get(&t.provider).ok_or_else(|| {
                    format!(
                        "target {}: provider '{}' is not under providers: (known: {})",
                        t.name,
                        t.provider,
                        parts
                            .providers
                            .keys()
                            .cloned()
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                })?;
                let key = (parts.env)(&provider.api_key_env).ok_or_else(|| {
                    format!(
                        "target {}: the API key of provider '{}' is not set: export {} (providers.{}.api_key_env)",
                        t.name, t.provider, provider.api_key_env, t.provider
                    )
                })?;
                Caller::Chat(Box::new(ChatTarget::new(
                    plan.clone(),
                    provider,
                    key,
                    parts.retry.clone(),
                )?))
            }
            Target::Http(_) => Caller::Http(HttpTarget::new(plan.clone())?),
        };
        metrics().init_target(plan.name());
        Ok(RunTarget {
            plan,
            caller,
            model: parts.model,
            rules: parts.rules,
            accounting: Accounting::new(parts.prices.clone(), None),
        })
    }

    pub fn name(&self) -> &str {
        self.plan.name()
    }

    /// The target's compiled plan: what the producer checks records with.
    pub fn plan(&self) -> Arc<TargetPlan> {
        self.plan.clone()
    }

    /// Asks the target for `pending`'s outputs and validates the completed record as `suite`
    /// validates a recorded one.
    pub async fn generate(
        &self,
        suite: &Arc<Suite>,
        pending: &PendingRecord,
    ) -> Result<Generation, NotGenerated> {
        let name = self.name().to_owned();
        let (reply, call) = match &self.caller {
            Caller::Chat(chat) => {
                let generated = chat
                    .call(&pending.record, self.model.as_deref())
                    .await
                    .map_err(|e| NotGenerated {
                        reason: e.to_string(),
                        call: None,
                    })?;
                let cost = self.accounting.cost(
                    &generated.model,
                    generated.usage.input,
                    generated.usage.output,
                );
                let call = TargetCall {
                    name: name.clone(),
                    latency_ms: generated.latency_ms,
                    attempts: generated.attempts,
                    tokens_in: generated.usage.input,
                    tokens_out: generated.usage.output,
                    cost_usd: cost,
                };
                let reply = Reply::Chat {
                    text: generated.text,
                    model: generated.model,
                };
                (reply, call)
            }
            Caller::Http(http) => {
                let called = http.call(&pending.record).await.map_err(|e| NotGenerated {
                    reason: e.to_string(),
                    call: None,
                })?;
                let price = match &self.plan.target {
                    Target::Http(t) => t.price_per_call.unwrap_or(0.0),
                    Target::Chat(_) => 0.0,
                };
                let call = TargetCall {
                    name: name.clone(),
                    latency_ms: called.latency_ms,
                    attempts: called.attempts,
                    cost_usd: price,
                    ..TargetCall::default()
                };
                (Reply::Http(called.reply), call)
            }
        };
        let m = metrics();
        m.target_duration
            .with_label_values(&[&name])
            .observe(call.latency_ms / 1000.0);
        m.target_tokens
            .with_label_values(&[&name, "input"])
            .inc_by(call.tokens_in);
        m.target_tokens
            .with_label_values(&[&name, "output"])
            .inc_by(call.tokens_out);
        m.target_cost
            .with_label_values(&[&name])
            .inc_by(call.cost_usd);
        let failed = |reason: String| NotGenerated {
            reason,
            call: Some(call.clone()),
        };
        let completed = self
            .plan
            .complete(pending.record.clone(), reply)
            .map_err(failed)?;
        let mut evaluator = Evaluator::new(suite.clone(), self.rules.clone(), None);
        let example = evaluator
            .parse(&completed.record)
            .map_err(|reason| failed(format!("target {name}: the completed record: {reason}")))?;
        Ok(Generation {
            example,
            outputs: completed.outputs,
            call,
        })
    }
}
