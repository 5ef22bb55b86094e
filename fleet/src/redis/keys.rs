//! Key names, in one place: the Redis contract (docs/DESIGN.md §4) is a set of key names that other
//! processes (every worker, the aggregator, `evalfleet status`, operators with `redis-cli`)
//! rely on, so they are spelled once here and nowhere else.
//!
//! Every key sits under the configured prefix (default `evalfleet:`), so several fleets or test
//! runs can share one Redis.

use std::sync::Arc;

#[derive(Debug, Clone)]
pub(crate) struct Keys {
    prefix: Arc<str>,
}

impl Keys {
    pub(crate) fn new(prefix: &str) -> Self {
        Keys {
            prefix: prefix.into(),
        }
    }

    pub(crate) fn prefix(&self) -> &str {
        &self.prefix
    }

    /// `run:{id}`: the run's registry hash (suite, status, total, published, timestamps …).
    pub(crate) fn run(&self, id: &str) -> String {
        format!("{}run:{id}", self.prefix)
    }

    /// `run:{id}:<part>`: spec, stored, counts, failed, failed_bits, summary, scenarios,
    /// report_lock.
    pub(crate) fn run_part(&self, id: &str, part: &str) -> String {
        format!("{}run:{id}:{part}", self.prefix)
    }

    /// Every key of a run that the retention TTL applies to, in the order the status script
    /// expects: run, spec, stored, counts, failed, summary, scenarios, then batch mode's
    /// questions, answers, parked, batches, next and providers (the script finds the batches'
    /// custom_id lists and the providers' pending lists from them), then failed_bits.
    pub(crate) fn run_keys(&self, id: &str) -> [String; 14] {
        [
            self.run(id),
            self.run_part(id, "spec"),
            self.run_part(id, "stored"),
            self.run_part(id, "counts"),
            self.run_part(id, "failed"),
            self.run_part(id, "summary"),
            self.run_part(id, "scenarios"),
            self.batch_part(id, "questions"),
            self.batch_part(id, "answers"),
            self.batch_part(id, "parked"),
            self.batch_part(id, "batches"),
            self.batch_part(id, "next"),
            self.batch_part(id, "providers"),
            self.run_part(id, "failed_bits"),
        ]
    }

    /// `runs`: sorted set of run ids scored by creation time (unix ms).
    pub(crate) fn runs(&self) -> String {
        format!("{}runs", self.prefix)
    }

    /// `events`: the stream of stored results the aggregator tails.
    pub(crate) fn events(&self) -> String {
        format!("{}events", self.prefix)
    }

    /// `cache:judge:<key>`: one cached judge verdict.
    pub(crate) fn judge_cache(&self, key: &str) -> String {
        format!("{}cache:judge:{key}", self.prefix)
    }

    /// `cache:target:<key>`: one cached target reply.
    pub(crate) fn target_cache(&self, key: &str) -> String {
        format!("{}cache:target:{key}", self.prefix)
    }

    /// `ratelimit:<key>`: the GCRA's theoretical arrival time for a shared quota.
    pub(crate) fn rate(&self, key: &str) -> String {
        format!("{}ratelimit:{key}", self.prefix)
    }

    /// `run:{id}:batch:<part>`: batch mode's state of a run (questions, answers, parked,
    /// batches, next, providers, `pending:<provider>`, `cids:<n>`).
    pub(crate) fn batch_part(&self, id: &str, part: &str) -> String {
        format!("{}run:{id}:batch:{part}", self.prefix)
    }

    /// `batch:runs`: the runs with batch work, which coordinators look through.
    pub(crate) fn batch_runs(&self) -> String {
        format!("{}batch:runs", self.prefix)
    }

    /// `batch:lease:<provider>`: the holder of a provider's coordinator lease (PX).
    pub(crate) fn batch_lease(&self, provider: &str) -> String {
        format!("{}batch:lease:{provider}", self.prefix)
    }

    /// `ratelimit:<key>:pause`: set (with PX) when a worker saw a 429; the whole fleet waits.
    pub(crate) fn rate_pause(&self, key: &str) -> String {
        format!("{}ratelimit:{key}:pause", self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_follow_the_contract() {
        let k = Keys::new("evalfleet:");
        assert_eq!(k.run("r1"), "evalfleet:run:r1");
        assert_eq!(k.run_part("r1", "stored"), "evalfleet:run:r1:stored");
        assert_eq!(k.runs(), "evalfleet:runs");
        assert_eq!(k.events(), "evalfleet:events");
        assert_eq!(
            k.judge_cache("openai:m:h"),
            "evalfleet:cache:judge:openai:m:h"
        );
        assert_eq!(k.rate("openai:rpm"), "evalfleet:ratelimit:openai:rpm");
        assert_eq!(
            k.rate_pause("openai:rpm"),
            "evalfleet:ratelimit:openai:rpm:pause"
        );
        assert_eq!(
            k.batch_part("r1", "pending:openai"),
            "evalfleet:run:r1:batch:pending:openai"
        );
        assert_eq!(k.batch_lease("openai"), "evalfleet:batch:lease:openai");
        assert_eq!(k.batch_runs(), "evalfleet:batch:runs");
        assert_eq!(k.run_keys("x")[5], "evalfleet:run:x:summary");
        assert_eq!(k.run_keys("x")[6], "evalfleet:run:x:scenarios");
        assert_eq!(k.run_keys("x")[7], "evalfleet:run:x:batch:questions");
        assert_eq!(k.run_keys("x")[12], "evalfleet:run:x:batch:providers");
    }
}
