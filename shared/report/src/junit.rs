//! `junit.xml`: a run as test results, so CI systems show evaluation failures the way they show
//! test failures. Three test suites:
//!
//! - the items (named after the suite, the run's id as its id): one test case per example up to
//!   [`MAX_ITEM_CASES`] examples — gate failures are `<failure>`, processing failures `<error>`,
//!   skipped records `<skipped>`, and the suite's counts equal the report's. A larger run lists
//!   only the items that did not pass, the first [`MAX_ITEM_CASES`] of them in dataset order, and
//!   one more case counting the rest: a CI server reads the file whatever the run's size (one
//!   case per item was 25 MB at 200,000 examples), and the whole table is `items.parquet`;
//! - `<suite> run gates`: one case per run gate, failing as the run does;
//! - `<suite> groups`: one case per group of each grouping (`model=gpt-4o`), failing when the
//!   group's pass rate is below the run's `min_pass_rate`: which model or prompt version let the
//!   run down, at a glance.

use std::fmt::Write as _;

use evalfleet_model::record::{Outcome, ResultRecord};
use evalfleet_model::text::escape;
use evalfleet_suites::suite::Suite;

use super::{group_key, ReportError, ReportInput, Sink};

/// Items listed one by one: every item of a run of up to this many examples; above, at most
/// this many of the items that did not pass.
pub const MAX_ITEM_CASES: u64 = 10_000;

/// Test cases of one test suite, and their counts.
#[derive(Default)]
struct Cases {
    xml: String,
    tests: u64,
    failures: u64,
    errors: u64,
    skipped: u64,
}

impl Cases {
    fn pass(&mut self, classname: &str, name: &str, seconds: f64) {
        self.open(classname, name, seconds);
        self.xml.push_str("/>\n");
    }

    fn fail(
        &mut self,
        classname: &str,
        name: &str,
        seconds: f64,
        kind: &str,
        message: &str,
        body: &str,
    ) {
        self.open(classname, name, seconds);
        let _ = write!(
            self.xml,
            ">\n      <failure type=\"{kind}\" message=\"{}\">{}</failure>\n    </testcase>\n",
            escape(message),
            escape(body)
        );
        self.failures += 1;
    }

    fn error(&mut self, classname: &str, name: &str, seconds: f64, message: &str) {
        self.open(classname, name, seconds);
        let _ = write!(
            self.xml,
            ">\n      <error type=\"failed\" message=\"{}\"/>\n    </testcase>\n",
            escape(message)
        );
        self.errors += 1;
    }

    fn skip(&mut self, classname: &str, name: &str, message: &str) {
        self.open(classname, name, 0.0);
        let _ = write!(
            self.xml,
            ">\n      <skipped message=\"{}\"/>\n    </testcase>\n",
            escape(message)
        );
        self.skipped += 1;
    }

    fn open(&mut self, classname: &str, name: &str, seconds: f64) {
        let _ = write!(
            self.xml,
            "    <testcase classname=\"{}\" name=\"{}\" time=\"{seconds:.3}\"",
            escape(classname),
            escape(name)
        );
        self.tests += 1;
    }

    fn counts(&self) -> String {
        format!(
            "tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\"",
            self.tests, self.failures, self.errors, self.skipped
        )
    }
}

pub(super) fn write(w: &mut Sink<'_>, input: &ReportInput<'_>) -> Result<(), ReportError> {
    let ReportInput { info, suite, .. } = *input;
    let items = item_cases(input)?;
    let gates = gate_cases(input);
    let groups = group_cases(input);
    let all = [&items, &gates, &groups];
    let total = |f: fn(&Cases) -> u64| all.iter().map(|c| f(c)).sum::<u64>();
    w.put(&format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"evalfleet\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{:.3}\">\n",
        total(|c| c.tests), total(|c| c.failures), total(|c| c.errors), total(|c| c.skipped), info.duration_seconds
    ))?;
    let timestamp = escape(&info.started_at);
    w.put(&format!(
        "  <testsuite name=\"{}\" id=\"{}\" {} time=\"{:.3}\" timestamp=\"{timestamp}\">\n",
        escape(&suite.name),
        escape(&info.id),
        items.counts(),
        info.duration_seconds
    ))?;
    w.put(&items.xml)?;
    for (name, cases) in [("run gates", &gates), ("groups", &groups)] {
        w.put(&format!(
            "  </testsuite>\n  <testsuite name=\"{} {name}\" {} time=\"0.000\" timestamp=\"{timestamp}\">\n",
            escape(&suite.name),
            cases.counts()
        ))?;
        w.put(&cases.xml)?;
    }
    w.put("  </testsuite>\n</testsuites>\n")
}

/// The items' cases: every item of a small run; the first items that did not pass of a large
/// one, and a case counting the rest.
fn item_cases(input: &ReportInput<'_>) -> Result<Cases, ReportError> {
    let suite = input.suite;
    let mut cases = Cases::default();
    let mut case = |rec: &ResultRecord| {
        item_case(&mut cases, suite, rec);
        Ok(())
    };
    let unpassed = &input.agg.unpassed;
    let rest = if input.agg.totals.examples <= MAX_ITEM_CASES {
        input.items.for_each_item(None, &mut case)?;
        0
    } else {
        // The aggregates know which items are the first that did not pass: only those are read.
        input
            .items
            .for_each_where(&|index| unpassed.is_first(index), &mut case)?;
        unpassed.count - unpassed.remembered()
    };
    if rest > 0 {
        let message = format!(
            "{rest} more items did not pass (junit.xml lists the first {MAX_ITEM_CASES}; every item is in items.parquet)"
        );
        cases.fail(
            &suite.name,
            "more items that did not pass",
            0.0,
            "truncated",
            &message,
            "",
        );
    }
    Ok(cases)
}

fn item_case(cases: &mut Cases, suite: &Suite, rec: &ResultRecord) {
    let name = if rec.id.is_empty() {
        rec.line
            .map_or(format!("index {}", rec.index), |l| format!("line {l}"))
    } else {
        rec.id.clone()
    };
    let keys: Vec<String> = ["model", "prompt_version", "config", "domain", "difficulty"]
        .iter()
        .filter_map(|k| rec.group.get(k).map(str::to_owned))
        .collect();
    let classname = if keys.is_empty() {
        suite.name.clone()
    } else {
        format!("{}.{}", suite.name, group_key(&keys))
    };
    let seconds = rec.latency_ms / 1000.0;
    let reason = rec.reason.as_deref().unwrap_or("");
    match rec.outcome {
        Outcome::Ok if rec.passed => cases.pass(&classname, &name, seconds),
        Outcome::Ok => {
            let values: Vec<String> = suite
                .gates
                .iter()
                .filter(|g| rec.fail_tags.contains(&g.tag))
                .map(|g| {
                    format!(
                        "{}: {} = {} ({} {})",
                        g.tag,
                        g.metric,
                        fmt(rec.value(&g.metric)),
                        op(g.op),
                        g.threshold
                    )
                })
                .collect();
            let message = rec.fail_tags.join(", ");
            cases.fail(
                &classname,
                &name,
                seconds,
                "gate",
                &message,
                &values.join("\n"),
            );
        }
        Outcome::Failed => cases.error(&classname, &name, seconds, reason),
        Outcome::Skipped => cases.skip(&classname, &name, reason),
    }
}

/// One case per run gate.
fn gate_cases(input: &ReportInput<'_>) -> Cases {
    let classname = format!("{}.run_gates", input.suite.name);
    let mut cases = Cases::default();
    for check in input.gate_checks() {
        if check.passed {
            cases.pass(&classname, &check.name, 0.0);
        } else {
            let message = format!(
                "{} = {} (threshold {})",
                check.name,
                fmt(check.value),
                check.threshold
            );
            cases.fail(&classname, &check.name, 0.0, "run_gate", &message, "");
        }
    }
    cases
}

/// One case per group of each grouping, failing below the run's `min_pass_rate`.
fn group_cases(input: &ReportInput<'_>) -> Cases {
    let (suite, agg) = (input.suite, input.agg);
    let min = suite.run_gates.min_pass_rate;
    let mut cases = Cases::default();
    for (grouping, groups) in agg.grouped() {
        let classname = format!("{}.{}", suite.name, grouping.name);
        for (parts, group) in groups {
            let name: Vec<String> = grouping
                .keys
                .iter()
                .zip(&parts)
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            let name = name.join(", ");
            let rate = group.pass_rate();
            if rate.unwrap_or(0.0) >= min {
                cases.pass(&classname, &name, 0.0);
            } else {
                let message = format!(
                    "pass rate {} below min_pass_rate {min} ({} of {} passed)",
                    fmt(rate),
                    group.passed,
                    group.total()
                );
                cases.fail(&classname, &name, 0.0, "group", &message, "");
            }
        }
    }
    cases
}

fn fmt(x: Option<f64>) -> String {
    x.map_or("null".into(), |x| format!("{x:.4}"))
}

fn op(op: evalfleet_model::gate::GateOp) -> &'static str {
    match op {
        evalfleet_model::gate::GateOp::Below => "must not be below",
        evalfleet_model::gate::GateOp::Above => "must not be above",
    }
}
