//! A log-analysis record completed in a worker: the scenario comes with the record, resolved
//! by the producer; the worker never reads the file the record names.

use std::collections::BTreeMap;
use std::sync::Arc;

use evalfleet_config::{JudgeConfig, ProviderConfig, Target};
use evalfleet_contract::judge_cache::NoCache;
use evalfleet_fake_provider::{spawn, FakeProviderArgs};
use evalfleet_model::routing::ProviderRules;
use evalfleet_model::suite::SuiteKind;
use evalfleet_suites::evaluate::Example;
use evalfleet_suites::loganalysis::{Scenario, ScenarioRef};
use evalfleet_suites::suite::Suite;
use evalfleet_suites::target::PendingRecord;
use serde_json::json;

use super::{ExampleAt, RunTarget, TargetParts};
use crate::rate_limit::RateLimits;

fn at() -> ExampleAt<'static> {
    ExampleAt {
        run_id: "r",
        index: 0,
        epoch: 0,
    }
}

/// A log-analysis record as a fleet worker receives it: the scenario the producer resolved
/// named by digest alone. Its completion is a log example with that scenario (attached
/// later, by digest), and the file the record names is never read here.
#[tokio::test]
async fn a_log_analysis_completion_takes_the_scenario_the_producer_resolved() {
    let (addr, _server) = spawn(FakeProviderArgs {
        port: 0,
        wrap_rate: 0.0,
        ..FakeProviderArgs::default()
    })
    .await
    .expect("the fake starts");
    let provider: ProviderConfig = serde_json::from_value(json!({
        "api": "openai", "base_url": format!("http://{addr}/v1"), "api_key_env": "FAKE_KEY"
    }))
    .unwrap();
    let judges = JudgeConfig {
        providers: BTreeMap::from([("openai".to_owned(), provider)]),
        ..JudgeConfig::default()
    };
    let env = |name: &str| (name == "FAKE_KEY").then(|| "sk-any".to_owned());
    let target = RunTarget::new(TargetParts {
        target: Target::parse(
            "name: analyst\nkind: chat\nprovider: openai\nmodel: gpt-4o-mini\n\
             prompt: \"Explain these logs: {{ logs }}\"\noutput: output\n",
        )
        .unwrap(),
        model: None,
        judges: &judges,
        rules: ProviderRules::default(),
        env: &env,
        cache: Arc::new(NoCache),
        rate_limits: &RateLimits::default(),
        hosts: None,
        parking: None,
    })
    .unwrap();
    let scenario: Scenario = serde_json::from_value(json!({"metrics": {"errors": 3}})).unwrap();
    let resolved = ScenarioRef::new(Arc::new(scenario));
    let pending: PendingRecord = serde_json::from_value(json!({
        "id": "l1",
        "record": {"id": "l1", "scenario": "scenarios/not-here.json",
                   "logs": "ERROR disk full on node-3; retrying the backup"},
        "scenario": resolved.digest(),
    }))
    .unwrap();
    let suite = Arc::new(Suite::builtin(SuiteKind::LogAnalysis));
    let generated = match target.generate(&suite, &pending, at()).await {
        Ok(generated) => generated,
        Err(not) => panic!("{}", not.reason),
    };
    let Example::Log(example) = &generated.example else {
        panic!("a log-analysis example: {:?}", generated.example);
    };
    assert_eq!(example.scenario.digest(), resolved.digest());
    assert!(
        example.scenario.get().is_none(),
        "attached later, by digest"
    );
    assert!(!example.output.is_empty());
    assert_eq!(generated.outputs["output"], example.output.as_str());

    let mut unresolved = pending.clone();
    unresolved.scenario = None;
    let refused = target
        .generate(&suite, &unresolved, at())
        .await
        .err()
        .unwrap();
    assert_eq!(
        refused.reason,
        "target analyst: the completed record: the record's scenario was not resolved before the call"
    );
}
