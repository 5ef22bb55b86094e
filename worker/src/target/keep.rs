//! Which of a target's replies are kept, and under which key, in the judges' cache.
//!
//! A deterministic target's replies are kept by request: a repeated record, a message delivered
//! again after a crash, or a `retry` is answered without a call, for nothing. A sampled
//! target's are kept only for their example, while batch-mode judges park it: the example is
//! evaluated again from the start once its batch replies are in, and must judge the same
//! answer, which was paid once.

use std::sync::Arc;

use evalfleet_config::Target;
use evalfleet_contract::judge_cache::{CachedReply, JudgeCache};
use evalfleet_model::record::TargetCall;
use evalfleet_suites::target::{Reply, TargetPlan};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// Where an example is in its run: what names a reply kept for its example.
pub struct ExampleAt<'a> {
    pub run_id: &'a str,
    pub index: u64,
    pub epoch: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keep {
    /// By request, for anyone asking the same: the target's calls are deterministic.
    Requests,
    /// By example and epoch.
    Examples,
    Nothing,
}

/// A target's kept replies.
pub(super) struct Keeper {
    cache: Arc<dyn JudgeCache>,
    keep: Keep,
}

impl Keeper {
    /// Replies of `target` kept in `cache`, by request when the target caches.
    pub(super) fn new(target: &Target, cache: Arc<dyn JudgeCache>) -> Self {
        let keep = match (target.caches(), cache.enabled()) {
            (true, true) => Keep::Requests,
            _ => Keep::Nothing,
        };
        Keeper { cache, keep }
    }

    /// Batch-mode judges park examples: a reply not kept by request is kept for its example.
    pub(super) fn while_parked(mut self) -> Self {
        if self.keep == Keep::Nothing && self.cache.enabled() {
            self.keep = Keep::Examples;
        }
        self
    }

    /// The key of `record`'s reply at `at`, hashed: the target's name, the epoch and the
    /// rendered request (headers left out: they authenticate, they do not ask) when replies
    /// are kept by request; the example's run and index when they are kept by example. None
    /// when nothing is kept or the request does not render (the call then says why).
    pub(super) fn key(
        &self,
        plan: &TargetPlan,
        model: Option<&str>,
        record: &Map<String, Value>,
        at: &ExampleAt<'_>,
    ) -> Option<String> {
        if self.keep == Keep::Nothing {
            return None;
        }
        let mut hasher = Sha256::new();
        let mut part = |p: &[u8]| {
            hasher.update((p.len() as u64).to_le_bytes());
            hasher.update(p);
        };
        part(plan.name().as_bytes());
        part(&at.epoch.to_le_bytes());
        if self.keep == Keep::Examples {
            part(at.run_id.as_bytes());
            part(&at.index.to_le_bytes());
            return Some(format!("x{:x}", hasher.finalize()));
        }
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
        Some(format!("{:x}", hasher.finalize()))
    }

    /// The reply kept under `key`, and the call it stands for (see [`Keeper::call_of`]).
    pub(super) async fn get(&self, key: &str, target: &str) -> Option<(Reply, TargetCall)> {
        let hit = self.cache.get_reply(key).await?;
        Some(self.call_of(target, hit))
    }

    /// Keeps `reply` and the call that got it under `key`.
    pub(super) async fn put(&self, key: &str, reply: &Reply, call: &TargetCall) {
        let kept = CachedReply {
            reply: reply.clone(),
            tokens_in: call.tokens_in,
            tokens_out: call.tokens_out,
            latency_ms: call.latency_ms,
            attempts: call.attempts,
            cost_usd: call.cost_usd,
        };
        self.cache.put_reply(key, &kept).await;
    }

    /// A kept reply and the call it stands for. Kept by request, it answers a call that was
    /// not made: no attempt, no latency, no cost (as a cached verdict). Kept for its example,
    /// it is that example's own call, paid once: its figures are the call's.
    fn call_of(&self, target: &str, hit: CachedReply) -> (Reply, TargetCall) {
        let mut call = TargetCall {
            name: target.to_owned(),
            tokens_in: hit.tokens_in,
            tokens_out: hit.tokens_out,
            ..TargetCall::default()
        };
        if self.keep == Keep::Examples {
            call.latency_ms = hit.latency_ms;
            call.attempts = hit.attempts;
            call.cost_usd = hit.cost_usd;
        }
        (hit.reply, call)
    }
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn a_deterministic_target_is_kept_by_request_and_epoch() {
        let plan = plan(0.0);
        let keeper = Keeper::new(&plan.target, Arc::new(InMemoryCache::default()));
        let key = |ticket: &str, index, epoch| {
            keeper.key(&plan, None, &record(ticket), &at(index, epoch))
        };
        assert_eq!(
            key("VPN", 0, 0),
            key("VPN", 7, 0),
            "the same request, another example"
        );
        assert_ne!(key("VPN", 0, 0), key("VPN", 0, 1), "another epoch");
        assert_ne!(key("VPN", 0, 0), key("printer", 0, 0));
        assert_ne!(
            key("VPN", 0, 0),
            keeper.key(&plan, Some("m2"), &record("VPN"), &at(0, 0)),
            "--target-model"
        );
    }

    #[test]
    fn a_sampled_target_is_kept_only_for_its_example_while_parked() {
        let plan = plan(0.7);
        let keeper = Keeper::new(&plan.target, Arc::new(InMemoryCache::default()));
        assert_eq!(keeper.key(&plan, None, &record("VPN"), &at(0, 0)), None);
        let keeper = keeper.while_parked();
        let key = |ticket: &str, index| keeper.key(&plan, None, &record(ticket), &at(index, 0));
        assert_eq!(
            key("VPN", 3),
            key("printer", 3),
            "the example, not the request"
        );
        assert_ne!(key("VPN", 3), key("VPN", 4));
        let nothing = Keeper::new(&plan.target, Arc::new(NoCache)).while_parked();
        assert_eq!(nothing.key(&plan, None, &record("VPN"), &at(0, 0)), None);
    }

    #[tokio::test]
    async fn a_reply_kept_for_its_example_keeps_its_calls_figures() {
        let plan = plan(0.7);
        let cache: Arc<dyn JudgeCache> = Arc::new(InMemoryCache::default());
        let call = TargetCall {
            name: "bot".into(),
            latency_ms: 120.0,
            attempts: 2,
            tokens_in: 5,
            tokens_out: 9,
            cost_usd: 0.25,
        };
        let reply = Reply::Chat {
            text: "Restart it.".into(),
            model: "m".into(),
        };
        let parked = Keeper::new(&plan.target, cache.clone()).while_parked();
        parked.put("k", &reply, &call).await;
        assert_eq!(
            parked.get("k", "bot").await,
            Some((reply.clone(), call.clone()))
        );
        let by_request = Keeper::new(&self::plan(0.0).target, cache);
        let (_, free) = by_request.get("k", "bot").await.unwrap();
        assert_eq!(
            (
                free.attempts,
                free.latency_ms,
                free.cost_usd,
                free.tokens_out
            ),
            (0, 0.0, 0.0, 9),
            "a call not made"
        );
    }
}
