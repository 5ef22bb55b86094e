//! `junit.xml`: one test case per example, so CI systems show evaluation failures the way they
//! show test failures. Gate failures are `<failure>`, processing failures `<error>`, skipped
//! records `<skipped>`; the counts equal the report's.

use evalfleet_model::record::Outcome;
use evalfleet_model::text::escape;

use super::{group_key, ReportError, ReportInput, Sink};

pub(super) fn write(w: &mut Sink<'_>, input: &ReportInput<'_>) -> Result<(), ReportError> {
    let ReportInput {
        info,
        suite,
        agg,
        items,
    } = *input;
    let t = &agg.totals;
    let gate_failures = agg.all.ok - agg.all.passed;
    w.put(&format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"evalfleet\" tests=\"{}\" failures=\"{gate_failures}\" errors=\"{}\" skipped=\"{}\" time=\"{:.3}\">\n",
        t.examples, t.failed, t.skipped, info.duration_seconds
    ))?;
    w.put(&format!(
        "  <testsuite name=\"{}\" id=\"{}\" tests=\"{}\" failures=\"{gate_failures}\" errors=\"{}\" skipped=\"{}\" time=\"{:.3}\" timestamp=\"{}\">\n",
        escape(&suite.name), escape(&info.id), t.examples, t.failed, t.skipped, info.duration_seconds, escape(&info.started_at)
    ))?;
    items.for_each_item(None, &mut |rec| {
        let name = if rec.id.is_empty() { rec.line.map_or(format!("index {}", rec.index), |l| format!("line {l}")) } else { rec.id.clone() };
        let keys: Vec<String> = ["model", "prompt_version", "config", "domain", "difficulty"]
            .iter()
            .filter_map(|k| rec.group.get(k).map(str::to_owned))
            .collect();
        let classname = if keys.is_empty() { suite.name.clone() } else { format!("{}.{}", suite.name, group_key(&keys)) };
        let mut case = format!(
            "    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3}\"",
            escape(&classname),
            escape(&name),
            rec.latency_ms / 1000.0
        );
        match rec.outcome {
            Outcome::Ok if rec.passed => case.push_str("/>\n"),
            Outcome::Ok => {
                let values: Vec<String> = suite
                    .gates
                    .iter()
                    .filter(|g| rec.fail_tags.contains(&g.tag))
                    .map(|g| format!("{}: {} = {} ({} {})", g.tag, g.metric, fmt(rec.value(&g.metric)), op(g.op), g.threshold))
                    .collect();
                case.push_str(&format!(
                    ">\n      <failure type=\"gate\" message=\"{}\">{}</failure>\n    </testcase>\n",
                    escape(&rec.fail_tags.join(", ")),
                    escape(&values.join("\n"))
                ));
            }
            Outcome::Failed => case.push_str(&format!(
                ">\n      <error type=\"failed\" message=\"{}\"/>\n    </testcase>\n",
                escape(rec.reason.as_deref().unwrap_or(""))
            )),
            Outcome::Skipped => case.push_str(&format!(
                ">\n      <skipped message=\"{}\"/>\n    </testcase>\n",
                escape(rec.reason.as_deref().unwrap_or(""))
            )),
        }
        w.put(&case)
    })?;
    w.put("  </testsuite>\n</testsuites>\n")
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
