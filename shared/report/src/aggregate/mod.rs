//! Incremental run aggregates (docs/DESIGN.md §5): results are folded one at a time, in any order, into
//! O(groups) state, and the same state renders every report. Everything here is independent of
//! arrival order, so a fleet run and an embedded run of the same data agree exactly.

mod agreement;
mod epochs;
mod fixed;
mod group;
mod human;
mod pairwise;
mod self_preference;
mod target;
mod unpassed;

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

pub use agreement::{Agreement, AgreementSummary};
pub use epochs::{EpochsAcc, EpochsSummary};
pub use group::{GroupAcc, Hist, Shape};
pub use human::{Confusion, HumanAcc, HumanAgreementSummary};
pub use pairwise::{PairCounts, PairSummary, PairwiseAcc};
pub use self_preference::{SelfPreferenceAcc, SelfPreferenceSummary};
pub use target::{Latency, TargetAcc, TargetSummary};
pub use unpassed::Unpassed;

use evalfleet_model::record::{Outcome, ResultRecord, Usage};
use evalfleet_model::stats::Stats;
use evalfleet_model::suite::Grouping;
use evalfleet_suites::suite::Suite;

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

/// Joins a group key's parts internally; a control character no model name contains.
const KEY_SEP: char = '\u{1f}';

#[derive(Default)]
struct Scratch {
    key: String,
    metric_slots: Vec<usize>,
    score_slots: Vec<Option<usize>>,
}

pub struct RunAggregator {
    groupings: Vec<Grouping>,
    shapes: Vec<Shape>,
    dimensions: Vec<String>,
    metric_names: Vec<String>,
    pub totals: Totals,
    pub all: GroupAcc,
    /// Per grouping: the key's parts joined by [`KEY_SEP`] → accumulator. Use [`Self::groups`]
    /// for the parts, sorted.
    groups: Vec<HashMap<String, GroupAcc>>,
    /// Reused per record, so folding allocates nothing once every group exists.
    scratch: Scratch,
    pub fail_reasons: HashMap<String, u64>,
    pub failure_reasons: BTreeMap<String, u64>,
    pub worst: HashMap<String, Vec<Worst>>,
    /// The items that did not pass: their count and the first ones (for `junit.xml`).
    pub unpassed: Unpassed,
    pub usage: Usage,
    /// The judges' cost summed in fixed point (`usage.cost_usd` is its sum): the same bits
    /// whatever order results arrive in.
    judge_cost: Stats,
    /// The evaluated system's own latency, where its trace records one (rag-layers).
    pub system_latency_ms: Stats,
    /// Judge calls made (retries and re-asks included) and judge answers taken from the cache.
    pub judge_calls: u64,
    pub cache_hits: u64,
    /// A target run: its calls to the system under test.
    pub target: Option<TargetAcc>,
    /// A run of K > 1 epochs: pass@k, pass^k, the spread within items.
    pub epochs: Option<EpochsAcc>,
    /// Pairwise dimensions: wins, ties, losses and position bias, overall and per group.
    pub pairwise: PairwiseAcc,
    /// The dimensions the suite names human labels for, in suite order.
    human_dimensions: Vec<String>,
    /// Judges of each provider on their own family's answers and on the others'.
    pub self_preference: SelfPreferenceAcc,
}

impl RunAggregator {
    pub fn new(suite: &Suite) -> Self {
        let shapes: Vec<Shape> = suite
            .dimensions
            .iter()
            .map(|d| {
                if d.unit {
                    Shape::Unit(d.min, d.max)
                } else {
                    Shape::Integer(d.min, d.max)
                }
            })
            .collect();
        RunAggregator {
            groupings: suite.group_by.clone(),
            all: GroupAcc::new(&shapes),
            groups: vec![HashMap::new(); suite.group_by.len()],
            scratch: Scratch::default(),
            shapes,
            dimensions: suite.dimensions.iter().map(|d| d.name.clone()).collect(),
            metric_names: Vec::new(),
            totals: Totals::default(),
            fail_reasons: HashMap::new(),
            failure_reasons: BTreeMap::new(),
            worst: HashMap::new(),
            unpassed: Unpassed::default(),
            usage: Usage::default(),
            judge_cost: Stats::default(),
            system_latency_ms: Stats::default(),
            judge_calls: 0,
            cache_hits: 0,
            target: None,
            epochs: None,
            pairwise: PairwiseAcc::new(suite),
            human_dimensions: suite
                .dimensions
                .iter()
                .filter(|d| suite.human_labels.contains_key(&d.name))
                .map(|d| d.name.clone())
                .collect(),
            self_preference: SelfPreferenceAcc::default(),
        }
    }

    pub fn observe(&mut self, rec: &ResultRecord) {
        self.totals.examples += 1;
        self.judge_calls += u64::from(rec.attempts);
        self.cache_hits += rec.scores.0.iter().filter(|(_, s)| s.cached).count() as u64;
        if !(rec.outcome == Outcome::Ok && rec.passed) {
            self.unpassed.observe(rec.index);
        }
        match rec.outcome {
            Outcome::Ok => self.totals.ok += 1,
            Outcome::Failed => {
                self.totals.failed += 1;
                let reason = rec.reason.clone().unwrap_or_default();
                *self
                    .failure_reasons
                    .entry(failure_kind(&reason))
                    .or_default() += 1;
            }
            Outcome::Skipped => {
                self.totals.skipped += 1;
                return;
            }
        }
        if !rec.epochs.is_empty() {
            self.epochs
                .get_or_insert_with(EpochsAcc::default)
                .observe(&rec.epochs);
        }
        if let Some(call) = &rec.target {
            self.target
                .get_or_insert_with(|| TargetAcc::new(&call.name))
                .observe(call);
        }
        self.usage.add(&rec.usage);
        self.judge_cost.push(rec.usage.cost_usd);
        self.usage.cost_usd = self.judge_cost.sum();
        if let Some(ms) = rec
            .details
            .get("system_latency_ms")
            .and_then(|v| v.as_f64())
        {
            self.system_latency_ms.push(ms);
        }
        self.totals.unscored += rec
            .scores
            .0
            .iter()
            .filter(|(_, s)| s.unscored.is_some())
            .count() as u64;
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.metric_slots.clear();
        for (i, (name, _)) in rec.metrics.0.iter().enumerate() {
            let slot = self.metric_slot(i, name);
            scratch.metric_slots.push(slot);
        }
        scratch.score_slots.clear();
        scratch.score_slots.extend(
            rec.scores
                .0
                .iter()
                .map(|(n, _)| self.dimensions.iter().position(|d| d == n)),
        );
        self.all
            .observe(rec, &scratch.metric_slots, &scratch.score_slots);
        if rec.outcome == Outcome::Ok {
            self.self_preference.observe(rec, &scratch.score_slots);
        }
        for (grouping, groups) in self.groupings.iter().zip(self.groups.iter_mut()) {
            scratch.key.clear();
            for (i, k) in grouping.keys.iter().enumerate() {
                if i > 0 {
                    scratch.key.push(KEY_SEP);
                }
                scratch
                    .key
                    .push_str(rec.group.get(k).unwrap_or(UNKNOWN_KEY));
            }
            let acc = match groups.get_mut(scratch.key.as_str()) {
                Some(acc) => acc,
                None => groups
                    .entry(scratch.key.clone())
                    .or_insert_with(|| GroupAcc::new(&self.shapes)),
            };
            acc.observe(rec, &scratch.metric_slots, &scratch.score_slots);
        }
        self.scratch = scratch;
        self.pairwise.observe(rec, &self.groupings);
        for tag in &rec.fail_tags {
            match self.fail_reasons.get_mut(tag) {
                Some(n) => *n += 1,
                None => {
                    self.fail_reasons.insert(tag.clone(), 1);
                }
            }
            // Keep the WORST_PER_TAG lowest (overall score, index): independent of arrival order.
            let rank = |w: &Worst| (w.overall_score.unwrap_or(f64::INFINITY), w.index);
            let before =
                |a: (f64, u64), b: (f64, u64)| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).is_lt();
            let candidate = (rec.overall_score.unwrap_or(f64::INFINITY), rec.index);
            let worst = match self.worst.get_mut(tag) {
                Some(w) => w,
                None => self.worst.entry(tag.clone()).or_default(),
            };
            if worst.len() == WORST_PER_TAG
                && worst.last().is_some_and(|w| !before(candidate, rank(w)))
            {
                continue;
            }
            let at = worst.partition_point(|w| before(rank(w), candidate));
            worst.insert(
                at,
                Worst {
                    index: rec.index,
                    id: rec.id.clone(),
                    overall_score: rec.overall_score,
                },
            );
            worst.truncate(WORST_PER_TAG);
        }
    }

    /// Every grouping with its groups, sorted by key.
    pub fn grouped(&self) -> impl Iterator<Item = (&Grouping, Vec<(Vec<String>, &GroupAcc)>)> {
        self.groupings
            .iter()
            .enumerate()
            .map(|(i, g)| (g, self.groups(i)))
    }

    /// The groups of grouping `i` with their key parts, sorted by key (so reports do not depend
    /// on the order results arrived in).
    pub fn groups(&self, i: usize) -> Vec<(Vec<String>, &GroupAcc)> {
        let mut groups: Vec<(Vec<String>, &GroupAcc)> = self.groups[i]
            .iter()
            .map(|(k, g)| (k.split(KEY_SEP).map(str::to_owned).collect(), g))
            .collect();
        groups.sort_by(|a, b| a.0.cmp(&b.0));
        groups
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

    /// The dimensions with human labels, in suite order.
    pub fn human_dimensions(&self) -> &[String] {
        &self.human_dimensions
    }

    /// Each labelled dimension's agreement with people in group `g` (n = 0 where no item of
    /// the group had a label).
    pub fn human_agreement(&self, g: &GroupAcc) -> Vec<(String, HumanAgreementSummary)> {
        self.human_dimensions
            .iter()
            .filter_map(|name| {
                let slot = self.dimensions.iter().position(|d| d == name)?;
                let summary = match g.human.get(slot).and_then(Option::as_ref) {
                    Some(acc) => acc.summary(),
                    None => HumanAcc::new(self.shapes[slot]).summary(),
                };
                Some((name.clone(), summary))
            })
            .collect()
    }

    pub fn groupings(&self) -> &[Grouping] {
        &self.groupings
    }

    /// Fail tags by count, descending; ties in the suite's gate order.
    pub fn top_fail_reasons(&self, suite: &Suite) -> Vec<(String, u64)> {
        let order = |tag: &str| {
            suite
                .gates
                .iter()
                .position(|g| g.tag == tag)
                .unwrap_or(usize::MAX)
        };
        let mut tags: Vec<(String, u64)> = self
            .fail_reasons
            .iter()
            .map(|(t, n)| (t.clone(), *n))
            .collect();
        tags.sort_by(|a, b| {
            b.1.cmp(&a.1)
                .then(order(&a.0).cmp(&order(&b.0)))
                .then(a.0.cmp(&b.0))
        });
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
        if let Some(min) = suite.run_gates.min_agreement {
            // Only dimensions a panel judged have an agreement to gate.
            for (dim, agreement) in self.dimensions.iter().zip(&self.all.agreement) {
                if let Some(value) = agreement.as_ref().map(|a| a.summary().value()) {
                    checks.push(RunGateCheck {
                        name: format!("min_agreement.{dim}"),
                        value,
                        threshold: min,
                        passed: value.is_some_and(|v| v >= min),
                    });
                }
            }
        }
        if let Some(min) = suite.run_gates.min_human_kappa {
            // Every labelled dimension is gated: one without a labelled, scored item (or whose
            // kappa is undefined) fails, so the gate is never passed for want of data.
            for (dim, summary) in self.human_agreement(&self.all) {
                let value = summary.kappa_quadratic;
                checks.push(RunGateCheck {
                    name: format!("min_human_kappa.{dim}"),
                    value,
                    threshold: min,
                    passed: value.is_some_and(|v| v >= min),
                });
            }
        }
        if let Some(min) = suite.run_gates.min_win_rate {
            // Each pairwise dimension must win at least `min` of its items; one with no
            // compared item fails, so the gate is never passed for want of data.
            for (dim, counts) in self.pairwise.each() {
                let value = counts.win_rate();
                checks.push(RunGateCheck {
                    name: format!("min_win_rate.{dim}"),
                    value,
                    threshold: min,
                    passed: value.is_some_and(|v| v >= min),
                });
            }
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
