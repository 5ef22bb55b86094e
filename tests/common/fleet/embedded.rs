//! A fleet run checked against the embedded `run` of the same data: the reports agree (timings
//! aside), `--wait` exits as `run` does, and the two `items.parquet` hold the same rows.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::{first_difference, Fleet};

/// `report.json` without what legitimately differs between two runs: timings.
pub fn comparable(mut report: Value) -> Value {
    for key in ["started_at", "finished_at", "duration_seconds", "dataset"] {
        report["run"].as_object_mut().map(|r| r.remove(key));
    }
    report["target"]
        .as_object_mut()
        .map(|t| t.remove("latency_ms"));
    for list in ["results", "items"] {
        if let Some(items) = report[list].as_array_mut() {
            for item in items {
                item.as_object_mut().map(|i| i.remove("latency_ms"));
                item["target"]
                    .as_object_mut()
                    .map(|t| t.remove("latency_ms"));
            }
        }
    }
    report
}

/// Submits `data` under `suite` with `--wait` to a running fleet, and checks that the fleet's
/// report equals an embedded run's (timings aside) and that `--wait` exits as `run` does.
/// Returns the submit output and the fleet's report.
pub fn submit_and_compare_with_embedded(
    fleet: &Fleet,
    data: &Path,
    suite: &str,
    run_id: &str,
) -> (crate::common::Output, Value) {
    submit_and_compare_with_embedded_with(fleet, data, &["--suite", suite], run_id)
}

/// [`submit_and_compare_with_embedded`] with more flags for both (`--suite` among them).
pub fn submit_and_compare_with_embedded_with(
    fleet: &Fleet,
    data: &Path,
    flags: &[&str],
    run_id: &str,
) -> (crate::common::Output, Value) {
    let data_arg = data.to_str().expect("utf-8 path");
    let mut args = vec!["submit", data_arg, "--run-id", run_id, "--wait"];
    args.extend_from_slice(flags);
    let submit = fleet.run(&args, Duration::from_secs(120));
    submit.assert_no_panic();
    let fleet_report = fleet.wait_report(run_id, Duration::from_secs(30));
    let passed = fleet_report["gates"]["passed"] == true;
    assert_eq!(
        submit.code,
        Some(if passed { 0 } else { 1 }),
        "--wait exits as run does\n{}",
        submit.stderr
    );
    let mut args = vec!["--run-id", run_id];
    args.extend_from_slice(flags);
    let embedded = fleet.embedded_report(data, &args);
    let (a, b) = (comparable(fleet_report.clone()), comparable(embedded));
    assert_eq!(
        first_difference(&a, &b, "report"),
        None,
        "a fleet run and an embedded run must agree"
    );
    let fleet_items = comparable_items(&fleet.reports_dir().join(run_id));
    let embedded_items = comparable_items(&fleet.dir.path().join("embedded"));
    assert_eq!(
        fleet_items.len() as u64,
        a["totals"]["examples"].as_u64().unwrap()
    );
    assert!(
        fleet_items == embedded_items,
        "the fleet's items.parquet and the embedded run's must agree"
    );
    (submit, fleet_report)
}

/// The rows of `dir`'s items.parquet (through `evalfleet export`), timings aside.
pub fn comparable_items(dir: &Path) -> Vec<Value> {
    let export = crate::common::evalfleet(&["export", dir.to_str().expect("utf-8 path")]);
    export.assert_code(0);
    export
        .stdout
        .lines()
        .map(|line| {
            let mut row: Value = serde_json::from_str(line).expect("a JSON line");
            for key in ["latency_ms", "target.latency_ms"] {
                row.as_object_mut().map(|r| r.remove(key));
            }
            row
        })
        .collect()
}
