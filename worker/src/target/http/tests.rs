//! The http target's calls against the fake's demo agent, over real sockets.

use std::time::Instant;

use evalfleet_fake_provider::{spawn, FakeProviderArgs};
use serde_json::json;

use super::*;
use evalfleet_suites::target::Secrets;

/// A fake on an ephemeral port; its server task ends with the test's runtime.
async fn fake(args: FakeProviderArgs) -> String {
    let (addr, _server) = spawn(FakeProviderArgs {
        port: 0,
        wrap_rate: 0.0,
        ..args
    })
    .await
    .expect("the fake starts");
    format!("http://{addr}")
}

fn target(base: &str, extra: &str) -> HttpTarget {
    let yaml = format!(
        "name: demo\nkind: http\nurl: \"{base}/agent\"\nbody: {{question: \"{{{{ question }}}}\"}}\n\
         outputs: {{trace: /data/trace}}\ntimeout_s: 0.5\n\
         retry: {{max_attempts: 2, base_delay_ms: 10, max_delay_ms: 50}}\n{extra}"
    );
    let plan = TargetPlan::compile(Target::parse(&yaml).unwrap(), Secrets::Keep).unwrap();
    HttpTarget::new(
        Arc::new(plan),
        &crate::rate_limit::RateLimits::default(),
        None,
    )
    .unwrap()
}

fn record(question: &str) -> Map<String, Value> {
    json!({"id": "q1", "question": question})
        .as_object()
        .unwrap()
        .clone()
}

#[tokio::test]
async fn a_reply_comes_back_as_json() {
    let base = fake(FakeProviderArgs::default()).await;
    let called = target(&base, "")
        .call(&record("SoS(Share of Shelf)란 무엇인가요?"))
        .await
        .unwrap();
    assert_eq!(called.attempts, 1);
    assert_eq!(
        called.reply["data"]["trace"]["retrieved_chunk_ids"],
        json!(["metric_guide_sos_01"])
    );
}

#[tokio::test]
async fn a_429_is_retried_no_sooner_than_its_retry_after() {
    let base = fake(FakeProviderArgs {
        fault_429: 1.0,
        fault_retry_after_ms: 1_000,
        ..FakeProviderArgs::default()
    })
    .await;
    let started = Instant::now();
    let err = target(&base, "").call(&record("SoS")).await.unwrap_err();
    assert_eq!(err.to_string(), "target demo: HTTP 429 after 2 attempts");
    let answered = crate::metrics::metrics()
        .target_requests
        .with_label_values(&["demo", "429"])
        .get();
    assert!(
        answered >= 2,
        "each attempt is counted by status: {answered}"
    );
    assert!(
        started.elapsed() >= Duration::from_millis(1_000),
        "waited {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_400_is_not_retried_and_a_timeout_is() {
    let base = fake(FakeProviderArgs::default()).await;
    // A body without the question the agent needs: a 400, once.
    let no_question = {
        let yaml = format!(
            "name: demo\nkind: http\nurl: \"{base}/agent\"\nbody: {{nothing: 1}}\noutputs: {{a: /data}}\n"
        );
        let plan = TargetPlan::compile(Target::parse(&yaml).unwrap(), Secrets::Keep).unwrap();
        HttpTarget::new(
            Arc::new(plan),
            &crate::rate_limit::RateLimits::default(),
            None,
        )
        .unwrap()
    };
    let err = no_question.call(&record("x")).await.unwrap_err();
    assert_eq!(err.to_string(), "target demo: HTTP 400 after 1 attempts");

    let slow = fake(FakeProviderArgs {
        latency_ms: 2_000,
        ..FakeProviderArgs::default()
    })
    .await;
    let err = target(&slow, "").call(&record("SoS")).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "target demo: no reply within the timeout after 2 attempts"
    );
}

#[tokio::test]
async fn a_reply_that_is_not_json_fails_without_a_retry() {
    let base = fake(FakeProviderArgs {
        fault_malformed: 1.0,
        ..FakeProviderArgs::default()
    })
    .await;
    let err = target(&base, "").call(&record("SoS")).await.unwrap_err();
    assert!(
        err.to_string()
            .starts_with("target demo: the reply is not JSON"),
        "{err}"
    );
}
