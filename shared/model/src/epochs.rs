//! Epochs: one example generated and evaluated K times (`--epochs K`), folded into one item.
//! The item's scores, metrics and overall score are the epoch means; it passes when it passed
//! in at least half of its epochs; it carries each epoch's outputs, scores, checks and pass in
//! `epochs`, which the aggregates read for pass@k, pass^k and how consistent the system is with
//! itself (`within_item_stddev`).
//!
//! One rule, here, for `run` and the fleet alike: the worker that holds an example's message
//! evaluates its epochs and folds them before storing one result.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::record::{Metrics, Outcome, ResultRecord};

/// One epoch of an item, as `report.json` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Epoch {
    pub epoch: u32,
    /// The fields the target filled in this epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outputs: Option<Map<String, Value>>,
    /// Each judge dimension's score (null: unscored).
    pub scores: Metrics,
    /// Each metric or check's value (null: not computed).
    pub checks: Metrics,
    pub passed: bool,
}

/// `epochs` (one record per epoch, in epoch order, each for the same example) as one item. A
/// single epoch is returned as it is. If an epoch failed (the target or a judge failed for
/// good), the item fails with that epoch's reason: its epochs are not all there to be averaged.
pub fn fold(mut epochs: Vec<ResultRecord>) -> Option<ResultRecord> {
    if epochs.len() <= 1 {
        return epochs.pop();
    }
    if let Some((e, failed)) = epochs
        .iter()
        .enumerate()
        .find(|(_, r)| r.outcome != Outcome::Ok)
    {
        let mut item = failed.clone();
        item.reason = Some(format!(
            "epoch {}: {}",
            e + 1,
            failed.reason.as_deref().unwrap_or_default()
        ));
        return Some(item);
    }
    let k = epochs.len();
    let list: Vec<Epoch> = epochs
        .iter()
        .enumerate()
        .map(|(e, r)| Epoch {
            epoch: e as u32 + 1,
            outputs: r.outputs.clone(),
            scores: Metrics(
                r.scores
                    .0
                    .iter()
                    .map(|(name, s)| (name.clone(), s.score))
                    .collect(),
            ),
            checks: r.metrics.clone(),
            passed: r.passed,
        })
        .collect();
    let mut item = epochs[0].clone();
    for (name, score) in &mut item.scores.0 {
        score.score = mean(
            epochs
                .iter()
                .map(|r| r.scores.get(name).and_then(|s| s.score)),
        );
        if score.score.is_some() {
            score.unscored = None;
        }
    }
    for (name, value) in &mut item.metrics.0 {
        *value = mean(epochs.iter().map(|r| r.metrics.get(name)));
    }
    item.overall_score = mean(epochs.iter().map(|r| r.overall_score));
    let passes = epochs.iter().filter(|r| r.passed).count();
    item.passed = 2 * passes >= k;
    item.fail_tags = if item.passed {
        Vec::new()
    } else {
        let mut tags: Vec<String> = Vec::new();
        for tag in epochs.iter().flat_map(|r| &r.fail_tags) {
            if !tags.contains(tag) {
                tags.push(tag.clone());
            }
        }
        tags
    };
    for r in &epochs[1..] {
        item.usage.add(&r.usage);
        item.attempts += r.attempts;
        if let (Some(sum), Some(call)) = (&mut item.target, &r.target) {
            sum.attempts += call.attempts;
            sum.tokens_in += call.tokens_in;
            sum.tokens_out += call.tokens_out;
            sum.cost_usd += call.cost_usd;
            sum.latency_ms += call.latency_ms;
        }
    }
    item.latency_ms = epochs.iter().map(|r| r.latency_ms).sum::<f64>() / k as f64;
    if let Some(call) = &mut item.target {
        call.latency_ms /= k as f64;
    }
    item.epochs = list;
    Some(item)
}

/// The mean of the values that are there; None when none is.
fn mean(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let (sum, n) = values
        .flatten()
        .fold((0.0, 0u32), |(sum, n), v| (sum + v, n + 1));
    (n > 0).then(|| sum / f64::from(n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{JudgeId, Score, Scores, TargetCall};

    fn epoch(score: f64, metric: Option<f64>, passed: bool, tags: &[&str]) -> ResultRecord {
        let mut r = ResultRecord::failed("r", "s", 3, Some(4), "q".into(), String::new());
        r.outcome = Outcome::Ok;
        r.reason = None;
        r.scores = Scores(vec![(
            "relevance".into(),
            Score::scored(score, "why".into(), JudgeId::heuristic()),
        )]);
        r.metrics = Metrics(vec![("f1".into(), metric)]);
        r.overall_score = Some(score);
        r.passed = passed;
        r.fail_tags = tags.iter().map(|t| t.to_string()).collect();
        r.attempts = 1;
        r.latency_ms = 10.0;
        r.target = Some(TargetCall {
            name: "bot".into(),
            latency_ms: 100.0,
            attempts: 1,
            tokens_in: 5,
            tokens_out: 7,
            cost_usd: 0.5,
        });
        r
    }

    #[test]
    fn an_item_is_the_mean_of_its_epochs_and_passes_in_half_of_them() {
        let item = fold(vec![
            epoch(4.0, Some(0.5), true, &[]),
            epoch(2.0, None, false, &["low_relevance"]),
            epoch(3.0, Some(1.0), true, &[]),
        ])
        .unwrap();
        assert_eq!(item.scores.get("relevance").unwrap().score, Some(3.0));
        assert_eq!(
            item.metrics.get("f1"),
            Some(0.75),
            "the epochs that have it"
        );
        assert!(item.passed && item.fail_tags.is_empty(), "2 of 3 passed");
        assert_eq!(item.epochs.len(), 3);
        assert_eq!(item.epochs[1].epoch, 2);
        assert_eq!(item.epochs[1].checks.get("f1"), None);
        assert!(!item.epochs[1].passed);
        let call = item.target.unwrap();
        assert_eq!(
            (call.attempts, call.tokens_out, call.latency_ms),
            (3, 21, 100.0)
        );
        assert!((call.cost_usd - 1.5).abs() < 1e-12);
        assert_eq!(item.attempts, 3);

        let item = fold(vec![
            epoch(1.0, None, false, &["a"]),
            epoch(5.0, None, true, &[]),
            epoch(1.0, None, false, &["b", "a"]),
        ])
        .unwrap();
        assert!(!item.passed);
        assert_eq!(item.fail_tags, ["a", "b"]);
    }

    #[test]
    fn one_epoch_is_the_item_and_a_failed_epoch_fails_it() {
        let one = epoch(4.0, None, true, &[]);
        assert_eq!(fold(vec![one.clone()]).unwrap(), one);
        let mut failed = epoch(0.0, None, false, &[]);
        failed.outcome = Outcome::Failed;
        failed.reason = Some("target bot: HTTP 500 after 3 attempts".into());
        let item = fold(vec![one, failed]).unwrap();
        assert_eq!(item.outcome, Outcome::Failed);
        assert_eq!(
            item.reason.as_deref(),
            Some("epoch 2: target bot: HTTP 500 after 3 attempts")
        );
    }
}
