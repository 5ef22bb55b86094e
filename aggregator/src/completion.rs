//! Completion: which running runs have every result stored (ok + failed + skipped == total),
//! and finishing each exactly once across any number of aggregators — under the run's report
//! lock, after checking that nobody finished it in the meantime, releasing the lock whatever
//! happened so that a failed attempt is retried by the next sweep.
//!
//! Completion sees the contracts through [`Registry`], the few questions it asks of them, so
//! these rules are tested with a registry whose answers change between two questions (another
//! aggregator finishing a run meanwhile), without Redis.

use std::future::Future;
use std::time::Duration;

use evalfleet_contract::registry::{RunMeta, RunRegistry, RunStatus};
use evalfleet_contract::store::{Counts, ResultStore};

use crate::AggregatorError;

/// How long a report lock is held at most (a crashed holder's lock expires).
pub(crate) const REPORT_LOCK_TTL: Duration = Duration::from_secs(600);

/// What completion asks of the run registry and the result store (any pair of contracts
/// answers it: see the blanket implementation below).
pub trait Registry: Send + Sync {
    /// The latest runs.
    fn runs(&self) -> impl Future<Output = Result<Vec<RunMeta>, AggregatorError>> + Send;
    fn counts(&self, run: &str) -> impl Future<Output = Result<Counts, AggregatorError>> + Send;
    fn status(
        &self,
        run: &str,
    ) -> impl Future<Output = Result<Option<RunStatus>, AggregatorError>> + Send;
    /// True for exactly one caller until the lock is released or expires.
    fn try_lock_report(
        &self,
        run: &str,
        owner: &str,
    ) -> impl Future<Output = Result<bool, AggregatorError>> + Send;
    fn release_report_lock(
        &self,
        run: &str,
        owner: &str,
    ) -> impl Future<Output = Result<(), AggregatorError>> + Send;
}

/// What a sweep tells its caller besides finishing runs.
pub(crate) trait Observer {
    /// A running run's counts (for gauges and to learn its total).
    fn running(&mut self, meta: &RunMeta, counts: Counts);
    /// A finished run (complete or cancelled, maybe elsewhere): no longer to be followed.
    fn ended(&mut self, meta: &RunMeta);
    /// A run whose id breaks the run-id rule (it came into Redis some other way than through
    /// `submit`): never followed, finished or written, `why` says so.
    fn refused(&mut self, meta: &RunMeta, why: &str);
}

/// One sweep over the latest runs: `observer` sees each one, and `finish(meta, total, done)`
/// is called for each complete one this aggregator holds the report lock of.
pub(crate) async fn sweep<R, F, Fut>(
    registry: &R,
    owner: &str,
    observer: &mut impl Observer,
    finish: F,
) -> Result<(), AggregatorError>
where
    R: Registry,
    F: Fn(RunMeta, u64, u64) -> Fut,
    Fut: Future<Output = Result<(), AggregatorError>>,
{
    for meta in registry.runs().await? {
        if let Err(e) = evalfleet_model::run_id::check(&meta.id) {
            observer.refused(&meta, &e.to_string());
            continue;
        }
        if meta.status.is_finished() {
            observer.ended(&meta);
        }
        if meta.status != RunStatus::Running {
            continue;
        }
        let counts = registry.counts(&meta.id).await?;
        observer.running(&meta, counts);
        let Some(total) = meta.total else { continue };
        if counts.done() < total || !registry.try_lock_report(&meta.id, owner).await? {
            continue;
        }
        let id = meta.id.clone();
        let finished = async {
            // Another aggregator may have finished the run between our look and our lock.
            if registry.status(&id).await? == Some(RunStatus::Running) {
                finish(meta, total, counts.done()).await
            } else {
                Ok(())
            }
        }
        .await;
        registry.release_report_lock(&id, owner).await?;
        finished?;
    }
    Ok(())
}

impl<S: RunRegistry + ResultStore> Registry for S {
    async fn runs(&self) -> Result<Vec<RunMeta>, AggregatorError> {
        Ok(RunRegistry::runs(self, 1000).await?)
    }

    async fn counts(&self, run: &str) -> Result<Counts, AggregatorError> {
        ResultStore::counts(self, run)
            .await
            .map_err(|e| AggregatorError::Report {
                run: run.to_owned(),
                message: e.to_string(),
            })
    }

    async fn status(&self, run: &str) -> Result<Option<RunStatus>, AggregatorError> {
        Ok(RunRegistry::run(self, run).await?.map(|m| m.status))
    }

    async fn try_lock_report(&self, run: &str, owner: &str) -> Result<bool, AggregatorError> {
        Ok(RunRegistry::try_lock_report(self, run, owner, REPORT_LOCK_TTL).await?)
    }

    async fn release_report_lock(&self, run: &str, owner: &str) -> Result<(), AggregatorError> {
        RunRegistry::release_report_lock(self, run, owner).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{HashMap, HashSet};
    use std::sync::Mutex;

    use super::*;

    /// An in-memory registry: runs, their counts, and who holds which report lock.
    #[derive(Default)]
    struct Memory {
        runs: Mutex<Vec<RunMeta>>,
        counts: HashMap<String, Counts>,
        locks: Mutex<HashMap<String, String>>,
        /// Runs another aggregator finishes right after we took the lock.
        finished_meanwhile: HashSet<String>,
    }

    impl Registry for Memory {
        async fn runs(&self) -> Result<Vec<RunMeta>, AggregatorError> {
            Ok(self.runs.lock().unwrap().clone())
        }
        async fn counts(&self, run: &str) -> Result<Counts, AggregatorError> {
            Ok(self.counts.get(run).copied().unwrap_or_default())
        }
        async fn status(&self, run: &str) -> Result<Option<RunStatus>, AggregatorError> {
            if self.finished_meanwhile.contains(run) {
                return Ok(Some(RunStatus::Complete));
            }
            Ok(self
                .runs
                .lock()
                .unwrap()
                .iter()
                .find(|m| m.id == run)
                .map(|m| m.status))
        }
        async fn try_lock_report(&self, run: &str, owner: &str) -> Result<bool, AggregatorError> {
            let mut locks = self.locks.lock().unwrap();
            if locks.contains_key(run) {
                return Ok(false);
            }
            locks.insert(run.to_owned(), owner.to_owned());
            Ok(true)
        }
        async fn release_report_lock(&self, run: &str, owner: &str) -> Result<(), AggregatorError> {
            let mut locks = self.locks.lock().unwrap();
            if locks.get(run).is_some_and(|o| o == owner) {
                locks.remove(run);
            }
            Ok(())
        }
    }

    fn meta(id: &str, status: RunStatus, total: Option<u64>) -> RunMeta {
        RunMeta {
            id: id.into(),
            suite: "support-judge".into(),
            status,
            total,
            published: 0,
            created_at: String::new(),
            finished_at: None,
            dataset: String::new(),
            judge: "heuristic".into(),
            gates_passed: None,
        }
    }

    fn counts(done: u64) -> Counts {
        Counts {
            ok: done,
            failed: 0,
            skipped: 0,
        }
    }

    /// The runs a sweep observed running, and those it saw ended.
    #[derive(Default)]
    struct Seen {
        running: Vec<String>,
        ended: Vec<String>,
        refused: Vec<String>,
    }

    impl Observer for Seen {
        fn running(&mut self, meta: &RunMeta, _: Counts) {
            self.running.push(meta.id.clone());
        }
        fn ended(&mut self, meta: &RunMeta) {
            self.ended.push(meta.id.clone());
        }
        fn refused(&mut self, meta: &RunMeta, why: &str) {
            assert!(why.contains(evalfleet_model::run_id::RULE), "{why}");
            self.refused.push(meta.id.clone());
        }
    }

    /// Sweeps once; the runs finished (in order) and the runs observed.
    async fn sweep_once(
        registry: &Memory,
        fail: bool,
    ) -> (Result<(), AggregatorError>, Vec<String>, Seen) {
        let finished = Mutex::new(Vec::new());
        let mut observed = Seen::default();
        let result = sweep(registry, "me", &mut observed, |m, total, done| {
            finished
                .lock()
                .unwrap()
                .push(format!("{}:{done}/{total}", m.id));
            async move {
                if fail {
                    Err(AggregatorError::Report {
                        run: m.id,
                        message: "disk full".into(),
                    })
                } else {
                    Ok(())
                }
            }
        })
        .await;
        (result, finished.into_inner().unwrap(), observed)
    }

    #[tokio::test]
    async fn only_running_runs_with_every_result_stored_are_finished() {
        let mut registry = Memory::default();
        *registry.runs.lock().unwrap() = vec![
            meta("done", RunStatus::Running, Some(3)),
            meta("partial", RunStatus::Running, Some(3)),
            meta("submitting", RunStatus::Running, None),
            meta("complete", RunStatus::Complete, Some(3)),
            meta("registering", RunStatus::Submitting, None),
        ];
        registry.counts.insert("done".into(), counts(3));
        registry.counts.insert("partial".into(), counts(2));
        registry.counts.insert("submitting".into(), counts(5));
        let (result, finished, observed) = sweep_once(&registry, false).await;
        result.unwrap();
        assert_eq!(finished, ["done:3/3"]);
        assert_eq!(observed.running, ["done", "partial", "submitting"]);
        assert_eq!(observed.ended, ["complete"]);
        assert!(
            registry.locks.lock().unwrap().is_empty(),
            "the lock is released"
        );
    }

    #[tokio::test]
    async fn a_run_locked_or_finished_by_another_aggregator_is_left_alone() {
        let mut registry = Memory::default();
        *registry.runs.lock().unwrap() = vec![
            meta("theirs", RunStatus::Running, Some(1)),
            meta("raced", RunStatus::Running, Some(1)),
        ];
        registry.counts.insert("theirs".into(), counts(1));
        registry.counts.insert("raced".into(), counts(1));
        registry.finished_meanwhile.insert("raced".into());
        registry
            .locks
            .lock()
            .unwrap()
            .insert("theirs".into(), "other".into());
        let (result, finished, _) = sweep_once(&registry, false).await;
        result.unwrap();
        assert!(finished.is_empty(), "{finished:?}");
        assert_eq!(
            registry
                .locks
                .lock()
                .unwrap()
                .get("theirs")
                .map(String::as_str),
            Some("other"),
            "another aggregator's lock is not touched"
        );
    }

    #[tokio::test]
    async fn a_failed_finish_releases_the_lock_for_the_next_sweep() {
        let mut registry = Memory::default();
        *registry.runs.lock().unwrap() = vec![meta("r", RunStatus::Running, Some(2))];
        registry.counts.insert("r".into(), counts(2));
        let (result, finished, _) = sweep_once(&registry, true).await;
        assert!(result.is_err());
        assert_eq!(finished, ["r:2/2"]);
        assert!(registry.locks.lock().unwrap().is_empty());
        let (result, finished, _) = sweep_once(&registry, false).await;
        result.unwrap();
        assert_eq!(finished, ["r:2/2"], "retried by the next sweep");
    }

    #[tokio::test]
    async fn a_run_whose_id_breaks_the_rule_is_never_finished_even_when_complete() {
        let mut registry = Memory::default();
        *registry.runs.lock().unwrap() = vec![
            meta("../../tmp/nu/pwned", RunStatus::Running, Some(1)),
            meta("a:b", RunStatus::Running, Some(1)),
            meta("fine", RunStatus::Running, Some(1)),
        ];
        for id in ["../../tmp/nu/pwned", "a:b", "fine"] {
            registry.counts.insert(id.into(), counts(1));
        }
        let (result, finished, observed) = sweep_once(&registry, false).await;
        result.unwrap();
        assert_eq!(finished, ["fine:1/1"]);
        assert_eq!(observed.refused, ["../../tmp/nu/pwned", "a:b"]);
        assert_eq!(observed.running, ["fine"]);
        assert!(registry.locks.lock().unwrap().is_empty(), "never locked");
    }
}
