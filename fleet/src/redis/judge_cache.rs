//! The fleet's judge cache (docs/DESIGN.md §2.5): a verdict for a (provider, model, prompt hash) key is
//! shared by every worker and survives them, so re-running an evaluation costs no judge calls.
//! Entries expire after a TTL. A cache is never a reason to fail an example: errors are logged
//! and read as a miss (or a skipped write).

use std::time::Duration;

use async_trait::async_trait;
use evalfleet_contract::judge_cache::{CachedVerdict, JudgeCache};
use redis::aio::ConnectionManager;

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

    async fn read(&self, key: &str) -> Option<CachedVerdict> {
        let k = self.keys.judge_cache(key);
        let got: Result<Option<Vec<u8>>, _> = redis::cmd("GET")
            .arg(&k)
            .query_async(&mut self.conn.clone())
            .await;
        match got {
            Ok(Some(bytes)) => serde_json::from_slice(&bytes)
                .map_err(|e| tracing::warn!(key = %k, error = %e, "unreadable judge cache entry"))
                .ok(),
            Ok(None) => None,
            Err(e) => {
                tracing::warn!(key = %k, error = %e, "judge cache read failed; treating as a miss");
                None
            }
        }
    }

    async fn write(&self, key: &str, verdict: &CachedVerdict) {
        let k = self.keys.judge_cache(key);
        let Ok(json) = serde_json::to_string(verdict) else {
            return;
        };
        let mut cmd = redis::cmd("SET");
        cmd.arg(&k).arg(json);
        if !self.ttl.is_zero() {
            cmd.arg("EX").arg(self.ttl.as_secs().max(1));
        }
        if let Err(e) = cmd.query_async::<()>(&mut self.conn.clone()).await {
            tracing::warn!(key = %k, error = %e, "judge cache write failed");
        }
    }
}

#[async_trait]
impl JudgeCache for RedisJudgeCache {
    async fn get(&self, key: &str) -> Option<CachedVerdict> {
        self.read(key).await
    }

    async fn put(&self, key: &str, verdict: &CachedVerdict) {
        self.write(key, verdict).await
    }
}
