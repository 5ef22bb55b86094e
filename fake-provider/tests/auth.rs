//! A required API key is enforced by both dialects with their real 401 bodies, the key is
//! never echoed back in full, and Anthropic insists on `anthropic-version`.

mod common;

use common::*;
use evalfleet_fake_provider::FakeProviderArgs;
use serde_json::Value;

fn keyed() -> FakeProviderArgs {
    FakeProviderArgs {
        api_key: Some(KEY.into()),
        ..plain()
    }
}

#[tokio::test]
async fn openai_requires_the_bearer_key() {
    let fake = start(keyed()).await;
    let body = openai_body("hello", true);

    let resp = fake.openai(None, &body).await;
    assert_eq!(resp.status(), 401);
    let err: Value = resp.json().await.unwrap();
    assert_eq!(err["error"]["type"], "invalid_request_error");
    assert!(err["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("You didn't provide an API key"));

    let wrong = "sk-wrong-key-0123456789";
    let resp = fake.openai(Some(wrong), &body).await;
    assert_eq!(resp.status(), 401);
    let err: Value = resp.json().await.unwrap();
    assert_eq!(err["error"]["code"], "invalid_api_key");
    assert_eq!(err["error"]["type"], "invalid_request_error");
    assert!(err["error"]["param"].is_null());
    let message = err["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("Incorrect API key provided: sk-"),
        "{message}"
    );
    assert!(
        !message.contains(wrong),
        "the key must be masked: {message}"
    );

    // An Anthropic-style header is no Bearer token.
    let resp = fake
        .http
        .post(format!("{}/v1/chat/completions", fake.base))
        .header("x-api-key", KEY)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);

    assert_eq!(fake.openai(Some(KEY), &body).await.status(), 200);
}

#[tokio::test]
async fn anthropic_takes_x_api_key_or_a_bearer_token() {
    let fake = start(keyed()).await;
    let body = anthropic_body("hello");

    let resp = fake.anthropic(None, &body).await;
    assert_eq!(resp.status(), 401);
    let err: Value = resp.json().await.unwrap();
    assert_eq!(err["type"], "error");
    assert_eq!(err["error"]["type"], "authentication_error");

    let resp = fake.anthropic(Some("sk-ant-wrong"), &body).await;
    assert_eq!(resp.status(), 401);
    let err: Value = resp.json().await.unwrap();
    assert_eq!(
        err,
        serde_json::json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}})
    );

    assert_eq!(fake.anthropic(Some(KEY), &body).await.status(), 200);

    // The key as a Bearer token, as current SDKs may send it, is accepted; a wrong one is not.
    let bearer = |key: &str| {
        fake.http
            .post(format!("{}/v1/messages", fake.base))
            .header("authorization", format!("Bearer {key}"))
            .header("anthropic-version", "2023-06-01")
            .json(&body)
            .send()
    };
    assert_eq!(bearer(KEY).await.unwrap().status(), 200);
    assert_eq!(bearer("sk-ant-wrong").await.unwrap().status(), 401);
}

#[tokio::test]
async fn anthropic_requires_a_version_header() {
    let fake = start(keyed()).await;
    let resp = fake
        .http
        .post(format!("{}/v1/messages", fake.base))
        .header("x-api-key", KEY)
        .json(&anthropic_body("hello"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    assert!(resp.headers().contains_key("request-id"));
    let err: Value = resp.json().await.unwrap();
    assert_eq!(err["error"]["type"], "invalid_request_error");
    assert_eq!(
        err["error"]["message"],
        "anthropic-version: header is required"
    );
}

#[tokio::test]
async fn without_a_configured_key_anything_goes() {
    let fake = start(plain()).await;
    assert_eq!(
        fake.openai(None, &openai_body("x", true)).await.status(),
        200
    );
    assert_eq!(
        fake.anthropic(Some("whatever"), &anthropic_body("x"))
            .await
            .status(),
        200
    );
}
