//! Every injected fault produces exactly the status and body the real provider would send, and
//! fault draws come from the seeded request stream, not the prompt: reproducible for a request
//! order, and a retried prompt can succeed.

mod common;

use std::time::{Duration, Instant};

use common::*;
use evalfleet_fake_provider::FakeProviderArgs;
use serde_json::{json, Value};

async fn both(args: FakeProviderArgs) -> (reqwest::Response, reqwest::Response) {
    let fake = start(args).await;
    let prompt = judge_prompt("fault", 1, 5);
    let openai = fake.openai(None, &openai_body(&prompt, true)).await;
    let anthropic = fake.anthropic(None, &anthropic_body(&prompt)).await;
    (openai, anthropic)
}

#[tokio::test]
async fn injected_429_is_a_retryable_rate_limit() {
    let (o, a) = both(FakeProviderArgs {
        fault_429: 1.0,
        ..plain()
    })
    .await;
    assert_eq!(o.status(), 429);
    assert_eq!(o.headers()["retry-after"], "1");
    assert_eq!(o.headers()["retry-after-ms"], "1000");
    let body: Value = o.json().await.unwrap();
    assert_eq!(body["error"]["code"], "rate_limit_exceeded");
    assert_eq!(body["error"]["type"], "requests");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("Rate limit reached for gpt-4o-mini"));
    assert_eq!(a.status(), 429);
    assert_eq!(a.headers()["retry-after"], "1");
    let body: Value = a.json().await.unwrap();
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "rate_limit_error");
}

#[tokio::test]
async fn quota_is_not_a_rate_limit() {
    let (o, a) = both(FakeProviderArgs {
        fault_quota: 1.0,
        ..plain()
    })
    .await;
    assert_eq!(o.status(), 429);
    assert!(o.headers().get("retry-after").is_none());
    let body: Value = o.json().await.unwrap();
    assert_eq!(body["error"]["type"], "insufficient_quota");
    assert_eq!(body["error"]["code"], "insufficient_quota");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("You exceeded your current quota"));
    assert_eq!(a.status(), 400);
    let body: Value = a.json().await.unwrap();
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("credit balance is too low"));
}

#[tokio::test]
async fn server_errors() {
    let (o, a) = both(FakeProviderArgs {
        fault_500: 1.0,
        ..plain()
    })
    .await;
    assert_eq!(o.status(), 500);
    let body: Value = o.json().await.unwrap();
    assert_eq!(body["error"]["type"], "server_error");
    assert_eq!(a.status(), 500);
    let body: Value = a.json().await.unwrap();
    assert_eq!(
        body,
        json!({"type": "error", "error": {"type": "api_error", "message": "Internal server error"}})
    );
}

#[tokio::test]
async fn overloaded_is_529_for_anthropic_and_503_for_openai() {
    let (o, a) = both(FakeProviderArgs {
        fault_529: 1.0,
        ..plain()
    })
    .await;
    assert_eq!(o.status(), 503);
    let body: Value = o.json().await.unwrap();
    assert_eq!(body["error"]["type"], "server_error");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("The server is overloaded"));
    assert_eq!(a.status().as_u16(), 529);
    let body: Value = a.json().await.unwrap();
    assert_eq!(
        body,
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    );
}

#[tokio::test]
async fn hang_outlasts_the_client_timeout_then_answers() {
    let fake = start(FakeProviderArgs {
        fault_hang: 1.0,
        hang_ms: 600,
        ..plain()
    })
    .await;
    let body = openai_body(&judge_prompt("hang", 1, 5), true);
    let err = fake
        .http
        .post(format!("{}/v1/chat/completions", fake.base))
        .timeout(Duration::from_millis(150))
        .json(&body)
        .send()
        .await
        .expect_err("must time out");
    assert!(err.is_timeout());
    let started = Instant::now();
    let resp = fake.openai(None, &body).await;
    assert_eq!(resp.status(), 200);
    assert!(started.elapsed() >= Duration::from_millis(600));
    assert!(score_in(&content_of(&resp.json().await.unwrap())).is_some());
}

#[tokio::test]
async fn malformed_body_is_invalid_json() {
    let (o, a) = both(FakeProviderArgs {
        fault_malformed: 1.0,
        ..plain()
    })
    .await;
    for resp in [o, a] {
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.headers()["content-type"], "application/json");
        let text = resp.text().await.unwrap();
        assert!(!text.is_empty());
        assert!(serde_json::from_str::<Value>(&text).is_err(), "{text}");
    }
}

#[tokio::test]
async fn out_of_range_score_is_max_plus_three() {
    let fake = start(FakeProviderArgs {
        fault_out_of_range: 1.0,
        ..plain()
    })
    .await;
    let prompt = judge_prompt("oor", 0, 10);
    let body: Value = fake
        .openai(None, &openai_body(&prompt, true))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(score_in(&content_of(&body)), Some(13));
    let body: Value = fake
        .anthropic(None, &anthropic_body(&prompt))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(score_in(&content_of(&body)), Some(13));
}

#[tokio::test]
async fn non_json_reply_is_prose() {
    let (o, a) = both(FakeProviderArgs {
        fault_non_json: 1.0,
        ..plain()
    })
    .await;
    for resp in [o, a] {
        assert_eq!(resp.status(), 200);
        let content = content_of(&resp.json().await.unwrap());
        assert!(!content.contains('{') && !content.is_empty(), "{content}");
    }
}

async fn statuses(args: FakeProviderArgs, n: usize) -> Vec<u16> {
    let fake = start(args).await;
    let body = openai_body(&judge_prompt("same prompt every time", 1, 5), true);
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(fake.openai(None, &body).await.status().as_u16());
    }
    out
}

#[tokio::test]
async fn faults_follow_the_seeded_request_order() {
    let args = FakeProviderArgs {
        fault_500: 0.3,
        fault_429: 0.2,
        ..plain()
    };
    let first = statuses(args.clone(), 200).await;
    assert_eq!(
        first,
        statuses(args.clone(), 200).await,
        "same seed, same sequence"
    );
    let other = statuses(FakeProviderArgs { seed: 8, ..args }, 200).await;
    assert_ne!(first, other);
    // The same prompt sometimes fails and sometimes succeeds: retries can get through.
    let ok = first.iter().filter(|s| **s == 200).count();
    let e500 = first.iter().filter(|s| **s == 500).count();
    let e429 = first.iter().filter(|s| **s == 429).count();
    assert!((70..=130).contains(&ok), "ok {ok}");
    assert!((35..=85).contains(&e500), "500 {e500}");
    assert!((20..=60).contains(&e429), "429 {e429}");
}
