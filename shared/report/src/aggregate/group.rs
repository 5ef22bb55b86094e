//! One group's running totals: counts, pass/fail, and a `Stats` per metric and judge dimension,
//! plus histograms for the report's distribution charts. O(metrics) memory per group.

use serde::Serialize;

use super::agreement::Agreement;
use super::human::HumanAcc;
use evalfleet_model::record::{Outcome, ResultRecord};
use evalfleet_model::stats::{Stats, StatsSummary};

/// A fixed-bin histogram: integer rubric scores get one bin per score, unit values ten bins.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hist {
    pub lo: f64,
    pub hi: f64,
    pub bins: Vec<u64>,
}

impl Hist {
    pub fn integer(min: i64, max: i64) -> Self {
        Hist {
            lo: min as f64,
            hi: max as f64,
            bins: vec![0; (max - min + 1) as usize],
        }
    }

    pub fn unit() -> Self {
        Hist {
            lo: 0.0,
            hi: 1.0,
            bins: vec![0; 10],
        }
    }

    fn push(&mut self, x: f64) {
        let n = self.bins.len();
        let i = if self.is_integer() {
            (x.round() - self.lo).clamp(0.0, (n - 1) as f64) as usize
        } else {
            (((x - self.lo) / (self.hi - self.lo)) * n as f64)
                .floor()
                .clamp(0.0, (n - 1) as f64) as usize
        };
        self.bins[i] += 1;
    }

    /// Integer histograms have one bin per whole value between lo and hi.
    pub fn is_integer(&self) -> bool {
        self.bins.len() as f64 == self.hi - self.lo + 1.0
    }

    /// The label of bin `i`: the score itself, or the bin's lower edge.
    pub fn label(&self, i: usize) -> String {
        if self.is_integer() {
            format!("{}", self.lo as i64 + i as i64)
        } else {
            let w = (self.hi - self.lo) / self.bins.len() as f64;
            format!("{:.1}", self.lo + w * i as f64)
        }
    }
}

/// A judge dimension's reported scale: its raw rubric range, reported as is or on [0, 1].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape {
    Integer(i64, i64),
    Unit(i64, i64),
}

impl Shape {
    /// The raw rubric range (what inter-judge agreement counts over).
    pub(crate) fn range(self) -> (i64, i64) {
        match self {
            Shape::Integer(lo, hi) | Shape::Unit(lo, hi) => (lo, hi),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct GroupAcc {
    pub ok: u64,
    pub failed: u64,
    pub passed: u64,
    pub overall: Stats,
    pub overall_hist: Hist,
    pub metrics: Vec<Stats>,
    pub scores: Vec<Stats>,
    pub score_hists: Vec<Hist>,
    pub unscored: Vec<u64>,
    /// Per dimension, once a panel of judges scored it.
    pub agreement: Vec<Option<Agreement>>,
    /// Per dimension, once an item carried a human label of it.
    pub human: Vec<Option<HumanAcc>>,
    shapes: Vec<Shape>,
    pub latency_ms: Stats,
}

impl GroupAcc {
    pub fn new(dimension_shapes: &[Shape]) -> Self {
        GroupAcc {
            ok: 0,
            failed: 0,
            passed: 0,
            overall: Stats::default(),
            overall_hist: Hist::unit(),
            metrics: Vec::new(),
            scores: vec![Stats::default(); dimension_shapes.len()],
            score_hists: dimension_shapes
                .iter()
                .map(|s| match *s {
                    Shape::Integer(lo, hi) => Hist::integer(lo, hi),
                    Shape::Unit(..) => Hist::unit(),
                })
                .collect(),
            unscored: vec![0; dimension_shapes.len()],
            agreement: vec![None; dimension_shapes.len()],
            human: vec![None; dimension_shapes.len()],
            shapes: dimension_shapes.to_vec(),
            latency_ms: Stats::default(),
        }
    }

    /// Folds one record. `metric_slots[i]` is the slot of the record's i-th metric and
    /// `score_slots[i]` that of its i-th score (None: not a suite dimension).
    pub fn observe(
        &mut self,
        rec: &ResultRecord,
        metric_slots: &[usize],
        score_slots: &[Option<usize>],
    ) {
        match rec.outcome {
            Outcome::Skipped => return,
            Outcome::Failed => {
                self.failed += 1;
                return;
            }
            Outcome::Ok => self.ok += 1,
        }
        if rec.passed {
            self.passed += 1;
        }
        self.latency_ms.push(rec.latency_ms);
        if let Some(o) = rec.overall_score {
            self.overall.push(o);
            self.overall_hist.push(o);
        }
        for ((_, value), &slot) in rec.metrics.0.iter().zip(metric_slots) {
            if self.metrics.len() <= slot {
                self.metrics.resize(slot + 1, Stats::default());
            }
            if let Some(v) = value {
                self.metrics[slot].push(*v);
            }
        }
        for ((_, score), slot) in rec.scores.0.iter().zip(score_slots) {
            let Some(slot) = *slot else { continue };
            if score.human.is_some() {
                let shape = self.shapes[slot];
                self.human[slot]
                    .get_or_insert_with(|| HumanAcc::new(shape))
                    .observe(score);
            }
            if !score.panel.is_empty() {
                let (lo, hi) = self.shapes[slot].range();
                let raw: Vec<Option<i64>> = score.panel.iter().map(|p| p.score).collect();
                self.agreement[slot]
                    .get_or_insert_with(|| Agreement::new(lo, hi))
                    .observe(&raw);
            }
            match score.score {
                Some(v) => {
                    self.scores[slot].push(v);
                    self.score_hists[slot].push(v);
                }
                None if score.unscored.is_some() => self.unscored[slot] += 1,
                None => {}
            }
        }
    }

    /// ok + failed: the seed's `total` (skipped records are not examples of the run).
    pub fn total(&self) -> u64 {
        self.ok + self.failed
    }

    /// passed / total, None for an empty group.
    pub fn pass_rate(&self) -> Option<f64> {
        (self.total() > 0).then(|| self.passed as f64 / self.total() as f64)
    }

    pub fn metric(&self, slot: usize) -> StatsSummary {
        self.metrics
            .get(slot)
            .cloned()
            .unwrap_or_default()
            .summary()
    }
}
