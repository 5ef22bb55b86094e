//! Self-preference: does a judge favour answers of its own provider's models? Measured where a
//! panel holds judges of more than one provider and the item names its answer's provider
//! (`answer_provider`). Per judge provider P, dimension and item, the paired difference
//! d = P's score − the other providers' score (each provider's judges averaged, then the
//! providers) is split by whether P's family wrote the answer. The excess
//! mean(d | own) − mean(d | other) is P's own-minus-other difference beyond the other judges'
//! difference on the same items; its 95% interval is Welch's t interval of a difference of two
//! independent means. Folded in fixed point (order-independent), O(providers × dimensions).
//!
//! With two providers the excess is the same number for both judges: it is the pair's combined
//! self-preference, which paired data cannot split between them (docs/DECISIONS.md, "Issue 21").

use std::collections::BTreeMap;

use serde::Serialize;

use super::fixed::FixedSum;
use evalfleet_model::record::{PanelVerdict, ResultRecord};

/// One side (answers of P's own provider, or of the others): P's scores, the other judges',
/// and the squares of their per-item difference (its sum is theirs).
#[derive(Debug, Clone, Default, PartialEq)]
struct Side {
    n: u64,
    judge: FixedSum,
    others: FixedSum,
    diff_sq: FixedSum,
}

impl Side {
    fn push(&mut self, judge: f64, others: f64) {
        self.n += 1;
        self.judge.add(judge);
        self.others.add(others);
        self.diff_sq.add((judge - others) * (judge - others));
    }

    fn mean(&self, sum: FixedSum) -> Option<f64> {
        (self.n > 0).then(|| sum.get() / self.n as f64)
    }

    fn diff_mean(&self) -> Option<f64> {
        (self.n > 0).then(|| (self.judge.get() - self.others.get()) / self.n as f64)
    }

    /// The sample variance of the per-item difference; None below two items.
    fn diff_var(&self) -> Option<f64> {
        if self.n < 2 {
            return None;
        }
        let n = self.n as f64;
        let mean = self.diff_mean()?;
        Some(((self.diff_sq.get() / n - mean * mean).max(0.0)) * n / (n - 1.0))
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
struct ProviderAcc {
    own: Side,
    other: Side,
}

/// Every judge provider's self-preference, per dimension slot.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SelfPreferenceAcc {
    /// (judge provider, dimension slot) → its sides; few entries, searched linearly.
    entries: Vec<(String, usize, ProviderAcc)>,
    /// Reused per item: (the panel place of the provider's first judge, the sum of its
    /// judges' scores, how many).
    scratch: Vec<(usize, f64, u32)>,
}

impl SelfPreferenceAcc {
    /// Folds one record; `slots[i]` is the suite dimension slot of its i-th score.
    pub fn observe(&mut self, rec: &ResultRecord, slots: &[Option<usize>]) {
        let Some(answer) = rec.answer_provider.as_deref() else {
            return;
        };
        for ((_, score), slot) in rec.scores.0.iter().zip(slots) {
            let Some(slot) = *slot else { continue };
            if score.panel.len() < 2 {
                continue;
            }
            self.per_provider(&score.panel);
            if self.scratch.len() < 2 {
                continue;
            }
            let providers = std::mem::take(&mut self.scratch);
            for (i, (first, sum, count)) in providers.iter().enumerate() {
                let provider = score.panel[*first].judge.provider.as_str();
                let mine = sum / f64::from(*count);
                let (others_sum, others_n) = providers
                    .iter()
                    .enumerate()
                    .filter(|(k, _)| *k != i)
                    .fold((0.0, 0.0), |(s, n), (_, (_, sum, count))| {
                        (s + sum / f64::from(*count), n + 1.0)
                    });
                let others = others_sum / others_n;
                let acc = self.entry(provider, slot);
                let side = if provider == answer {
                    &mut acc.own
                } else {
                    &mut acc.other
                };
                side.push(mine, others);
            }
            self.scratch = providers;
        }
    }

    /// Fills the scratch with each provider's scored judges on this panel.
    fn per_provider(&mut self, panel: &[PanelVerdict]) {
        self.scratch.clear();
        for (i, p) in panel.iter().enumerate() {
            let Some(s) = p.score else { continue };
            match self
                .scratch
                .iter_mut()
                .find(|(first, _, _)| panel[*first].judge.provider == p.judge.provider)
            {
                Some(entry) => {
                    entry.1 += s as f64;
                    entry.2 += 1;
                }
                None => self.scratch.push((i, s as f64, 1)),
            }
        }
    }

    fn entry(&mut self, provider: &str, slot: usize) -> &mut ProviderAcc {
        let at = match self
            .entries
            .iter()
            .position(|(p, s, _)| p == provider && *s == slot)
        {
            Some(at) => at,
            None => {
                self.entries
                    .push((provider.to_owned(), slot, ProviderAcc::default()));
                self.entries.len() - 1
            }
        };
        &mut self.entries[at].2
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// judge provider → dimension → its figures.
    pub fn summary(
        &self,
        dimensions: &[String],
    ) -> BTreeMap<String, BTreeMap<String, SelfPreferenceSummary>> {
        let mut out: BTreeMap<String, BTreeMap<String, SelfPreferenceSummary>> = BTreeMap::new();
        for (provider, slot, acc) in &self.entries {
            let Some(dim) = dimensions.get(*slot) else {
                continue;
            };
            out.entry(provider.clone())
                .or_default()
                .insert(dim.clone(), acc.summary());
        }
        out
    }
}

impl ProviderAcc {
    fn summary(&self) -> SelfPreferenceSummary {
        let (own, other) = (&self.own, &self.other);
        let sub = |a: Option<f64>, b: Option<f64>| Some(a? - b?);
        let difference = sub(own.mean(own.judge), other.mean(other.judge));
        let others_difference = sub(own.mean(own.others), other.mean(other.others));
        let excess = sub(own.diff_mean(), other.diff_mean());
        let (ci95, df) = match (excess, welch(own, other)) {
            (Some(e), Some((half, df))) => (Some([e - half, e + half]), df),
            _ => (None, None),
        };
        SelfPreferenceSummary {
            own: SideSummary {
                n: own.n,
                mean: own.mean(own.judge),
            },
            other: SideSummary {
                n: other.n,
                mean: other.mean(other.judge),
            },
            difference,
            other_judges: OtherJudges {
                own: own.mean(own.others),
                other: other.mean(other.others),
                difference: others_difference,
            },
            excess,
            ci95,
            df,
        }
    }
}

/// Welch's interval of mean(a) − mean(b): its half-width at 95% and the Welch–Satterthwaite
/// degrees of freedom (None when both sides are constant: the half-width is then 0). None below
/// two items on either side.
fn welch(a: &Side, b: &Side) -> Option<(f64, Option<f64>)> {
    let part = |s: &Side| s.diff_var().map(|v| v / s.n as f64);
    let (va, vb) = (part(a)?, part(b)?);
    let se2 = va + vb;
    if se2 <= 0.0 {
        return Some((0.0, None));
    }
    let df = se2 * se2 / (va * va / (a.n - 1) as f64 + vb * vb / (b.n - 1) as f64);
    use statrs::distribution::{ContinuousCDF, StudentsT};
    let t = StudentsT::new(0.0, 1.0, df).map_or(1.96, |t| t.inverse_cdf(0.975));
    Some((t * se2.sqrt(), Some(df)))
}

/// `aggregates.self_preference.<judge provider>.<dimension>`, on the rubric scale.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SelfPreferenceSummary {
    /// The judge's scores of answers its own provider's models wrote.
    pub own: SideSummary,
    /// Its scores of the other providers' answers.
    pub other: SideSummary,
    /// own.mean − other.mean.
    pub difference: Option<f64>,
    /// The other providers' judges on the same items.
    pub other_judges: OtherJudges,
    /// difference − other_judges.difference: the judge's preference for its own family beyond
    /// what the other judges see in the same answers.
    pub excess: Option<f64>,
    /// Welch's 95% interval of the excess.
    pub ci95: Option<[f64; 2]>,
    /// Its Welch–Satterthwaite degrees of freedom.
    pub df: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SideSummary {
    pub n: u64,
    pub mean: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OtherJudges {
    /// Their mean on the answers of the judge's own provider.
    pub own: Option<f64>,
    /// Their mean on the other answers.
    pub other: Option<f64>,
    pub difference: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use evalfleet_model::record::{JudgeId, Score, Scores};

    fn verdict(provider: &str, score: i64) -> PanelVerdict {
        PanelVerdict {
            judge: JudgeId {
                provider: provider.into(),
                model: format!("{provider}-model"),
            },
            score: Some(score),
            reasoning: String::new(),
        }
    }

    fn record(answer: &str, openai: i64, anthropic: i64) -> ResultRecord {
        let mut rec = ResultRecord::skipped("r", "s", 0, None, "i".into(), String::new());
        rec.reason = None;
        rec.outcome = evalfleet_model::record::Outcome::Ok;
        rec.answer_provider = Some(answer.into());
        let mut score = Score::scored(
            (openai + anthropic) as f64 / 2.0,
            String::new(),
            JudgeId {
                provider: "ensemble".into(),
                model: "x".into(),
            },
        );
        score.panel = vec![verdict("openai", openai), verdict("anthropic", anthropic)];
        rec.scores = Scores(vec![("tone".into(), score)]);
        rec
    }

    #[test]
    fn the_excess_is_the_difference_in_differences_with_a_welch_interval() {
        let mut acc = SelfPreferenceAcc::default();
        // OpenAI answers: openai judge 5,4,5; anthropic judge 3,3,4 → d = 2,1,1.
        // Anthropic answers: openai 3,3,2; anthropic 4,3,4 → d = −1,0,−2.
        let items = [
            ("openai", 5, 3),
            ("openai", 4, 3),
            ("openai", 5, 4),
            ("anthropic", 3, 4),
            ("anthropic", 3, 3),
            ("anthropic", 2, 4),
        ];
        for (answer, o, a) in items {
            acc.observe(&record(answer, o, a), &[Some(0)]);
        }
        let s = acc.summary(&["tone".into()]);
        let openai = &s["openai"]["tone"];
        assert_eq!((openai.own.n, openai.other.n), (3, 3));
        assert!((openai.own.mean.unwrap() - 14.0 / 3.0).abs() < 1e-9);
        assert!((openai.difference.unwrap() - (14.0 - 8.0) / 3.0).abs() < 1e-9);
        assert!((openai.other_judges.difference.unwrap() - (10.0 - 11.0) / 3.0).abs() < 1e-9);
        let excess = 4.0 / 3.0 - (-1.0);
        assert!((openai.excess.unwrap() - excess).abs() < 1e-9);
        // Welch: variances 1/3 and 1 over 3 items each → se² = 1/9 + 1/3 = 4/9,
        // df = (4/9)² / ((1/9)²/2 + (1/3)²/2) = 3.2; scipy's t.ppf(0.975, 3.2) = 3.0728289297.
        let half = 3.072_828_929_713_162 * (2.0 / 3.0);
        let [lo, hi] = openai.ci95.unwrap();
        assert!((lo - (excess - half)).abs() < 1e-9 && (hi - (excess + half)).abs() < 1e-9);
        assert!((openai.df.unwrap() - 3.2).abs() < 1e-9);
        let anthropic = &s["anthropic"]["tone"];
        assert!(
            (anthropic.excess.unwrap() - excess).abs() < 1e-9,
            "two providers: one excess, the pair's"
        );
        assert!((anthropic.own.mean.unwrap() - 11.0 / 3.0).abs() < 1e-9);
    }

    #[test]
    fn one_provider_or_no_answer_provider_counts_nothing() {
        let mut acc = SelfPreferenceAcc::default();
        let mut rec = record("openai", 4, 4);
        rec.answer_provider = None;
        acc.observe(&rec, &[Some(0)]);
        let mut same = record("openai", 4, 4);
        same.scores.0[0].1.panel[1] = verdict("openai", 2);
        acc.observe(&same, &[Some(0)]);
        assert!(acc.is_empty());
        acc.observe(&record("openai", 4, 4), &[None]);
        assert!(acc.is_empty(), "not a suite dimension");
    }

    #[test]
    fn constant_differences_give_a_zero_width_interval() {
        let mut acc = SelfPreferenceAcc::default();
        for answer in ["openai", "openai", "anthropic", "anthropic"] {
            acc.observe(&record(answer, 4, 3), &[Some(0)]);
        }
        let s = &acc.summary(&["tone".into()])["openai"]["tone"];
        assert_eq!(s.excess, Some(0.0));
        assert_eq!((s.ci95, s.df), (Some([0.0, 0.0]), None));
    }
}
