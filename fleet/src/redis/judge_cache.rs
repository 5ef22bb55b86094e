//! The fleet's judge cache (docs/DESIGN.md §2.5), which keeps targets' replies too (`cache:target:`
//! beside `cache:judge:`): a verdict for a (provider, model, prompt hash) key is
//! shared by every worker and survives them, so re-running an evaluation costs no judge calls.
//! Entries expire after a TTL. A cache is never a reason to fail an example: errors are logged
//! and read as a miss (or a skipped write).

use std::time::Duration;

use async_trait::async_trait;
use evalfleet_contract::judge_cache::{CachedReply, CachedVerdict, JudgeCache};
use redis::aio::ConnectionManager;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::keys::Keys;
use super::store::RedisStore;

#[derive(Clone)]
pub struct RedisJudgeCache {
    conn: ConnectionManager,
    keys: Keys,
    ttl: Duration,
}

impl RedisJudgeCache {
    /// Entries live `ttl` (at least a second; zero keeps them until evicted).
    pub fn new(store: &RedisStore, ttl: Duration) -> Self {
        RedisJudgeCache {
            conn: store.conn.clone(),
            keys: store.keys.clone(),
            ttl,
        }
    }

    /// The entry at Redis key `k`; None (and a warning) when it cannot be read.
    async fn read<T: DeserializeOwned>(&self, k: String) -> Option<T> {
        let got: Result<Option<Vec<u8>>, _> = redis::cmd("GET")
            .arg(&k)
            .query_async(&mut self.conn.clone())
            .await;
        match got {
            Ok(Some(bytes)) => serde_json::from_slice(&bytes)
                .map_err(|e| tracing::warn!(key = %k, error = %e, "unreadable cache entry"))
                .ok(),
            Ok(None) => None,
            Err(e) => {
                tracing::warn!(key = %k, error = %e, "cache read failed; treating as a miss");
                None
            }
        }
    }

    async fn write<T: Serialize>(&self, k: String, entry: &T) {
        let Ok(json) = serde_json::to_string(entry) else {
            return;
        };
        let mut cmd = redis::cmd("SET");
        cmd.arg(&k).arg(json);
        if !self.ttl.is_zero() {
            cmd.arg("EX").arg(self.ttl.as_secs().max(1));
        }
        if let Err(e) = cmd.query_async::<()>(&mut self.conn.clone()).await {
            tracing::warn!(key = %k, error = %e, "cache write failed");
        }
    }
}

#[async_trait]
impl JudgeCache for RedisJudgeCache {
    async fn get(&self, key: &str) -> Option<CachedVerdict> {
        self.read(self.keys.judge_cache(key)).await
    }

    async fn put(&self, key: &str, verdict: &CachedVerdict) {
        self.write(self.keys.judge_cache(key), verdict).await
    }

    async fn get_reply(&self, key: &str) -> Option<CachedReply> {
        self.read(self.keys.target_cache(key)).await
    }

    async fn put_reply(&self, key: &str, reply: &CachedReply) {
        self.write(self.keys.target_cache(key), reply).await
    }
}
