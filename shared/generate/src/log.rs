//! log-analysis examples (docs/DESIGN.md §2.3): agent answers about ground-truth log scenarios.
//!
//! Why: the log-analysis suite parses what an agent wrote (fenced JSON, JSON in prose, or
//! narrative only) and compares it with the scenario's ground truth. The bundled example and
//! the benchmarks need answers that exercise every parser path and every metric, with quality
//! that depends on the agent configuration and model, as in the seed project's experiments:
//! a skill level per (config, model) drives how many events, timeline entries, metrics and
//! anomalies an answer gets right, and [`FORMATS`] decides how it is written down.

use super::{obj, pick, rng, str_list, weighted};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::{Map, Value};
use std::fmt::Write;

#[rustfmt::skip]
pub(crate) const CONFIGS: [&str; 4] =
    ["baseline_single_agent", "sequential_two_agent", "sequential_three_agent", "hierarchical_supervisor"];
pub(crate) const MODELS: [&str; 3] = ["gpt-4o-mini", "gpt-4o", "claude-sonnet-4-20250514"];
const CONFIG_SKILL: [f64; 4] = [0.55, 0.65, 0.72, 0.80];
const MODEL_SKILL: [f64; 3] = [-0.10, 0.0, 0.05];

/// Output formats per configuration: fenced ```json block + narrative, JSON embedded in prose
/// without a fence, narrative only, malformed fenced JSON. The single agent most often forgets
/// the structured block; gpt-4o-mini adds 3 points of malformed JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    Fenced,
    Prose,
    Freeform,
    Malformed,
}
const FORMATS: [Format; 4] = [
    Format::Fenced,
    Format::Prose,
    Format::Freeform,
    Format::Malformed,
];
#[rustfmt::skip]
const FORMAT_WEIGHTS: [[f64; 4]; 4] =
    [[0.60, 0.10, 0.25, 0.05], [0.76, 0.10, 0.10, 0.04], [0.76, 0.10, 0.10, 0.04], [0.80, 0.08, 0.08, 0.04]];

struct Event {
    event_type: String,
    instance_id: String,
    timestamp: String,
    description: String,
    line: Option<u64>,
}

struct Scenario {
    path: String,
    name: String,
    events: Vec<Event>,
    timeline: Vec<(String, String)>,
    metrics: Vec<(String, Value)>,
    anomalies: Vec<(String, String, String)>,
    compliance: Option<String>,
    findings: Vec<String>,
    root_cause: Option<String>,
}

/// Streams `n` log-analysis examples `{id, scenario, output, config, model}`, deterministic for
/// `seed`: scenario-major over (scenario, config, model), cycling, so `12 × scenarios`
/// examples cover every combination once. `scenario` is the path exactly as given. No
/// scenarios give nothing.
pub fn log_analysis(
    scenarios: &[(String, Value)],
    n: u64,
    seed: u64,
) -> impl Iterator<Item = Value> {
    let scenarios: Vec<Scenario> = scenarios.iter().map(|(p, v)| prepare(p, v)).collect();
    let per = (CONFIGS.len() * MODELS.len()) as u64;
    let n = if scenarios.is_empty() { 0 } else { n };
    let mut rng = rng(seed);
    (0..n).map(move |i| {
        let combo = i % (per * scenarios.len() as u64);
        let s = (combo / per) as usize;
        let (c, m) = ((combo / 3 % 4) as usize, (combo % 3) as usize);
        let (output, _) = answer(&mut rng, &scenarios[s], c, m);
        obj([
            ("id", Value::String(format!("log-{:06}", i + 1))),
            ("scenario", Value::String(scenarios[s].path.clone())),
            ("output", Value::String(output)),
            ("config", Value::from(CONFIGS[c])),
            ("model", Value::from(MODELS[m])),
        ])
    })
}

fn text(v: &Value, k: &str) -> String {
    match v.get(k) {
        Some(Value::String(s)) => s.clone(),
        _ => String::new(),
    }
}

fn prepare(path: &str, v: &Value) -> Scenario {
    let list = |k: &str| {
        v.get(k)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let events = list("key_events")
        .iter()
        .map(|e| Event {
            event_type: text(e, "event_type"),
            instance_id: text(e, "instance_id"),
            timestamp: text(e, "timestamp"),
            description: text(e, "description"),
            line: e.get("line_number").and_then(Value::as_u64),
        })
        .filter(|e| !e.event_type.is_empty())
        .collect();
    // Ground-truth entries marked as injected errors are not in the logs an agent reads.
    let mut timeline: Vec<(String, String)> = list("timeline")
        .iter()
        .map(|t| (text(t, "time"), text(t, "event")))
        .filter(|(_, e)| !e.is_empty() && !e.to_lowercase().contains("injected"))
        .collect();
    timeline.sort_by(|a, b| a.0.cmp(&b.0));
    let metrics = v
        .get("metrics")
        .and_then(Value::as_object)
        .map_or(Vec::new(), |m| {
            m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
        });
    let anomalies = list("anomalies")
        .iter()
        .map(|a| (text(a, "type"), text(a, "description"), text(a, "severity")))
        .filter(|a| !a.0.is_empty())
        .collect();
    let compliance = v
        .get("compliance_evaluation")
        .and_then(Value::as_object)
        .and_then(|c| {
            c.values()
                .find_map(|i| i.get("status").and_then(Value::as_str))
        })
        .map(str::to_owned);
    Scenario {
        path: path.to_owned(),
        name: text(v, "scenario_name"),
        events,
        timeline,
        metrics,
        anomalies,
        compliance,
        findings: str_list(v, "expected_agent_findings"),
        root_cause: v
            .get("root_cause_analysis")
            .map(|r| text(r, "primary_cause"))
            .filter(|s| !s.is_empty()),
    }
}

/// A paraphrase that keeps ≥ 50% word overlap: the unit or the first word dropped
/// (`total_build_time_seconds` → `total_build_time`, `api_requests_total` → `requests_total`).
fn paraphrase(name: &str) -> String {
    let parts: Vec<&str> = name.split('_').collect();
    match parts.split_last() {
        Some((unit, rest))
            if rest.len() >= 2 && ["seconds", "minutes", "ms", "count"].contains(unit) =>
        {
            rest.join("_")
        }
        _ if parts.len() >= 3 => parts[1..].join("_"),
        _ => format!("observed_{name}"),
    }
}

/// What an agent got right or wrong, before it is written down.
struct Parts<'s> {
    events: Vec<Value>,
    noted: Vec<&'s Event>,
    timeline: Vec<(String, String)>,
    metrics: Map<String, Value>,
    anomalies: Vec<Value>,
    status: Option<&'s str>,
}

/// Agent output text and its format, for scenario `s`, config `c`, model `m`.
fn answer(rng: &mut ChaCha8Rng, s: &Scenario, c: usize, m: usize) -> (String, Format) {
    let skill = (CONFIG_SKILL[c] + MODEL_SKILL[m] + rng.random_range(-0.1..0.1)).clamp(0.15, 0.97);
    let mut fw = FORMAT_WEIGHTS[c];
    if m == 0 {
        fw[3] += 0.03;
    }
    let format = FORMATS[weighted(rng, &fw)];
    let a = draw(rng, s, skill);
    let narrative = narrative(rng, s, &a, format == Format::Freeform);
    let timeline = a.timeline.iter().map(|(t, e)| {
        obj([
            ("time", Value::from(t.as_str())),
            ("event", Value::from(e.as_str())),
        ])
    });
    let mut block = obj([
        ("events_detected", Value::Array(a.events)),
        ("timeline", Value::Array(timeline.collect())),
        ("metrics", Value::Object(a.metrics)),
        ("anomalies", Value::Array(a.anomalies)),
    ]);
    if let Some(st) = a.status {
        block["compliance_status"] = Value::from(st);
    }
    let out = match format {
        Format::Fenced => format!("```json\n{}\n```\n\n{narrative}", pretty(&block)),
        Format::Prose if rng.random_bool(0.5) => {
            format!("Here is my structured analysis: {block}\n\n{narrative}")
        }
        Format::Prose => format!("{narrative}\n\nStructured summary (JSON): {block}"),
        Format::Freeform => narrative,
        Format::Malformed => {
            let json = pretty(&block);
            let broken = match rng.random_range(0..3) {
                0 => json[..json.len() - 2].to_owned(),
                1 => json.replacen("\n  \"timeline\"", ",\n  \"timeline\"", 1),
                _ => json.replacen("\"metrics\":", "metrics:", 1),
            };
            format!("```json\n{broken}\n```\n\n{narrative}")
        }
    };
    (out, format)
}

/// Draws the agent's findings: each ground-truth item is kept with a probability that grows
/// with `skill`, and kept items are sometimes paraphrased, truncated or slightly wrong.
fn draw<'s>(rng: &mut ChaCha8Rng, s: &'s Scenario, skill: f64) -> Parts<'s> {
    let keep = |rng: &mut ChaCha8Rng, base: f64| rng.random_bool((base + 0.6 * skill).min(1.0));
    let mut a = Parts {
        events: Vec::new(),
        noted: Vec::new(),
        timeline: Vec::new(),
        metrics: Map::new(),
        anomalies: Vec::new(),
        status: None,
    };
    for e in &s.events {
        if !keep(rng, 0.32) {
            continue;
        }
        a.noted.push(e);
        let mut o = Map::new();
        let ty = match rng.random_range(0..10) {
            0 => e.event_type.replace('_', " "),
            1 if e.event_type.contains('_') => {
                format!("{}_event", e.event_type.split('_').next().unwrap_or("log"))
            }
            _ => e.event_type.clone(),
        };
        o.insert("event_type".into(), Value::String(ty));
        let id = match rng.random_range(0..20) {
            0..12 => Some(e.instance_id.as_str()),
            12..17 => e.instance_id.get(..8),
            _ => None,
        };
        if let Some(id) = id.filter(|id| !id.is_empty()) {
            o.insert("instance_id".into(), Value::from(id));
        }
        let ts = match rng.random_range(0..10) {
            0..5 => Some(e.timestamp.as_str()),
            5..8 => e.timestamp.get(11..19),
            _ => None,
        };
        if let Some(ts) = ts.filter(|t| !t.is_empty()) {
            o.insert("timestamp".into(), Value::from(ts));
        }
        o.insert("description".into(), Value::from(e.description.as_str()));
        let conf = if rng.random_bool(skill) {
            "high"
        } else {
            pick(rng, &["medium", "low"])
        };
        o.insert("confidence".into(), Value::from(conf));
        if let (Some(l), true) = (e.line, rng.random_bool(0.4)) {
            o.insert("line_number".into(), Value::from(l));
        }
        a.events.push(Value::Object(o));
    }
    if rng.random_bool((1.0 - skill) * 0.5) {
        let desc = "Routine Nova API request logged";
        a.events.push(obj([
            ("event_type", "api_request".into()),
            ("description", desc.into()),
            ("confidence", "low".into()),
        ]));
    }
    for (time, ev) in &s.timeline {
        if !keep(rng, 0.35) {
            continue;
        }
        let ev = if rng.random_bool(0.3) {
            format!("{} observed", ev.to_lowercase())
        } else {
            ev.clone()
        };
        a.timeline.push((time.clone(), ev));
    }
    if a.timeline.len() >= 2 && rng.random_bool((1.0 - skill) * 0.4) {
        let k = rng.random_range(0..a.timeline.len() - 1);
        a.timeline.swap(k, k + 1);
    }
    for (k, (name, value)) in s.metrics.iter().enumerate() {
        if !keep(rng, 0.3) {
            continue;
        }
        let name = match rng.random_range(0..20) {
            0..12 => name.clone(),
            12..17 => paraphrase(name),
            _ => format!("metric_{}", k + 1),
        };
        let value = match (value.as_f64(), rng.random_range(0..20)) {
            (Some(x), 14..17) => Value::from((x * 104.0).round() / 100.0),
            (Some(x), 17..) => Value::from(((x * 1.6 + 1.0) * 100.0).round() / 100.0),
            _ => value.clone(),
        };
        a.metrics.insert(name, value);
    }
    for (ty, desc, sev) in &s.anomalies {
        if !keep(rng, 0.3) {
            continue;
        }
        let ty = match rng.random_range(0..10) {
            0..7 => ty.clone(),
            7 => ty.replace('_', " "),
            _ => format!("possible_{}", ty.split('_').next_back().unwrap_or("issue")),
        };
        a.anomalies.push(obj([
            ("type", Value::String(ty)),
            ("description", desc.as_str().into()),
            ("severity", sev.as_str().into()),
        ]));
    }
    if s.anomalies.is_empty() && rng.random_bool((1.0 - skill) * 0.3) {
        let desc = "Spawn took longer than usual";
        a.anomalies.push(obj([
            ("type", "slow_spawn".into()),
            ("description", desc.into()),
            ("severity", "low".into()),
        ]));
    }
    a.status = match &s.compliance {
        Some(gt) if rng.random_bool(0.5 + 0.5 * skill) => Some(gt.as_str()),
        _ if rng.random_bool(0.1) => None,
        _ => Some(pick(rng, &["COMPLIANT", "DEGRADED", "NON_COMPLIANT"])),
    };
    a
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

/// The prose part of an answer; `detailed` (narrative-only answers) adds event types, instance
/// prefixes and the ordered sequence so the freeform rules have something to find.
fn narrative(rng: &mut ChaCha8Rng, s: &Scenario, a: &Parts, detailed: bool) -> String {
    let mut out = String::with_capacity(1024);
    out.push_str(pick(
        rng,
        &[
            "## Analysis\n\n",
            "Summary of findings:\n\n",
            "",
            "I analysed the log excerpt. ",
        ],
    ));
    if !s.name.is_empty() {
        let _ = write!(out, "This excerpt covers the scenario \"{}\". ", s.name);
    }
    if a.noted.is_empty() {
        out.push_str("I could not identify specific lifecycle events with confidence. ");
    }
    for e in &a.noted {
        let time = e.timestamp.get(11..19).unwrap_or(&e.timestamp);
        if !detailed {
            let _ = write!(out, "{} at {time}. ", e.description);
            continue;
        }
        let ty = e.event_type.replace('_', " ");
        let _ = write!(
            out,
            "At {time} the log shows {ty} ({})",
            e.description.to_lowercase()
        );
        match e.instance_id.get(..8) {
            Some(id) => {
                let _ = write!(out, " for instance {id}. ");
            }
            None => out.push_str(". "),
        }
    }
    if detailed && a.timeline.len() >= 2 {
        let steps: Vec<String> = a.timeline.iter().map(|(t, e)| format!("{t} {e}")).collect();
        let _ = write!(out, "\n\nSequence: {}.", steps.join(", then "));
    }
    let metrics: Vec<String> = a
        .metrics
        .iter()
        .map(|(k, v)| match v {
            Value::String(text) => format!("{} = {text}", k.replace('_', " ")),
            _ => format!("{} = {v}", k.replace('_', " ")),
        })
        .collect();
    if !metrics.is_empty() {
        let _ = write!(out, "\n\nKey metrics: {}.", metrics.join("; "));
    }
    if a.anomalies.is_empty() {
        out.push_str("\n\nNo anomalies were found in this window.");
    }
    for an in &a.anomalies {
        let ty = an["type"].as_str().unwrap_or("").replace('_', " ");
        let desc = an["description"]
            .as_str()
            .unwrap_or("")
            .trim_end_matches('.');
        let _ = write!(out, "\n\nWarning: {ty} issue. {desc}.");
    }
    if let (Some(f), true) = (s.findings.first(), detailed && rng.random_bool(0.5)) {
        let _ = write!(out, " {f}.");
    }
    if let (Some(rc), true) = (&s.root_cause, rng.random_bool(0.6)) {
        let _ = write!(out, "\n\nLikely root cause: {}.", rc.to_lowercase());
    }
    out.push_str(match a.status {
        Some("COMPLIANT") => "\n\nOverall the system is compliant: the observed timings are within threshold.",
        Some("DEGRADED") => "\n\nOverall the system is degraded: the observed behaviour exceeds the intent's threshold.",
        Some(_) => "\n\nOverall the system is not compliant with its operational intent.",
        None => "",
    });
    out
}

#[cfg(test)]
#[path = "log_tests.rs"]
mod tests;
