//! Metrics, overall score and gates of one example, given its judge verdicts.

use serde_json::{json, Map, Value};

use crate::custom::ExternalScores;
use crate::loganalysis::{self, Method};
use crate::rag;
use crate::suite::Suite;
use evalfleet_model::gate::fail_tags;
use evalfleet_model::record::{Metrics, Outcome, ResultRecord, Score, Scores, Usage};

use super::Example;

/// Judge results per dimension, in suite order.
pub type Verdicts = Scores;

/// What the worker measured around the judge calls.
#[derive(Debug, Clone, Default)]
pub struct Effort {
    pub usage: Usage,
    pub latency_ms: f64,
    pub attempts: u32,
}

/// The finished result record of an example of `suite`. Needs no parsing state: a worker
/// finishes examples that were typed by the producer. `external` holds the scores of a custom
/// suite's code scorers ([`super::scorer_tasks`]), empty when it has none.
#[allow(clippy::too_many_arguments)]
pub fn finish(
    suite: &Suite,
    run_id: &str,
    index: u64,
    line: Option<u64>,
    example: &Example,
    mut scores: Verdicts,
    external: &ExternalScores,
    effort: Effort,
) -> ResultRecord {
    let labels = example.human();
    if !labels.is_empty() {
        for (name, score) in &mut scores.0 {
            score.human = labels.get(name).copied();
        }
    }
    let answer_provider = example
        .response_provider()
        .filter(|_| scores.0.iter().any(|(_, s)| mixed_panel(s)))
        .map(str::to_owned);
    let score_of = |name: &str| scores.get(name).and_then(|s| s.score);
    let mut details = Map::new();
    let mut usage = effort.usage;
    let mut method_used = None;
    let (metrics, overall, tags) = match example {
        Example::Support(e) => {
            if !e.metadata.is_empty() {
                details.insert("metadata".into(), Value::Object(e.metadata.clone()));
            }
            let overall = mean_unit_score(suite, &scores);
            let tags = fail_tags(&suite.gates, &|m| score_of(m), &|_| None);
            (Metrics::default(), overall, tags)
        }
        Example::Rag(e) => {
            let m = rag::compute_metrics(e, &suite.rag);
            let g = score_of("groundedness");
            let r = score_of("relevance");
            let mut named: Vec<(String, Option<f64>)> = m
                .named()
                .iter()
                .map(|(n, v)| ((*n).to_owned(), Some(*v)))
                .collect();
            named.push(("groundedness".into(), g));
            named.push(("relevance".into(), r));
            let metrics = Metrics(named);
            let requires_kg = e.metadata.requires_kg;
            let overall = m.overall(requires_kg, g, r, &suite.rag.weights);
            let tags = fail_tags(&suite.gates, &|n| metrics.get(n), &|f| {
                (f == "requires_kg").then(|| json!(requires_kg))
            });
            if m.gold_absent {
                details.insert("gold_absent".into(), json!(true));
            }
            if let Some(trace) = &e.trace {
                if let Some(ms) = trace.latency_ms {
                    details.insert("system_latency_ms".into(), json!(ms));
                }
                if let Some(u) = &trace.usage {
                    usage.add(&Usage {
                        input_tokens: u.input_tokens,
                        output_tokens: u.output_tokens,
                        cost_usd: u.cost_usd.unwrap_or(0.0),
                    });
                }
            } else {
                details.insert("trace_absent".into(), json!(true));
            }
            (metrics, Some(overall), tags)
        }
        Example::Log(e) => {
            let Some(scenario) = e.scenario.get() else {
                // Workers attach every scenario before finishing: this is a bug, not bad input.
                let reason = format!("scenario {} was not loaded", e.scenario.digest());
                return ResultRecord::failed(
                    run_id,
                    &suite.name,
                    index,
                    line,
                    e.id.clone(),
                    reason,
                );
            };
            let ev = loganalysis::evaluate(scenario, &e.output);
            let metrics = Metrics(
                ev.metrics
                    .iter()
                    .map(|(n, v)| ((*n).to_owned(), *v))
                    .collect(),
            );
            let comprehensiveness = metrics.get("comprehensiveness");
            // A metric with no ground truth (method `none`) reports 0.0 but is not gated.
            let mu = &ev.method_used;
            let ungated = |name: &str| match name {
                n if n.starts_with("event_") => mu.events == Method::None,
                n if n.starts_with("timeline_") => mu.timeline == Method::None,
                "metrics_accuracy" => mu.metrics == Method::None,
                "anomaly_detection_rate" => mu.anomalies == Method::None,
                "compliance_accuracy" => mu.compliance == Method::None,
                _ => false,
            };
            let lookup = |n: &str| {
                if ungated(n) {
                    None
                } else {
                    metrics.get(n).or_else(|| score_of(n))
                }
            };
            let tags = fail_tags(&suite.gates, &lookup, &|_| None);
            method_used = serde_json::to_value(ev.method_used).ok();
            if !ev.parse_errors.is_empty() {
                details.insert("parse_errors".into(), json!(ev.parse_errors));
            }
            if !ev.details.is_null() {
                details.insert("matches".into(), ev.details);
            }
            (metrics, comprehensiveness, tags)
        }
        Example::Custom(e) => {
            let (metrics, reasons) = match &suite.custom {
                Some(custom) => custom.check_metrics(e, external),
                None => (Metrics::default(), Map::new()),
            };
            if !e.metadata.is_empty() {
                details.insert("metadata".into(), Value::Object(e.metadata.clone()));
            }
            if !reasons.is_empty() {
                details.insert("check_reasons".into(), Value::Object(reasons));
            }
            // Checks are already on [0, 1]; the overall score is the mean of every value
            // the item has, judge dimensions (as fractions of their scale) and checks alike.
            let overall = mean_of(
                unit_scores(suite, &scores).chain(metrics.0.iter().filter_map(|(_, v)| *v)),
            );
            let tags = fail_tags(
                &suite.gates,
                &|n| metrics.get(n).or_else(|| score_of(n)),
                &|_| None,
            );
            (metrics, overall, tags)
        }
    };
    details.insert("inputs".into(), Value::Object(example.inputs(suite)));
    ResultRecord {
        run_id: run_id.to_owned(),
        index,
        line,
        id: example.id().to_owned(),
        suite: suite.name.clone(),
        outcome: Outcome::Ok,
        group: example.group(),
        metrics,
        method_used,
        scores,
        answer_provider,
        overall_score: overall,
        passed: tags.is_empty(),
        fail_tags: tags,
        usage,
        latency_ms: effort.latency_ms,
        attempts: effort.attempts,
        reason: None,
        details,
        outputs: None,
        dataset_record: None,
        epochs: Vec::new(),
        target: None,
    }
}

/// Whether judges of more than one provider sit on the score's panel (self-preference needs
/// the answer's provider then).
fn mixed_panel(score: &Score) -> bool {
    score.panel.split_first().is_some_and(|(first, rest)| {
        rest.iter()
            .any(|p| p.judge.provider != first.judge.provider)
    })
}

/// The mean of the judge scores on [0, 1], None when no dimension was scored.
fn mean_unit_score(suite: &Suite, scores: &Scores) -> Option<f64> {
    mean_of(unit_scores(suite, scores))
}

/// Each scored dimension as a fraction of its scale.
fn unit_scores<'a>(suite: &'a Suite, scores: &'a Scores) -> impl Iterator<Item = f64> + 'a {
    scores.0.iter().filter_map(|(name, s)| {
        let d = suite.dimension(name)?;
        let v = s.score?;
        Some(if d.unit { v } else { d.to_unit(v) })
    })
}

fn mean_of(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.fold((0.0, 0u32), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / f64::from(n))
}
