//! The run registry: what `evalfleet status`, the HTTP API and the aggregator know about a run
//! without reading its results — the `run:{id}` hash, its `run:{id}:spec` and the `runs` index
//! sorted by creation time.
//!
//! Registration is a Lua script (`lua/register.lua`) so that re-submitting a run id (resume)
//! finds it registered and changes nothing; the spec a run started with stays its spec.

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::LazyLock;

use std::time::Duration;

use async_trait::async_trait;
use evalfleet_contract::registry::{RunRegistry, Verdict};
use evalfleet_contract::store::StoreError;
use evalfleet_suites::spec::RunSpec;
use redis::Script;

use super::error::{cmd_err, RedisError};
use super::store::RedisStore;

static REGISTER: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("lua/register.lua")));

pub use evalfleet_contract::registry::{RunMeta, RunStatus};

/// A run's registry hash as field/value pairs (absent options are left out).
fn to_fields(meta: &RunMeta) -> Vec<(&'static str, String)> {
    let mut f = vec![
        ("id", meta.id.clone()),
        ("suite", meta.suite.clone()),
        ("status", meta.status.as_str().to_owned()),
        ("published", meta.published.to_string()),
        ("created_at", meta.created_at.clone()),
        ("dataset", meta.dataset.clone()),
        ("judge", meta.judge.clone()),
    ];
    if let Some(t) = meta.total {
        f.push(("total", t.to_string()));
    }
    if let Some(t) = &meta.finished_at {
        f.push(("finished_at", t.clone()));
    }
    if let Some(g) = meta.gates_passed {
        f.push(("gates_passed", g.to_string()));
    }
    f
}

/// Reads a registry hash back; `key` names it in errors.
fn from_fields(id: &str, key: &str, mut h: HashMap<String, String>) -> Result<RunMeta, RedisError> {
    let bad = |message: String| RedisError::Data {
        op: "HGETALL",
        key: key.to_owned(),
        message,
    };
    let mut take = |name: &str| h.remove(name).filter(|v| !v.is_empty());
    let num = |name: &str, v: Option<String>| {
        v.map(|v| {
            v.parse::<u64>()
                .map_err(|_| bad(format!("field '{name}' is not a count: '{v}'")))
        })
        .transpose()
    };
    let status = take("status")
        .ok_or_else(|| bad("no 'status' field".into()))?
        .parse::<RunStatus>()
        .map_err(bad)?;
    let total = num("total", take("total"))?;
    let published = num("published", take("published"))?.unwrap_or(0);
    let gates_passed = match take("gates_passed").as_deref() {
        None => None,
        Some("true") => Some(true),
        Some("false") => Some(false),
        Some(v) => return Err(bad(format!("field 'gates_passed' is not a bool: '{v}'"))),
    };
    Ok(RunMeta {
        id: id.to_owned(),
        suite: take("suite").unwrap_or_default(),
        status,
        total,
        published,
        created_at: take("created_at").unwrap_or_default(),
        finished_at: take("finished_at"),
        dataset: take("dataset").unwrap_or_default(),
        judge: take("judge").unwrap_or_default(),
        gates_passed,
    })
}

/// The `runs` score: the creation time in unix ms (now when `created_at` does not parse).
fn creation_ms(created_at: &str) -> i64 {
    jiff::Timestamp::from_str(created_at)
        .unwrap_or_else(|_| jiff::Timestamp::now())
        .as_millisecond()
}

impl RedisStore {
    /// Registers a run with its spec; false when it was registered before (a resumed submit:
    /// nothing is changed, the stored spec stays).
    pub async fn register_run(&self, meta: &RunMeta, spec_json: &str) -> Result<bool, RedisError> {
        let key = self.keys.run(&meta.id);
        let mut inv = REGISTER.key(&key);
        inv.key(self.keys.run_part(&meta.id, "spec"))
            .key(self.keys.runs())
            .arg(&meta.id)
            .arg(creation_ms(&meta.created_at))
            .arg(spec_json);
        for (field, value) in to_fields(meta) {
            inv.arg(field).arg(value);
        }
        let created: i64 = inv
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(cmd_err("register (EVALSHA register.lua)", &key))?;
        Ok(created == 1)
    }

    /// The run's registry entry; None when unknown or expired.
    pub async fn run(&self, id: &str) -> Result<Option<RunMeta>, RedisError> {
        let key = self.keys.run(id);
        let h: HashMap<String, String> = redis::cmd("HGETALL")
            .arg(&key)
            .query_async(&mut self.conn.clone())
            .await
            .map_err(cmd_err("HGETALL", &key))?;
        if h.is_empty() {
            return Ok(None);
        }
        from_fields(id, &key, h).map(Some)
    }

    /// Up to `limit` runs, newest first. Ids whose registry has expired are dropped from the
    /// index on the way; an unreadable entry is logged and left out.
    pub async fn runs(&self, limit: usize) -> Result<Vec<RunMeta>, RedisError> {
        let index = self.keys.runs();
        let mut conn = self.conn.clone();
        let mut out = Vec::new();
        let mut gone = Vec::new();
        let mut start = 0usize;
        while out.len() < limit {
            let page = (limit - out.len()).max(16);
            let ids: Vec<String> = redis::cmd("ZREVRANGE")
                .arg(&index)
                .arg(start)
                .arg(start + page - 1)
                .query_async(&mut conn)
                .await
                .map_err(cmd_err("ZREVRANGE", &index))?;
            if ids.is_empty() {
                break;
            }
            start += ids.len();
            let mut pipe = redis::pipe();
            for id in &ids {
                pipe.cmd("HGETALL").arg(self.keys.run(id));
            }
            let hashes: Vec<HashMap<String, String>> = pipe
                .query_async(&mut conn)
                .await
                .map_err(cmd_err("HGETALL (pipelined)", &index))?;
            for (id, h) in ids.into_iter().zip(hashes) {
                if h.is_empty() {
                    gone.push(id);
                    continue;
                }
                if out.len() == limit {
                    break;
                }
                match from_fields(&id, &self.keys.run(&id), h) {
                    Ok(meta) => out.push(meta),
                    Err(e) => tracing::warn!(run = %id, error = %e, "skipping unreadable run"),
                }
            }
        }
        if !gone.is_empty() {
            redis::cmd("ZREM")
                .arg(&index)
                .arg(&gone)
                .query_async::<u64>(&mut conn)
                .await
                .map_err(cmd_err("ZREM", &index))?;
        }
        Ok(out)
    }

    /// The spec JSON the run was registered with.
    pub async fn spec(&self, id: &str) -> Result<Option<String>, RedisError> {
        self.get_string(self.keys.run_part(id, "spec")).await
    }

    /// The run's summary.md text, once finished.
    pub async fn summary(&self, id: &str) -> Result<Option<String>, RedisError> {
        self.get_string(self.keys.run_part(id, "summary")).await
    }

    pub(crate) async fn get_string(&self, key: String) -> Result<Option<String>, RedisError> {
        redis::cmd("GET")
            .arg(&key)
            .query_async(&mut self.conn.clone())
            .await
            .map_err(cmd_err("GET", &key))
    }
}

/// The registry contract, for every role: the methods above, with the spec typed (parsed here
/// and nowhere else) and errors as the store seam sees them (transient ones stay transient).
/// The registry hash's field for [`RunRegistry::set_published_through`].
const PUBLISHED_THROUGH: &str = "published_through";

#[async_trait]
impl RunRegistry for RedisStore {
    async fn register(&self, meta: &RunMeta, spec: &RunSpec) -> Result<bool, StoreError> {
        let json = serde_json::to_string(spec)
            .map_err(|e| StoreError::Backend(format!("the run spec does not serialise: {e}")))?;
        Ok(self.register_run(meta, &json).await?)
    }

    async fn run(&self, id: &str) -> Result<Option<RunMeta>, StoreError> {
        Ok(RedisStore::run(self, id).await?)
    }

    async fn runs(&self, limit: usize) -> Result<Vec<RunMeta>, StoreError> {
        Ok(RedisStore::runs(self, limit).await?)
    }

    async fn spec(&self, id: &str) -> Result<Option<RunSpec>, StoreError> {
        match RedisStore::spec(self, id).await? {
            None => Ok(None),
            Some(json) => serde_json::from_str(&json).map(Some).map_err(|e| {
                StoreError::Backend(format!("run '{id}' has an unreadable spec: {e}"))
            }),
        }
    }

    async fn add_published(&self, id: &str, n: u64) -> Result<(), StoreError> {
        Ok(RedisStore::add_published(self, id, n).await?)
    }

    async fn set_published_through(&self, id: &str, index: u64) -> Result<(), StoreError> {
        Ok(self
            .set_field(id, PUBLISHED_THROUGH, &index.to_string())
            .await?)
    }

    async fn published_through(&self, id: &str) -> Result<Option<u64>, StoreError> {
        let value = self.field(id, PUBLISHED_THROUGH).await?;
        value
            .map(|v| {
                v.parse().map_err(|_| {
                    StoreError::Backend(format!(
                        "run '{id}': {PUBLISHED_THROUGH} is not an index: {v:?}"
                    ))
                })
            })
            .transpose()
    }

    async fn set_total(&self, id: &str, total: u64) -> Result<(), StoreError> {
        Ok(RedisStore::set_total(self, id, total).await?)
    }

    async fn set_status(&self, id: &str, status: RunStatus) -> Result<(), StoreError> {
        Ok(RedisStore::set_status(self, id, status).await?)
    }

    async fn finish(&self, id: &str, verdict: &Verdict<'_>) -> Result<(), StoreError> {
        Ok(self
            .finish_run(
                id,
                verdict.gates_passed,
                verdict.summary_md,
                verdict.report_dir,
            )
            .await?)
    }

    async fn summary(&self, id: &str) -> Result<Option<String>, StoreError> {
        Ok(RedisStore::summary(self, id).await?)
    }

    async fn report_dir(&self, id: &str) -> Result<Option<String>, StoreError> {
        Ok(self.field(id, "report_dir").await?)
    }

    async fn try_lock_report(
        &self,
        id: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        Ok(RedisStore::try_lock_report(self, id, owner, ttl).await?)
    }

    async fn release_report_lock(&self, id: &str, owner: &str) -> Result<bool, StoreError> {
        Ok(RedisStore::release_report_lock(self, id, owner).await?)
    }

    async fn keep_failed_message(
        &self,
        run_id: &str,
        index: u64,
        message_json: &str,
    ) -> Result<(), StoreError> {
        Ok(RedisStore::keep_failed_message(self, run_id, index, message_json).await?)
    }

    async fn take_failed(&self, id: &str) -> Result<Vec<String>, StoreError> {
        Ok(RedisStore::take_failed(self, id).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> RunMeta {
        RunMeta {
            id: "r1".into(),
            suite: "rag-layers".into(),
            status: RunStatus::Running,
            total: Some(10),
            published: 4,
            created_at: "2026-01-02T03:04:05Z".into(),
            finished_at: None,
            dataset: "d.jsonl".into(),
            judge: "heuristic".into(),
            gates_passed: Some(false),
        }
    }

    #[test]
    fn meta_round_trips_through_hash_fields() {
        let m = meta();
        let h: HashMap<String, String> = to_fields(&m)
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .chain([("free".to_owned(), "x".to_owned())])
            .collect();
        assert_eq!(from_fields("r1", "k", h).unwrap(), m);
    }

    #[test]
    fn bad_fields_are_data_errors() {
        let h = HashMap::from([("status".to_owned(), "paused".to_owned())]);
        assert!(matches!(
            from_fields("r1", "k", h),
            Err(RedisError::Data { .. })
        ));
        assert_eq!(creation_ms("2026-01-02T03:04:05Z"), 1_767_323_045_000);
        assert_eq!(
            serde_json::to_string(&RunStatus::Cancelled).unwrap(),
            "\"cancelled\""
        );
    }
}
