//! The counting of a target run's estimate: the target's row, and the judges on the completed
//! record.

use evalfleet_model::suite::SuiteKind;
use serde_json::json;

use super::*;

fn judges() -> JudgeConfig {
    JudgeConfig::default()
}

fn chat(extra: &str) -> Target {
    Target::parse(&format!(
        "name: bot\nkind: chat\nprovider: openai\nmodel: gpt-4o-mini\nsystem: \"Be brief.\"\n\
         prompt: \"{{{{ ticket }}}}\"\noutput: response\n{extra}"
    ))
    .unwrap()
}

fn estimator(target: Target, model: Option<&str>, kind: SuiteKind) -> TargetEstimator {
    TargetEstimator::new(
        target,
        model.map(str::to_owned),
        &judges(),
        Arc::new(Suite::builtin(kind)),
        ProviderRules::default(),
    )
    .unwrap()
}

fn pending(record: Value) -> PendingRecord {
    PendingRecord {
        id: record["id"].as_str().unwrap().to_owned(),
        record: record.as_object().unwrap().clone(),
        scenario: None,
        replaced: Vec::new(),
        baseline: Default::default(),
    }
}

fn ticket() -> PendingRecord {
    pending(json!({"id": "t1", "ticket": "My VPN drops every hour."}))
}

/// A support-bot: the answer, the model and the prompt version, as the suite needs them.
const COMPLETES_SUPPORT: &str =
    "params: {max_tokens: 400}\nmodel_field: model\nset: {prompt_version: v1}\n";

#[test]
fn a_chat_target_is_counted_from_its_rendered_prompt_and_its_max_tokens() {
    let mut bot = estimator(chat(COMPLETES_SUPPORT), None, SuiteKind::SupportJudge);
    let mut estimate = bot.start();
    bot.add_record(&mut estimate, &ticket());
    let target = estimate.target.clone().unwrap();
    assert_eq!(target.label, "target bot (gpt-4o-mini)");
    let input = estimated_tokens(&["Be brief.", "My VPN drops every hour."]);
    let row = &target.row;
    assert_eq!(
        (
            row.calls,
            row.input_tokens,
            row.output_tokens_expected,
            row.output_tokens_max
        ),
        (1, input, 400, 400)
    );
    let price = Accounting::new(judges().prices, None).cost("gpt-4o-mini", input, 400);
    assert!(row.priced && (row.cost_usd_expected - price).abs() < 1e-12);
    // A live provider: its batch price, which the estimate shows beside, is the discounted one.
    let discount = judges().providers["openai"].batch_discount;
    assert!((row.batch_cost_usd_expected - row.cost_usd_expected * discount).abs() < 1e-12);
    assert!(
        (row.mode_cost_usd_expected - row.cost_usd_expected).abs() < 1e-12,
        "a live provider's target is priced live"
    );
    assert_eq!(
        (target.records, target.failing),
        (1, 0),
        "{:?}",
        target.first_failure
    );
    // The answer of gpt-4o-mini (openai) is judged by anthropic, on the completed record.
    assert_eq!(estimate.examples, 1);
    assert_eq!(
        estimate.by_judge.keys().collect::<Vec<_>>(),
        ["anthropic/claude-sonnet-4-20250514"]
    );
    let total = estimate.total();
    let judged = estimate.judges_total();
    assert_eq!(total.calls, judged.calls + 1);
    assert!((total.cost_usd_expected - judged.cost_usd_expected - price).abs() < 1e-12);
}

#[test]
fn the_judges_read_a_placeholder_answer_of_the_expected_length() {
    let judge_input = |max_tokens: u64| {
        let extra =
            format!("params: {{max_tokens: {max_tokens}}}\nmodel_field: model\nset: {{prompt_version: v1}}\n");
        let mut bot = estimator(chat(&extra), None, SuiteKind::SupportJudge);
        let mut estimate = bot.start();
        bot.add_record(&mut estimate, &ticket());
        estimate.judges_total().input_tokens
    };
    let calls = {
        let mut bot = estimator(chat(COMPLETES_SUPPORT), None, SuiteKind::SupportJudge);
        let mut estimate = bot.start();
        bot.add_record(&mut estimate, &ticket());
        estimate.judges_total().calls
    };
    // Each judge prompt holds the answer: 100 more tokens of answer, 100 more per prompt.
    let grown = judge_input(500).abs_diff(judge_input(400));
    assert!(
        grown.abs_diff(100 * calls) <= calls,
        "{grown} for {calls} judge calls"
    );
    assert_eq!(placeholder(3).chars().count(), 12);
}

#[test]
fn target_model_overrides_the_model_and_its_price() {
    let mut bot = estimator(
        chat(COMPLETES_SUPPORT),
        Some("gpt-4o"),
        SuiteKind::SupportJudge,
    );
    let mut estimate = bot.start();
    bot.add_record(&mut estimate, &ticket());
    let target = estimate.target.unwrap();
    assert_eq!(target.label, "target bot (gpt-4o)");
    let input = target.row.input_tokens;
    let price = Accounting::new(judges().prices, None).cost("gpt-4o", input, 400);
    assert!((target.row.cost_usd_expected - price).abs() < 1e-12);
}

#[test]
fn without_max_tokens_a_typical_reply_is_expected_and_the_provider_caps_it() {
    let bot = estimator(chat(""), Some("unpriced-model"), SuiteKind::SupportJudge);
    let target = bot.start().target.unwrap();
    let cap = u64::from(judges().providers["openai"].max_tokens);
    let reply = target.reply.unwrap();
    assert_eq!(
        (reply.expected, reply.max),
        (TYPICAL_TARGET_REPLY_TOKENS.min(cap), cap)
    );
    assert!(!target.row.priced, "no price for the model");
}

#[test]
fn a_completed_record_the_suite_rejects_is_a_failure_with_no_judge_call() {
    // Without model_field and prompt_version the support suite rejects the completed record.
    let mut bot = estimator(chat(""), None, SuiteKind::SupportJudge);
    let mut estimate = bot.start();
    bot.add_record(&mut estimate, &ticket());
    let target = estimate.target.clone().unwrap();
    assert_eq!((target.row.calls, target.failing), (1, 1));
    let reason = target.first_failure.unwrap();
    assert!(
        reason.starts_with("target bot: the completed record: "),
        "{reason}"
    );
    assert_eq!(estimate.examples, 0);
    assert!(estimate.by_judge.is_empty());
}

#[test]
fn a_log_analysis_record_is_estimated_with_the_scenario_resolved_before_the_call() {
    use evalfleet_suites::loganalysis::{Scenario, ScenarioRef};

    let analyst = Target::parse(
        "name: analyst\nkind: chat\nprovider: openai\nmodel: gpt-4o-mini\n\
         prompt: \"{{ logs }}\"\noutput: output\n",
    )
    .unwrap();
    let mut analyst = estimator(analyst, None, SuiteKind::LogAnalysis);
    let mut estimate = analyst.start();
    // The path names no file here: the estimate, as the worker, takes the resolved scenario.
    let mut record = pending(json!({"id": "l1", "scenario": "not-here.json", "logs": "ERROR"}));
    record.scenario = Some(ScenarioRef::new(Arc::new(Scenario::default())));
    analyst.add_record(&mut estimate, &record);
    let target = estimate.target.clone().unwrap();
    assert_eq!((target.row.calls, target.failing), (1, 0), "{target:?}");
    assert_eq!(estimate.examples, 1);
    // A record whose scenario was not resolved cannot be completed.
    record.scenario = None;
    analyst.add_record(&mut estimate, &record);
    let target = estimate.target.clone().unwrap();
    assert_eq!((target.row.calls, target.failing), (2, 1));
    assert_eq!(estimate.examples, 1);
}

#[test]
fn an_http_target_costs_its_price_per_call_and_its_judges_are_not_counted() {
    let http = |extra: &str| {
        Target::parse(&format!(
            "name: agent\nkind: http\nurl: \"http://127.0.0.1:1/agent?key=${{AGENT_KEY}}\"\n\
             body: {{question: \"{{{{ question }}}}\"}}\noutputs: {{trace: /data/trace}}\n{extra}"
        ))
        .unwrap()
    };
    let record = pending(json!({"id": "q1", "question": "What is SoS?"}));
    let mut agent = estimator(http("price_per_call: 0.01\n"), None, SuiteKind::RagLayers);
    let mut estimate = agent.start();
    agent.add_record(&mut estimate, &record);
    agent.add_record(&mut estimate, &record);
    let target = estimate.target.clone().unwrap();
    assert_eq!(target.label, "target agent (http)");
    assert!(target.reply.is_none());
    assert_eq!((target.row.calls, target.row.input_tokens), (2, 0));
    assert!(target.row.priced && (target.row.cost_usd_expected - 0.02).abs() < 1e-12);
    assert!(estimate.by_judge.is_empty() && estimate.examples == 0);
    assert!((estimate.total().mode_cost_usd_expected - 0.02).abs() < 1e-12);

    let free = estimator(http(""), None, SuiteKind::RagLayers);
    assert!(
        !free.start().target.unwrap().row.priced,
        "no price_per_call"
    );
}
