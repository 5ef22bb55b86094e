//! `--estimate`: what a run would call, read and cost, computed from the prompts it would
//! send — before anything is sent — at live prices and at batch prices (`batch_discount` of
//! each provider), and which of the two the configured mode pays.

use std::collections::BTreeMap;

use evalfleet_config::{CallMode, JudgeConfig};
use evalfleet_suites::evaluate::{judge_tasks, Example};
use evalfleet_suites::suite::Suite;
use serde::Serialize;

use super::accounting::Accounting;
use super::prompt;

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

#[derive(Debug, Default, Clone, PartialEq, Serialize)]
pub struct Estimate {
    pub examples: u64,
    /// Examples the routing cannot judge (no judge for their provider).
    pub unroutable: u64,
    /// `provider/model` → projection.
    pub by_judge: BTreeMap<String, ModelEstimate>,
}

impl Estimate {
    pub fn total(&self) -> ModelEstimate {
        self.by_judge.values().fold(
            ModelEstimate {
                priced: true,
                ..Default::default()
            },
            |mut t, m| {
                t.calls += m.calls;
                t.input_tokens += m.input_tokens;
                t.output_tokens_expected += m.output_tokens_expected;
                t.output_tokens_max += m.output_tokens_max;
                t.cost_usd_expected += m.cost_usd_expected;
                t.cost_usd_max += m.cost_usd_max;
                t.batch_cost_usd_expected += m.batch_cost_usd_expected;
                t.batch_cost_usd_max += m.batch_cost_usd_max;
                t.mode_cost_usd_expected += m.mode_cost_usd_expected;
                t.priced &= m.priced;
                t
            },
        )
    }
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
        let Ok(p) = prompt::for_task(&task) else {
            continue;
        };
        let input = (p.system.chars().count() + p.user.chars().count()).div_ceil(4) as u64;
        for name in &judges {
            let model = config.judge_models.get(*name).map_or("", String::as_str);
            let provider = config.providers.get(*name);
            let max_out = provider.map_or(0, |p| u64::from(p.max_tokens));
            let discount = provider.map_or(1.0, |p| p.batch_discount);
            let batch = config.mode_of(name) == CallMode::Batch;
            let m = estimate
                .by_judge
                .entry(format!("{name}/{model}"))
                .or_insert_with(|| ModelEstimate {
                    priced: accounting.has_price(model),
                    ..Default::default()
                });
            m.calls += 1;
            m.input_tokens += input;
            m.output_tokens_expected += TYPICAL_REPLY_TOKENS;
            m.output_tokens_max += max_out;
            let expected = accounting.cost(model, input, TYPICAL_REPLY_TOKENS);
            let max = accounting.cost(model, input, max_out);
            m.cost_usd_expected += expected;
            m.cost_usd_max += max;
            m.batch_cost_usd_expected += expected * discount;
            m.batch_cost_usd_max += max * discount;
            m.mode_cost_usd_expected += if batch { expected * discount } else { expected };
        }
    }
}

#[cfg(test)]
mod tests {
    use evalfleet_model::suite::SuiteKind;
    use evalfleet_suites::suite::Suite;

    use super::*;

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
