//! The judge cache: the same prompt to the same judge model is answered once. Re-running an
//! evaluation after changing one metric costs nothing in judge calls. Behind a trait because the
//! fleet shares one cache in Redis; the embedded run keeps it in memory. The trait lives in this
//! pure crate so that both implementations can be reached by the worker without the worker
//! depending on Redis.
//!
//! The same cache keeps a target's replies (key: target, rendered request, epoch): a redelivered
//! or resumed example is generated again from it, not by calling the system under test again.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use async_trait::async_trait;
use evalfleet_suites::target::Reply;

/// A verdict worth keeping: only valid, in-range scores are cached.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CachedVerdict {
    pub score: i64,
    pub reasoning: String,
}

/// A target's reply worth keeping: a reply that completed a record, and the call that got it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CachedReply {
    pub reply: Reply,
    pub tokens_in: u64,
    pub tokens_out: u64,
    /// The call's own figures, for the same example evaluated again (it was paid once).
    #[serde(default)]
    pub latency_ms: f64,
    #[serde(default)]
    pub attempts: u32,
    #[serde(default)]
    pub cost_usd: f64,
}

#[async_trait]
pub trait JudgeCache: Send + Sync {
    /// The verdict for `key` (provider, model and prompt hash), if cached. A cache that cannot
    /// be read answers None: a cache is never a reason to fail an example.
    async fn get(&self, key: &str) -> Option<CachedVerdict>;
    async fn put(&self, key: &str, verdict: &CachedVerdict);
    /// A target's reply for `key`, if cached; None when it cannot be read, as for verdicts.
    async fn get_reply(&self, key: &str) -> Option<CachedReply>;
    async fn put_reply(&self, key: &str, reply: &CachedReply);
    /// False for a cache that keeps nothing, so callers can skip computing keys.
    fn enabled(&self) -> bool {
        true
    }
}

/// The most target replies [`InMemoryCache`] keeps: a reply can be an agent's whole trace, and
/// `run` must not grow with its dataset. The oldest goes first; a reply it no longer has is
/// asked for again (a parked example's own reply is kept in the batch store, not here).
pub const MAX_CACHED_REPLIES: usize = 100_000;

#[derive(Default)]
pub struct InMemoryCache {
    entries: Mutex<HashMap<String, CachedVerdict>>,
    replies: Mutex<Replies>,
}

/// Target replies by key, at most [`MAX_CACHED_REPLIES`], oldest first out.
#[derive(Default)]
struct Replies {
    by_key: HashMap<String, CachedReply>,
    order: VecDeque<String>,
}

impl Replies {
    fn insert(&mut self, key: &str, reply: &CachedReply, capacity: usize) {
        if self.by_key.insert(key.to_owned(), reply.clone()).is_none() {
            self.order.push_back(key.to_owned());
        }
        while self.order.len() > capacity {
            if let Some(oldest) = self.order.pop_front() {
                self.by_key.remove(&oldest);
            }
        }
    }
}

#[async_trait]
impl JudgeCache for InMemoryCache {
    async fn get(&self, key: &str) -> Option<CachedVerdict> {
        let hit = self.entries.lock().ok().and_then(|e| e.get(key).cloned());
        hit
    }

    async fn put(&self, key: &str, verdict: &CachedVerdict) {
        if let Ok(mut e) = self.entries.lock() {
            e.insert(key.to_owned(), verdict.clone());
        }
    }

    async fn get_reply(&self, key: &str) -> Option<CachedReply> {
        let hit = self
            .replies
            .lock()
            .ok()
            .and_then(|r| r.by_key.get(key).cloned());
        hit
    }

    async fn put_reply(&self, key: &str, reply: &CachedReply) {
        if let Ok(mut r) = self.replies.lock() {
            r.insert(key, reply, MAX_CACHED_REPLIES);
        }
    }
}

/// A cache that keeps nothing (`judges.cache: false`).
pub struct NoCache;

#[async_trait]
impl JudgeCache for NoCache {
    async fn get(&self, _key: &str) -> Option<CachedVerdict> {
        None
    }

    async fn put(&self, _key: &str, _verdict: &CachedVerdict) {}

    async fn get_reply(&self, _key: &str) -> Option<CachedReply> {
        None
    }

    async fn put_reply(&self, _key: &str, _reply: &CachedReply) {}

    fn enabled(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::block_on;

    #[test]
    fn in_memory_round_trip() {
        let c = InMemoryCache::default();
        assert_eq!(block_on(c.get("k")), None);
        let v = CachedVerdict {
            score: 4,
            reasoning: "ok".into(),
        };
        block_on(c.put("k", &v));
        assert_eq!(block_on(c.get("k")), Some(v));
        assert_eq!(block_on(NoCache.get("k")), None);
    }

    #[test]
    fn replies_are_kept_up_to_a_bound_oldest_out_first() {
        let reply = |text: &str| CachedReply {
            reply: Reply::Chat {
                text: text.into(),
                model: "m".into(),
            },
            tokens_in: 1,
            tokens_out: 1,
            latency_ms: 0.0,
            attempts: 1,
            cost_usd: 0.0,
        };
        let mut r = Replies::default();
        for k in ["a", "b", "c"] {
            r.insert(k, &reply(k), 2);
        }
        assert!(!r.by_key.contains_key("a"), "the oldest went");
        r.insert("b", &reply("b2"), 2);
        assert_eq!(r.order, ["b", "c"], "a key written again keeps its place");
        assert_eq!(r.by_key.len(), 2);
    }
}
