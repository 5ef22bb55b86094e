//! The events stream the aggregator tails: one entry per stored result (emitted by the put
//! script), read through a consumer group so several aggregators share the work and an entry
//! read by an aggregator that crashed before acking is claimed by another after `min_idle`.
//!
//! An EventStream owns its own connection: XREADGROUP BLOCK holds the connection it is sent on
//! until it returns, which would stall every other command multiplexed on the store's.
//! Acked entries are deleted (`ack.lua`: XACK + XDEL, and the result no longer counts as in
//! flight), so the stream holds only the results not yet in a result log; this assumes one
//! consumer group (the aggregators) reads it.

use std::future::Future;
use std::sync::LazyLock;
use std::time::Duration;

use async_trait::async_trait;
use evalfleet_contract::events::{EventReader, ResultEvent, ResultEvents};
use evalfleet_contract::store::StoreError;
use evalfleet_model::record::ResultRecord;
use redis::aio::ConnectionManager;
use redis::streams::{StreamAutoClaimReply, StreamId, StreamReadReply};
use redis::{ErrorKind, Script, ServerErrorKind};

use super::error::{cmd_err, RedisError};
use super::keys::Keys;
use super::store::{manager_config, RedisStore, RESPONSE_TIMEOUT};

static ACK: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("lua/ack.lua")));

pub struct EventStream {
    pub(crate) conn: ConnectionManager,
    keys: Keys,
    key: String,
    group: String,
    consumer: String,
    /// Where the next XAUTOCLAIM scan continues.
    claim_cursor: String,
}

impl EventStream {
    /// Joins (creating if needed) consumer group `group` as `consumer`. The group starts at the
    /// beginning of the stream, so results stored before any aggregator ran are not missed.
    pub async fn new(store: &RedisStore, group: &str, consumer: &str) -> Result<Self, RedisError> {
        let key = store.keys.events();
        let conn = ConnectionManager::new_with_config(store.client.clone(), manager_config(None))
            .await
            .map_err(cmd_err("connect (events)", &key))?;
        let mut s = EventStream {
            conn,
            keys: store.keys.clone(),
            key,
            group: group.to_owned(),
            consumer: consumer.to_owned(),
            claim_cursor: "0-0".into(),
        };
        s.create_group().await?;
        Ok(s)
    }

    /// XGROUP CREATE … MKSTREAM; an existing group is fine.
    async fn create_group(&mut self) -> Result<(), RedisError> {
        let mut cmd = redis::cmd("XGROUP");
        cmd.arg("CREATE")
            .arg(&self.key)
            .arg(&self.group)
            .arg("0")
            .arg("MKSTREAM");
        let created = timed(
            &self.key,
            "XGROUP CREATE",
            RESPONSE_TIMEOUT,
            cmd.query_async::<()>(&mut self.conn),
        )
        .await?;
        match created {
            Err(e) if e.code() != Some("BUSYGROUP") => Err(cmd_err("XGROUP CREATE", &self.key)(e)),
            _ => Ok(()),
        }
    }

    /// Up to `count` new entries (XREADGROUP >), waiting up to `block` for the first; empty
    /// when none came. A group lost with a Redis restart (no persistence) is recreated.
    pub async fn read(
        &mut self,
        count: usize,
        block: Duration,
    ) -> Result<Vec<ResultEvent>, RedisError> {
        let mut cmd = redis::cmd("XREADGROUP");
        cmd.arg("GROUP")
            .arg(&self.group)
            .arg(&self.consumer)
            .arg("COUNT")
            .arg(count.max(1));
        if !block.is_zero() {
            cmd.arg("BLOCK").arg(block.as_millis().max(1) as u64);
        }
        cmd.arg("STREAMS").arg(&self.key).arg(">");
        let limit = block + RESPONSE_TIMEOUT;
        for attempt in 0..2 {
            let reply = timed(
                &self.key,
                "XREADGROUP",
                limit,
                cmd.query_async::<Option<StreamReadReply>>(&mut self.conn),
            )
            .await?;
            match reply {
                Ok(reply) => {
                    let entries = reply.into_iter().flat_map(|r| r.keys).flat_map(|k| k.ids);
                    return Ok(entries.map(|e| self.event(e)).collect());
                }
                Err(e) if attempt == 0 && no_group(&e) => {
                    tracing::warn!(stream = %self.key, group = %self.group, "consumer group vanished (Redis restarted?), recreating it");
                    self.create_group().await?;
                }
                Err(e) => return Err(cmd_err("XREADGROUP", &self.key)(e)),
            }
        }
        Ok(Vec::new())
    }

    /// Claims up to `count` entries that another consumer read but has not acked for at least
    /// `min_idle` (it crashed), continuing the XAUTOCLAIM scan where the last call stopped.
    pub async fn claim_stale(
        &mut self,
        min_idle: Duration,
        count: usize,
    ) -> Result<Vec<ResultEvent>, RedisError> {
        let mut cmd = redis::cmd("XAUTOCLAIM");
        cmd.arg(&self.key)
            .arg(&self.group)
            .arg(&self.consumer)
            .arg(min_idle.as_millis() as u64)
            .arg(&self.claim_cursor)
            .arg("COUNT")
            .arg(count.max(1));
        let reply = timed(
            &self.key,
            "XAUTOCLAIM",
            RESPONSE_TIMEOUT,
            cmd.query_async::<StreamAutoClaimReply>(&mut self.conn),
        )
        .await?;
        let reply = match reply {
            Err(e) if no_group(&e) => {
                self.create_group().await?;
                return Ok(Vec::new());
            }
            other => other.map_err(cmd_err("XAUTOCLAIM", &self.key))?,
        };
        if !reply.deleted_ids.is_empty() {
            tracing::warn!(stream = %self.key, lost = reply.deleted_ids.len(),
                "pending events were trimmed from the stream before being processed; \
                 their results are still stored");
        }
        self.claim_cursor = reply.next_stream_id;
        Ok(reply.claimed.into_iter().map(|e| self.event(e)).collect())
    }

    /// Acknowledges processed entries, `(event id, run id)`, and deletes them from the stream;
    /// each one acknowledged for the first time leaves its run's results in flight.
    pub async fn ack(&mut self, events: &[(String, String)]) -> Result<(), RedisError> {
        if events.is_empty() {
            return Ok(());
        }
        let mut call = ACK.prepare_invoke();
        call.key(&self.key);
        for (_, run) in events {
            call.key(self.keys.run_part(run, "counts"));
        }
        call.arg(&self.group);
        for (id, _) in events {
            call.arg(id);
        }
        timed(
            &self.key,
            "ack (EVALSHA ack.lua)",
            RESPONSE_TIMEOUT,
            call.invoke_async::<u64>(&mut self.conn),
        )
        .await?
        .map(drop)
        .map_err(cmd_err("ack (EVALSHA ack.lua)", &self.key))
    }

    fn event(&self, entry: StreamId) -> ResultEvent {
        let run_id: Option<String> = entry.get("run");
        let index: Option<u64> = entry.get("index");
        let json: Vec<u8> = entry.get("record").unwrap_or_default();
        let record = serde_json::from_slice::<ResultRecord>(&json)
            .map_err(|e| {
                tracing::error!(stream = %self.key, entry = %entry.id, error = %e,
                    "unreadable result record in event")
            })
            .ok();
        if run_id.is_none() || index.is_none() {
            tracing::error!(stream = %self.key, entry = %entry.id, "event without run or index");
        }
        ResultEvent {
            run_id: run_id
                .or_else(|| record.as_ref().map(|r| r.run_id.clone()))
                .unwrap_or_default(),
            index: index.or(record.as_ref().map(|r| r.index)).unwrap_or(0),
            record,
            json,
            id: entry.id,
        }
    }
}

/// Bounds a command on the stream's connection, which has no response timeout of its own
/// (XREADGROUP BLOCK waits on purpose).
async fn timed<T>(
    key: &str,
    op: &'static str,
    limit: Duration,
    fut: impl Future<Output = redis::RedisResult<T>>,
) -> Result<redis::RedisResult<T>, RedisError> {
    tokio::time::timeout(limit, fut)
        .await
        .map_err(|_| RedisError::Timeout {
            op,
            key: key.to_owned(),
            after: limit,
        })
}

fn no_group(e: &redis::RedisError) -> bool {
    e.code() == Some("NOGROUP")
        || (e.kind() == ErrorKind::Server(ServerErrorKind::ResponseError)
            && e.detail().is_some_and(|d| d.contains("NOGROUP")))
}

/// The events contract for the aggregator: a stream entry per stored result, a consumer group
/// of aggregators.
#[async_trait]
impl EventReader for EventStream {
    async fn read(
        &mut self,
        count: usize,
        block: Duration,
    ) -> Result<Vec<ResultEvent>, StoreError> {
        Ok(EventStream::read(self, count, block).await?)
    }

    async fn claim_stale(
        &mut self,
        min_idle: Duration,
        count: usize,
    ) -> Result<Vec<ResultEvent>, StoreError> {
        Ok(EventStream::claim_stale(self, min_idle, count).await?)
    }

    async fn ack(&mut self, events: &[(String, String)]) -> Result<(), StoreError> {
        Ok(EventStream::ack(self, events).await?)
    }
}

#[async_trait]
impl ResultEvents for RedisStore {
    type Reader = EventStream;

    async fn join(&self, group: &str, consumer: &str) -> Result<EventStream, StoreError> {
        Ok(EventStream::new(self, group, consumer).await?)
    }

    async fn in_flight(&self, run_id: &str) -> Result<u64, StoreError> {
        let key = self.keys.run_part(run_id, "counts");
        let n: Option<i64> = redis::cmd("HGET")
            .arg(&key)
            .arg("in_flight")
            .query_async(&mut self.conn.clone())
            .await
            .map_err(cmd_err("HGET", &key))?;
        Ok(n.unwrap_or(0).max(0) as u64)
    }
}
