//! Batch mode's durable state in Redis ([`BatchStore`]): every change that must not be
//! half-done is one script in `lua/batch/`, and every change a coordinator makes checks its
//! lease in the same script, so a coordinator that lost its lease (paused, partitioned) cannot
//! undo its successor's work.

use std::sync::LazyLock;

use async_trait::async_trait;
use evalfleet_contract::batch_store::{
    BatchOverview, BatchRecord, BatchStore, Parking, Question, Queued,
};
use evalfleet_contract::store::StoreError;
use redis::Script;

use super::error::{cmd_err, store_error, RedisError};
use super::store::RedisStore;

static PARK: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("lua/batch/park.lua")));
static LEASE: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("lua/batch/lease.lua")));
static COLLECT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/batch/collect.lua")));
static SET_BATCH: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/batch/set_batch.lua")));
static READY: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("lua/batch/ready.lua")));
static UNPARK: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/batch/unpark.lua")));
static RETIRE: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("lua/batch/retire.lua")));

/// How many fields one HMGET / HSET / script call carries: big batches go in slices, so no
/// single command holds Redis up.
const SLICE: usize = 1000;

type Result<T> = std::result::Result<T, RedisError>;

impl RedisStore {
    fn part(&self, run: &str, part: &str) -> String {
        self.keys.batch_part(run, part)
    }

    async fn lines_of(&self, run: &str, cids: Vec<String>) -> Result<Vec<Queued>> {
        let key = self.part(run, "questions");
        let mut out = Vec::with_capacity(cids.len());
        for slice in cids.chunks(SLICE) {
            let lines: Vec<Option<Vec<u8>>> = redis::cmd("HMGET")
                .arg(&key)
                .arg(slice)
                .query_async(&mut self.conn.clone())
                .await
                .map_err(cmd_err("HMGET", &key))?;
            for (cid, line) in slice.iter().zip(lines) {
                out.push((cid.clone(), line.unwrap_or_default()));
            }
        }
        Ok(out)
    }

    /// `count` entries of a list from `start` (count 0: to its end).
    async fn list(&self, key: &str, start: usize, count: usize) -> Result<Vec<String>> {
        let stop = if count == 0 {
            -1
        } else {
            (start + count) as isize - 1
        };
        redis::cmd("LRANGE")
            .arg(key)
            .arg(start)
            .arg(stop)
            .query_async(&mut self.conn.clone())
            .await
            .map_err(cmd_err("LRANGE", key))
    }

    async fn park_example(
        &self,
        run: &str,
        index: u64,
        message: &str,
        questions: &[Question],
    ) -> Result<Parking> {
        let parked = self.part(run, "parked");
        let mut call = PARK.prepare_invoke();
        call.key(self.part(run, "questions"))
            .key(self.part(run, "answers"))
            .key(&parked)
            .key(self.keys.batch_runs())
            .key(self.part(run, "providers"))
            .arg(run)
            .arg(index)
            .arg(message)
            .arg(self.part(run, "pending:"));
        for q in questions {
            call.arg(&q.provider).arg(&q.custom_id).arg(&q.line);
        }
        let parked_now: i64 = call
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(cmd_err("park (EVALSHA park.lua)", &parked))?;
        Ok(if parked_now == 1 {
            Parking::Parked
        } else {
            Parking::Answered
        })
    }

    async fn put_all(&self, run: &str, answers: &[(String, String)]) -> Result<()> {
        let key = self.part(run, "answers");
        for slice in answers.chunks(SLICE) {
            let mut cmd = redis::cmd("HSET");
            cmd.arg(&key);
            for (cid, answer) in slice {
                cmd.arg(cid).arg(answer);
            }
            cmd.query_async::<i64>(&mut self.conn.clone())
                .await
                .map_err(cmd_err("HSET", &key))?;
        }
        Ok(())
    }

    async fn collect_batch(
        &self,
        run: &str,
        holder: &str,
        count: usize,
        record: &BatchRecord,
    ) -> Result<Option<u64>> {
        let pending = self.part(run, &format!("pending:{}", record.provider));
        COLLECT
            .key(self.keys.batch_lease(&record.provider))
            .key(&pending)
            .key(self.part(run, "next"))
            .key(self.part(run, "batches"))
            .arg(holder)
            .arg(count)
            .arg(json(record)?)
            .arg(self.part(run, "cids:"))
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(cmd_err("collect (EVALSHA collect.lua)", &pending))
    }

    async fn batch_records(&self, run: &str) -> Result<Vec<(u64, BatchRecord)>> {
        let key = self.part(run, "batches");
        let all: Vec<(u64, String)> = redis::cmd("HGETALL")
            .arg(&key)
            .query_async(&mut self.conn.clone())
            .await
            .map_err(cmd_err("HGETALL", &key))?;
        let mut records = all
            .into_iter()
            .map(|(n, record)| {
                serde_json::from_str(&record)
                    .map(|r| (n, r))
                    .map_err(|e| RedisError::Data {
                        op: "HGETALL",
                        key: key.clone(),
                        message: format!("batch {n}'s record does not parse: {e}"),
                    })
            })
            .collect::<Result<Vec<_>>>()?;
        records.sort_by_key(|(n, _)| *n);
        Ok(records)
    }

    async fn record_batch(
        &self,
        run: &str,
        n: u64,
        holder: &str,
        record: &BatchRecord,
    ) -> Result<bool> {
        let key = self.part(run, "batches");
        let blank = record.provider_id.is_some();
        let done: i64 = SET_BATCH
            .key(self.keys.batch_lease(&record.provider))
            .key(&key)
            .key(self.part(run, "questions"))
            .key(self.part(run, &format!("cids:{n}")))
            .arg(holder)
            .arg(n)
            .arg(json(record)?)
            .arg(if blank { "1" } else { "0" })
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(cmd_err("set batch (EVALSHA set_batch.lua)", &key))?;
        Ok(done == 1)
    }

    async fn ready_parked(&self, run: &str, indexes: &[u64]) -> Result<Vec<(u64, String)>> {
        let key = self.part(run, "parked");
        let mut out = Vec::new();
        for slice in indexes.chunks(SLICE) {
            let flat: Vec<String> = READY
                .key(&key)
                .key(self.part(run, "answers"))
                .arg(slice)
                .invoke_async(&mut self.conn.clone())
                .await
                .map_err(cmd_err("ready (EVALSHA ready.lua)", &key))?;
            for pair in flat.chunks_exact(2) {
                if let Ok(index) = pair[0].parse() {
                    out.push((index, pair[1].clone()));
                }
            }
        }
        Ok(out)
    }

    async fn unpark_all(&self, run: &str, parked: &[(u64, String)]) -> Result<()> {
        let key = self.part(run, "parked");
        for slice in parked.chunks(SLICE) {
            let mut call = UNPARK.prepare_invoke();
            call.key(&key);
            for (index, parking) in slice {
                call.arg(index).arg(parking);
            }
            call.invoke_async::<i64>(&mut self.conn.clone())
                .await
                .map_err(cmd_err("unpark (EVALSHA unpark.lua)", &key))?;
        }
        Ok(())
    }

    async fn batch_overview(&self, run: &str, providers: &[String]) -> Result<BatchOverview> {
        let mut pending = Vec::new();
        for provider in providers {
            pending.push((provider.clone(), self.llen(run, provider).await?));
        }
        let key = self.part(run, "parked");
        let parked: u64 = redis::cmd("HLEN")
            .arg(&key)
            .query_async(&mut self.conn.clone())
            .await
            .map_err(cmd_err("HLEN", &key))?;
        Ok(BatchOverview {
            pending,
            parked,
            batches: self.batch_records(run).await?,
        })
    }

    async fn llen(&self, run: &str, provider: &str) -> Result<u64> {
        let key = self.part(run, &format!("pending:{provider}"));
        redis::cmd("LLEN")
            .arg(&key)
            .query_async(&mut self.conn.clone())
            .await
            .map_err(cmd_err("LLEN", &key))
    }
}

fn json(record: &BatchRecord) -> Result<String> {
    serde_json::to_string(record).map_err(|e| RedisError::Data {
        op: "batch record",
        key: record.tag.clone(),
        message: e.to_string(),
    })
}

/// The seam's error for an adapter error.
fn seam<T>(r: Result<T>) -> std::result::Result<T, StoreError> {
    r.map_err(|e| store_error(&e))
}

#[async_trait]
impl BatchStore for RedisStore {
    async fn answer(
        &self,
        run: &str,
        custom_id: &str,
    ) -> std::result::Result<Option<String>, StoreError> {
        let key = self.part(run, "answers");
        seam(
            redis::cmd("HGET")
                .arg(&key)
                .arg(custom_id)
                .query_async(&mut self.conn.clone())
                .await
                .map_err(cmd_err("HGET", &key)),
        )
    }

    async fn put_answers(
        &self,
        run: &str,
        answers: &[(String, String)],
    ) -> std::result::Result<(), StoreError> {
        seam(self.put_all(run, answers).await)
    }

    async fn park(
        &self,
        run: &str,
        index: u64,
        message: &str,
        questions: &[Question],
    ) -> std::result::Result<Parking, StoreError> {
        seam(self.park_example(run, index, message, questions).await)
    }

    async fn lease(
        &self,
        provider: &str,
        holder: &str,
        ttl_ms: u64,
    ) -> std::result::Result<bool, StoreError> {
        let key = self.keys.batch_lease(provider);
        let held: i64 = seam(
            LEASE
                .key(&key)
                .arg(holder)
                .arg(ttl_ms.max(1))
                .invoke_async(&mut self.conn.clone())
                .await
                .map_err(cmd_err("lease (EVALSHA lease.lua)", &key)),
        )?;
        Ok(held == 1)
    }

    async fn runs(&self) -> std::result::Result<Vec<String>, StoreError> {
        let key = self.keys.batch_runs();
        seam(
            redis::cmd("SMEMBERS")
                .arg(&key)
                .query_async(&mut self.conn.clone())
                .await
                .map_err(cmd_err("SMEMBERS", &key)),
        )
    }

    async fn pending_len(&self, run: &str, provider: &str) -> std::result::Result<u64, StoreError> {
        seam(self.llen(run, provider).await)
    }

    async fn pending(
        &self,
        run: &str,
        provider: &str,
        start: usize,
        count: usize,
    ) -> std::result::Result<Vec<Queued>, StoreError> {
        let key = self.part(run, &format!("pending:{provider}"));
        let cids = seam(self.list(&key, start, count).await)?;
        seam(self.lines_of(run, cids).await)
    }

    async fn collect(
        &self,
        run: &str,
        holder: &str,
        count: usize,
        record: &BatchRecord,
    ) -> std::result::Result<Option<u64>, StoreError> {
        seam(self.collect_batch(run, holder, count, record).await)
    }

    async fn batch_cids(&self, run: &str, n: u64) -> std::result::Result<Vec<String>, StoreError> {
        seam(self.list(&self.part(run, &format!("cids:{n}")), 0, 0).await)
    }

    async fn batch_questions(
        &self,
        run: &str,
        n: u64,
        start: usize,
        count: usize,
    ) -> std::result::Result<Vec<Queued>, StoreError> {
        let key = self.part(run, &format!("cids:{n}"));
        let cids = seam(self.list(&key, start, count).await)?;
        seam(self.lines_of(run, cids).await)
    }

    async fn batches(&self, run: &str) -> std::result::Result<Vec<(u64, BatchRecord)>, StoreError> {
        seam(self.batch_records(run).await)
    }

    async fn set_batch(
        &self,
        run: &str,
        n: u64,
        holder: &str,
        record: &BatchRecord,
    ) -> std::result::Result<bool, StoreError> {
        seam(self.record_batch(run, n, holder, record).await)
    }

    async fn ready(
        &self,
        run: &str,
        indexes: &[u64],
    ) -> std::result::Result<Vec<(u64, String)>, StoreError> {
        seam(self.ready_parked(run, indexes).await)
    }

    async fn unpark(
        &self,
        run: &str,
        parked: &[(u64, String)],
    ) -> std::result::Result<(), StoreError> {
        seam(self.unpark_all(run, parked).await)
    }

    async fn retire(&self, run: &str, force: bool) -> std::result::Result<bool, StoreError> {
        let key = self.keys.batch_runs();
        let retired: i64 = seam(
            RETIRE
                .key(self.part(run, "parked"))
                .key(&key)
                .arg(run)
                .arg(if force { "1" } else { "0" })
                .invoke_async(&mut self.conn.clone())
                .await
                .map_err(cmd_err("retire (EVALSHA retire.lua)", &key)),
        )?;
        Ok(retired == 1)
    }

    async fn overview(
        &self,
        run: &str,
        providers: &[String],
    ) -> std::result::Result<BatchOverview, StoreError> {
        seam(self.batch_overview(run, providers).await)
    }
}
