//! `--estimate`: what a run would call, read and cost, computed from the prompts it would
//! send — before anything is sent — at live prices and at batch prices (`batch_discount` of
//! each provider), and which of the two the configured mode pays. A target run's own calls are
//! counted by [`crate::target::TargetEstimator`] into the same [`Estimate`].

use std::collections::BTreeMap;

use evalfleet_config::{CallMode, JudgeConfig};
use evalfleet_suites::evaluate::{judge_tasks, Example};
use evalfleet_suites::suite::Suite;
use serde::Serialize;

use super::accounting::Accounting;
use super::prompt;
use crate::target::TargetEstimate;

/// Output tokens of a typical `{"score": n, "reasoning": "..."}` reply, for the expected cost;
/// the upper bound uses the configured `max_tokens`.
pub const TYPICAL_REPLY_TOKENS: u64 = 80;

#[derive(Debug, Default, Clone, PartialEq, Serialize)]
pub struct ModelEstimate {
    pub calls: u64,
    pub input_tokens: u64,
    pub output_tokens_expected: u64,
    pub output_tokens_max: u64,
    /// At live prices.
    pub cost_usd_expected: f64,
    pub cost_usd_max: f64,
    /// At batch prices (the live ones times the provider's `batch_discount`).
    pub batch_cost_usd_expected: f64,
    pub batch_cost_usd_max: f64,
    /// What the configured mode pays: the live or the batch cost.
    pub mode_cost_usd_expected: f64,
    pub priced: bool,
}

/// One projected call, as a row adds it up.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CallEstimate {
    pub input_tokens: u64,
    pub output_tokens_expected: u64,
    pub output_tokens_max: u64,
    /// At live prices.
    pub cost_usd_expected: f64,
    pub cost_usd_max: f64,
    /// The share of the live price a batch call costs (1 for a call that is never batched).
    pub batch_discount: f64,
    /// Whether the configured mode sends it in a batch.
    pub batch: bool,
}

impl ModelEstimate {
    /// A row with no call yet; `priced` says whether its model has a price.
    pub fn new(priced: bool) -> Self {
        ModelEstimate {
            priced,
            ..Default::default()
        }
    }

    pub fn add_call(&mut self, call: CallEstimate) {
        let discount = call.batch_discount;
        self.calls += 1;
        self.input_tokens += call.input_tokens;
        self.output_tokens_expected += call.output_tokens_expected;
        self.output_tokens_max += call.output_tokens_max;
        self.cost_usd_expected += call.cost_usd_expected;
        self.cost_usd_max += call.cost_usd_max;
        self.batch_cost_usd_expected += call.cost_usd_expected * discount;
        self.batch_cost_usd_max += call.cost_usd_max * discount;
        self.mode_cost_usd_expected += if call.batch {
            call.cost_usd_expected * discount
        } else {
            call.cost_usd_expected
        };
    }

    /// `other`'s calls added to this row's; priced only when both are.
    pub fn merge(mut self, other: &ModelEstimate) -> Self {
        self.calls += other.calls;
        self.input_tokens += other.input_tokens;
        self.output_tokens_expected += other.output_tokens_expected;
        self.output_tokens_max += other.output_tokens_max;
        self.cost_usd_expected += other.cost_usd_expected;
        self.cost_usd_max += other.cost_usd_max;
        self.batch_cost_usd_expected += other.batch_cost_usd_expected;
        self.batch_cost_usd_max += other.batch_cost_usd_max;
        self.mode_cost_usd_expected += other.mode_cost_usd_expected;
        self.priced &= other.priced;
        self
    }
}

#[derive(Debug, Default, Clone, PartialEq, Serialize)]
pub struct Estimate {
    pub examples: u64,
    /// Examples the routing cannot judge (no judge for their provider).
    pub unroutable: u64,
    /// `provider/model` → projection.
    pub by_judge: BTreeMap<String, ModelEstimate>,
    /// A target run: the target's own calls (see [`crate::target::TargetEstimator`]).
    pub target: Option<TargetEstimate>,
}

impl Estimate {
    /// Every row: the target's and the judges'.
    pub fn total(&self) -> ModelEstimate {
        self.target
            .iter()
            .map(|t| &t.row)
            .chain(self.by_judge.values())
            .fold(ModelEstimate::new(true), ModelEstimate::merge)
    }

    /// The judges' rows only.
    pub fn judges_total(&self) -> ModelEstimate {
        self.by_judge
            .values()
            .fold(ModelEstimate::new(true), ModelEstimate::merge)
    }
}

/// Tokens of the texts of one prompt, estimated as characters / 4 (rounded up), as the judges'
/// and a chat target's prompts are counted.
pub fn estimated_tokens(texts: &[&str]) -> u64 {
    texts
        .iter()
        .map(|t| t.chars().count())
        .sum::<usize>()
        .div_ceil(4) as u64
}

/// Adds one example's judge calls to the estimate. Tokens are estimated as characters / 4.
pub fn add_example(
    estimate: &mut Estimate,
    config: &JudgeConfig,
    suite: &Suite,
    example: &Example,
) {
    estimate.examples += 1;
    let Ok(judges) = config.judges_for(example.response_provider()) else {
        estimate.unroutable += 1;
        return;
    };
    let accounting = Accounting::new(config.prices.clone(), None);
    for task in judge_tasks(suite, example) {
        // A pairwise dimension asks two questions (positions swapped), each of the same size.
        let (p, questions) = if task.is_pairwise() {
            match super::pairwise::estimated_prompts(&task) {
                Ok([first, _]) => (first, 2),
                Err(_) => continue,
            }
        } else {
            match prompt::for_task(&task) {
                Ok(p) => (p, 1),
                Err(_) => continue,
            }
        };
        let input = estimated_tokens(&[&p.system, &p.user]);
        for name in std::iter::repeat_n(&judges, questions).flatten() {
            let model = config.judge_models.get(*name).map_or("", String::as_str);
            let provider = config.providers.get(*name);
            let max_out = provider.map_or(0, |p| u64::from(p.max_tokens));
            estimate
                .by_judge
                .entry(format!("{name}/{model}"))
                .or_insert_with(|| ModelEstimate::new(accounting.has_price(model)))
                .add_call(CallEstimate {
                    input_tokens: input,
                    output_tokens_expected: TYPICAL_REPLY_TOKENS,
                    output_tokens_max: max_out,
                    cost_usd_expected: accounting.cost(model, input, TYPICAL_REPLY_TOKENS),
                    cost_usd_max: accounting.cost(model, input, max_out),
                    batch_discount: provider.map_or(1.0, |p| p.batch_discount),
                    batch: config.mode_of(name) == CallMode::Batch,
                });
        }
    }
}

#[cfg(test)]
mod tests {
    use evalfleet_model::suite::SuiteKind;
    use evalfleet_suites::suite::Suite;

    use super::*;

    #[test]
    fn tokens_are_the_characters_of_all_texts_over_four_rounded_up() {
        assert_eq!(estimated_tokens(&[]), 0);
        assert_eq!(estimated_tokens(&["abc", "de"]), 2);
        assert_eq!(estimated_tokens(&["éééé"]), 1, "characters, not bytes");
    }

    #[test]
    fn batch_prices_are_the_discounted_live_ones() {
        let suite = Suite::builtin(SuiteKind::SupportJudge);
        let example = Example::Support(evalfleet_suites::support::SupportExample {
            id: "t1".into(),
            ticket: "My VPN drops every hour.".into(),
            response: "Renew the DHCP lease.".into(),
            model: "gpt-4o".into(),
            prompt_version: "v1".into(),
            provider: "openai".into(),
            metadata: Default::default(),
            human: Default::default(),
        });
        let mut config = JudgeConfig::default();
        let mut live = Estimate::default();
        add_example(&mut live, &config, &suite, &example);
        let total = live.total();
        assert!(total.cost_usd_expected > 0.0);
        assert!((total.batch_cost_usd_expected - total.cost_usd_expected * 0.5).abs() < 1e-12);
        assert_eq!(total.mode_cost_usd_expected, total.cost_usd_expected);
        config.mode = CallMode::Batch;
        let mut batch = Estimate::default();
        add_example(&mut batch, &config, &suite, &example);
        let total = batch.total();
        assert_eq!(total.mode_cost_usd_expected, total.batch_cost_usd_expected);
    }
}
