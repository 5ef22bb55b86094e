//! Streams a run's stored results back in dataset order for the report writers.
//!
//! Reports are written on plain threads (one per report file, docs/DESIGN.md §5), so this uses blocking
//! connections rather than the async manager: each `for_each_item` call takes a connection from
//! a small pool (opening one if none is free), so the files stream concurrently. Results are
//! read with HMGET in batches of [`BATCH`] indices, so memory holds one batch, never the run.

use std::sync::Mutex;
use std::time::Duration;

use evalfleet_contract::store::StoreError;
use evalfleet_model::record::{Outcome, ResultRecord};
use evalfleet_report::{ItemSource, ReportError};
use serde::Deserialize;

use super::error::RedisError;
use super::store::RedisStore;

/// Indices per HMGET.
pub const BATCH: u64 = 1000;
const IO_TIMEOUT: Duration = Duration::from_secs(30);

pub struct RunItems {
    client: redis::Client,
    run_id: String,
    key: String,
    total: u64,
    idle: Mutex<Vec<redis::Connection>>,
}

/// Just the outcome of a stored record: filtering on it skips parsing the rest.
#[derive(Deserialize)]
struct OutcomeOnly {
    outcome: Outcome,
}

impl RunItems {
    /// The results of `run_id` at indices `0..total`. Connects lazily (on the report thread),
    /// so building it never blocks an async runtime.
    pub fn new(store: &RedisStore, run_id: &str, total: u64) -> Result<Self, RedisError> {
        Ok(RunItems {
            client: store.client.clone(),
            run_id: run_id.to_owned(),
            key: store.keys.run_part(run_id, "results"),
            total,
            idle: Mutex::new(Vec::new()),
        })
    }

    fn connection(&self) -> Result<redis::Connection, RedisError> {
        if let Some(c) = self.idle.lock().ok().and_then(|mut idle| idle.pop()) {
            return Ok(c);
        }
        let err = |source| RedisError::Command {
            op: "connect (blocking)",
            key: self.key.clone(),
            source,
        };
        let conn = self
            .client
            .get_connection_with_timeout(Duration::from_secs(2))
            .map_err(err)?;
        conn.set_read_timeout(Some(IO_TIMEOUT)).map_err(err)?;
        conn.set_write_timeout(Some(IO_TIMEOUT)).map_err(err)?;
        Ok(conn)
    }

    fn stream(
        &self,
        conn: &mut redis::Connection,
        only: Option<Outcome>,
        f: &mut dyn FnMut(&ResultRecord) -> Result<(), ReportError>,
    ) -> Result<(), StreamError> {
        let mut start = 0;
        while start < self.total {
            let end = (start + BATCH).min(self.total);
            let values: Vec<Option<Vec<u8>>> = redis::cmd("HMGET")
                .arg(&self.key)
                .arg((start..end).collect::<Vec<u64>>())
                .query(conn)
                .map_err(|source| {
                    StreamError::Redis(RedisError::Command {
                        op: "HMGET",
                        key: self.key.clone(),
                        source,
                    })
                })?;
            for (index, bytes) in (start..end).zip(values) {
                let Some(bytes) = bytes else { continue };
                let corrupt = |e: serde_json::Error| {
                    StreamError::Report(ReportError::Source(
                        StoreError::Corrupt {
                            run: self.run_id.clone(),
                            index,
                            message: e.to_string(),
                        }
                        .to_string(),
                    ))
                };
                if let Some(want) = only {
                    let o: OutcomeOnly = serde_json::from_slice(&bytes).map_err(corrupt)?;
                    if o.outcome != want {
                        continue;
                    }
                }
                let rec: ResultRecord = serde_json::from_slice(&bytes).map_err(corrupt)?;
                f(&rec).map_err(StreamError::Report)?;
            }
            start = end;
        }
        Ok(())
    }
}

enum StreamError {
    /// The connection may be broken: it is not returned to the pool.
    Redis(RedisError),
    Report(ReportError),
}

impl ItemSource for RunItems {
    fn for_each_item(
        &self,
        only: Option<Outcome>,
        f: &mut dyn FnMut(&ResultRecord) -> Result<(), ReportError>,
    ) -> Result<(), ReportError> {
        let mut conn = self
            .connection()
            .map_err(|e| ReportError::Source(e.to_string()))?;
        let result = self.stream(&mut conn, only, f);
        if !matches!(result, Err(StreamError::Redis(_))) {
            if let Ok(mut idle) = self.idle.lock() {
                idle.push(conn);
            }
        }
        result.map_err(|e| match e {
            StreamError::Redis(e) => ReportError::Source(e.to_string()),
            StreamError::Report(e) => e,
        })
    }
}
