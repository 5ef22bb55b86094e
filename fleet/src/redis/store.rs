//! The fleet's result store: a [`ResultStore`] over Redis, shared by every worker.
//!
//! `put` is one Lua script (`lua/put.lua`) keyed on the example's index: set its bit in the
//! run's `stored` bitmap, and only if it was new, count its outcome and XADD its event, which
//! carries the record until an aggregator has written it durably. Redis runs a script atomically, so a
//! message redelivered after a worker crash (or delivered twice to two workers) is stored,
//! counted and announced exactly once — docs/DESIGN.md §8's "none is counted twice". Results a process
//! stores concurrently share script calls ([`super::group_commit`]).
//!
//! One [`ConnectionManager`] (a multiplexed connection that reconnects by itself after a Redis
//! restart) is shared by all clones of the store; an operation that fails during an outage
//! returns a transient error and the caller retries.

use std::sync::{Arc, LazyLock, OnceLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use backon::{ExponentialBuilder, Retryable};
use evalfleet_contract::store::{Counts, PutOutcome, ResultStore, StoreError};
use evalfleet_model::record::ResultRecord;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Client, Script};

use super::error::{cmd_err, transient, RedisError};
use super::group_commit::{GroupCommit, WriteResults};
use super::keys::Keys;
use evalfleet_model::redact::redact_url;

static PUT: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("lua/put.lua")));

/// How long a single command may take before the caller gets a (transient) error.
pub(crate) const RESPONSE_TIMEOUT: Duration = Duration::from_secs(10);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisConfig {
    /// `redis://127.0.0.1:6379/`, `rediss://` for TLS, `redis://:password@host/db`.
    pub url: String,
    /// Prepended to every key (default `evalfleet:`).
    pub prefix: String,
    /// Finished (complete or cancelled) runs expire this long after finishing; zero keeps them.
    pub retention: Duration,
}

impl Default for RedisConfig {
    fn default() -> Self {
        RedisConfig {
            url: "redis://127.0.0.1:6379/".into(),
            prefix: "evalfleet:".into(),
            retention: Duration::from_secs(7 * 24 * 3600),
        }
    }
}

#[derive(Clone)]
pub struct RedisStore {
    pub(crate) client: Client,
    pub(crate) conn: ConnectionManager,
    pub(crate) keys: Keys,
    pub(crate) retention: Duration,
    pub(crate) url: Arc<str>,
    /// The result writer of this store and its clones, started by the first `put`.
    commit: Arc<OnceLock<GroupCommit>>,
}

/// What writing results needs, apart from the store: the group commit's writer task owns one, so
/// that it ends when the last store clone is dropped.
struct Writer {
    conn: ConnectionManager,
    keys: Keys,
    retention: Duration,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("url", &self.url)
            .field("prefix", &self.keys.prefix())
            .field("retention", &self.retention)
            .finish_non_exhaustive()
    }
}

/// The reconnect policy of every manager: quick first retries, then every 2 s at most.
pub(crate) fn manager_config(response_timeout: Option<Duration>) -> ConnectionManagerConfig {
    ConnectionManagerConfig::new()
        .set_min_delay(Duration::from_millis(50))
        .set_max_delay(Duration::from_secs(2))
        .set_number_of_retries(8)
        .set_connection_timeout(Some(CONNECT_TIMEOUT))
        .set_response_timeout(response_timeout)
}

impl RedisStore {
    /// Connects, retrying transient failures (Redis still starting, refused connections) with
    /// backoff until `deadline` has passed; a bad URL or rejected credentials fail at once.
    pub async fn connect(cfg: RedisConfig, deadline: Duration) -> Result<Self, RedisError> {
        let url = redact_url(&cfg.url);
        if cfg.url.starts_with("rediss://") {
            // rustls needs a process-wide crypto provider; another crate may have set one.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let client = Client::open(cfg.url.as_str()).map_err(|source| RedisError::Url {
            url: url.clone(),
            source,
        })?;
        let start = Instant::now();
        let attempt = || async {
            let remaining = deadline.saturating_sub(start.elapsed());
            let connecting = async {
                let mut probe = client.get_multiplexed_async_connection().await?;
                redis::cmd("PING").query_async::<String>(&mut probe).await?;
                ConnectionManager::new_with_config(
                    client.clone(),
                    manager_config(Some(RESPONSE_TIMEOUT)),
                )
                .await
            };
            match tokio::time::timeout(remaining.max(CONNECT_TIMEOUT), connecting).await {
                Ok(Ok(conn)) => Ok(conn),
                Ok(Err(e)) => Err((e.to_string(), transient(&e))),
                Err(_) => Err(("connection attempt timed out".to_owned(), true)),
            }
        };
        let schedule = ExponentialBuilder::default()
            .with_min_delay(Duration::from_millis(50))
            .with_max_delay(Duration::from_secs(2))
            .without_max_times();
        let conn = attempt
            .retry(schedule)
            .when(|(_, transient): &(String, bool)| *transient && start.elapsed() < deadline)
            .adjust(|_, next: Option<Duration>| {
                next.map(|d| d.min(deadline.saturating_sub(start.elapsed())))
            })
            .notify(|(reason, _): &(String, bool), _| {
                tracing::warn!(url = %url, error = %reason, "Redis not reachable yet, retrying");
            })
            .await
            .map_err(|(reason, transient)| RedisError::Connect {
                url: url.clone(),
                waited: start.elapsed(),
                reason,
                transient,
            })?;
        Ok(RedisStore {
            client,
            conn,
            keys: Keys::new(&cfg.prefix),
            retention: cfg.retention,
            url: url.into(),
            commit: Arc::default(),
        })
    }

    /// The key prefix this store writes under.
    pub fn prefix(&self) -> &str {
        self.keys.prefix()
    }

    /// One result in its own script call, with the adapter's own error, whose
    /// [`is_transient`](RedisError::is_transient) tells a worker to requeue rather than
    /// dead-letter. [`ResultStore::put`] shares calls between concurrent results instead.
    pub async fn put_record(&self, rec: &ResultRecord) -> Result<PutOutcome, RedisError> {
        let mut outcomes = self
            .writer()
            .put_records(&rec.run_id, std::slice::from_ref(rec))
            .await?;
        Ok(outcomes.pop().unwrap_or(PutOutcome::AlreadyStored))
    }

    fn writer(&self) -> Writer {
        Writer {
            conn: self.conn.clone(),
            keys: self.keys.clone(),
            retention: self.retention,
        }
    }

    /// The outcome counts of a run (zeros for an unknown run).
    pub async fn run_counts(&self, run_id: &str) -> Result<Counts, RedisError> {
        let key = self.keys.run_part(run_id, "counts");
        let (ok, failed, skipped): (Option<u64>, Option<u64>, Option<u64>) = redis::cmd("HMGET")
            .arg(&key)
            .arg(&["ok", "failed", "skipped"][..])
            .query_async(&mut self.conn.clone())
            .await
            .map_err(cmd_err("HMGET", &key))?;
        Ok(Counts {
            ok: ok.unwrap_or(0),
            failed: failed.unwrap_or(0),
            skipped: skipped.unwrap_or(0),
        })
    }

    /// Deletes every key under this store's prefix (SCAN + UNLINK) and returns how many there
    /// were: for tests and for resetting a scratch fleet. Never point it at a shared prefix.
    pub async fn purge_prefix(&self) -> Result<u64, RedisError> {
        let pattern = format!("{}*", glob_escape(self.keys.prefix()));
        let mut conn = self.conn.clone();
        let mut cursor: u64 = 0;
        let mut deleted = 0;
        loop {
            let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(1000)
                .query_async(&mut conn)
                .await
                .map_err(cmd_err("SCAN", &pattern))?;
            if !keys.is_empty() {
                deleted += redis::cmd("UNLINK")
                    .arg(&keys)
                    .query_async::<u64>(&mut conn)
                    .await
                    .map_err(cmd_err("UNLINK", &pattern))?;
            }
            if next == 0 {
                return Ok(deleted);
            }
            cursor = next;
        }
    }
}

impl WriteResults for Writer {
    /// Stores results of run `run` in one script call; one outcome per record, in order.
    async fn put_records(
        &self,
        run: &str,
        records: &[ResultRecord],
    ) -> Result<Vec<PutOutcome>, RedisError> {
        let results = self.keys.run_part(run, "stored");
        let mut call = PUT.prepare_invoke();
        call.key(&results)
            .key(self.keys.run_part(run, "counts"))
            .key(self.keys.events())
            .key(self.keys.run(run))
            .key(self.keys.run_part(run, "failed_bits"))
            .arg(run)
            .arg(self.retention.as_millis() as u64);
        for rec in records {
            let json = serde_json::to_string(rec).map_err(|e| RedisError::Data {
                op: "put",
                key: results.clone(),
                message: format!("record {} does not serialise: {e}", rec.index),
            })?;
            call.arg(rec.index).arg(json).arg(rec.outcome.as_str());
        }
        let stored: Vec<i64> = call
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(cmd_err("put (EVALSHA put.lua)", &results))?;
        if stored.len() != records.len() {
            return Err(RedisError::Data {
                op: "put",
                key: results,
                message: format!(
                    "put.lua answered {} outcomes for {} results",
                    stored.len(),
                    records.len()
                ),
            });
        }
        Ok(stored
            .into_iter()
            .map(|s| {
                if s == 1 {
                    PutOutcome::Stored
                } else {
                    PutOutcome::AlreadyStored
                }
            })
            .collect())
    }
}

/// Escapes the glob characters of a literal prefix for SCAN MATCH.
fn glob_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[async_trait]
impl ResultStore for RedisStore {
    async fn put(&self, rec: ResultRecord) -> Result<PutOutcome, StoreError> {
        self.commit
            .get_or_init(|| GroupCommit::start(self.writer()))
            .put(rec)
            .await
    }

    async fn counts(&self, run_id: &str) -> Result<Counts, StoreError> {
        self.run_counts(run_id).await.map_err(StoreError::from)
    }

    async fn stored(&self, run_id: &str, indices: &[u64]) -> Result<Vec<bool>, StoreError> {
        RedisStore::stored(self, run_id, indices)
            .await
            .map_err(StoreError::from)
    }

    /// HSETNX `run:{id}:scenarios` digest → JSON; the run's retention applies to it as to its
    /// other keys.
    async fn put_scenario(&self, run_id: &str, digest: &str, json: &str) -> Result<(), StoreError> {
        let key = self.keys.run_part(run_id, "scenarios");
        redis::cmd("HSETNX")
            .arg(&key)
            .arg(digest)
            .arg(json)
            .query_async::<i64>(&mut self.conn.clone())
            .await
            .map_err(cmd_err("HSETNX", &key))?;
        Ok(())
    }

    async fn scenario(&self, run_id: &str, digest: &str) -> Result<Option<String>, StoreError> {
        let key = self.keys.run_part(run_id, "scenarios");
        Ok(redis::cmd("HGET")
            .arg(&key)
            .arg(digest)
            .query_async(&mut self.conn.clone())
            .await
            .map_err(cmd_err("HGET", &key))?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_characters_are_escaped() {
        assert_eq!(glob_escape("evalfleet-test-1:"), "evalfleet-test-1:");
        assert_eq!(glob_escape("a*b?[c]\\"), "a\\*b\\?\\[c\\]\\\\");
    }

    #[test]
    fn transient_errors_stay_transient_behind_the_trait() {
        let t = StoreError::from(RedisError::Timeout {
            op: "put",
            key: "k".into(),
            after: Duration::from_secs(1),
        });
        assert!(t.is_transient(), "{t}");
        let p = StoreError::from(RedisError::UnknownRun {
            op: "put",
            id: "r".into(),
        });
        assert!(!p.is_transient(), "{p}");
    }
}
