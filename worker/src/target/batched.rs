//! A chat target whose provider is in batch mode (its `mode: batch`, `judges.mode: batch` or
//! `--judge-mode batch`) generates through the provider's Batch API, at its batch price, the
//! way batch-mode judges ask (`judge/live/batched.rs`): a generation without a stored result
//! makes its example wait — the consumer parks it — and the one batch coordinator sends the
//! request in the provider's next batch, beside the judges' questions; once the result is in,
//! the example is evaluated again from the start and finds it.
//!
//! The custom_id names the evaluation and the attempt (`<example>-g<attempt>`, with the epoch
//! in the example's key), so the next evaluation asks for the same result. An errored, expired
//! or cancelled request goes into a later batch up to `judges.retry.max_attempts`, or live at
//! once with `judges.batch.fallback: live`; a request the provider refused (a 400) is final.

use std::sync::Arc;

use evalfleet_config::BatchFallback;
use evalfleet_contract::batch_store::{BatchStore, Question};
use serde_json::{Map, Value};

use super::chat::{ChatTarget, Generated};
use super::TargetFailure;
use crate::judge::batch::{stored, BatchOptions, ExampleAt};
use crate::judge::provider::batch::{encode_generate_line, BatchItem};
use crate::metrics::metrics;

/// Where a chat target's batch generations go and what they cost.
pub(crate) struct Batched {
    pub options: BatchOptions,
    /// Where the example waits and the results arrive: the judges' batch store.
    pub store: Arc<dyn BatchStore>,
    /// The provider's `batch_discount`.
    pub discount: f64,
    pub fallback: BatchFallback,
}

/// A batch generation that is not there.
pub(crate) enum NotYet {
    /// Its example waits for this request's result.
    Awaiting(Question),
    /// It failed for good.
    Failed(TargetFailure),
}

impl ChatTarget {
    /// `record`'s generation at `at`, from the provider's batches (see the module).
    pub(super) async fn generate_batched(
        &self,
        batched: &Batched,
        record: &Map<String, Value>,
        model: Option<&str>,
        at: &ExampleAt<'_>,
    ) -> Result<Generated, NotYet> {
        let name = self.plan.name();
        let call = self.render(record, model).map_err(NotYet::Failed)?;
        let max_attempts = batched.options.retry.max_attempts.max(1);
        let mut last = String::new();
        for attempt in 0..max_attempts {
            let custom_id = format!("{}-g{attempt}", at.key());
            let Some(item) = stored(batched.store.as_ref(), at.run_id, &custom_id).await else {
                let line =
                    encode_generate_line(batched.options.api, &custom_id, &self.request(&call));
                return Err(NotYet::Awaiting(Question {
                    provider: batched.options.provider.clone(),
                    custom_id,
                    line,
                }));
            };
            let status = match &item {
                BatchItem::Reply { .. } => "200",
                BatchItem::Errored { .. } => "error",
                BatchItem::Expired => "expired",
                BatchItem::Canceled => "canceled",
            };
            metrics()
                .target_requests
                .with_label_values(&[name, status])
                .inc();
            match item {
                BatchItem::Reply { text, usage, model } => {
                    return Ok(Generated {
                        text,
                        model: model.unwrap_or(call.model),
                        usage,
                        attempts: attempt + 1,
                        latency_ms: 0.0,
                        batched: true,
                    })
                }
                BatchItem::Errored {
                    reason,
                    retryable: false,
                } => {
                    return Err(NotYet::Failed(TargetFailure::Batch {
                        target: name.to_owned(),
                        reason,
                        attempts: attempt + 1,
                    }))
                }
                BatchItem::Errored { reason, .. } => last = reason,
                BatchItem::Expired => last = "expired in its batch".into(),
                BatchItem::Canceled => last = "cancelled with its batch".into(),
            }
            // The reply of a live fallback is kept for the example's next evaluation by the
            // run's target (`keep.rs`), as any reply is while its example may be parked.
            if batched.fallback == BatchFallback::Live {
                return self.call_live(&call).await.map_err(NotYet::Failed);
            }
        }
        Err(NotYet::Failed(TargetFailure::Batch {
            target: name.to_owned(),
            reason: last,
            attempts: max_attempts,
        }))
    }
}

#[cfg(test)]
mod tests {
    use evalfleet_config::{Api, JudgeConfig, RetryConfig, Target};
    use evalfleet_contract::batch_memory::InProcessBatchStore;
    use evalfleet_suites::target::{Secrets, TargetPlan};
    use serde_json::json;

    use super::*;
    use crate::judge::provider::TokenUsage;
    use crate::rate_limit::RateLimits;

    fn target(fallback: BatchFallback) -> (ChatTarget, Arc<dyn BatchStore>) {
        let judges = JudgeConfig::default();
        let provider = judges.providers["anthropic"].clone();
        let plan = TargetPlan::compile(
            Target::parse(
                "name: bot\nkind: chat\nprovider: anthropic\nmodel: claude-x\n\
                 prompt: \"Answer: {{ ticket }}\"\noutput: response\n",
            )
            .unwrap(),
            Secrets::Keep,
        )
        .unwrap();
        let store: Arc<dyn BatchStore> = Arc::new(InProcessBatchStore::new());
        let retry = RetryConfig {
            max_attempts: 2,
            base_delay_ms: 1,
            max_delay_ms: 2,
        };
        let options = BatchOptions {
            provider: "anthropic".into(),
            api: Api::Anthropic,
            batch: judges.batch.clone(),
            retry: retry.clone(),
            tag: "evalfleet-anthropic".into(),
        };
        let chat = ChatTarget::new(
            Arc::new(plan),
            ("anthropic", &provider),
            "sk-test".into(),
            retry,
            &RateLimits::default(),
        )
        .unwrap()
        .with_batches(Batched {
            options,
            store: store.clone(),
            discount: 0.5,
            fallback,
        });
        (chat, store)
    }

    fn record() -> Map<String, Value> {
        json!({"id": "t1", "ticket": "VPN drops"})
            .as_object()
            .unwrap()
            .clone()
    }

    const AT: ExampleAt<'static> = ExampleAt {
        run_id: "r",
        index: 7,
        epoch: 1,
    };

    async fn put(store: &Arc<dyn BatchStore>, custom_id: &str, item: &BatchItem) {
        let json = serde_json::to_string(item).unwrap();
        store
            .put_answers("r", &[(custom_id.to_owned(), json)])
            .await
            .unwrap();
    }

    async fn generate(chat: &ChatTarget) -> Result<Generated, NotYet> {
        let batched = chat.batched.as_ref().unwrap();
        chat.generate_batched(batched, &record(), None, &AT).await
    }

    #[tokio::test]
    async fn a_generation_waits_for_its_batch_then_takes_its_result() {
        let (chat, store) = target(BatchFallback::Retry);
        let first = format!("{}-g0", AT.key());
        let Err(NotYet::Awaiting(question)) = generate(&chat).await else {
            panic!("the first evaluation waits for the batch");
        };
        assert_eq!(question.custom_id, first);
        assert_eq!(question.provider, "anthropic");
        let line: Value = serde_json::from_slice(&question.line).unwrap();
        assert_eq!(line["custom_id"], first.as_str());
        assert_eq!(line["params"]["model"], "claude-x");
        assert_eq!(
            line["params"]["messages"][0]["content"],
            "Answer: VPN drops"
        );
        let usage = TokenUsage {
            input: 10,
            output: 20,
        };
        let reply = BatchItem::Reply {
            text: "Reconnect.".into(),
            usage,
            model: Some("claude-x-2025".into()),
        };
        put(&store, &first, &reply).await;
        let Ok(generated) = generate(&chat).await else {
            panic!("the result is in");
        };
        assert_eq!(generated.text, "Reconnect.");
        assert_eq!(generated.model, "claude-x-2025", "the model that answered");
        assert_eq!(generated.usage, usage);
        assert_eq!(generated.attempts, 1);
        assert!(generated.batched);
    }

    #[tokio::test]
    async fn a_failed_request_is_asked_again_in_a_later_batch_then_fails_for_good() {
        let (chat, store) = target(BatchFallback::Retry);
        let key = AT.key();
        put(&store, &format!("{key}-g0"), &BatchItem::Expired).await;
        let Err(NotYet::Awaiting(question)) = generate(&chat).await else {
            panic!("an expired request goes into a later batch");
        };
        assert_eq!(question.custom_id, format!("{key}-g1"));
        let errored = BatchItem::Errored {
            reason: "overloaded".into(),
            retryable: true,
        };
        put(&store, &format!("{key}-g1"), &errored).await;
        let Err(NotYet::Failed(failure)) = generate(&chat).await else {
            panic!("two attempts, both failed");
        };
        assert_eq!(
            failure.to_string(),
            "target bot: overloaded (batch, after 2 attempts)"
        );

        let (chat, store) = target(BatchFallback::Retry);
        let refused = BatchItem::Errored {
            reason: "HTTP 400 invalid_request_error".into(),
            retryable: false,
        };
        put(&store, &format!("{key}-g0"), &refused).await;
        let Err(NotYet::Failed(failure)) = generate(&chat).await else {
            panic!("a refused request is final");
        };
        assert_eq!(
            failure.to_string(),
            "target bot: HTTP 400 invalid_request_error (batch, after 1 attempts)"
        );
    }
}
