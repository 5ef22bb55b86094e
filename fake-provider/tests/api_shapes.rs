//! Both dialects' success responses have the real shape and headers, and the side endpoints
//! answer: a client written against the real APIs must work against the fake unchanged.

mod common;

use common::*;
use evalfleet_fake_provider::FakeProviderArgs;
use serde_json::Value;

#[tokio::test]
async fn openai_success_shape_and_headers() {
    let fake = start(FakeProviderArgs {
        rpm_openai: 500,
        tpm_openai: 200_000,
        ..plain()
    })
    .await;
    let prompt = judge_prompt("Thanks, your refund is on its way.", 1, 5);
    let resp = fake.openai(None, &openai_body(&prompt, true)).await;
    assert_eq!(resp.status(), 200);
    let h = resp.headers().clone();
    assert_eq!(h["content-type"], "application/json");
    assert!(h["x-request-id"].to_str().unwrap().starts_with("req_"));
    assert_eq!(h["x-ratelimit-limit-requests"], "500");
    assert_eq!(h["x-ratelimit-remaining-requests"], "499");
    assert!(h["x-ratelimit-reset-requests"]
        .to_str()
        .unwrap()
        .ends_with("ms"));
    assert_eq!(h["x-ratelimit-limit-tokens"], "200000");
    let body: Value = resp.json().await.unwrap();
    assert!(body["id"].as_str().unwrap().starts_with("chatcmpl-"));
    assert_eq!(body["object"], "chat.completion");
    assert!(body["created"].as_u64().unwrap() > 1_600_000_000);
    assert_eq!(body["model"], "gpt-4o-mini");
    let choice = &body["choices"][0];
    assert_eq!(choice["index"], 0);
    assert_eq!(choice["message"]["role"], "assistant");
    assert_eq!(choice["finish_reason"], "stop");
    let content = choice["message"]["content"].as_str().unwrap();
    let reply: Value = serde_json::from_str(content).expect("bare JSON in json_object mode");
    let score = reply["score"].as_i64().unwrap();
    assert!((1..=5).contains(&score));
    assert!(reply["reasoning"]
        .as_str()
        .unwrap()
        .contains(&score.to_string()));
    let usage = &body["usage"];
    let prompt_chars = "You are a strict evaluator.".len() + 1 + prompt.len();
    assert_eq!(usage["prompt_tokens"], prompt_chars.div_ceil(4));
    assert_eq!(usage["completion_tokens"], content.len().div_ceil(4));
    assert_eq!(
        usage["total_tokens"].as_u64().unwrap(),
        usage["prompt_tokens"].as_u64().unwrap() + usage["completion_tokens"].as_u64().unwrap()
    );
    let remaining: u64 = h["x-ratelimit-remaining-tokens"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(remaining, 200_000 - usage["total_tokens"].as_u64().unwrap());
}

#[tokio::test]
async fn anthropic_success_shape_and_headers() {
    let fake = start(FakeProviderArgs {
        rpm_anthropic: 50,
        tpm_anthropic: 40_000,
        ..plain()
    })
    .await;
    let prompt = judge_prompt("I cannot help with that.", 0, 10);
    let resp = fake.anthropic(None, &anthropic_body(&prompt)).await;
    assert_eq!(resp.status(), 200);
    let h = resp.headers().clone();
    assert!(h["request-id"].to_str().unwrap().starts_with("req_"));
    assert_eq!(h["anthropic-ratelimit-requests-limit"], "50");
    assert_eq!(h["anthropic-ratelimit-requests-remaining"], "49");
    let reset = h["anthropic-ratelimit-requests-reset"].to_str().unwrap();
    assert!(reset.ends_with('Z') && reset.contains('T'), "{reset}");
    assert_eq!(h["anthropic-ratelimit-tokens-limit"], "40000");
    let body: Value = resp.json().await.unwrap();
    assert!(body["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(body["type"], "message");
    assert_eq!(body["role"], "assistant");
    assert_eq!(body["model"], "claude-3-5-haiku-latest");
    assert_eq!(body["content"][0]["type"], "text");
    assert_eq!(body["stop_reason"], "end_turn");
    assert!(body["stop_sequence"].is_null());
    let text = body["content"][0]["text"].as_str().unwrap();
    let score = score_in(text).unwrap();
    assert!((0..=10).contains(&score));
    let input = ("You are a strict evaluator.".len() + 1 + prompt.len()).div_ceil(4);
    assert_eq!(body["usage"]["input_tokens"], input);
    assert_eq!(body["usage"]["output_tokens"], text.len().div_ceil(4));
}

#[tokio::test]
async fn unlimited_provider_sends_no_ratelimit_headers() {
    let fake = start(plain()).await;
    let resp = fake.openai(None, &openai_body("hi", false)).await;
    assert_eq!(resp.status(), 200);
    assert!(resp.headers().get("x-ratelimit-limit-requests").is_none());
}

#[tokio::test]
async fn side_endpoints() {
    let fake = start(plain()).await;
    let health = fake
        .http
        .get(format!("{}/healthz", fake.base))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    let missing = fake
        .http
        .post(format!("{}/v1/completions", fake.base))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    let body: Value = missing.json().await.unwrap();
    assert_eq!(
        body["error"]["message"],
        "Invalid URL (POST /v1/completions)"
    );
    let config = fake.get_json("/admin/config").await;
    assert_eq!(config["seed"], 7);
    assert_eq!(config["api_key_required"], false);
    assert!(config.get("api_key").is_none());
}

#[tokio::test]
async fn bad_requests_get_provider_errors() {
    let fake = start(plain()).await;
    let url = format!("{}/v1/chat/completions", fake.base);
    let resp = fake.http.post(&url).body("{not json").send().await.unwrap();
    assert_eq!(resp.status(), 400);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["type"], "invalid_request_error");
    let resp = fake
        .openai(None, &serde_json::json!({"messages": []}))
        .await;
    assert_eq!(resp.status(), 400);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(
        body["error"]["message"],
        "you must provide a model parameter"
    );
    let resp = fake.openai(None, &serde_json::json!({"model": "m"})).await;
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "missing_required_parameter");

    let mut no_max = anthropic_body("x");
    no_max.as_object_mut().unwrap().remove("max_tokens");
    let resp = fake.anthropic(None, &no_max).await;
    assert_eq!(resp.status(), 400);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert_eq!(body["error"]["message"], "max_tokens: Field required");
}
