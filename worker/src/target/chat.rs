//! One chat target's calls: its prompt to a provider under `providers:`, retried as a judge
//! call is (the same retryable errors, never sooner than `Retry-After`). Its calls are under
//! the provider's rate limit, the one the judges of the same provider are under: one API key
//! has one rate limit. A provider in batch mode generates through its batches instead
//! (`batched.rs`).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use backon::Retryable;
use evalfleet_config::{ProviderConfig, RetryConfig, Target};
use evalfleet_suites::target::{ChatCall, TargetPlan};
use serde_json::{Map, Value};

use super::batched::Batched;
use super::TargetFailure;
use crate::judge::estimate::estimated_tokens;
use crate::judge::provider::{CallError, GenerateRequest, ProviderClient, TokenUsage};
use crate::judge::retry_schedule;
use crate::metrics::metrics;
use crate::rate_limit::{RateLimit, RateLimits};

/// A chat target, ready to call.
pub struct ChatTarget {
    pub(super) plan: Arc<TargetPlan>,
    pub(super) client: Arc<ProviderClient>,
    retry: RetryConfig,
    max_tokens: u32,
    rate_limit: Arc<RateLimit>,
    /// The provider is in batch mode: generations go through its batches.
    pub(super) batched: Option<Batched>,
}

/// A chat reply.
#[derive(Debug)]
pub struct Generated {
    pub text: String,
    /// The model that answered, as the provider names it (else the one asked).
    pub model: String,
    pub usage: TokenUsage,
    pub attempts: u32,
    pub latency_ms: f64,
    /// Through the provider's batches: priced at its `batch_discount`, with no latency of its
    /// own (it waited in a batch).
    pub batched: bool,
}

impl ChatTarget {
    /// `plan` must be a chat target's; `provider` is its entry under `providers:` (named
    /// `provider_name`) and `api_key` the key its `api_key_env` names. Its calls pass the
    /// provider's rate limit in `rate_limits`.
    pub fn new(
        plan: Arc<TargetPlan>,
        (provider_name, provider): (&str, &ProviderConfig),
        api_key: String,
        retry: RetryConfig,
        rate_limits: &RateLimits,
    ) -> Result<Self, String> {
        if !matches!(plan.target, Target::Chat(_)) {
            return Err(format!("target {} is not a chat target", plan.name()));
        }
        let client = ProviderClient::new(provider, api_key)
            .map_err(|e| format!("target {}: {e}", plan.name()))?;
        Ok(ChatTarget {
            plan,
            client: Arc::new(client),
            retry,
            max_tokens: provider.max_tokens,
            rate_limit: rate_limits.provider(provider_name, provider),
            batched: None,
        })
    }

    /// Generates through the provider's batches (`batched.rs`).
    pub(super) fn with_batches(mut self, batched: Batched) -> Self {
        self.batched = Some(batched);
        self
    }

    /// The call `record` renders to (`model` overrides the target's), or why it cannot.
    pub(super) fn render(
        &self,
        record: &Map<String, Value>,
        model: Option<&str>,
    ) -> Result<ChatCall, TargetFailure> {
        self.plan.chat(record, model).map_err(TargetFailure::Render)
    }

    /// The provider request of `call`.
    pub(super) fn request<'a>(&self, call: &'a ChatCall) -> GenerateRequest<'a> {
        GenerateRequest {
            model: &call.model,
            system: call.system.as_deref(),
            prompt: &call.prompt,
            params: &call.params,
            default_max_tokens: self.max_tokens,
        }
    }

    /// Asks the target for `record`; `model` overrides the target's (`--target-model`).
    pub async fn call(
        &self,
        record: &Map<String, Value>,
        model: Option<&str>,
    ) -> Result<Generated, TargetFailure> {
        let call = self.render(record, model)?;
        self.call_live(&call).await
    }

    /// One live generation of `call`, retried.
    pub(super) async fn call_live(&self, call: &ChatCall) -> Result<Generated, TargetFailure> {
        let name = self.plan.name().to_owned();
        let request = self.request(call);
        let max_tokens = call
            .params
            .get("max_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(u64::from(self.max_tokens));
        let estimate =
            estimated_tokens(&[call.system.as_deref().unwrap_or_default(), &call.prompt])
                .saturating_add(max_tokens);
        let estimate = u32::try_from(estimate).unwrap_or(u32::MAX);
        let attempts = AtomicU32::new(0);
        let started = Instant::now();
        let reply = (|| async {
            let _slot = self.rate_limit.admit(estimate).await;
            attempts.fetch_add(1, Ordering::Relaxed);
            let reply = self.client.generate(&request).await;
            self.rate_limit.observe(reply.as_ref().map(|(c, _)| c));
            let status = match &reply {
                Ok((completion, _)) => completion.status.to_string(),
                Err(e) => e.status().map_or_else(
                    || {
                        if matches!(e, CallError::Timeout(_)) {
                            "timeout".into()
                        } else {
                            "error".into()
                        }
                    },
                    |s| s.to_string(),
                ),
            };
            metrics()
                .target_requests
                .with_label_values(&[&name, &status])
                .inc();
            reply
        })
        .retry(retry_schedule(&self.retry))
        .when(CallError::retryable)
        .adjust(|e: &CallError, step: Option<Duration>| {
            step.map(|d| d.max(e.retry_after().unwrap_or_default()))
        })
        .await;
        let attempts = attempts.into_inner();
        match reply {
            Ok((completion, answered)) => Ok(Generated {
                text: completion.text,
                model: answered.unwrap_or_else(|| call.model.clone()),
                usage: completion.usage,
                attempts,
                latency_ms: started.elapsed().as_secs_f64() * 1000.0,
                batched: false,
            }),
            Err(e) => Err(match e.status() {
                Some(status) => TargetFailure::Status {
                    target: name,
                    status,
                    attempts,
                },
                None => TargetFailure::Transport {
                    target: name,
                    reason: e.reason(),
                    attempts,
                },
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use evalfleet_config::{Api, JudgeConfig};
    use evalfleet_fake_provider::{spawn, FakeProviderArgs};
    use evalfleet_suites::target::Secrets;
    use serde_json::json;

    use super::*;

    async fn target(api: Api, args: FakeProviderArgs) -> ChatTarget {
        let (addr, _server) = spawn(FakeProviderArgs { port: 0, ..args })
            .await
            .expect("the fake starts");
        let name = match api {
            Api::Openai => "openai",
            Api::Anthropic => "anthropic",
        };
        let mut provider = JudgeConfig::default().providers[name].clone();
        provider.base_url = match api {
            Api::Openai => format!("http://{addr}/v1"),
            Api::Anthropic => format!("http://{addr}"),
        };
        let yaml = format!(
            "name: bot\nkind: chat\nprovider: {name}\nmodel: m-1\nsystem: \"Be brief.\"\n\
             prompt: \"{{{{ ticket }}}}\"\nparams: {{temperature: 0}}\noutput: response\n"
        );
        let plan = TargetPlan::compile(Target::parse(&yaml).unwrap(), Secrets::Keep).unwrap();
        let retry = RetryConfig {
            max_attempts: 2,
            base_delay_ms: 10,
            max_delay_ms: 50,
        };
        let rate_limits = RateLimits::default();
        ChatTarget::new(
            Arc::new(plan),
            (name, &provider),
            "sk-test".into(),
            retry,
            &rate_limits,
        )
        .unwrap()
    }

    fn record() -> Map<String, Value> {
        json!({"id": "t1", "ticket": "VPN connection drops every hour"})
            .as_object()
            .unwrap()
            .clone()
    }

    #[tokio::test]
    async fn both_apis_answer_the_rendered_prompt() {
        for api in [Api::Openai, Api::Anthropic] {
            let bot = target(api, FakeProviderArgs::default()).await;
            let reply = bot.call(&record(), None).await.unwrap();
            assert!(reply.text.contains("connection"), "{api:?}: {}", reply.text);
            assert_eq!(reply.model, "m-1", "the fake answers as the model asked");
            assert!(reply.usage.input > 0 && reply.usage.output > 0);
            let other = bot.call(&record(), Some("m-2")).await.unwrap();
            assert_eq!(other.model, "m-2", "--target-model");
        }
    }

    #[tokio::test]
    async fn a_target_that_keeps_failing_says_how() {
        let bot = target(
            Api::Openai,
            FakeProviderArgs {
                fault_500: 1.0,
                ..FakeProviderArgs::default()
            },
        )
        .await;
        let err = bot.call(&record(), None).await.unwrap_err();
        assert_eq!(err.to_string(), "target bot: HTTP 500 after 2 attempts");
    }
}
