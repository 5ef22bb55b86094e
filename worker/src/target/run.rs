//! A run's target in a worker: the caller of its kind, and the road from a record waiting for
//! its outputs to an example the suite validated — or to the reason the example failed.

use std::sync::Arc;

use evalfleet_config::{HostPolicy, JudgeConfig, Target};
use evalfleet_contract::batch_store::{BatchStore, Question};
use evalfleet_contract::judge_cache::JudgeCache;
use evalfleet_model::record::TargetCall;
use evalfleet_model::routing::ProviderRules;
use evalfleet_suites::evaluate::{Evaluator, Example};
use evalfleet_suites::suite::Suite;
use evalfleet_suites::target::{PendingRecord, Reply, Secrets, TargetPlan};
use serde_json::{Map, Value};

use super::batched::{Batched, NotYet};
use super::keep::Keeper;
use super::{ChatTarget, HttpTarget};
use crate::judge::accounting::Accounting;
use crate::judge::batch::{BatchOptions, ExampleAt};
use crate::judge::provider::ProviderClient;
use crate::judge::Judge;
use crate::metrics::metrics;
use crate::rate_limit::RateLimits;

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
    /// Chat targets' cost per model (the judges' prices table), and the run budget the calls
    /// draw on: the judges' once [`RunTarget::charged_to`] shares it.
    accounting: Arc<Accounting>,
    /// The replies kept in the judges' cache.
    keeper: Keeper,
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
    /// Not a failure: the generation is in the provider's batches, and the example waits for
    /// this request's result (the consumer parks it).
    pub awaiting: Option<Box<Question>>,
}

impl NotGenerated {
    fn failed(reason: String, call: Option<TargetCall>) -> Self {
        NotGenerated {
            reason,
            call,
            awaiting: None,
        }
    }
}

/// A target's answer to one call.
struct Answer {
    reply: Reply,
    call: TargetCall,
    /// It came from the provider's batches: it has no latency of its own.
    batched: bool,
}

/// What a run's target is built from in a worker.
pub struct TargetParts<'a> {
    pub target: Target,
    pub model: Option<String>,
    /// The run's provider settings: `providers:`, the retry policy, prices, and which
    /// providers are in batch mode.
    pub judges: &'a JudgeConfig,
    pub rules: ProviderRules,
    /// Reads `${VAR}` and API keys: the environment of this process.
    pub env: &'a dyn Fn(&str) -> Option<String>,
    /// Where replies are kept (the judges' cache), used when the target caches
    /// ([`Target::caches`]).
    pub cache: Arc<dyn JudgeCache>,
    /// The process's rate limits: a chat target passes its provider's (the judges' too), an
    /// http target its own.
    pub rate_limits: &'a RateLimits,
    /// On a shared worker, where an http target may connect (`fleet.targets.allowed_hosts`);
    /// None in `run`, the user's own process.
    pub hosts: Option<Arc<HostPolicy>>,
    /// Where a chat target on a batch-mode provider parks its examples: the judges' batch
    /// store ([`crate::judge::LiveParts::parking`]).
    pub parking: Option<Arc<dyn BatchStore>>,
}

impl RunTarget {
    /// Builds the target's caller; the error names what is missing (a provider, a key, a
    /// `${VAR}`).
    pub fn new(parts: TargetParts<'_>) -> Result<Self, String> {
        let plan = Arc::new(TargetPlan::compile(
            parts.target,
            Secrets::Resolve(parts.env),
        )?);
        let judges = parts.judges;
        let caller = match &plan.target {
            Target::Chat(t) => {
                let provider = judges.providers.get(&t.provider).ok_or_else(|| {
                    format!(
                        "target {}: provider '{}' is not under providers: (known: {})",
                        t.name,
                        t.provider,
                        judges
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
                let mut chat = ChatTarget::new(
                    plan.clone(),
                    (&t.provider, provider),
                    key,
                    judges.retry.clone(),
                    parts.rate_limits,
                )?;
                if let Some(options) = BatchOptions::of(judges, &t.provider) {
                    let store = parts.parking.clone().ok_or_else(|| {
                        format!(
                            "target {}: provider '{}' is in batch mode, but this process has no batch store",
                            t.name, t.provider
                        )
                    })?;
                    chat = chat.with_batches(Batched {
                        options,
                        store,
                        discount: provider.batch_discount,
                        fallback: judges.batch.fallback,
                    });
                }
                Caller::Chat(Box::new(chat))
            }
            Target::Http(_) => Caller::Http(HttpTarget::new(
                plan.clone(),
                parts.rate_limits,
                parts.hosts,
            )?),
        };
        metrics().init_target(plan.name());
        let keeper = Keeper::new(&plan.target, parts.cache);
        Ok(RunTarget {
            plan,
            caller,
            model: parts.model,
            rules: parts.rules,
            accounting: Arc::new(Accounting::new(judges.prices.clone(), None)),
            keeper,
        })
    }

    /// The target as the run's `judge` needs it: its calls charged to the judges' budget, and
    /// its replies kept for an example's next evaluation when batch-mode judges park examples.
    pub fn serving(self, judge: &Judge, judges: &JudgeConfig) -> Self {
        let mut target = self.charged_to(judge.accounting(judges));
        if let Some(store) = judge.batch_store().or_else(|| target.batch_store()) {
            target.keeper = target.keeper.while_parked(store);
        }
        target
    }

    /// A chat target on a batch-mode provider: where its examples park.
    pub fn batch_store(&self) -> Option<Arc<dyn BatchStore>> {
        match &self.caller {
            Caller::Chat(chat) => chat.batched.as_ref().map(|b| b.store.clone()),
            Caller::Http(_) => None,
        }
    }

    /// A chat target on a batch-mode provider: its provider's client and batch options, for
    /// the batch coordinator.
    pub fn batch_provider(&self) -> Option<(Arc<ProviderClient>, BatchOptions)> {
        match &self.caller {
            Caller::Chat(chat) => {
                let batched = chat.batched.as_ref()?;
                Some((chat.client.clone(), batched.options.clone()))
            }
            Caller::Http(_) => None,
        }
    }

    /// Charges this target's calls to `accounting` and calls no more once its budget is spent:
    /// the run's judges' ([`crate::Judge::accounting`]), so that `--budget` covers both.
    fn charged_to(mut self, accounting: Arc<Accounting>) -> Self {
        self.accounting = accounting;
        self
    }

    pub fn name(&self) -> &str {
        self.plan.name()
    }

    /// How many times each record is generated and evaluated (`epochs`, `--epochs`).
    pub fn epochs(&self) -> u32 {
        self.plan.target.epochs().unwrap_or(1)
    }

    /// The target's compiled plan: what the producer checks records with.
    pub fn plan(&self) -> Arc<TargetPlan> {
        self.plan.clone()
    }

    /// Asks the target for `pending`'s outputs (or takes the reply the cache kept for the same
    /// request) and validates the completed record as `suite` validates a recorded one (a
    /// log-analysis example with the scenario the producer resolved, attached later by digest).
    pub async fn generate(
        &self,
        suite: &Arc<Suite>,
        pending: &PendingRecord,
        at: ExampleAt<'_>,
    ) -> Result<Generation, NotGenerated> {
        let key = (self.keeper).key(&self.plan, self.model.as_deref(), &pending.record, &at);
        let kept = match &key {
            Some(key) => self.keeper.get(key, self.name()).await,
            None => None,
        };
        let (reply, call) = match kept {
            Some(kept) => kept,
            None => {
                self.within_budget()?;
                let answer = self.call(pending, &at).await?;
                self.accounting.charge(answer.call.cost_usd);
                self.observe(&answer);
                if let Some(key) = &key {
                    self.keeper.put(key, &answer.reply, &answer.call).await;
                }
                (answer.reply, answer.call)
            }
        };
        let name = self.name().to_owned();
        let failed = |reason: String| NotGenerated::failed(reason, Some(call.clone()));
        let completed = self
            .plan
            .complete(pending.record.clone(), reply)
            .map_err(failed)?;
        let mut evaluator = Evaluator::new(suite.clone(), self.rules.clone(), None);
        let example = evaluator
            .parse_completed(&completed.record, pending)
            .map_err(|reason| failed(format!("target {name}: the completed record: {reason}")))?;
        Ok(Generation {
            example,
            outputs: completed.outputs,
            call,
        })
    }

    /// Err once the run's budget (shared with its judges) is spent: no call is made.
    fn within_budget(&self) -> Result<(), NotGenerated> {
        if self.accounting.within_budget() {
            return Ok(());
        }
        let budget = self.accounting.budget_usd().unwrap_or_default();
        Err(NotGenerated::failed(
            format!(
                "target {}: the run budget of {budget} USD is spent",
                self.name()
            ),
            None,
        ))
    }

    /// One call to the target (at `at`, which names a batch generation): its reply and what
    /// the call took.
    async fn call(
        &self,
        pending: &PendingRecord,
        at: &ExampleAt<'_>,
    ) -> Result<Answer, NotGenerated> {
        let name = self.name().to_owned();
        let not_called = |reason: String| NotGenerated::failed(reason, None);
        match &self.caller {
            Caller::Chat(chat) => {
                let model = self.model.as_deref();
                let generated = match &chat.batched {
                    Some(batched) => chat
                        .generate_batched(batched, &pending.record, model, at)
                        .await
                        .map_err(|not| match not {
                            NotYet::Awaiting(question) => NotGenerated {
                                reason: "waiting for its batch".into(),
                                call: None,
                                awaiting: Some(Box::new(question)),
                            },
                            NotYet::Failed(e) => not_called(e.to_string()),
                        })?,
                    None => chat
                        .call(&pending.record, model)
                        .await
                        .map_err(|e| not_called(e.to_string()))?,
                };
                let discount = match (&chat.batched, generated.batched) {
                    (Some(batched), true) => batched.discount,
                    _ => 1.0,
                };
                let cost = discount
                    * self.accounting.cost(
                        &generated.model,
                        generated.usage.input,
                        generated.usage.output,
                    );
                let call = TargetCall {
                    name,
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
                Ok(Answer {
                    reply,
                    call,
                    batched: generated.batched,
                })
            }
            Caller::Http(http) => {
                let called = http
                    .call(&pending.record)
                    .await
                    .map_err(|e| not_called(e.to_string()))?;
                let price = match &self.plan.target {
                    Target::Http(t) => t.price_per_call.unwrap_or(0.0),
                    Target::Chat(_) => 0.0,
                };
                let call = TargetCall {
                    name,
                    latency_ms: called.latency_ms,
                    attempts: called.attempts,
                    cost_usd: price,
                    ..TargetCall::default()
                };
                Ok(Answer {
                    reply: Reply::Http(called.reply),
                    call,
                    batched: false,
                })
            }
        }
    }

    /// A call's figures into the target's metrics (a batch reply has no duration of its own).
    fn observe(&self, answer: &Answer) {
        let (name, call) = (self.name(), &answer.call);
        let m = metrics();
        if !answer.batched {
            m.target_duration
                .with_label_values(&[name])
                .observe(call.latency_ms / 1000.0);
        }
        m.target_tokens
            .with_label_values(&[name, "input"])
            .inc_by(call.tokens_in);
        m.target_tokens
            .with_label_values(&[name, "output"])
            .inc_by(call.tokens_out);
        m.target_cost
            .with_label_values(&[name])
            .inc_by(call.cost_usd);
    }
}

#[cfg(test)]
mod log_analysis_tests;

#[cfg(test)]
mod tests {
    use evalfleet_config::Price;
    use evalfleet_contract::judge_cache::NoCache;
    use evalfleet_fake_provider::{spawn, FakeProviderArgs};
    use evalfleet_model::suite::SuiteKind;

    use super::*;

    /// A bundled rag-layers record without its trace: what the demo agent answers for.
    fn question() -> PendingRecord {
        let text = include_str!("../../../examples/rag-layers.jsonl");
        let line = text.lines().find(|l| l.starts_with('{')).unwrap();
        let mut record: Map<String, Value> = serde_json::from_str(line).unwrap();
        record.remove("trace");
        PendingRecord {
            id: record["id"].as_str().unwrap().to_owned(),
            record,
            scenario: None,
            replaced: Vec::new(),
            baseline: Default::default(),
        }
    }

    fn at() -> ExampleAt<'static> {
        ExampleAt {
            run_id: "r",
            index: 0,
            epoch: 0,
        }
    }

    #[tokio::test]
    async fn a_target_call_is_refused_once_the_shared_budget_is_spent() {
        let (addr, _server) = spawn(FakeProviderArgs {
            port: 0,
            wrap_rate: 0.0,
            ..FakeProviderArgs::default()
        })
        .await
        .expect("the fake starts");
        let yaml = format!(
            "name: demo\nkind: http\nurl: \"http://{addr}/agent\"\n\
             body: {{question: \"{{{{ question }}}}\"}}\noutputs: {{trace: /data/trace}}\n\
             price_per_call: 0.01\n"
        );
        let prices = std::collections::BTreeMap::<String, Price>::new();
        let env = |_: &str| None;
        let budget = Arc::new(Accounting::new(prices.clone(), Some(0.015)));
        let target = RunTarget::new(TargetParts {
            target: Target::parse(&yaml).unwrap(),
            model: None,
            judges: &JudgeConfig::default(),
            rules: ProviderRules::default(),
            env: &env,
            cache: Arc::new(NoCache),
            rate_limits: &RateLimits::default(),
            hosts: None,
            parking: None,
        })
        .unwrap()
        .charged_to(budget.clone());
        let suite = Arc::new(Suite::builtin(SuiteKind::RagLayers));
        let first = target.generate(&suite, &question(), at()).await;
        assert!(first.is_ok(), "{:?}", first.err().map(|n| n.reason));
        assert!(budget.within_budget(), "0.01 of 0.015 USD spent");
        // A judge's call spends the rest of the run's budget.
        budget.charge(0.005);
        let refused = target
            .generate(&suite, &question(), at())
            .await
            .err()
            .unwrap();
        assert_eq!(
            refused.reason,
            "target demo: the run budget of 0.015 USD is spent"
        );
        assert!(refused.call.is_none(), "no call was made");
        assert!((budget.spent_usd() - 0.015).abs() < 1e-12);
    }
}
