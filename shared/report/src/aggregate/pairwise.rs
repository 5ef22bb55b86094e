//! Pairwise preference over a run: per pairwise dimension, how many items the judged answer
//! won, tied and lost against the other answer, each rate with its 95% Wilson interval, and
//! `position_bias` — the share of items whose two verdicts followed the position instead of the
//! answers — overall and per group. Counts only, so folding is order-independent and O(groups).

use std::collections::BTreeMap;

use serde::Serialize;

use super::UNKNOWN_KEY;
use evalfleet_model::pairwise::{wilson95, Preference};
use evalfleet_model::record::{Outcome, ResultRecord};
use evalfleet_model::suite::Grouping;
use evalfleet_suites::suite::Suite;

/// One dimension's counts in one group.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PairCounts {
    pub wins: u64,
    pub ties: u64,
    pub losses: u64,
    /// Items whose two verdicts named the same position (counted among the ties).
    pub followed_position: u64,
}

impl PairCounts {
    fn push(&mut self, preference: Preference, followed_position: bool) {
        match preference {
            Preference::Win => self.wins += 1,
            Preference::Tie => self.ties += 1,
            Preference::Loss => self.losses += 1,
        }
        self.followed_position += u64::from(followed_position);
    }

    pub fn n(&self) -> u64 {
        self.wins + self.ties + self.losses
    }

    /// wins / n, None before any item.
    pub fn win_rate(&self) -> Option<f64> {
        self.rate(self.wins)
    }

    fn rate(&self, k: u64) -> Option<f64> {
        (self.n() > 0).then(|| k as f64 / self.n() as f64)
    }

    pub fn summary(&self) -> PairSummary {
        let n = self.n();
        PairSummary {
            n,
            wins: self.wins,
            ties: self.ties,
            losses: self.losses,
            win_rate: self.rate(self.wins),
            win_rate_ci95: wilson95(self.wins, n),
            tie_rate: self.rate(self.ties),
            tie_rate_ci95: wilson95(self.ties, n),
            loss_rate: self.rate(self.losses),
            loss_rate_ci95: wilson95(self.losses, n),
            position_bias: self.rate(self.followed_position),
            followed_position: self.followed_position,
        }
    }
}

/// What `report.json` shows of one dimension in one group (`aggregates.pairwise.<dim>`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairSummary {
    pub n: u64,
    pub wins: u64,
    pub ties: u64,
    pub losses: u64,
    pub win_rate: Option<f64>,
    pub win_rate_ci95: Option<[f64; 2]>,
    pub tie_rate: Option<f64>,
    pub tie_rate_ci95: Option<[f64; 2]>,
    pub loss_rate: Option<f64>,
    pub loss_rate_ci95: Option<[f64; 2]>,
    /// The share of items whose verdict followed the position (`A` both times or `B` both times).
    pub position_bias: Option<f64>,
    pub followed_position: u64,
}

/// The run's pairwise counts: per pairwise dimension, overall and per group of each grouping.
#[derive(Debug, Clone, Default)]
pub struct PairwiseAcc {
    dimensions: Vec<String>,
    all: Vec<PairCounts>,
    /// Per grouping: the key's parts → counts per dimension (sorted, so reports are stable).
    groups: Vec<BTreeMap<Vec<String>, Vec<PairCounts>>>,
}

impl PairwiseAcc {
    pub fn new(suite: &Suite) -> Self {
        let dimensions: Vec<String> = suite
            .custom
            .as_deref()
            .map(|c| c.pairwise_dimensions().map(str::to_owned).collect())
            .unwrap_or_default();
        PairwiseAcc {
            all: vec![PairCounts::default(); dimensions.len()],
            groups: vec![BTreeMap::new(); suite.group_by.len()],
            dimensions,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.dimensions.is_empty()
    }

    pub fn dimensions(&self) -> &[String] {
        &self.dimensions
    }

    /// Folds one record's pairwise results (an evaluated item's; unscored ones are not items
    /// of the comparison).
    pub fn observe(&mut self, rec: &ResultRecord, groupings: &[Grouping]) {
        if self.dimensions.is_empty() || rec.outcome != Outcome::Ok {
            return;
        }
        for (slot, dim) in self.dimensions.iter().enumerate() {
            let Some(result) = rec.scores.get(dim).and_then(|s| s.pairwise) else {
                continue;
            };
            self.all[slot].push(result.preference, result.followed_position);
            for (grouping, groups) in groupings.iter().zip(self.groups.iter_mut()) {
                let key: Vec<String> = grouping
                    .keys
                    .iter()
                    .map(|k| rec.group.get(k).unwrap_or(UNKNOWN_KEY).to_owned())
                    .collect();
                let n = self.all.len();
                groups
                    .entry(key)
                    .or_insert_with(|| vec![PairCounts::default(); n])[slot]
                    .push(result.preference, result.followed_position);
            }
        }
    }

    /// The run's counts of dimension `dim`.
    pub fn overall(&self, dim: &str) -> Option<&PairCounts> {
        let slot = self.dimensions.iter().position(|d| d == dim)?;
        self.all.get(slot)
    }

    /// Each dimension's overall counts, in suite order.
    pub fn each(&self) -> impl Iterator<Item = (&str, &PairCounts)> {
        self.dimensions.iter().map(String::as_str).zip(&self.all)
    }

    /// Dimension `slot`'s counts in each group of grouping `i`, sorted by key.
    pub fn groups(&self, i: usize, slot: usize) -> impl Iterator<Item = (&[String], &PairCounts)> {
        self.groups
            .get(i)
            .into_iter()
            .flatten()
            .map(move |(k, counts)| (k.as_slice(), &counts[slot]))
    }
}

impl PairwiseAcc {
    /// `aggregates.pairwise`: per dimension its summary, and under each grouping's name the
    /// summary of every group (keys joined with `|`, as the report's other groups).
    pub fn report(&self, groupings: &[Grouping]) -> serde_json::Value {
        use serde_json::{Map, Value};
        let dims: Map<String, Value> = self
            .each()
            .enumerate()
            .map(|(slot, (dim, counts))| {
                let mut block = serde_json::to_value(counts.summary()).unwrap_or(Value::Null);
                for (i, grouping) in groupings.iter().enumerate() {
                    let groups: Map<String, Value> = self
                        .groups(i, slot)
                        .map(|(k, c)| {
                            let summary = serde_json::to_value(c.summary()).unwrap_or(Value::Null);
                            (k.join("|"), summary)
                        })
                        .collect();
                    block[grouping.name.as_str()] = Value::Object(groups);
                }
                (dim.to_owned(), block)
            })
            .collect();
        Value::Object(dims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use evalfleet_model::pairwise::{PairwiseResult, Pick};
    use evalfleet_model::record::{Group, JudgeId, Score, Scores};

    fn suite() -> Suite {
        Suite::from_yaml(
            r#"
kind: custom
name: duel
record:
  fields:
    answer: {type: string, required: true}
    other: {type: string}
    model: {type: string}
judge:
  dimensions:
    - name: better
      pairwise: {against: other}
      rubric: r
      template: "{{ answer }}"
group_by:
  - {name: by_model, keys: [model]}
run_gates: {min_win_rate: 0.5}
"#,
            "duel",
        )
        .expect("loads")
    }

    fn record(index: u64, model: &str, first: Pick, swapped: Pick) -> ResultRecord {
        let mut rec = ResultRecord::skipped("r", "duel", index, None, String::new(), String::new());
        rec.outcome = Outcome::Ok;
        rec.group = Group::default();
        rec.group.model = Some(model.into());
        let result = PairwiseResult::combine(first, swapped);
        let score = Score {
            pairwise: Some(result),
            ..Score::scored(
                result.preference.score(),
                String::new(),
                JudgeId::heuristic(),
            )
        };
        rec.scores = Scores(vec![("better".into(), score)]);
        rec
    }

    #[test]
    fn counts_rates_and_position_bias() {
        use Pick::*;
        let suite = suite();
        let mut acc = PairwiseAcc::new(&suite);
        for (i, (model, a, b)) in [
            ("m1", A, B),     // win
            ("m1", A, B),     // win
            ("m2", B, A),     // loss
            ("m2", A, A),     // tie, followed the position
            ("m2", Tie, Tie), // tie
        ]
        .into_iter()
        .enumerate()
        {
            acc.observe(&record(i as u64, model, a, b), &suite.group_by);
        }
        let all = acc.overall("better").unwrap().summary();
        assert_eq!((all.n, all.wins, all.ties, all.losses), (5, 2, 2, 1));
        assert_eq!(all.win_rate, Some(0.4));
        assert_eq!(all.position_bias, Some(0.2));
        assert_eq!(all.win_rate_ci95, wilson95(2, 5));
        let groups: Vec<(Vec<String>, PairSummary)> = acc
            .groups(0, 0)
            .map(|(k, c)| (k.to_vec(), c.summary()))
            .collect();
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0].0, ["m1"]);
        assert_eq!(groups[0].1.win_rate, Some(1.0));
        assert_eq!(groups[1].1.position_bias, Some(1.0 / 3.0));
    }
}
