//! The fake as the system under test, over real sockets: a chat prompt that is not a judge's
//! gets a plausible answer (both dialects, the same answer), and `POST /agent` answers with a
//! rag-layers trace, or with the injected faults an http target must survive.

mod common;

use common::{anthropic_body, openai_body, plain, start, KEY};
use evalfleet_fake_provider::FakeProviderArgs;
use serde_json::{json, Value};

const TICKET: &str = "VPN connection drops every hour on macOS Sonoma after the update";

#[tokio::test]
async fn a_prompt_that_is_not_a_judges_gets_an_answer() {
    let fake = start(plain()).await;
    let openai: Value = fake
        .openai(Some(KEY), &openai_body(TICKET, false))
        .await
        .json()
        .await
        .unwrap();
    let text = openai["choices"][0]["message"]["content"].as_str().unwrap();
    assert!(text.contains("connection"), "on topic: {text}");
    assert!(!text.contains("\"score\""), "not a verdict: {text}");
    let anthropic: Value = fake
        .anthropic(Some(KEY), &anthropic_body(TICKET))
        .await
        .json()
        .await
        .unwrap();
    let system = "You are a strict evaluator.";
    let again = fake
        .openai(
            Some(KEY),
            &json!({"model": "gpt-4o-mini", "messages": [
                {"role": "system", "content": system}, {"role": "user", "content": TICKET}]}),
        )
        .await
        .json::<Value>()
        .await
        .unwrap();
    assert_eq!(
        again["choices"][0]["message"]["content"], openai["choices"][0]["message"]["content"],
        "deterministic"
    );
    assert_eq!(
        anthropic["content"][0]["text"], openai["choices"][0]["message"]["content"],
        "one answer per prompt"
    );
}

#[tokio::test]
async fn the_demo_agent_answers_with_a_trace_and_fails_as_configured() {
    let fake = start(plain()).await;
    let reply = fake
        .agent(&json!({"question": "SoS(Share of Shelf)란 무엇인가요?"}))
        .await;
    assert_eq!(reply.status(), 200);
    let body: Value = reply.json().await.unwrap();
    assert_eq!(
        body["data"]["trace"]["retrieved_chunk_ids"],
        json!(["metric_guide_sos_01"])
    );
    assert_eq!(fake.agent(&json!({"nothing": 1})).await.status(), 400);

    let limited = start(FakeProviderArgs {
        fault_429: 1.0,
        fault_retry_after_ms: 2_000,
        ..plain()
    })
    .await;
    let reply = limited.agent(&json!({"query": "SoS"})).await;
    assert_eq!(reply.status(), 429);
    assert_eq!(reply.headers()["retry-after"], "2");
    let failing = start(FakeProviderArgs {
        fault_500: 1.0,
        ..plain()
    })
    .await;
    assert_eq!(failing.agent(&json!({"query": "SoS"})).await.status(), 500);
}
