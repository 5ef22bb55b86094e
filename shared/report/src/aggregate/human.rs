//! Judges measured against people: for a dimension with human labels, the confusion matrix of
//! people's scores (rows) × the judge's (columns) on the rubric scale, folded one item at a time
//! in O(categories²) memory per dimension, judge and group; every statistic comes from it at the
//! end. Quadratic-weighted Cohen's kappa (scikit-learn's `cohen_kappa_score(weights=
//! "quadratic", labels=<the whole scale>)`), Spearman's rho with midranks for ties (scipy's
//! `spearmanr`, exact from the contingency table), exact and within-one agreement, and the bias
//! (mean judge − human, from unrounded scores, in fixed point so arrival order does not matter).
//!
//! The dimension's own score (a panel's mean, an epoch mean) is rounded half-to-even to the
//! scale for the matrix; each panel judge's raw verdict is counted under `by_judge`.

use std::collections::BTreeMap;

use serde::Serialize;

use super::fixed::FixedSum;
use super::group::Shape;
use evalfleet_model::record::{JudgeId, Score};

/// One judge's (or the dimension's) scores against people's.
#[derive(Debug, Clone, PartialEq)]
pub struct Confusion {
    min: i64,
    cats: usize,
    /// counts[human × cats + judge].
    counts: Vec<u64>,
    n: u64,
    /// Σ (judge − human), unrounded, on the rubric scale.
    bias: FixedSum,
}

impl Confusion {
    pub fn new(min: i64, max: i64) -> Self {
        let cats = (max - min + 1).max(1) as usize;
        Confusion {
            min,
            cats,
            counts: vec![0; cats * cats],
            n: 0,
            bias: FixedSum::default(),
        }
    }

    fn cat(&self, score: f64) -> Option<usize> {
        let c = score.round_ties_even() - self.min as f64;
        (c >= 0.0 && c < self.cats as f64).then_some(c as usize)
    }

    /// Folds one pair on the rubric scale; a pair off the scale is left out.
    pub fn push(&mut self, human: f64, judge: f64) {
        if let (Some(h), Some(j)) = (self.cat(human), self.cat(judge)) {
            self.counts[h * self.cats + j] += 1;
            self.n += 1;
            self.bias.add(judge - human);
        }
    }

    /// The matrix's rows: one per human score, each a count per judge score.
    fn rows(&self) -> std::slice::Chunks<'_, u64> {
        self.counts.chunks(self.cats)
    }

    pub fn n(&self) -> u64 {
        self.n
    }

    /// 1 − Σ w·O / Σ w·E with w = (i − j)²; None when every pair sits in one row and column
    /// (no disagreement is possible).
    pub fn kappa_quadratic(&self) -> Option<f64> {
        let n = self.n() as f64;
        if n == 0.0 {
            return None;
        }
        let (rows, cols) = self.marginals();
        let (mut observed, mut expected) = (0.0, 0.0);
        for (h, (row, r)) in self.rows().zip(&rows).enumerate() {
            for (j, (&o, c)) in row.iter().zip(&cols).enumerate() {
                let w = (h as f64 - j as f64).powi(2);
                observed += w * o as f64;
                expected += w * r * c / n;
            }
        }
        (expected > 0.0).then(|| 1.0 - observed / expected)
    }

    /// Spearman's rho: Pearson's correlation of the midranks, each category's rank the mean of
    /// the ranks its items share; None below two pairs or when one side is constant.
    pub fn spearman(&self) -> Option<f64> {
        let n = self.n() as f64;
        if n < 2.0 {
            return None;
        }
        let (rows, cols) = self.marginals();
        let midranks = |totals: &[f64]| -> Vec<f64> {
            let mut before = 0.0;
            totals
                .iter()
                .map(|&t| {
                    let r = before + (t + 1.0) / 2.0;
                    before += t;
                    r
                })
                .collect()
        };
        let (rh, rj) = (midranks(&rows), midranks(&cols));
        let mean = (n + 1.0) / 2.0;
        let var = |totals: &[f64], ranks: &[f64]| -> f64 {
            totals
                .iter()
                .zip(ranks)
                .map(|(t, r)| t * (r - mean).powi(2))
                .sum()
        };
        let (vh, vj) = (var(&rows, &rh), var(&cols, &rj));
        if vh <= 0.0 || vj <= 0.0 {
            return None;
        }
        let mut cov = 0.0;
        for (row, rank_h) in self.rows().zip(&rh) {
            for (&o, rank_j) in row.iter().zip(&rj) {
                cov += o as f64 * (rank_h - mean) * (rank_j - mean);
            }
        }
        Some((cov / (vh * vj).sqrt()).clamp(-1.0, 1.0))
    }

    /// The share of pairs within `d` scale points of each other.
    fn within(&self, d: usize) -> Option<f64> {
        let n = self.n();
        if n == 0 {
            return None;
        }
        let mut hits = 0;
        for h in 0..self.cats {
            for j in h.saturating_sub(d)..(h + d + 1).min(self.cats) {
                hits += self.counts[h * self.cats + j];
            }
        }
        Some(hits as f64 / n as f64)
    }

    /// Row (human) and column (judge) totals.
    fn marginals(&self) -> (Vec<f64>, Vec<f64>) {
        let mut rows = vec![0.0; self.cats];
        let mut cols = vec![0.0; self.cats];
        for (row, total) in self.rows().zip(&mut rows) {
            for (&o, col) in row.iter().zip(&mut cols) {
                *total += o as f64;
                *col += o as f64;
            }
        }
        (rows, cols)
    }

    pub fn summary(&self) -> HumanAgreementSummary {
        HumanAgreementSummary {
            n: self.n(),
            kappa_quadratic: self.kappa_quadratic(),
            spearman: self.spearman(),
            exact: self.within(0),
            within_1: self.within(1),
            bias: (self.n > 0).then(|| self.bias.get() / self.n as f64),
            scale: [self.min, self.min + self.cats as i64 - 1],
            confusion: self.rows().map(<[u64]>::to_vec).collect(),
            by_judge: BTreeMap::new(),
        }
    }
}

/// A dimension's agreement with people in one group: the dimension's score, and each judge's.
#[derive(Debug, Clone, PartialEq)]
pub struct HumanAcc {
    shape: Shape,
    all: Confusion,
    /// Few judges per dimension: found by a linear search, no key allocated per item.
    by_judge: Vec<(JudgeId, Confusion)>,
}

impl HumanAcc {
    pub fn new(shape: Shape) -> Self {
        let (min, max) = shape.range();
        HumanAcc {
            shape,
            all: Confusion::new(min, max),
            by_judge: Vec::new(),
        }
    }

    /// Folds one dimension result that carries a human label.
    pub fn observe(&mut self, score: &Score) {
        let Some(human) = score.human else { return };
        let (min, max) = self.shape.range();
        let raw = score.score.map(|v| match self.shape {
            Shape::Unit(..) => min as f64 + v * (max - min) as f64,
            Shape::Integer(..) => v,
        });
        if let Some(judge) = raw {
            self.all.push(human, judge);
        }
        if score.panel.is_empty() {
            if let Some(judge) = raw {
                self.judge(&score.judge, 0).push(human, judge);
            }
            return;
        }
        for (i, verdict) in score.panel.iter().enumerate() {
            if let Some(s) = verdict.score {
                self.judge(&verdict.judge, i).push(human, s as f64);
            }
        }
    }

    /// Judge `id`'s matrix; `hint` is where it usually sits (its place on the panel).
    fn judge(&mut self, id: &JudgeId, hint: usize) -> &mut Confusion {
        let same = |j: &JudgeId| j.provider == id.provider && j.model == id.model;
        if self.by_judge.get(hint).is_some_and(|(j, _)| same(j)) {
            return &mut self.by_judge[hint].1;
        }
        let at = match self.by_judge.iter().position(|(j, _)| same(j)) {
            Some(at) => at,
            None => {
                let (min, max) = self.shape.range();
                self.by_judge.push((id.clone(), Confusion::new(min, max)));
                self.by_judge.len() - 1
            }
        };
        &mut self.by_judge[at].1
    }

    /// The dimension's statistics, with each judge's (`provider/model`) under `by_judge`.
    pub fn summary(&self) -> HumanAgreementSummary {
        let mut s = self.all.summary();
        s.by_judge = self
            .by_judge
            .iter()
            .map(|(j, c)| (format!("{}/{}", j.provider, j.model), c.summary()))
            .collect();
        s
    }

    /// The dimension's own statistics (what the run gate reads).
    pub fn overall(&self) -> &Confusion {
        &self.all
    }
}

/// `aggregates.human_agreement.<dimension>` (and each judge's, each group's).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HumanAgreementSummary {
    /// Items with both a human label and a judge score.
    pub n: u64,
    /// Cohen's kappa with quadratic weights over the whole rubric scale.
    pub kappa_quadratic: Option<f64>,
    /// Spearman's rank correlation (midranks for ties).
    pub spearman: Option<f64>,
    /// The share of items where judge and human gave the same score.
    pub exact: Option<f64>,
    /// The share where they differ by at most one point.
    pub within_1: Option<f64>,
    /// Mean judge − human score (positive: the judge is more lenient than people).
    pub bias: Option<f64>,
    /// The rubric scale `[min, max]`: the confusion matrix's rows and columns, in order.
    pub scale: [i64; 2],
    /// Rows: the human score; columns: the judge's.
    pub confusion: Vec<Vec<u64>>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub by_judge: BTreeMap<String, HumanAgreementSummary>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use evalfleet_model::record::PanelVerdict;

    fn confusion(pairs: &[(i64, i64)], min: i64, max: i64) -> Confusion {
        let mut c = Confusion::new(min, max);
        for &(h, j) in pairs {
            c.push(h as f64, j as f64);
        }
        c
    }

    #[test]
    fn quadratic_kappa_by_hand() {
        // Scale 1..3. Pairs (h, j): (1,1) (1,2) (2,2) (3,3) (3,1).
        // O·w: (1,2) → 1, (3,1) → 4: Σ = 5. Rows 2,1,2; cols 2,2,1; n = 5.
        // E·w = Σ r_h c_j (h − j)² / 5 = [2·2·1 + 2·1·4 + 1·2·1 + 1·1·1 + 2·2·4 + 2·2·1] / 5
        //     = (4 + 8 + 2 + 1 + 16 + 4) / 5 = 7; κ = 1 − 5/7.
        let c = confusion(&[(1, 1), (1, 2), (2, 2), (3, 3), (3, 1)], 1, 3);
        assert!((c.kappa_quadratic().unwrap() - (1.0 - 5.0 / 7.0)).abs() < 1e-12);
        let s = c.summary();
        assert_eq!(s.n, 5);
        assert_eq!(s.exact, Some(0.6));
        assert_eq!(s.within_1, Some(0.8));
        assert_eq!(s.bias, Some(-1.0 / 5.0), "(0 + 1 + 0 + 0 − 2) / 5");
        assert_eq!(
            s.confusion,
            vec![vec![1, 1, 0], vec![0, 1, 0], vec![1, 0, 1]]
        );
        assert_eq!(s.scale, [1, 3]);
    }

    #[test]
    fn spearman_with_ties_is_pearson_of_midranks() {
        let pairs = [(1, 2), (1, 1), (2, 2), (3, 3), (3, 3), (2, 3), (1, 1)];
        let c = confusion(&pairs, 1, 3);
        // Two-pass reference: midranks of each side, then Pearson.
        let rank = |xs: Vec<f64>| -> Vec<f64> {
            xs.iter()
                .map(|x| {
                    let below = xs.iter().filter(|y| *y < x).count() as f64;
                    let equal = xs.iter().filter(|y| *y == x).count() as f64;
                    below + (equal + 1.0) / 2.0
                })
                .collect()
        };
        let h = rank(pairs.iter().map(|p| p.0 as f64).collect());
        let j = rank(pairs.iter().map(|p| p.1 as f64).collect());
        let m = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let (mh, mj) = (m(&h), m(&j));
        let cov: f64 = h.iter().zip(&j).map(|(a, b)| (a - mh) * (b - mj)).sum();
        let sd = |v: &[f64], mu: f64| v.iter().map(|a| (a - mu).powi(2)).sum::<f64>().sqrt();
        let want = cov / (sd(&h, mh) * sd(&j, mj));
        assert!((c.spearman().unwrap() - want).abs() < 1e-12);
    }

    #[test]
    fn undefined_statistics_are_null() {
        let empty = Confusion::new(1, 5).summary();
        assert_eq!(
            (empty.n, empty.kappa_quadratic, empty.spearman),
            (0, None, None)
        );
        assert_eq!((empty.exact, empty.bias), (None, None));
        let constant = confusion(&[(4, 4), (4, 4)], 1, 5);
        assert_eq!(constant.kappa_quadratic(), None, "one row and one column");
        assert_eq!(constant.spearman(), None);
        let perfect = confusion(&[(1, 1), (5, 5), (3, 3)], 1, 5);
        assert_eq!(perfect.kappa_quadratic(), Some(1.0));
        assert!((perfect.spearman().unwrap() - 1.0).abs() < 1e-12);
    }

    fn judge(provider: &str) -> JudgeId {
        JudgeId {
            provider: provider.into(),
            model: "m".into(),
        }
    }

    #[test]
    fn a_panel_counts_its_mean_rounded_and_each_judge_raw() {
        let mut acc = HumanAcc::new(Shape::Integer(1, 5));
        let mut score = Score::scored(3.5, String::new(), judge("ensemble"));
        score.human = Some(4.0);
        score.panel = vec![
            PanelVerdict {
                judge: judge("openai"),
                score: Some(3),
                reasoning: String::new(),
            },
            PanelVerdict {
                judge: judge("anthropic"),
                score: Some(4),
                reasoning: String::new(),
            },
        ];
        acc.observe(&score);
        let s = acc.summary();
        assert_eq!(s.confusion[3][3], 1, "3.5 rounds half to even: 4");
        assert_eq!(s.bias, Some(-0.5), "the bias is the unrounded mean's");
        assert_eq!(s.by_judge["openai/m"].confusion[3][2], 1);
        assert_eq!(s.by_judge["anthropic/m"].exact, Some(1.0));
        assert!(s.by_judge["openai/m"].by_judge.is_empty());
    }

    #[test]
    fn a_unit_dimension_is_measured_on_its_rubric_scale() {
        let mut acc = HumanAcc::new(Shape::Unit(1, 5));
        let mut score = Score::scored(0.75, String::new(), judge("heuristic"));
        score.human = Some(4.0);
        acc.observe(&score);
        let mut unlabelled = Score::scored(0.0, String::new(), judge("heuristic"));
        unlabelled.human = None;
        acc.observe(&unlabelled);
        let mut unscored = Score::unscored(judge("heuristic"), "no JSON".into());
        unscored.human = Some(2.0);
        acc.observe(&unscored);
        let s = acc.summary();
        assert_eq!((s.n, s.exact), (1, Some(1.0)));
        assert_eq!(s.by_judge["heuristic/m"].n, 1);
    }
}
