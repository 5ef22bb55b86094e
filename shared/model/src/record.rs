//! The result record (docs/DESIGN.md §2.4): one per example, identical in embedded and fleet mode.
//!
//! It is the unit everything downstream consumes — the store keeps it, the aggregator folds it,
//! reports stream it — so it carries everything a report needs and nothing a report must not
//! show (no API keys, no prompts).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Ok,
    Failed,
    Skipped,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Failed => "failed",
            Outcome::Skipped => "skipped",
        }
    }
}

/// The grouping keys an example carries; absent keys are left out of the JSON. The built-in
/// suites' keys have fields of their own; a custom suite's other keys (any record field) are in
/// `other`, serialised beside them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Group {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub difficulty: Option<String>,
    #[serde(flatten, default, skip_serializing_if = "BTreeMap::is_empty")]
    pub other: BTreeMap<String, String>,
}

impl Group {
    pub fn get(&self, key: &str) -> Option<&str> {
        match key {
            "model" => self.model.as_deref(),
            "prompt_version" => self.prompt_version.as_deref(),
            "config" => self.config.as_deref(),
            "domain" => self.domain.as_deref(),
            "difficulty" => self.difficulty.as_deref(),
            other => self.other.get(other).map(String::as_str),
        }
    }

    pub fn set(&mut self, key: &str, value: String) {
        match key {
            "model" => self.model = Some(value),
            "prompt_version" => self.prompt_version = Some(value),
            "config" => self.config = Some(value),
            "domain" => self.domain = Some(value),
            "difficulty" => self.difficulty = Some(value),
            other => {
                self.other.insert(other.to_owned(), value);
            }
        }
    }
}

/// Who gave a score: a live provider's model, or the offline heuristic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JudgeId {
    pub provider: String,
    pub model: String,
}

impl JudgeId {
    pub fn heuristic() -> Self {
        JudgeId {
            provider: "heuristic".into(),
            model: "heuristic".into(),
        }
    }
}

/// One judge dimension's result. `score` is null when the judge's reply stayed invalid after the
/// re-ask (`unscored`): a judge failure is never a model failure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Score {
    #[serde(serialize_with = "crate::num::opt_int_if_whole")]
    pub score: Option<f64>,
    pub reasoning: String,
    pub judge: JudgeId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unscored: Option<String>,
    /// Answered from the judge cache (no call made, nothing spent).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cached: bool,
    /// With several judges on the dimension: each judge's own verdict; `score` is their mean.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub panel: Vec<PanelVerdict>,
    /// A person's score of the same answer on the dimension's rubric scale, when the suite names
    /// a column of human labels for it (`human:` / `human_labels`) and the record has one: what
    /// the report measures the judge against.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "crate::num::opt_int_if_whole"
    )]
    pub human: Option<f64>,
    /// A pairwise dimension: the item's win, tie or loss against the other answer, the two
    /// verdicts (positions swapped) and whether they followed the position. `score` is then
    /// 1, 0.5 or 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairwise: Option<crate::pairwise::PairwiseResult>,
}

impl Score {
    pub fn scored(score: f64, reasoning: String, judge: JudgeId) -> Score {
        Score {
            score: Some(score),
            reasoning,
            judge,
            unscored: None,
            cached: false,
            panel: Vec::new(),
            human: None,
            pairwise: None,
        }
    }

    /// A verdict the judge could not give (its reply stayed invalid after the re-ask).
    pub fn unscored(judge: JudgeId, reason: String) -> Score {
        Score {
            score: None,
            reasoning: String::new(),
            judge,
            unscored: Some(reason),
            cached: false,
            panel: Vec::new(),
            human: None,
            pairwise: None,
        }
    }
}

/// One judge's verdict on a dimension judged by a panel. `score` is the raw rubric score (the
/// categories inter-judge agreement is computed over), null when this judge stayed unscored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PanelVerdict {
    pub judge: JudgeId,
    pub score: Option<i64>,
    pub reasoning: String,
}

/// Tokens and estimated cost of the judge calls (and of the system, when its trace says).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
}

impl Usage {
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cost_usd += other.cost_usd;
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultRecord {
    pub run_id: String,
    /// The record's ordinal in the dataset (blank and comment lines excluded), 0-based.
    pub index: u64,
    /// The JSONL line (1-based) the record came from; absent for JSON arrays.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    pub id: String,
    pub suite: String,
    pub outcome: Outcome,
    pub group: Group,
    /// Metric name → value, in the suite's metric order; null = not computed (no judge, or a
    /// freeform metric with no structured counterpart).
    pub metrics: Metrics,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method_used: Option<Value>,
    /// Judge dimension → score, in the suite's dimension order.
    pub scores: Scores,
    /// The provider whose model produced the judged answer, when the example names it and a
    /// panel of judges of more than one provider judged it (what self-preference is measured on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_provider: Option<String>,
    pub overall_score: Option<f64>,
    pub passed: bool,
    pub fail_tags: Vec<String>,
    pub usage: Usage,
    pub latency_ms: f64,
    pub attempts: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Suite-specific detail that explains the numbers (parse errors, match counts, gold_absent).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub details: Map<String, Value>,
    /// A target run: the fields the target filled, with their values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outputs: Option<Map<String, Value>>,
    /// A target run: the call that generated them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<TargetCall>,
    /// A target run: the record as the dataset held it, before `outputs` filled it; with them
    /// it is the completed record `outputs.jsonl` holds. Not an item field of report.json.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset_record: Option<RawJson>,
    /// A run of K > 1 epochs: each epoch's outputs, scores, checks and pass; the record's own
    /// numbers are their means ([`crate::epochs::fold`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub epochs: Vec<crate::epochs::Epoch>,
}

/// What asking the system under test for one example took.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TargetCall {
    /// The target's name.
    pub name: String,
    pub latency_ms: f64,
    pub attempts: u32,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub cost_usd: f64,
}

impl ResultRecord {
    /// A record for an input that never became an example.
    pub fn skipped(
        run_id: &str,
        suite: &str,
        index: u64,
        line: Option<u64>,
        id: String,
        reason: String,
    ) -> Self {
        ResultRecord {
            run_id: run_id.to_owned(),
            index,
            line,
            id,
            suite: suite.to_owned(),
            outcome: Outcome::Skipped,
            group: Group::default(),
            metrics: Metrics::default(),
            method_used: None,
            scores: Scores::default(),
            answer_provider: None,
            overall_score: None,
            passed: false,
            fail_tags: Vec::new(),
            usage: Usage::default(),
            latency_ms: 0.0,
            attempts: 0,
            reason: Some(reason),
            details: Map::new(),
            outputs: None,
            target: None,
            dataset_record: None,
            epochs: Vec::new(),
        }
    }

    /// A record for an example whose processing failed (judge errors after retries, budget).
    pub fn failed(
        run_id: &str,
        suite: &str,
        index: u64,
        line: Option<u64>,
        id: String,
        reason: String,
    ) -> Self {
        ResultRecord {
            outcome: Outcome::Failed,
            ..ResultRecord::skipped(run_id, suite, index, line, id, reason)
        }
    }

    /// A metric or judge score by name, for gates and aggregates.
    pub fn value(&self, name: &str) -> Option<f64> {
        self.metrics
            .get(name)
            .or_else(|| self.scores.get(name).and_then(|s| s.score))
    }
}

/// JSON kept as its text: written once, then copied through every serialisation of the record
/// that holds it (the spill, Redis, each report writer) without being parsed into a map and
/// written out again; parsed only where it is read.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RawJson(Box<serde_json::value::RawValue>);

impl RawJson {
    /// `value` as JSON text.
    pub fn of<T: Serialize>(value: &T) -> Result<Self, serde_json::Error> {
        serde_json::value::to_raw_value(value).map(RawJson)
    }

    /// The JSON parsed into `T`.
    pub fn parse<'a, T: Deserialize<'a>>(&'a self) -> Result<T, serde_json::Error> {
        serde_json::from_str(self.0.get())
    }
}

impl PartialEq for RawJson {
    fn eq(&self, other: &Self) -> bool {
        self.0.get() == other.0.get()
    }
}

/// An ordered name → value map that serialises as a JSON object.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metrics(pub Vec<(String, Option<f64>)>);

impl Metrics {
    pub fn get(&self, name: &str) -> Option<f64> {
        self.0.iter().find(|(n, _)| n == name).and_then(|(_, v)| *v)
    }
}

/// An ordered dimension → score map that serialises as a JSON object.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scores(pub Vec<(String, Score)>);

impl Scores {
    pub fn get(&self, name: &str) -> Option<&Score> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, s)| s)
    }
}

macro_rules! ordered_map_serde {
    ($t:ty, $v:ty) => {
        impl Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
            }
        }
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct Entries;
                impl<'de> serde::de::Visitor<'de> for Entries {
                    type Value = Vec<(String, $v)>;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str("a JSON object")
                    }
                    fn visit_map<A: serde::de::MapAccess<'de>>(
                        self,
                        mut map: A,
                    ) -> Result<Self::Value, A::Error> {
                        let mut out = Vec::with_capacity(map.size_hint().unwrap_or(0));
                        while let Some(entry) = map.next_entry::<String, $v>()? {
                            out.push(entry);
                        }
                        Ok(out)
                    }
                }
                d.deserialize_map(Entries).map(Self)
            }
        }
    };
}

ordered_map_serde!(Metrics, Option<f64>);
ordered_map_serde!(Scores, Score);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_json_keeping_order() {
        let mut rec =
            ResultRecord::skipped("r", "rag-layers", 3, Some(5), "q1".into(), "bad".into());
        rec.metrics = Metrics(vec![("zeta".into(), Some(0.5)), ("alpha".into(), None)]);
        rec.scores = Scores(vec![(
            "tone".into(),
            Score::scored(4.0, "ok".into(), JudgeId::heuristic()),
        )]);
        let text = serde_json::to_string(&rec).unwrap();
        assert!(
            text.contains(r#""metrics":{"zeta":0.5,"alpha":null}"#),
            "{text}"
        );
        assert!(
            text.contains(r#""score":4,"#),
            "integral scores print as integers: {text}"
        );
        let back: ResultRecord = serde_json::from_str(&text).unwrap();
        assert_eq!(back, rec);
        assert_eq!(back.value("tone"), Some(4.0));
        assert_eq!(back.value("zeta"), Some(0.5));
        assert_eq!(back.value("alpha"), None);
    }
}
