//! Folding: each followed run's results, folded once each into its incremental aggregates,
//! appended to this aggregator's durable result log of the run (`results_log.rs`: synced before
//! the events are acknowledged, since an event is its result's only copy), and kept in a local
//! [`Spill`] file, so that a run this aggregator saw whole is reported straight from it, its
//! `items.parquet` written from that file as the run goes ([`ItemsAhead`]), not after the last
//! result. No Redis here: the service feeds it the records of the events stream.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use evalfleet_contract::registry::RunStatus;
use evalfleet_contract::spill::Spill;
use evalfleet_model::record::ResultRecord;
use evalfleet_report::aggregate::RunAggregator;
use evalfleet_report::ItemsAhead;
use evalfleet_suites::spec::RunSpec;

use crate::results_log::{self, ResultLog};

/// One run being followed.
pub(crate) struct Tracked {
    pub(crate) spec: RunSpec,
    pub(crate) agg: RunAggregator,
    /// Indices folded (a bit each), so a redelivered event is never folded twice.
    folded: Vec<u64>,
    pub(crate) folded_count: u64,
    /// The run's record count, once its submission has finished (learnt by the sweep).
    pub(crate) total: Option<u64>,
    /// A sweep was started early for this run because it looked complete (done only once, so
    /// a run another aggregator is finishing does not make every loop sweep).
    nudged: bool,
    /// When a sweep first found every result stored while folding was behind.
    behind_since: Option<Instant>,
    /// The folded records; None when the file could not be created or written (the report
    /// then replays the result logs).
    kept: Option<Arc<Spill>>,
    /// `items.parquet` being written from `kept` (beside the result logs until complete).
    ahead: Option<ItemsAhead>,
    /// The folded records, durable (what the events are acknowledged against).
    log: ResultLog,
}

/// What a run's report can be written from when this aggregator folded all of its results.
pub(crate) struct Complete {
    pub(crate) agg: RunAggregator,
    /// The records, when they were all kept.
    pub(crate) items: Option<Arc<Spill>>,
    /// Their table, written while the run went on.
    pub(crate) ahead: Option<ItemsAhead>,
}

impl Tracked {
    /// Follows `run_id`, whose report directory is `dir`, logging its results there as
    /// `consumer`. Err when the log cannot be created: its events must then not be acknowledged.
    pub(crate) fn new(run_id: &str, spec: RunSpec, dir: &Path, consumer: &str) -> io::Result<Self> {
        let log = ResultLog::create(&results_log::dir(dir), consumer)?;
        let kept = Spill::new(run_id)
            .map(Arc::new)
            .map_err(|e| tracing::warn!(run = run_id, error = %e, "cannot create a spill file; the report will replay the result logs"))
            .ok();
        Ok(Tracked {
            agg: RunAggregator::new(&spec.suite),
            spec,
            folded: Vec::new(),
            folded_count: 0,
            total: None,
            nudged: false,
            behind_since: None,
            // Written beside the logs until complete: a table left by a crash is with them.
            ahead: (kept.as_ref()).map(|k| ItemsAhead::new(&results_log::dir(dir), k.clone())),
            kept,
            log,
        })
    }

    /// Folds `rec` (stored as `json`) unless its index was folded before; logs it either way
    /// (a redelivered result is logged again, and the replay keeps one). Err when it cannot be
    /// logged: its event must not be acknowledged.
    pub(crate) fn fold(&mut self, rec: &ResultRecord, json: &[u8]) -> io::Result<()> {
        self.log.append(rec.index, rec.outcome, json)?;
        let (word, bit) = ((rec.index / 64) as usize, rec.index % 64);
        if self.folded.len() <= word {
            self.folded.resize(word + 1, 0);
        }
        if self.folded[word] & (1 << bit) == 0 {
            self.folded[word] |= 1 << bit;
            self.folded_count += 1;
            self.agg.observe(rec);
            if let Some(kept) = &self.kept {
                if let Err(e) = kept.put(rec.index, rec.outcome, json) {
                    tracing::warn!(run = %rec.run_id, error = %e, "cannot keep a result locally; the report will replay the result logs");
                    self.kept = None;
                    self.ahead = None;
                }
            }
            if let Some(ahead) = &mut self.ahead {
                if let Err(e) = ahead.keep_up(&self.agg) {
                    tracing::warn!(run = %rec.run_id, error = %e, "cannot write items.parquet as the run goes; the report will write it whole");
                }
            }
        }
        Ok(())
    }

    /// Whether this aggregator has just folded the run's last result, so it can be finished
    /// without waiting for the next sweep; true once per run.
    fn take_all_folded(&mut self) -> bool {
        let all = !self.nudged && self.total.is_some_and(|n| self.folded_count >= n);
        self.nudged |= all;
        all
    }

    /// The aggregates and kept records, when they hold every one of the run's `done` stored
    /// results exactly once (else the report rebuilds them from the store).
    pub(crate) fn complete(self, done: u64) -> Option<Complete> {
        (self.folded_count == done).then_some(Complete {
            agg: self.agg,
            items: self.kept,
            ahead: self.ahead,
        })
    }
}

/// Whether a run met in the events stream is to be followed: unless it is finished or unknown.
/// A run being submitted is followed: its workers store results while the rest is published.
pub(crate) fn worth_following(status: Option<RunStatus>) -> bool {
    status.is_some_and(|s| !s.is_finished())
}

/// Every run this aggregator follows, by id.
pub(crate) struct Folding {
    runs: HashMap<String, Tracked>,
    /// Where runs' report directories (and their result logs) are.
    reports_dir: PathBuf,
    /// This aggregator's name: its logs' names.
    consumer: String,
}

impl Folding {
    pub(crate) fn new(reports_dir: PathBuf, consumer: &str) -> Self {
        Folding {
            runs: HashMap::new(),
            reports_dir,
            consumer: consumer.to_owned(),
        }
    }

    pub(crate) fn is_tracked(&self, run_id: &str) -> bool {
        self.runs.contains_key(run_id)
    }

    /// Stops following a run (finished elsewhere).
    pub(crate) fn end(&mut self, run_id: &str) {
        self.runs.remove(run_id);
    }

    /// Follows `run_id` (unless it is followed already). Err when its result log cannot be
    /// created, or when the run's directory may not be written (`run_dir::resolve`: the
    /// service checks that first and refuses the run's events).
    pub(crate) fn track(&mut self, run_id: &str, spec: RunSpec) -> io::Result<()> {
        if !self.runs.contains_key(run_id) {
            let dir = crate::run_dir::resolve(&self.reports_dir, run_id)
                .map_err(|why| io::Error::new(io::ErrorKind::InvalidInput, why))?;
            let tracked = Tracked::new(run_id, spec, &dir, &self.consumer)?;
            self.runs.insert(run_id.to_owned(), tracked);
        }
        Ok(())
    }

    /// Folds a record of a tracked run (others are ignored). Err when it cannot be logged.
    pub(crate) fn fold(&mut self, run_id: &str, rec: &ResultRecord, json: &[u8]) -> io::Result<()> {
        match self.runs.get_mut(run_id) {
            Some(t) => t.fold(rec, json),
            None => Ok(()),
        }
    }

    /// Syncs every followed run's result log: what was folded survives a crash, and its
    /// events may be acknowledged.
    pub(crate) fn sync(&mut self) -> io::Result<()> {
        self.runs.values_mut().try_for_each(|t| t.log.sync())
    }

    pub(crate) fn get(&self, run_id: &str) -> Option<&Tracked> {
        self.runs.get(run_id)
    }

    pub(crate) fn set_total(&mut self, run_id: &str, total: u64) {
        if let Some(t) = self.runs.get_mut(run_id) {
            t.total = Some(total);
        }
    }

    /// Stops following a run (it is being finished): what was folded of it.
    pub(crate) fn take(&mut self, run_id: &str) -> Option<Tracked> {
        self.runs.remove(run_id)
    }

    /// Whether to wait for folding to catch up before finishing `run_id`, whose `done` results
    /// are all stored: its events are still being read, and reporting from what was folded
    /// beats reading every record back from Redis. Waits at most `patience` (an aggregator
    /// that missed events, after a restart or beside another one, never catches up).
    pub(crate) fn lagging(&mut self, run_id: &str, done: u64, patience: Duration) -> bool {
        let Some(t) = self.runs.get_mut(run_id) else {
            return false;
        };
        if t.folded_count >= done {
            return false;
        }
        t.behind_since.get_or_insert_with(Instant::now).elapsed() < patience
    }

    /// Whether some run has all its results folded since the last look.
    pub(crate) fn any_all_folded(&mut self) -> bool {
        // Every run is looked at (no short cut), so each one's flag is taken.
        let mut any = false;
        for run in self.runs.values_mut() {
            any |= run.take_all_folded();
        }
        any
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use evalfleet_model::suite::SuiteKind;
    use evalfleet_report::ItemSource;
    use evalfleet_suites::spec::JudgeMode;
    use evalfleet_suites::suite::Suite;

    pub(crate) fn spec() -> RunSpec {
        RunSpec {
            suite: Suite::builtin(SuiteKind::SupportJudge),
            judge: JudgeMode::Heuristic,
            judges: Default::default(),
            model_prefixes: Default::default(),
            dataset: "d.jsonl".into(),
            target: None,
            target_model: None,
        }
    }

    fn skipped(index: u64) -> ResultRecord {
        ResultRecord::skipped(
            "r",
            "support-judge",
            index,
            None,
            format!("e{index}"),
            "x".into(),
        )
    }

    /// Folds a record the way the service does: with its stored JSON.
    fn fold(f: &mut Folding, run: &str, rec: &ResultRecord) {
        f.fold(run, rec, &serde_json::to_vec(rec).unwrap()).unwrap();
    }

    /// A folding whose result logs go to a temporary reports directory (kept alive with it).
    fn folding() -> (tempfile::TempDir, Folding) {
        let dir = tempfile::tempdir().unwrap();
        let f = Folding::new(dir.path().to_owned(), "agg");
        (dir, f)
    }

    #[test]
    fn a_run_is_reported_all_folded_once_when_its_last_result_arrives() {
        let (_logs, mut f) = folding();
        f.track("r", spec()).unwrap();
        fold(&mut f, "r", &skipped(0));
        assert!(!f.any_all_folded(), "the total is not known yet");
        f.set_total("r", 3);
        fold(&mut f, "r", &skipped(1));
        fold(&mut f, "r", &skipped(1));
        assert!(!f.any_all_folded(), "a redelivered result counts once");
        fold(&mut f, "r", &skipped(2));
        fold(&mut f, "other", &skipped(0));
        assert!(f.any_all_folded());
        assert!(!f.any_all_folded(), "only once per run");
        let t = f.take("r").expect("tracked");
        assert_eq!(t.agg.totals.skipped, 3);
        assert!(f.get("r").is_none());
    }

    #[test]
    fn runs_are_followed_from_their_submission_until_they_finish() {
        assert!(worth_following(Some(RunStatus::Submitting)));
        assert!(worth_following(Some(RunStatus::Running)));
        assert!(!worth_following(Some(RunStatus::Complete)));
        assert!(!worth_following(Some(RunStatus::Cancelled)));
        assert!(!worth_following(None));
    }

    #[test]
    fn a_complete_run_waits_a_while_for_its_events() {
        let (_logs, mut f) = folding();
        f.track("r", spec()).unwrap();
        fold(&mut f, "r", &skipped(0));
        let hour = Duration::from_secs(3600);
        assert!(f.lagging("r", 2, hour), "one stored result not folded yet");
        assert!(!f.lagging("r", 2, Duration::ZERO), "not past its patience");
        fold(&mut f, "r", &skipped(1));
        assert!(!f.lagging("r", 2, hour), "caught up");
        assert!(!f.lagging("unknown", 2, hour));
    }

    #[test]
    fn a_run_folded_whole_is_reported_from_its_kept_records() {
        let (_logs, mut f) = folding();
        f.track("r", spec()).unwrap();
        for i in [2, 0, 1, 0] {
            fold(&mut f, "r", &skipped(i));
        }
        let (t, u) = (f.take("r").unwrap(), {
            f.track("u", spec()).unwrap();
            fold(&mut f, "u", &skipped(0));
            f.take("u").unwrap()
        });
        let complete = t.complete(3).expect("every stored result was folded");
        let mut ids = Vec::new();
        complete
            .items
            .expect("the records were kept")
            .for_each_item(None, &mut |r| {
                ids.push(r.id.clone());
                Ok(())
            })
            .unwrap();
        assert_eq!(ids, ["e0", "e1", "e2"], "in index order, each once");
        assert!(u.complete(2).is_none(), "one result missing");
    }
}
