//! `report.json`: the machine-readable report, in the seed's shape for each suite (docs/DESIGN.md §2.1,
//! §2.2, §2.4, §9), with totals, gates, judge usage and the suite snapshot beside it.

use std::fs::File;
use std::io::{self, BufWriter, Seek, SeekFrom, Write};

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::aggregate::{GroupAcc, RunAggregator};
use evalfleet_model::num::round2;
use evalfleet_model::record::{Outcome, ResultRecord};
use evalfleet_model::stats::Stats;
use evalfleet_model::suite::SuiteKind;
use evalfleet_suites::suite::Suite;

use super::{human_report, recommendations, ReportError, ReportInput, Sink};

/// A group's key as the report names it: parts joined with `|` (`gpt-4o|v1.2`).
pub fn group_key(parts: &[String]) -> String {
    parts.join("|")
}

pub(super) fn write(w: &mut Sink<'_>, input: &ReportInput<'_>) -> Result<(), ReportError> {
    let ReportInput {
        info, suite, agg, ..
    } = *input;
    w.put("{\"run\":")?;
    w.json(info)?;
    w.put(",\"totals\":")?;
    w.json(&agg.totals)?;
    w.put(",\"gates\":")?;
    w.json(&json!({"passed": input.gates_passed(), "checks": input.gate_checks()}))?;
    if input.items_inline() {
        write_item_lists(w, input)?;
    } else {
        // A run too large to list: every result is a row of items.parquet.
        w.put(",\"items_file\":")?;
        w.json(evalfleet_items::FILE_NAME)?;
    }
    w.put(",\"aggregates\":")?;
    w.json(&aggregates(suite, agg))?;
    w.put(",\"judge\":")?;
    w.json(&judge_block(info, agg))?;
    if let Some(target) = &agg.target {
        w.put(",\"target\":")?;
        w.json(&target.summary())?;
    }
    w.put(",\"recommendations\":")?;
    w.json(&recommendations(suite, agg))?;
    w.put(",\"config\":")?;
    w.json(suite)?;
    w.put("}\n")
}

/// The items (`results` in the seed's shape for support-judge, else `items`), then the
/// `skipped` and `failed` lists.
fn write_item_lists(w: &mut Sink<'_>, input: &ReportInput<'_>) -> Result<(), ReportError> {
    let (suite, items) = (input.suite, input.items);
    let items_key = if suite.kind == SuiteKind::SupportJudge {
        "results"
    } else {
        "items"
    };
    w.put(&format!(",\"{items_key}\":["))?;
    // One pass over the items: the evaluated ones go straight into the file; the skipped and
    // failed entries, which the report lists after them, wait in spill files.
    let mut first = true;
    let (mut skipped, mut failed) = (Spill::default(), Spill::default());
    items.for_each_item(None, &mut |rec| match rec.outcome {
        Outcome::Ok => {
            if !std::mem::take(&mut first) {
                w.put(",")?;
            }
            match suite.kind {
                SuiteKind::SupportJudge => w.json(&seed_result(suite, rec)),
                _ => write_item(w, rec),
            }
        }
        Outcome::Skipped => skipped.push(&skipped_entry(rec)).map_err(|e| w.error(e)),
        Outcome::Failed => failed.push(&failed_entry(rec)).map_err(|e| w.error(e)),
    })?;
    w.put("],\"skipped\":[")?;
    skipped.copy_into(w)?;
    w.put("],\"failed\":[")?;
    failed.copy_into(w)?;
    w.put("]")
}

/// A non-seed item: the record as stored, without the dataset record a target run's record
/// carries for `outputs.jsonl` (the item has its fields already, and `outputs` beside them).
fn write_item(w: &mut Sink<'_>, rec: &ResultRecord) -> Result<(), ReportError> {
    if rec.dataset_record.is_none() {
        return w.json(rec);
    }
    let mut item = serde_json::to_value(rec).map_err(|e| w.error(e.into()))?;
    if let Some(fields) = item.as_object_mut() {
        fields.remove("dataset_record");
    }
    w.json(&item)
}

/// A skipped record as `report.json` lists it: where it was, why, and its id when it had one.
fn skipped_entry(rec: &ResultRecord) -> Value {
    let mut entry = Map::new();
    match rec.line {
        Some(line) => entry.insert("line".into(), json!(line)),
        None => entry.insert("index".into(), json!(rec.index)),
    };
    entry.insert("reason".into(), json!(rec.reason));
    if !rec.id.is_empty() {
        entry.insert("id".into(), json!(rec.id));
    }
    Value::Object(entry)
}

/// A failed example as `report.json` lists it.
fn failed_entry(rec: &ResultRecord) -> Value {
    let mut entry =
        json!({"id": rec.id, "index": rec.index, "reason": rec.reason, "attempts": rec.attempts});
    if let Some(status) = rec.details.get("last_status") {
        entry["last_status"] = status.clone();
    }
    entry
}

/// The entries of one JSON array, comma-separated, in an anonymous temporary file created on
/// the first entry (a run may skip millions of records; most skip none).
#[derive(Default)]
struct Spill {
    file: Option<BufWriter<File>>,
}

impl Spill {
    fn push(&mut self, entry: &Value) -> io::Result<()> {
        let file = match &mut self.file {
            Some(file) => {
                file.write_all(b",")?;
                file
            }
            None => self.file.insert(BufWriter::new(tempfile::tempfile()?)),
        };
        serde_json::to_writer(file, entry).map_err(io::Error::from)
    }

    fn copy_into(self, w: &mut Sink<'_>) -> Result<(), ReportError> {
        let Some(file) = self.file else {
            return Ok(());
        };
        let mut file = file.into_inner().map_err(|e| w.error(e.into_error()))?;
        file.seek(SeekFrom::Start(0)).map_err(|e| w.error(e))?;
        w.copy_from(&mut file)
    }
}

/// The judges' work: calls made, answers from the cache, tokens and cost, unscored replies,
/// and the run's inter-judge agreement per dimension when a panel judged.
fn judge_block(info: &super::RunInfo, agg: &RunAggregator) -> Value {
    let agreement: Map<String, Value> = agg
        .dimensions()
        .iter()
        .zip(&agg.all.agreement)
        .filter_map(|(d, a)| a.as_ref().map(|a| (d.clone(), json!(a.summary()))))
        .collect();
    let mut block = json!({
        "mode": info.judge, "calls": agg.judge_calls, "cache_hits": agg.cache_hits,
        "usage": agg.usage, "unscored": agg.totals.unscored,
    });
    if !agreement.is_empty() {
        block["agreement"] = Value::Object(agreement);
    }
    block
}

/// One `results` entry in the seed's shape: id, model, prompt_version, then each dimension as
/// `{score, reasoning}` (null when no judge ran), plus what users need beside it.
fn seed_result<'a>(suite: &'a Suite, rec: &'a ResultRecord) -> SeedResult<'a> {
    SeedResult { suite, rec }
}

/// A support-judge item in the seed's shape, serialised straight from the record: a million
/// of them go into one report, and building each as a JSON value first (cloning its texts)
/// cost a third of the time the file took.
struct SeedResult<'a> {
    suite: &'a Suite,
    rec: &'a ResultRecord,
}

/// The keys of a seed item after its dimensions, in order (`metadata`, `inputs`, `outputs`,
/// `target` and `epochs` only when the record has them).
const TAIL: [&str; 12] = [
    "index",
    "overall_score",
    "passed",
    "fail_tags",
    "usage",
    "latency_ms",
    "attempts",
    "metadata",
    "inputs",
    "outputs",
    "target",
    "epochs",
];

impl Serialize for SeedResult<'_> {
    /// Keys as a JSON object built key by key would hold them: `id`, `model`,
    /// `prompt_version`, the dimensions, then [`TAIL`]. A dimension named like a head key takes
    /// that key's value; one named like a tail key gives that key its place.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let (suite, rec) = (self.suite, self.rec);
        let is_dim = |key: &str| suite.dimensions.iter().any(|d| d.name == key);
        let mut m = s.serialize_map(None)?;
        for (key, value) in [
            ("id", Some(rec.id.as_str())),
            ("model", rec.group.model.as_deref()),
            ("prompt_version", rec.group.prompt_version.as_deref()),
        ] {
            if is_dim(key) {
                m.serialize_entry(key, &rec.scores.get(key))?;
            } else {
                m.serialize_entry(key, &value)?;
            }
        }
        for d in &suite.dimensions {
            let key = d.name.as_str();
            if ["id", "model", "prompt_version"].contains(&key) {
                continue;
            }
            if !(TAIL.contains(&key) && tail_entry(&mut m, key, rec)?) {
                m.serialize_entry(key, &rec.scores.get(key))?;
            }
        }
        for key in TAIL.iter().filter(|k| !is_dim(k)) {
            tail_entry(&mut m, key, rec)?;
        }
        m.end()
    }
}

/// Writes tail key `key` of `rec`; false when the record has none (`metadata`, `inputs`).
fn tail_entry<M: serde::ser::SerializeMap>(
    m: &mut M,
    key: &str,
    rec: &ResultRecord,
) -> Result<bool, M::Error> {
    match key {
        "index" => m.serialize_entry(key, &rec.index)?,
        "overall_score" => m.serialize_entry(key, &rec.overall_score)?,
        "passed" => m.serialize_entry(key, &rec.passed)?,
        "fail_tags" => m.serialize_entry(key, &rec.fail_tags)?,
        "usage" => m.serialize_entry(key, &rec.usage)?,
        "latency_ms" => m.serialize_entry(key, &rec.latency_ms)?,
        "attempts" => m.serialize_entry(key, &rec.attempts)?,
        "outputs" => match &rec.outputs {
            Some(outputs) => m.serialize_entry(key, outputs)?,
            None => return Ok(false),
        },
        "target" => match &rec.target {
            Some(target) => m.serialize_entry(key, target)?,
            None => return Ok(false),
        },
        "epochs" if rec.epochs.is_empty() => return Ok(false),
        "epochs" => m.serialize_entry(key, &rec.epochs)?,
        _ => match rec.details.get(key) {
            Some(v) => m.serialize_entry(key, v)?,
            None => return Ok(false),
        },
    }
    Ok(true)
}

fn aggregates(suite: &Suite, agg: &RunAggregator) -> Value {
    let mut out = suite_aggregates(suite, agg);
    if let (false, Some(fields)) = (agg.pairwise.is_empty(), out.as_object_mut()) {
        fields.insert("pairwise".into(), agg.pairwise.report(agg.groupings()));
    }
    if let Some(fields) = out.as_object_mut() {
        human_report::add_run_blocks(fields, agg);
    }
    if let (Some(epochs), Some(fields)) = (&agg.epochs, out.as_object_mut()) {
        let summary = epochs.summary();
        fields.insert("epochs".into(), json!(summary.epochs));
        fields.insert("pass_at_k".into(), json!(summary.pass_at_k));
        fields.insert("pass_all_k".into(), json!(summary.pass_all_k));
        fields.insert(
            "within_item_stddev".into(),
            json!(summary.within_item_stddev),
        );
    }
    out
}

/// Each suite's own aggregates, in the seed's shape.
fn suite_aggregates(suite: &Suite, agg: &RunAggregator) -> Value {
    match suite.kind {
        SuiteKind::SupportJudge => {
            let mut out = Map::new();
            for (grouping, groups) in agg.grouped() {
                let groups: Map<String, Value> = groups
                    .iter()
                    .map(|(k, g)| (group_key(k), seed_group(suite, agg, g)))
                    .collect();
                out.insert(grouping.name.clone(), Value::Object(groups));
            }
            out.insert("overall".into(), seed_group(suite, agg, &agg.all));
            Value::Object(out)
        }
        SuiteKind::RagLayers => rag_aggregates(suite, agg),
        SuiteKind::LogAnalysis => layered_aggregates(suite, agg),
        SuiteKind::Custom => custom_aggregates(suite, agg),
    }
}

/// A custom suite: the run block, each judge dimension's and each check's summary (with how
/// many items had it null), the top fail reasons, and the same per group.
fn custom_aggregates(suite: &Suite, agg: &RunAggregator) -> Value {
    let mut out = run_block(agg);
    out.insert("scores".into(), score_block(agg, &agg.all));
    out.insert("checks".into(), check_block(agg, &agg.all));
    out.insert("top_fail_reasons".into(), top_fail_reasons(suite, agg));
    for (grouping, groups) in agg.grouped() {
        let blocks: Map<String, Value> = groups
            .iter()
            .map(|(k, g)| {
                let mut block = json!({
                    "count": g.total(), "passed": g.passed, "failed": g.total() - g.passed,
                    "pass_rate": g.pass_rate(), "avg_overall_score": g.overall.mean(),
                    "scores": score_block(agg, g), "checks": check_block(agg, g),
                });
                human_report::add_group_block(&mut block, agg, g);
                (group_key(k), block)
            })
            .collect();
        out.insert(grouping.name.clone(), Value::Object(blocks));
    }
    Value::Object(out)
}

/// Each judge dimension's summary: scored values, unscored replies, and panel agreement.
fn score_block(agg: &RunAggregator, g: &GroupAcc) -> Value {
    let block: Map<String, Value> = agg
        .dimensions()
        .iter()
        .enumerate()
        .map(|(slot, name)| {
            let mut v = summary_json(g.scores.get(slot));
            v["unscored"] = json!(g.unscored.get(slot).copied().unwrap_or(0));
            if let Some(a) = g.agreement.get(slot).and_then(Option::as_ref) {
                v["agreement"] = json!(a.summary());
            }
            (name.clone(), v)
        })
        .collect();
    Value::Object(block)
}

/// Each check's summary, with `null`: the items whose check had no value (its field absent).
fn check_block(agg: &RunAggregator, g: &GroupAcc) -> Value {
    let block: Map<String, Value> = agg
        .metric_names()
        .iter()
        .enumerate()
        .map(|(slot, name)| {
            let stats = g.metrics.get(slot);
            let mut v = summary_json(stats);
            v["null"] = json!(g.ok - stats.map_or(0, |s| s.count));
            (name.clone(), v)
        })
        .collect();
    Value::Object(block)
}

/// A support-judge group: the seed's `{count, <dim>: {mean, min, max}}` with the mean rounded
/// half-to-even to 2 decimals, and the unrounded mean, spread and confidence beside it.
fn seed_group(suite: &Suite, agg: &RunAggregator, g: &GroupAcc) -> Value {
    let mut out = Map::new();
    out.insert("count".into(), json!(g.ok));
    for (slot, name) in agg.dimensions().iter().enumerate() {
        let stats = &g.scores[slot];
        let s = stats.summary();
        out.insert(
            name.clone(),
            json!({
                "mean": s.mean.map(round2), "min": s.min, "max": s.max,
                "mean_exact": s.mean, "stddev": s.stddev, "ci95": s.ci95,
                "scored": stats.count, "unscored": g.unscored[slot],
            }),
        );
        if let Some(agreement) = &g.agreement[slot] {
            out[name.as_str()]["agreement"] = json!(agreement.summary());
        }
    }
    // `min`/`max` print as integers for whole values, as the seed's do.
    let mut v = Value::Object(out);
    integerise_min_max(&mut v, suite);
    v["failed"] = json!(g.failed);
    v["passed"] = json!(g.passed);
    v["pass_rate"] = json!(g.pass_rate());
    human_report::add_group_block(&mut v, agg, g);
    v
}

fn integerise_min_max(v: &mut Value, suite: &Suite) {
    for d in &suite.dimensions {
        for key in ["min", "max"] {
            if let Some(x) = v[&d.name][key].as_f64() {
                if x.fract() == 0.0 && !d.unit {
                    v[&d.name][key] = json!(x as i64);
                }
            }
        }
    }
}

fn rag_aggregates(suite: &Suite, agg: &RunAggregator) -> Value {
    let mut out = run_block(agg);
    out.insert("avg_latency_ms".into(), json!(agg.system_latency_ms.mean()));
    let by_layer: Map<String, Value> = agg
        .metric_names()
        .iter()
        .enumerate()
        .map(|(slot, name)| (layer_key(name), json!(agg.all.metric(slot).mean)))
        .collect();
    out.insert("by_layer".into(), Value::Object(by_layer));
    out.insert("top_fail_reasons".into(), top_fail_reasons(suite, agg));
    for (grouping, groups) in agg.grouped() {
        out.insert(grouping.name.clone(), group_blocks(agg, &groups));
    }
    Value::Object(out)
}

fn layered_aggregates(suite: &Suite, agg: &RunAggregator) -> Value {
    let mut out = run_block(agg);
    out.insert("metrics".into(), metric_block(agg, &agg.all));
    out.insert("top_fail_reasons".into(), top_fail_reasons(suite, agg));
    for (grouping, groups) in agg.grouped() {
        out.insert(grouping.name.clone(), group_blocks(agg, &groups));
    }
    Value::Object(out)
}

/// The seed-003 run block: total = ok + failed, passed = no fail tag, failed = total − passed.
fn run_block(agg: &RunAggregator) -> Map<String, Value> {
    let g = &agg.all;
    let mut out = Map::new();
    out.insert("total".into(), json!(g.total()));
    out.insert("passed".into(), json!(g.passed));
    out.insert("failed".into(), json!(g.total() - g.passed));
    out.insert("pass_rate".into(), json!(g.pass_rate()));
    out.insert("avg_overall_score".into(), json!(g.overall.mean()));
    out.insert(
        "tokens".into(),
        json!({"input": agg.usage.input_tokens, "output": agg.usage.output_tokens,
               "total": agg.usage.input_tokens + agg.usage.output_tokens}),
    );
    out.insert("cost_usd".into(), json!(agg.usage.cost_usd));
    out
}

fn top_fail_reasons(suite: &Suite, agg: &RunAggregator) -> Value {
    Value::Object(
        agg.top_fail_reasons(suite)
            .into_iter()
            .map(|(t, n)| (t, json!(n)))
            .collect(),
    )
}

fn group_blocks(agg: &RunAggregator, groups: &[(Vec<String>, &GroupAcc)]) -> Value {
    let blocks: Map<String, Value> = groups
        .iter()
        .map(|(k, g)| {
            let mut block = json!({
                "count": g.total(), "passed": g.passed, "failed": g.total() - g.passed,
                "pass_rate": g.pass_rate(), "avg_overall_score": g.overall.mean(),
                "overall_score": g.overall.summary(), "metrics": metric_block(agg, g),
            });
            human_report::add_group_block(&mut block, agg, g);
            (group_key(k), block)
        })
        .collect();
    Value::Object(blocks)
}

fn metric_block(agg: &RunAggregator, g: &GroupAcc) -> Value {
    let block: Map<String, Value> = agg
        .metric_names()
        .iter()
        .enumerate()
        .map(|(slot, name)| (name.clone(), summary_json(g.metrics.get(slot))))
        .collect();
    Value::Object(block)
}

fn summary_json(stats: Option<&Stats>) -> Value {
    #[derive(Serialize)]
    struct Empty {
        count: u64,
        mean: Option<f64>,
    }
    match stats {
        Some(s) => serde_json::to_value(s.summary()).unwrap_or(Value::Null),
        None => serde_json::to_value(Empty {
            count: 0,
            mean: None,
        })
        .unwrap_or(Value::Null),
    }
}

/// `entity_link_f1` → `l1_entity_link_f1`: the seed's `by_layer` keys (docs/DESIGN.md §9).
pub(crate) fn layer_key(metric: &str) -> String {
    let layer = match metric {
        "entity_link_f1" | "concept_map_f1" | "constraint_extraction_f1" => "l1",
        "context_recall" | "context_precision" | "mrr" => "l2",
        "hits_at_k" | "kg_edge_f1" => "l3",
        "constraint_violation_rate" | "type_consistency_rate" => "l4",
        _ => "l5",
    };
    format!("{layer}_{metric}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregate::tests::support_record;
    use evalfleet_model::suite::SuiteKind;

    /// A seed item as a JSON object built key by key: what [`SeedResult`] must write.
    fn built(suite: &Suite, rec: &ResultRecord) -> Value {
        let mut out = Map::new();
        out.insert("id".into(), json!(rec.id));
        out.insert("model".into(), json!(rec.group.model));
        out.insert("prompt_version".into(), json!(rec.group.prompt_version));
        for d in &suite.dimensions {
            out.insert(d.name.clone(), json!(rec.scores.get(&d.name)));
        }
        for key in TAIL {
            let v = match key {
                "index" => json!(rec.index),
                "overall_score" => json!(rec.overall_score),
                "passed" => json!(rec.passed),
                "fail_tags" => json!(rec.fail_tags),
                "usage" => json!(rec.usage),
                "latency_ms" => json!(rec.latency_ms),
                "attempts" => json!(rec.attempts),
                "outputs" => match &rec.outputs {
                    Some(o) => json!(o),
                    None => continue,
                },
                "target" => match &rec.target {
                    Some(t) => json!(t),
                    None => continue,
                },
                "epochs" if rec.epochs.is_empty() => continue,
                "epochs" => json!(rec.epochs),
                _ => match rec.details.get(key) {
                    Some(v) => v.clone(),
                    None => continue,
                },
            };
            out.insert(key.into(), v);
        }
        Value::Object(out)
    }

    #[test]
    fn a_seed_item_is_written_as_the_object_built_key_by_key() {
        let mut suite = Suite::builtin(SuiteKind::SupportJudge);
        let mut rec = support_record(3, "t3", "gpt-4o", "v1", Some(4.0), None);
        rec.details
            .insert("inputs".into(), json!({"ticket": "VPN \"drops\""}));
        let text = |suite: &Suite, rec: &ResultRecord| {
            serde_json::to_string(&seed_result(suite, rec)).unwrap()
        };
        assert_eq!(text(&suite, &rec), built(&suite, &rec).to_string());
        rec.outputs = Some(
            json!({"response": "Renew it."})
                .as_object()
                .unwrap()
                .clone(),
        );
        rec.target = Some(evalfleet_model::record::TargetCall {
            name: "bot".into(),
            attempts: 1,
            ..Default::default()
        });
        assert_eq!(text(&suite, &rec), built(&suite, &rec).to_string());
        // Dimensions named like the item's own keys, before and after the dimensions.
        let dim = suite.dimensions[0].clone();
        for name in ["model", "passed", "metadata", "inputs"] {
            let mut d = dim.clone();
            d.name = name.into();
            suite.dimensions.push(d);
        }
        assert_eq!(text(&suite, &rec), built(&suite, &rec).to_string());
    }
}
