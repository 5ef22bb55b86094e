//! Incremental run aggregates (DESIGN §5): results are folded one at a time, in any order, into
//! O(groups) state, and the same state renders every report. Everything here is independent of
//! arrival order, so a fleet run and an embedded run of the same data agree exactly.

mod group;

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

pub use group::{GroupAcc, Hist, Shape};

use crate::record::{Outcome, ResultRecord, Usage};
use crate::stats::Stats;
use crate::suite::{Grouping, Suite};

/// How many of the worst items each fail tag remembers for `summary.md`.
pub const WORST_PER_TAG: usize = 5;

/// A group key's value when the example does not carry it.
pub const UNKNOWN_KEY: &str = "unknown";

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Totals {
    /// ok + failed + skipped.
    pub examples: u64,
    pub ok: u64,
    pub failed: u64,
    pub skipped: u64,
    /// Judge dimensions that stayed unscored (invalid replies after the re-ask).
    pub unscored: u64,
}

/// One of the worst items behind a fail tag.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Worst {
    pub index: u64,
    pub id: String,
    pub overall_score: Option<f64>,
}

/// A run-level gate and whether it held.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunGateCheck {
    pub name: String,
    pub value: Option<f64>,
    pub threshold: f64,
    pub passed: bool,
}

pub struct RunAggregator {
    groupings: Vec<Grouping>,
    shapes: Vec<Shape>,
    dimensions: Vec<String>,
    metric_names: Vec<String>,
    pub totals: Totals,
    pub all: GroupAcc,
    /// Per grouping: key values → accumulator, sorted by key.
    pub groups: Vec<BTreeMap<Vec<String>, GroupAcc>>,
    pub fail_reasons: HashMap<String, u64>,
    pub failure_reasons: BTreeMap<String, u64>,
    pub worst: HashMap<String, Vec<Worst>>,
    pub usage: Usage,
    /// The evaluated system's own latency, where its trace records one (rag-layers).
    pub system_latency_ms: Stats,
}

impl RunAggregator {
    pub fn new(suite: &Suite) -> Self {
        let shapes: Vec<Shape> = suite
            .dimensions
            .iter()
            .map(|d| if d.unit { Shape::Unit } else { Shape::Integer(d.min, d.max) })
            .collect();
        RunAggregator {
            groupings: suite.group_by.clone(),
            all: GroupAcc::new(&shapes),
            groups: vec![BTreeMap::new(); suite.group_by.len()],
            shapes,
            dimensions: suite.dimensions.iter().map(|d| d.name.clone()).collect(),
            metric_names: Vec::new(),
            totals: Totals::default(),
            fail_reasons: HashMap::new(),
            failure_reasons: BTreeMap::new(),
            worst: HashMap::new(),
            usage: Usage::default(),
            system_latency_ms: Stats::default(),
        }
    }

    pub fn observe(&mut self, rec: &ResultRecord) {
        self.totals.examples += 1;
        match rec.outcome {
            Outcome::Ok => self.totals.ok += 1,
            Outcome::Failed => {
                self.totals.failed += 1;
                let reason = rec.reason.clone().unwrap_or_default();
                *self.failure_reasons.entry(failure_kind(&reason)).or_default() += 1;
            }
            Outcome::Skipped => {
                self.totals.skipped += 1;
                return;
            }
        }
        self.usage.add(&rec.usage);
        if let Some(ms) = rec.details.get("system_latency_ms").and_then(|v| v.as_f64()) {
            self.system_latency_ms.push(ms);
        }
        self.totals.unscored += rec.scores.0.iter().filter(|(_, s)| s.unscored.is_some()).count() as u64;
        let metric_slots: Vec<usize> = rec.metrics.0.iter().enumerate().map(|(i, (n, _))| self.metric_slot(i, n)).collect();
        let score_slots: Vec<Option<usize>> =
            rec.scores.0.iter().map(|(n, _)| self.dimensions.iter().position(|d| d == n)).collect();
        self.all.observe(rec, &metric_slots, &score_slots);
        for (grouping, groups) in self.groupings.iter().zip(self.groups.iter_mut()) {
            let key: Vec<String> = grouping
                .keys
                .iter()
                .map(|k| rec.group.get(k).unwrap_or(UNKNOWN_KEY).to_owned())
                .collect();
            groups
                .entry(key)
                .or_insert_with(|| GroupAcc::new(&self.shapes))
                .observe(rec, &metric_slots, &score_slots);
        }
        for tag in &rec.fail_tags {
            *self.fail_reasons.entry(tag.clone()).or_default() += 1;
            let worst = self.worst.entry(tag.clone()).or_default();
            worst.push(Worst { index: rec.index, id: rec.id.clone(), overall_score: rec.overall_score });
            worst.sort_by(|a, b| {
                let score = |w: &Worst| w.overall_score.unwrap_or(f64::INFINITY);
                score(a).total_cmp(&score(b)).then(a.index.cmp(&b.index))
            });
            worst.truncate(WORST_PER_TAG);
        }
    }

    fn metric_slot(&mut self, i: usize, name: &str) -> usize {
        if self.metric_names.get(i).is_some_and(|n| n == name) {
            return i;
        }
        match self.metric_names.iter().position(|n| n == name) {
            Some(slot) => slot,
            None => {
                self.metric_names.push(name.to_owned());
                self.metric_names.len() - 1
            }
        }
    }

    pub fn metric_names(&self) -> &[String] {
        &self.metric_names
    }

    pub fn metric_slot_of(&self, name: &str) -> Option<usize> {
        self.metric_names.iter().position(|n| n == name)
    }

    pub fn dimensions(&self) -> &[String] {
        &self.dimensions
    }

    pub fn groupings(&self) -> &[Grouping] {
        &self.groupings
    }

    /// Fail tags by count, descending; ties in the suite's gate order.
    pub fn top_fail_reasons(&self, suite: &Suite) -> Vec<(String, u64)> {
        let order = |tag: &str| suite.gates.iter().position(|g| g.tag == tag).unwrap_or(usize::MAX);
        let mut tags: Vec<(String, u64)> = self.fail_reasons.iter().map(|(t, n)| (t.clone(), *n)).collect();
        tags.sort_by(|a, b| b.1.cmp(&a.1).then(order(&a.0).cmp(&order(&b.0))).then(a.0.cmp(&b.0)));
        tags
    }

    /// Judge calls that ended unscored, over all judge dimension results.
    pub fn unscored_rate(&self) -> Option<f64> {
        let scored: u64 = self.all.scores.iter().map(|s| s.count).sum();
        let total = scored + self.totals.unscored;
        (total > 0).then(|| self.totals.unscored as f64 / total as f64)
    }

    /// The run-level gates of the suite; the run passes when every check passes.
    pub fn run_gates(&self, suite: &Suite) -> Vec<RunGateCheck> {
        let pass_rate = self.all.pass_rate();
        let mut checks = vec![RunGateCheck {
            name: "min_pass_rate".into(),
            value: pass_rate,
            threshold: suite.run_gates.min_pass_rate,
            passed: pass_rate.unwrap_or(0.0) >= suite.run_gates.min_pass_rate,
        }];
        if suite.run_gates.max_unscored_rate < 1.0 {
            let rate = self.unscored_rate();
            checks.push(RunGateCheck {
                name: "max_unscored_rate".into(),
                value: rate,
                threshold: suite.run_gates.max_unscored_rate,
                passed: rate.unwrap_or(0.0) <= suite.run_gates.max_unscored_rate,
            });
        }
        checks
    }
}

/// Failure reasons are grouped by their kind (the text before the first colon), so a
/// thousand distinct HTTP bodies do not make a thousand rows.
fn failure_kind(reason: &str) -> String {
    reason.split(':').next().unwrap_or(reason).trim().to_owned()
}

#[cfg(test)]
pub(crate) mod tests;
#[cfg(test)]
pub(crate) use tests as tests_support;
