//! Which of a target's replies are kept, and under which key, in the judges' cache.
//!
//! A deterministic target's replies are kept by request, in the judges' cache: a repeated
//! record, a message delivered again after a crash, or a `retry` is answered without a call,
//! for nothing. When batch-mode judges park examples, every reply is also kept for its example
//! in the batch store, beside the judges' batch results: the example is evaluated again from the
//! start once they are in, and must judge the same answer, which was paid once. (The batch
//! store holds what a parked example needs until its run is done; the cache may forget.)

use std::sync::Arc;

use evalfleet_config::Target;
use evalfleet_contract::batch_store::BatchStore;
use evalfleet_contract::judge_cache::{CachedReply, JudgeCache};
use evalfleet_model::record::TargetCall;
use evalfleet_suites::target::{Reply, TargetPlan};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::judge::batch::{example_key, ExampleAt};

/// A target's kept replies.
pub(super) struct Keeper {
    /// By request, for anyone asking the same: when the target's calls are deterministic.
    requests: Option<Arc<dyn JudgeCache>>,
    /// By example and epoch, while batch-mode judges park examples.
    parked: Option<Arc<dyn BatchStore>>,
}

/// Where a reply is kept, found by [`Keeper::key`].
pub(super) enum Key {
    Request(String),
    Example { run: String, custom_id: String },
}

impl Keeper {
    /// Replies of `target` kept in `cache`, by request when the target caches.
    pub(super) fn new(target: &Target, cache: Arc<dyn JudgeCache>) -> Self {
        Keeper {
            requests: (target.caches() && cache.enabled()).then_some(cache),
            parked: None,
        }
    }

    /// Batch-mode judges park examples in `store`: keep each reply there for its example.
    pub(super) fn while_parked(mut self, store: Arc<dyn BatchStore>) -> Self {
        self.parked = Some(store);
        self
    }

    /// Where `record`'s reply at `at` is kept: for its example (its run's batch store, beside
    /// the judges' questions: `<example>-t<epoch>`) while examples are parked; else by request,
    /// hashed: the target's name, the epoch and the rendered request (headers left out: they
    /// authenticate, they do not ask). None when nothing is kept or the request does not
    /// render (the call then says why).
    pub(super) fn key(
        &self,
        plan: &TargetPlan,
        model: Option<&str>,
        record: &Map<String, Value>,
        at: &ExampleAt<'_>,
    ) -> Option<Key> {
        if self.parked.is_some() {
            return Some(Key::Example {
                run: at.run_id.to_owned(),
                custom_id: format!("{}-t{}", example_key(at.run_id, at.index), at.epoch),
            });
        }
        self.requests.as_ref()?;
        let mut hasher = Sha256::new();
        let mut part = |p: &[u8]| {
            hasher.update((p.len() as u64).to_le_bytes());
            hasher.update(p);
        };
        part(plan.name().as_bytes());
        part(&at.epoch.to_le_bytes());
        match &plan.target {
            Target::Chat(_) => {
                let call = plan.chat(record, model).ok()?;
                part(call.model.as_bytes());
                part(call.system.as_deref().unwrap_or_default().as_bytes());
                part(call.prompt.as_bytes());
                part(Value::Object(call.params).to_string().as_bytes());
            }
            Target::Http(_) => {
                let call = plan.http(record).ok()?;
                part(call.method.as_bytes());
                part(call.url.as_bytes());
                part(call.body.to_string().as_bytes());
            }
        }
        Some(Key::Request(format!("{:x}", hasher.finalize())))
    }

    /// The reply kept under `key`, and the call it stands for. Kept by request, it answers a
    /// call that was not made: no attempt, no latency, no cost (as a cached verdict). Kept for
    /// its example, it is that example's own call, paid once: its figures are the call's. A
    /// store that cannot be read counts as "not kept".
    pub(super) async fn get(&self, key: &Key, target: &str) -> Option<(Reply, TargetCall)> {
        let (hit, own) = match (key, &self.requests, &self.parked) {
            (Key::Request(key), Some(cache), _) => (cache.get_reply(key).await?, false),
            (Key::Example { run, custom_id }, _, Some(store)) => {
                let json = store.answer(run, custom_id).await.ok()??;
                (serde_json::from_str(&json).ok()?, true)
            }
            _ => return None,
        };
        let mut call = TargetCall {
            name: target.to_owned(),
            tokens_in: hit.tokens_in,
            tokens_out: hit.tokens_out,
            ..TargetCall::default()
        };
        if own {
            call.latency_ms = hit.latency_ms;
            call.attempts = hit.attempts;
            call.cost_usd = hit.cost_usd;
        }
        Some((hit.reply, call))
    }

    /// Keeps `reply` and the call that got it under `key`. A store that cannot be written is
    /// logged: the example's next evaluation then asks again.
    pub(super) async fn put(&self, key: &Key, reply: &Reply, call: &TargetCall) {
        let kept = CachedReply {
            reply: reply.clone(),
            tokens_in: call.tokens_in,
            tokens_out: call.tokens_out,
            latency_ms: call.latency_ms,
            attempts: call.attempts,
            cost_usd: call.cost_usd,
        };
        match (key, &self.requests, &self.parked) {
            (Key::Request(key), Some(cache), _) => cache.put_reply(key, &kept).await,
            (Key::Example { run, custom_id }, _, Some(store)) => {
                let Ok(json) = serde_json::to_string(&kept) else {
                    return;
                };
                if let Err(e) = store.put_answers(run, &[(custom_id.clone(), json)]).await {
                    tracing::warn!(error = %e, custom_id, "cannot keep a target's reply for its parked example; its next evaluation asks again");
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use evalfleet_contract::batch_memory::InProcessBatchStore;
    use evalfleet_contract::judge_cache::{InMemoryCache, NoCache};
    use evalfleet_suites::target::Secrets;
    use serde_json::json;

    use super::*;

    fn plan(temperature: f64) -> TargetPlan {
        let yaml = format!(
            "name: bot\nkind: chat\nprovider: openai\nmodel: m\nprompt: \"{{{{ ticket }}}}\"\n\
             params: {{temperature: {temperature}}}\noutput: response\n"
        );
        TargetPlan::compile(Target::parse(&yaml).unwrap(), Secrets::Keep).unwrap()
    }

    fn at(index: u64, epoch: u32) -> ExampleAt<'static> {
        ExampleAt {
            run_id: "r",
            index,
            epoch,
        }
    }

    fn record(ticket: &str) -> Map<String, Value> {
        json!({"id": "t", "ticket": ticket})
            .as_object()
            .unwrap()
            .clone()
    }

    /// A reply and the call that paid for it.
    fn paid() -> (Reply, TargetCall) {
        let reply = Reply::Chat {
            text: "Restart it.".into(),
            model: "m".into(),
        };
        let call = TargetCall {
            name: "bot".into(),
            latency_ms: 120.0,
            attempts: 2,
            tokens_in: 5,
            tokens_out: 9,
            cost_usd: 0.25,
        };
        (reply, call)
    }

    fn id(key: Option<Key>) -> Option<String> {
        key.map(|k| match k {
            Key::Request(h) => h,
            Key::Example { run, custom_id } => format!("{run}/{custom_id}"),
        })
    }

    #[test]
    fn a_deterministic_target_is_kept_by_request_and_epoch() {
        let plan = plan(0.0);
        let keeper = Keeper::new(&plan.target, Arc::new(InMemoryCache::default()));
        let key = |ticket: &str, index, epoch| {
            id(keeper.key(&plan, None, &record(ticket), &at(index, epoch)))
        };
        assert_eq!(
            key("VPN", 0, 0),
            key("VPN", 7, 0),
            "the same request, another example"
        );
        assert_ne!(key("VPN", 0, 0), key("VPN", 0, 1), "another epoch");
        assert_ne!(key("VPN", 0, 0), key("printer", 0, 0));
        let other_model = id(keeper.key(&plan, Some("m2"), &record("VPN"), &at(0, 0)));
        assert_ne!(key("VPN", 0, 0), other_model, "--target-model");
        let sampled = plan_key(0.7, Arc::new(InMemoryCache::default()));
        assert_eq!(sampled, None, "a sampled target is not kept by request");
        assert_eq!(
            plan_key(0.0, Arc::new(NoCache)),
            None,
            "judges.cache: false"
        );
    }

    fn plan_key(temperature: f64, cache: Arc<dyn JudgeCache>) -> Option<String> {
        let plan = plan(temperature);
        let keeper = Keeper::new(&plan.target, cache);
        id(keeper.key(&plan, None, &record("VPN"), &at(0, 0)))
    }

    #[tokio::test]
    async fn while_parked_every_reply_is_kept_for_its_example_with_its_calls_figures() {
        let plan = plan(0.7);
        let store: Arc<dyn BatchStore> = Arc::new(InProcessBatchStore::new());
        let keeper =
            Keeper::new(&plan.target, Arc::new(InMemoryCache::default())).while_parked(store);
        let key = |index| {
            keeper
                .key(&plan, None, &record("VPN"), &at(index, 0))
                .unwrap()
        };
        assert_eq!(
            id(Some(key(3))),
            Some(format!("r/{}-t0", example_key("r", 3)))
        );
        let (reply, call) = paid();
        assert!(keeper.get(&key(3), "bot").await.is_none());
        keeper.put(&key(3), &reply, &call).await;
        assert_eq!(keeper.get(&key(3), "bot").await, Some((reply, call)));
        assert!(
            keeper.get(&key(4), "bot").await.is_none(),
            "another example"
        );
    }

    #[tokio::test]
    async fn a_reply_kept_by_request_answers_a_call_not_made() {
        let plan = plan(0.0);
        let keeper = Keeper::new(&plan.target, Arc::new(InMemoryCache::default()));
        let key = keeper.key(&plan, None, &record("VPN"), &at(0, 0)).unwrap();
        let (reply, call) = paid();
        keeper.put(&key, &reply, &call).await;
        let (_, free) = keeper.get(&key, "bot").await.unwrap();
        assert_eq!(
            (
                free.attempts,
                free.latency_ms,
                free.cost_usd,
                free.tokens_out
            ),
            (0, 0.0, 0.0, 9)
        );
    }
}
