//! Writing a finished run's reports: the four files into the run's directory, and the summary
//! `evalfleet report` prints. A plain function over an [`ItemSource`], so it is tested without
//! Redis.

use std::path::Path;

use evalfleet_contract::registry::RunMeta;
use evalfleet_report::aggregate::RunAggregator;
use evalfleet_report::{ItemSource, ItemsAhead, ReportFile, ReportInput, RunInfo};
use evalfleet_suites::spec::RunSpec;

/// What writing the reports decided.
#[derive(Debug)]
pub struct Written {
    pub gates_passed: bool,
    pub summary: String,
}

/// Where and how a run's reports are written.
pub struct Destination<'a> {
    pub dir: &'a Path,
    /// `reports.inline_items`.
    pub inline_items: u64,
    /// `items.parquet` written while the run went on (`ItemsAhead`), to be finished.
    pub items_ahead: Option<&'a ItemsAhead>,
}

/// Writes the reports of `meta`'s run into `to.dir`. `incremental` are the aggregates folded
/// while the run went, when they hold every result; otherwise they are rebuilt from `items`
/// in one streaming pass (after an aggregator restart, or with several aggregators).
pub fn write_run_reports(
    spec: &RunSpec,
    meta: &RunMeta,
    incremental: Option<RunAggregator>,
    items: &(dyn ItemSource + Sync),
    to: Destination<'_>,
    finished_at: jiff::Timestamp,
) -> Result<Written, String> {
    let dir = to.dir;
    // Rows written ahead go with the aggregates folded as they were written.
    let items_ahead = to.items_ahead.filter(|_| incremental.is_some());
    let agg = match incremental {
        Some(agg) => agg,
        None => {
            let mut agg = RunAggregator::new(&spec.suite);
            items
                .for_each_item(None, &mut |r| {
                    agg.observe(r);
                    Ok(())
                })
                .map_err(|e| e.to_string())?;
            agg
        }
    };
    let started = meta
        .created_at
        .parse::<jiff::Timestamp>()
        .unwrap_or(finished_at);
    let info = RunInfo {
        id: meta.id.clone(),
        suite: spec.suite.name.clone(),
        dataset: spec.dataset.clone(),
        judge: spec.judge,
        started_at: meta.created_at.clone(),
        finished_at: finished_at.to_string(),
        duration_seconds: finished_at.duration_since(started).as_secs_f64().max(0.0),
    };
    let input = ReportInput {
        info: &info,
        suite: &spec.suite,
        agg: &agg,
        items,
        inline_items: to.inline_items,
        items_ahead,
    };
    evalfleet_report::write_all(dir, &input).map_err(|e| e.to_string())?;
    // The summary `evalfleet report` prints is the file just written (rendering it again would
    // stream the run's items once more).
    let path = dir.join(ReportFile::Summary.file_name());
    let summary = std::fs::read_to_string(&path)
        .map_err(|e| format!("reading {} back: {e}", path.display()))?;
    Ok(Written {
        gates_passed: input.gates_passed(),
        summary,
    })
}

#[cfg(test)]
mod tests {
    use evalfleet_contract::registry::RunStatus;
    use evalfleet_model::record::ResultRecord;

    use super::*;

    fn to(dir: &tempfile::TempDir) -> Destination<'_> {
        Destination {
            dir: dir.path(),
            inline_items: 100_000,
            items_ahead: None,
        }
    }
    use crate::fold::tests::spec;

    fn meta() -> RunMeta {
        RunMeta {
            id: "r1".into(),
            suite: "support-judge".into(),
            status: RunStatus::Running,
            total: Some(2),
            published: 2,
            created_at: "2026-11-24T00:00:00Z".into(),
            finished_at: None,
            dataset: "d.jsonl".into(),
            judge: "heuristic".into(),
            gates_passed: None,
        }
    }

    fn items() -> Vec<ResultRecord> {
        (0..2)
            .map(|i| {
                ResultRecord::skipped(
                    "r1",
                    "support-judge",
                    i,
                    Some(i + 1),
                    format!("e{i}"),
                    "bad".into(),
                )
            })
            .collect()
    }

    #[test]
    fn writes_the_four_files_and_rebuilds_missing_aggregates_from_the_items() {
        let dir = tempfile::tempdir().unwrap();
        let finished = "2026-11-24T00:01:00Z".parse().unwrap();
        let written =
            write_run_reports(&spec(), &meta(), None, &items(), to(&dir), finished).unwrap();
        for f in ReportFile::ALL {
            assert!(
                dir.path().join(f.file_name()).is_file(),
                "{}",
                f.file_name()
            );
        }
        assert!(written
            .summary
            .contains("# evalfleet report: support-judge (run `r1`)"));
        assert!(
            !written.gates_passed,
            "no valid example: the pass-rate gate fails"
        );
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("report.json")).unwrap())
                .unwrap();
        assert_eq!(json["totals"]["skipped"], 2, "rebuilt from the items");
        assert_eq!(json["run"]["duration_seconds"], 60.0);
    }

    #[test]
    fn incremental_aggregates_are_used_as_given() {
        let dir = tempfile::tempdir().unwrap();
        let agg = RunAggregator::new(&spec().suite);
        let finished = jiff::Timestamp::now();
        write_run_reports(&spec(), &meta(), Some(agg), &items(), to(&dir), finished).unwrap();
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("report.json")).unwrap())
                .unwrap();
        assert_eq!(
            json["totals"]["examples"], 0,
            "the given (empty) aggregates"
        );
    }
}
