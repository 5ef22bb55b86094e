//! Shared by the `redis_*` test files (included with `#[path]`): a store under a unique key
//! prefix on the local Redis, and a guard that deletes every key under it when the test ends,
//! passed or panicked. Compiled on its own too, as an empty test target.
#![allow(dead_code)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use evalfleet_fleet::redis::{RedisConfig, RedisStore};

pub fn url() -> String {
    std::env::var("EVALFLEET_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379/".into())
}

/// A prefix no other test (or test run) uses.
pub fn unique_prefix() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!(
        "evalfleet-test-{}-{nanos}-{}:",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Deletes every key under its prefix when dropped (synchronously: it may run while a test
/// unwinds).
pub struct Cleanup(pub String);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let Ok(client) = redis::Client::open(url()) else {
            return;
        };
        let Ok(mut conn) = client.get_connection_with_timeout(Duration::from_secs(2)) else {
            return;
        };
        let pattern = format!("{}*", self.0);
        let mut cursor = 0u64;
        loop {
            let Ok((next, keys)): redis::RedisResult<(u64, Vec<String>)> = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(1000)
                .query(&mut conn)
            else {
                return;
            };
            if !keys.is_empty() {
                let _: redis::RedisResult<u64> = redis::cmd("UNLINK").arg(&keys).query(&mut conn);
            }
            if next == 0 {
                return;
            }
            cursor = next;
        }
    }
}

/// A store under a fresh prefix (retention `retention`) and the guard that cleans it up.
pub async fn store_with(retention: Duration) -> (RedisStore, Cleanup) {
    let prefix = unique_prefix();
    let cfg = RedisConfig {
        url: url(),
        prefix: prefix.clone(),
        retention,
    };
    let store = RedisStore::connect(cfg, Duration::from_secs(10))
        .await
        .expect("a Redis at 127.0.0.1:6379 (see the README for starting one)");
    (store, Cleanup(prefix))
}

pub async fn store() -> (RedisStore, Cleanup) {
    store_with(Duration::from_secs(3600)).await
}

/// A blocking connection for looking at keys directly.
pub fn raw() -> redis::Connection {
    redis::Client::open(url())
        .unwrap()
        .get_connection_with_timeout(Duration::from_secs(2))
        .unwrap()
}

/// Not every test binary that includes this file uses it.
#[allow(unused_imports)]
pub use evalfleet_contract::conformance::record;
