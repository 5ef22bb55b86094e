//! Inter-judge agreement for dimensions judged by a panel, folded one item at a time in
//! O(categories²) memory: Cohen's kappa when the panel has two judges, Krippendorff's alpha
//! (interval metric, tolerant of a judge that stayed unscored) for any panel size.

use serde::Serialize;

#[derive(Debug, Clone, PartialEq)]
pub struct Agreement {
    min: i64,
    cats: usize,
    /// Largest panel seen.
    judges: usize,
    /// Items where at least two judges scored.
    units: u64,
    /// Two-judge confusion counts (first judge's score × second's), row-major.
    confusion: Vec<u64>,
    /// Krippendorff's coincidence matrix, row-major.
    coincidence: Vec<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgreementSummary {
    pub judges: usize,
    pub units: u64,
    /// Cohen's kappa (two judges only); null when undefined (every item in one category).
    pub kappa: Option<f64>,
    /// Krippendorff's alpha, interval metric; null when undefined.
    pub alpha: Option<f64>,
}

impl AgreementSummary {
    /// The statistic the agreement gate compares: kappa for two judges, alpha otherwise.
    pub fn value(&self) -> Option<f64> {
        if self.judges == 2 {
            self.kappa
        } else {
            self.alpha
        }
    }
}

impl Agreement {
    pub fn new(min: i64, max: i64) -> Self {
        let cats = (max - min + 1).max(1) as usize;
        Agreement {
            min,
            cats,
            judges: 0,
            units: 0,
            confusion: vec![0; cats * cats],
            coincidence: vec![0.0; cats * cats],
        }
    }

    fn cat(&self, score: i64) -> Option<usize> {
        let c = score - self.min;
        (c >= 0 && (c as usize) < self.cats).then_some(c as usize)
    }

    /// Folds one item's panel: each judge's raw score, None for an unscored judge.
    pub fn observe(&mut self, panel: &[Option<i64>]) {
        self.judges = self.judges.max(panel.len());
        let scored: Vec<usize> = panel
            .iter()
            .filter_map(|s| s.and_then(|s| self.cat(s)))
            .collect();
        if scored.len() < 2 {
            return;
        }
        self.units += 1;
        if let [Some(a), Some(b)] = panel {
            if let (Some(a), Some(b)) = (self.cat(*a), self.cat(*b)) {
                self.confusion[a * self.cats + b] += 1;
            }
        }
        let weight = 1.0 / (scored.len() - 1) as f64;
        for (i, &c) in scored.iter().enumerate() {
            for (j, &k) in scored.iter().enumerate() {
                if i != j {
                    self.coincidence[c * self.cats + k] += weight;
                }
            }
        }
    }

    pub fn summary(&self) -> AgreementSummary {
        AgreementSummary {
            judges: self.judges,
            units: self.units,
            kappa: (self.judges == 2).then(|| self.kappa()).flatten(),
            alpha: self.alpha(),
        }
    }

    fn kappa(&self) -> Option<f64> {
        let n: u64 = self.confusion.iter().sum();
        if n == 0 {
            return None;
        }
        let n = n as f64;
        let at = |i: usize, j: usize| self.confusion[i * self.cats + j] as f64;
        let observed: f64 = (0..self.cats).map(|i| at(i, i)).sum::<f64>() / n;
        let expected: f64 = (0..self.cats)
            .map(|i| {
                let row: f64 = (0..self.cats).map(|j| at(i, j)).sum();
                let col: f64 = (0..self.cats).map(|j| at(j, i)).sum();
                (row / n) * (col / n)
            })
            .sum();
        (expected < 1.0).then(|| (observed - expected) / (1.0 - expected))
    }

    fn alpha(&self) -> Option<f64> {
        let at = |c: usize, k: usize| self.coincidence[c * self.cats + k];
        let marginal: Vec<f64> = (0..self.cats)
            .map(|c| (0..self.cats).map(|k| at(c, k)).sum())
            .collect();
        let n: f64 = marginal.iter().sum();
        if n <= 1.0 {
            return None;
        }
        let delta = |c: usize, k: usize| ((c as f64) - (k as f64)).powi(2);
        let mut observed = 0.0;
        let mut expected = 0.0;
        for c in 0..self.cats {
            for k in 0..self.cats {
                observed += at(c, k) * delta(c, k);
                expected += marginal[c] * marginal[k] * delta(c, k);
            }
        }
        (expected > 0.0).then(|| 1.0 - (n - 1.0) * observed / expected)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cohen_kappa_by_hand() {
        // Two judges, 1..3. Pairs: (1,1) ×4, (2,2) ×3, (3,3) ×1, (1,2) ×1, (3,2) ×1 → n = 10.
        // p_o = 0.8; rows 5,3,2; cols 4,5,1 → p_e = .20+.15+.02 = 0.37; κ = 0.43/0.63.
        let mut a = Agreement::new(1, 3);
        for (x, y, times) in [(1, 1, 4), (2, 2, 3), (3, 3, 1), (1, 2, 1), (3, 2, 1)] {
            for _ in 0..times {
                a.observe(&[Some(x), Some(y)]);
            }
        }
        let s = a.summary();
        assert_eq!((s.judges, s.units), (2, 10));
        assert!((s.kappa.unwrap() - 0.43 / 0.63).abs() < 1e-12, "{s:?}");
        assert_eq!(s.value(), s.kappa);
    }

    #[test]
    fn krippendorff_alpha_interval_by_hand() {
        // Three judges; unit 1: (1,1,1); unit 2: (1,2,–); unit 3: (3,3,2).
        // Coincidences (weight 1/(m−1)): u1: o11 += 3 (six ordered pairs × ½);
        // u2: o12 = o21 = 1; u3: o33 += 1, o32 = o23 = 1; u4 has one value and is left out.
        // Marginals n1 = 4, n2 = 2, n3 = 2, n = 8. Σ o·δ² = o12 + o21 + o32 + o23 = 4.
        // Σ n_c n_k δ² = 2(n1n2·1 + n1n3·4 + n2n3·1) = 2(8 + 32 + 4) = 88.
        // α = 1 − (n − 1) · 4 / 88 = 1 − 28/88.
        let mut a = Agreement::new(1, 3);
        a.observe(&[Some(1), Some(1), Some(1)]);
        a.observe(&[Some(1), Some(2), None]);
        a.observe(&[Some(3), Some(3), Some(2)]);
        a.observe(&[Some(2), None, None]);
        let s = a.summary();
        assert_eq!((s.judges, s.units, s.kappa), (3, 3, None));
        assert!(
            (s.alpha.unwrap() - (1.0 - 28.0 / 88.0)).abs() < 1e-12,
            "{s:?}"
        );
    }

    #[test]
    fn perfect_and_degenerate_agreement() {
        let mut a = Agreement::new(1, 5);
        a.observe(&[Some(4), Some(4)]);
        a.observe(&[Some(4), Some(4)]);
        assert_eq!(
            a.summary().kappa,
            None,
            "every item in one category: undefined"
        );
        a.observe(&[Some(2), Some(2)]);
        assert_eq!(a.summary().kappa, Some(1.0));
        assert_eq!(a.summary().alpha, Some(1.0));
    }
}
