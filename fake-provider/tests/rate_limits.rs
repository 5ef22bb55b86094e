//! Per-provider requests/minute and tokens/minute limits are enforced for real: a burst over
//! the limit gets the provider's 429 with `retry-after`, the accepted count never exceeds the
//! limit, and the timeline endpoint shows exactly what was accepted.

mod common;

use common::*;
use evalfleet_fake_provider::{FakeProviderArgs, RateLimitMode};
use serde_json::Value;

async fn burst(fake: &Fake, anthropic: bool, n: usize) -> Vec<reqwest::Response> {
    let mut out = Vec::new();
    for i in 0..n {
        let prompt = judge_prompt(&format!("burst {i}"), 1, 5);
        out.push(if anthropic {
            fake.anthropic(None, &anthropic_body(&prompt)).await
        } else {
            fake.openai(None, &openai_body(&prompt, true)).await
        });
    }
    out
}

#[tokio::test]
async fn openai_rpm_burst_is_cut_at_the_limit() {
    let fake = start(FakeProviderArgs {
        rpm_openai: 60,
        ..plain()
    })
    .await;
    let started = std::time::Instant::now();
    let responses = burst(&fake, false, 90).await;
    // A token bucket holds 60 and refills one per second: the burst gets 60 plus one per
    // whole second it took.
    let refilled = started.elapsed().as_secs() as usize;
    let accepted = responses.iter().filter(|r| r.status() == 200).count();
    assert!(
        (60..=60 + refilled).contains(&accepted),
        "accepted {accepted}"
    );
    let rejected = responses
        .into_iter()
        .find(|r| r.status() == 429)
        .expect("a 429");
    let h = rejected.headers().clone();
    let retry: u64 = h["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=2).contains(&retry), "retry-after {retry}");
    assert_eq!(h["x-ratelimit-limit-requests"], "60");
    assert_eq!(h["x-ratelimit-remaining-requests"], "0");
    let body: Value = rejected.json().await.unwrap();
    assert_eq!(body["error"]["code"], "rate_limit_exceeded");
    assert_eq!(body["error"]["type"], "requests");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("(RPM): Limit 60"), "{message}");

    // The other provider is not affected.
    assert_eq!(
        burst(&fake, true, 5)
            .await
            .iter()
            .filter(|r| r.status() == 200)
            .count(),
        5
    );

    let timeline = fake.get_json("/stats/timeline?provider=openai").await;
    let times = timeline["accepted_unix_ms"].as_array().unwrap();
    assert_eq!(times.len(), accepted);
    let stats = fake.get_json("/stats").await;
    assert_eq!(stats["by_provider_status"]["openai"]["200"], accepted);
    assert_eq!(stats["by_provider_status"]["openai"]["429"], 90 - accepted);
}

#[tokio::test]
async fn sliding_window_never_admits_more_than_the_limit() {
    let fake = start(FakeProviderArgs {
        rpm_anthropic: 20,
        rate_limit_mode: RateLimitMode::SlidingWindow,
        ..plain()
    })
    .await;
    let responses = burst(&fake, true, 40).await;
    assert_eq!(responses.iter().filter(|r| r.status() == 200).count(), 20);
    let rejected = responses.into_iter().find(|r| r.status() == 429).unwrap();
    let retry: u64 = rejected.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((58..=60).contains(&retry), "retry-after {retry}");
    assert_eq!(
        rejected.headers()["anthropic-ratelimit-requests-remaining"],
        "0"
    );
    let body: Value = rejected.json().await.unwrap();
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "rate_limit_error");
}

#[tokio::test]
async fn tokens_per_minute_are_enforced() {
    let fake = start(FakeProviderArgs {
        tpm_openai: 1_000,
        ..plain()
    })
    .await;
    let responses = burst(&fake, false, 20).await;
    let mut used = 0;
    let mut first_429 = None;
    for resp in responses {
        if resp.status() == 200 {
            let body: Value = resp.json().await.unwrap();
            used += body["usage"]["total_tokens"].as_u64().unwrap();
        } else if first_429.is_none() {
            first_429 = Some(resp);
        }
    }
    assert!(used <= 1_000 + 20, "used {used} tokens");
    let rejected = first_429.expect("tokens ran out");
    assert_eq!(rejected.status(), 429);
    assert!(rejected.headers().contains_key("retry-after"));
    let body: Value = rejected.json().await.unwrap();
    assert_eq!(body["error"]["type"], "tokens");
    assert!(body["error"]["message"].as_str().unwrap().contains("(TPM)"));
}

#[tokio::test]
async fn a_request_larger_than_the_token_limit_is_refused() {
    let fake = start(FakeProviderArgs {
        tpm_anthropic: 50,
        ..plain()
    })
    .await;
    let prompt = "x".repeat(1_000);
    let resp = fake.anthropic(None, &anthropic_body(&prompt)).await;
    assert_eq!(resp.status(), 429);
    let body: Value = resp.json().await.unwrap();
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("on its own"));
}
