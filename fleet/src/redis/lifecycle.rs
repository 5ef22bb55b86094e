//! A run's life after registration: progress fields (total, published), status changes with
//! the retention TTL that comes with finishing, the resume check (`stored`) and the report lock
//! that makes exactly one aggregator write a run's report.
//!
//! Status changes are one Lua script (`lua/status.lua`) so the status and the lifetime of every
//! key of the run change together: a run is never `complete` with keys that live forever, nor
//! `running` with keys about to expire.

use std::sync::LazyLock;
use std::time::Duration;

use redis::Script;

use super::error::{cmd_err, RedisError};
use super::registry::RunStatus;
use super::store::RedisStore;

static UPDATE: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("lua/run_update.lua")));
static STATUS: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("lua/status.lua")));
static UNLOCK: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("lua/unlock.lua")));

impl RedisStore {
    /// Sets the number of examples (known once the producer has read the whole dataset).
    pub async fn set_total(&self, id: &str, total: u64) -> Result<(), RedisError> {
        self.update(id, "set", "total", total).await
    }

    /// Counts `n` more published messages.
    pub async fn add_published(&self, id: &str, n: u64) -> Result<(), RedisError> {
        self.update(id, "incr", "published", n).await
    }

    /// Sets a free field of the run's registry hash (anything beyond [`RunMeta`]'s fields).
    ///
    /// [`RunMeta`]: super::RunMeta
    pub async fn set_field(&self, id: &str, field: &str, value: &str) -> Result<(), RedisError> {
        self.update(id, "set", field, value).await
    }

    /// A field of the run's registry hash (e.g. `report_dir`, or a free field).
    pub async fn field(&self, id: &str, field: &str) -> Result<Option<String>, RedisError> {
        let key = self.keys.run(id);
        redis::cmd("HGET")
            .arg(&key)
            .arg(field)
            .query_async(&mut self.conn.clone())
            .await
            .map_err(cmd_err("HGET", &key))
    }

    async fn update(
        &self,
        id: &str,
        op: &'static str,
        field: &str,
        value: impl redis::ToRedisArgs + Send + Sync,
    ) -> Result<(), RedisError> {
        let key = self.keys.run(id);
        let done: i64 = UPDATE
            .key(&key)
            .arg(op)
            .arg(field)
            .arg(value)
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(cmd_err("update (EVALSHA run_update.lua)", &key))?;
        if done == 0 {
            return Err(RedisError::UnknownRun {
                op: "update",
                id: id.to_owned(),
            });
        }
        Ok(())
    }

    /// Changes the run's status. Complete or cancelled: `finished_at` is set and every key of
    /// the run expires after the retention. Submitting or running (a `retry` reopening a
    /// finished run): the keys are kept again and the old verdict (`finished_at`,
    /// `gates_passed`) is cleared.
    pub async fn set_status(&self, id: &str, status: RunStatus) -> Result<(), RedisError> {
        self.change_status(id, status, None, &[]).await
    }

    /// Marks the run complete with its gate verdict, stores its summary.md text and report
    /// directory, and applies the retention TTL to every key of the run (registry, spec,
    /// results, counts, failed messages, summary).
    pub async fn finish_run(
        &self,
        id: &str,
        gates_passed: bool,
        summary_md: &str,
        report_dir: &str,
    ) -> Result<(), RedisError> {
        let verdict = if gates_passed { "true" } else { "false" };
        self.change_status(
            id,
            RunStatus::Complete,
            Some(summary_md),
            &[("gates_passed", verdict), ("report_dir", report_dir)],
        )
        .await
    }

    async fn change_status(
        &self,
        id: &str,
        status: RunStatus,
        summary: Option<&str>,
        extra: &[(&str, &str)],
    ) -> Result<(), RedisError> {
        let keys = self.keys.run_keys(id);
        let mut inv = STATUS.prepare_invoke();
        for k in &keys {
            inv.key(k);
        }
        inv.arg(status.as_str())
            .arg(self.retention.as_millis() as u64)
            .arg(jiff::Timestamp::now().to_string())
            .arg(if summary.is_some() { "1" } else { "0" })
            .arg(summary.unwrap_or(""));
        for (f, v) in extra {
            inv.arg(*f).arg(*v);
        }
        let done: i64 = inv
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(cmd_err("set status (EVALSHA status.lua)", &keys[0]))?;
        if done == 0 {
            return Err(RedisError::UnknownRun {
                op: "set status",
                id: id.to_owned(),
            });
        }
        Ok(())
    }

    /// Which of `indices` already have a stored result (resume skips them): pipelined HEXISTS,
    /// one round trip, without transferring the records.
    pub async fn stored(&self, id: &str, indices: &[u64]) -> Result<Vec<bool>, RedisError> {
        if indices.is_empty() {
            return Ok(Vec::new());
        }
        let key = self.keys.run_part(id, "stored");
        let mut pipe = redis::pipe();
        for i in indices {
            pipe.cmd("GETBIT").arg(&key).arg(*i);
        }
        let bits: Vec<u8> = pipe
            .query_async(&mut self.conn.clone())
            .await
            .map_err(cmd_err("GETBIT (pipelined)", &key))?;
        Ok(bits.into_iter().map(|b| b == 1).collect())
    }

    /// Takes the run's report lock for `ttl` (SET NX PX): true for exactly one caller until
    /// the lock expires or its owner releases it.
    pub async fn try_lock_report(
        &self,
        id: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<bool, RedisError> {
        let key = self.keys.run_part(id, "report_lock");
        let set: Option<String> = redis::cmd("SET")
            .arg(&key)
            .arg(owner)
            .arg("NX")
            .arg("PX")
            .arg(ttl.as_millis().max(1) as u64)
            .query_async(&mut self.conn.clone())
            .await
            .map_err(cmd_err("SET NX", &key))?;
        Ok(set.is_some())
    }

    /// Releases the report lock if `owner` still holds it; true when released.
    pub async fn release_report_lock(&self, id: &str, owner: &str) -> Result<bool, RedisError> {
        let key = self.keys.run_part(id, "report_lock");
        let released: i64 = UNLOCK
            .key(&key)
            .arg(owner)
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(cmd_err("unlock (EVALSHA unlock.lua)", &key))?;
        Ok(released == 1)
    }
}
