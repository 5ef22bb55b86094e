//! evalfleet's Redis adapter (docs/DESIGN.md §4): the result store every worker writes to, the run
//! registry, the events stream the aggregator tails, the fleet-wide rate limiter and the judge
//! cache — everything the fleet shares, so that workers and aggregators stay stateless and any
//! of them can be killed and restarted (docs/DESIGN.md §8).
//!
//! Key layout (all under the configured prefix, default `evalfleet:`):
//!
//! | key | type | holds |
//! |---|---|---|
//! | `run:{id}` | hash | suite, status, total, published, published_through, created_at, finished_at, dataset, judge, gates_passed, report_dir, free fields |
//! | `run:{id}:spec` | string | the run's spec JSON |
//! | `run:{id}:stored` | bitmap | index → its result is stored (the exactly-once guard; the record itself travels in its event) |
//! | `run:{id}:failed_bits` | bitmap | index → its stored result is `failed` (for `retry`) |
//! | `run:{id}:counts` | hash | ok, failed, skipped |
//! | `run:{id}:failed` | hash | index → message JSON of failed examples (for `retry`) |
//! | `run:{id}:summary` | string | summary.md of the finished run |
//! | `run:{id}:scenarios` | hash | SHA-256 digest → log-analysis scenario JSON (stored once per run) |
//! | `run:{id}:report_lock` | string | owner of the report being written (PX) |
//! | `run:{id}:batch:questions` | hash | batch mode: custom_id → batch line (blanked once its batch is at the provider) |
//! | `run:{id}:batch:pending:<provider>` / `:providers` | list / set | custom_ids waiting for a batch / the providers with such a list |
//! | `run:{id}:batch:answers` | hash | custom_id → result JSON |
//! | `run:{id}:batch:parked` | hash | index → awaited custom_ids and the example's message |
//! | `run:{id}:batch:batches` / `:next` / `:cids:<n>` | hash / counter / list | batch records, their numbering, their custom_ids |
//! | `batch:runs` / `batch:lease:<provider>` | set / string | runs with batch work / a provider coordinator's lease (PX) |
//! | `runs` | sorted set | run ids by creation time (unix ms) |
//! | `events` | stream | `run`, `index`, `record` per stored result, until an aggregator wrote it durably (never trimmed) |
//! | `cache:judge:<key>` | string | cached judge verdict JSON (EX ttl) |
//! | `ratelimit:<key>` / `ratelimit:<key>:pause` | string | GCRA arrival time (µs) / fleet pause (PX) |
//!
//! Every multi-key change is a Lua script in `lua/`, loaded with `include_str!`.

mod batches;
mod error;
mod events;
mod failed;
mod group_commit;
mod judge_cache;
mod keys;
mod lifecycle;
mod limiter;
mod registry;
mod store;

#[cfg(test)]
mod reconnect_tests;

pub use error::RedisError;
pub use events::EventStream;
pub use judge_cache::RedisJudgeCache;
pub use limiter::{FleetLimiter, PAUSE_POLL};
pub use registry::{RunMeta, RunStatus};
pub use store::{RedisConfig, RedisStore};
