//! Failed examples kept for `evalfleet retry`: a worker that stores a `failed` result also
//! keeps the message it came from (`run:{id}:failed`, index → message JSON), because the
//! dataset may be gone by the time someone retries. `take_failed` hands the messages back and
//! removes the failed results with their counts in one Lua script (`lua/take_failed.lua`), so
//! the re-published examples are stored and counted as if for the first time.

use std::sync::LazyLock;

use redis::Script;

use super::error::{cmd_err, RedisError};
use super::store::RedisStore;

static TAKE: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("lua/take_failed.lua")));

impl RedisStore {
    /// Keeps the message of a failed example for `evalfleet retry`.
    pub async fn keep_failed_message(
        &self,
        id: &str,
        index: u64,
        message_json: &str,
    ) -> Result<(), RedisError> {
        let key = self.keys.run_part(id, "failed");
        redis::cmd("HSET")
            .arg(&key)
            .arg(index)
            .arg(message_json)
            .query_async::<i64>(&mut self.conn.clone())
            .await
            .map_err(cmd_err("HSET", &key))?;
        Ok(())
    }

    /// For `retry`: removes the failed results (and their counts) and returns their kept
    /// messages for re-publishing. Failed results without a kept message stay as they are.
    pub async fn take_failed(&self, id: &str) -> Result<Vec<String>, RedisError> {
        let key = self.keys.run_part(id, "failed");
        TAKE.key(self.keys.run_part(id, "stored"))
            .key(self.keys.run_part(id, "counts"))
            .key(&key)
            .key(self.keys.run_part(id, "failed_bits"))
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(cmd_err("take failed (EVALSHA take_failed.lua)", &key))
    }
}
