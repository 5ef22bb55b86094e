//! Judge replies are a pure function of (seed, prompt): same prompt, same score, always inside
//! the rubric range the prompt names — whatever dressing (prose, fences) a reply gets.

mod common;

use std::collections::HashSet;

use common::*;
use evalfleet_fake_provider::{FakeProviderArgs, Verdict};
use serde_json::{json, Value};

async fn openai_score(fake: &Fake, prompt: &str) -> i64 {
    let resp = fake.openai(None, &openai_body(prompt, true)).await;
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    score_in(&content_of(&body)).expect("score")
}

#[tokio::test]
async fn same_prompt_same_score_and_ranges_respected() {
    let fake = start(plain()).await;
    for (min, max) in [(1, 5), (0, 10)] {
        let mut seen = HashSet::new();
        for case in 0..60 {
            let prompt = judge_prompt(&format!("answer number {case}"), min, max);
            let first = openai_score(&fake, &prompt).await;
            assert_eq!(first, openai_score(&fake, &prompt).await);
            assert!((min..=max).contains(&first), "{first} not in {min}..{max}");
            // The library exposes the same computation for tests that predict scores.
            let full = format!("You are a strict evaluator.\n{prompt}");
            assert_eq!(first, Verdict::for_prompt(7, &full).score);
            seen.insert(first);
        }
        assert!(
            seen.len() as i64 >= (max - min + 1) / 2,
            "scores spread: {seen:?}"
        );
    }
}

#[tokio::test]
async fn missing_range_defaults_to_one_to_five() {
    let fake = start(plain()).await;
    for case in 0..30 {
        // A judge prompt (it names a score) without a rubric range.
        let score = openai_score(&fake, &format!("score this: {case}")).await;
        assert!((1..=5).contains(&score));
    }
}

#[tokio::test]
async fn seed_changes_scores_and_both_dialects_agree() {
    let a = start(plain()).await;
    let b = start(FakeProviderArgs {
        seed: 99,
        ..plain()
    })
    .await;
    let mut differ = 0;
    for case in 0..40 {
        let prompt = judge_prompt(&format!("case {case}"), 0, 10);
        let sa = openai_score(&a, &prompt).await;
        if sa != openai_score(&b, &prompt).await {
            differ += 1;
        }
        // Same system + user text through Anthropic gives the same verdict.
        let resp = a.anthropic(None, &anthropic_body(&prompt)).await;
        let body: Value = resp.json().await.unwrap();
        assert_eq!(score_in(&content_of(&body)), Some(sa));
    }
    assert!(
        differ > 10,
        "only {differ} of 40 scores changed with the seed"
    );
}

#[tokio::test]
async fn wrapping_dresses_anthropic_but_never_openai_json_mode() {
    let fake = start(FakeProviderArgs {
        wrap_rate: 1.0,
        ..FakeProviderArgs::default()
    })
    .await;
    let prompt = judge_prompt("wrapped", 1, 5);
    let mut fenced = 0;
    for _ in 0..30 {
        let body: Value = fake
            .anthropic(None, &anthropic_body(&prompt))
            .await
            .json()
            .await
            .unwrap();
        let text = content_of(&body);
        assert!(
            serde_json::from_str::<Value>(&text).is_err(),
            "should be wrapped: {text}"
        );
        assert!(score_in(&text).is_some());
        fenced += usize::from(text.contains("```json"));

        let body: Value = fake
            .openai(None, &openai_body(&prompt, true))
            .await
            .json()
            .await
            .unwrap();
        serde_json::from_str::<Value>(&content_of(&body)).expect("json_object mode is bare");

        let body: Value = fake
            .openai(None, &openai_body(&prompt, false))
            .await
            .json()
            .await
            .unwrap();
        assert!(serde_json::from_str::<Value>(&content_of(&body)).is_err());
    }
    assert!(fenced > 0 && fenced < 30, "a mix of styles: {fenced}");
}

#[tokio::test]
async fn default_wrap_rate_wraps_about_a_fifth() {
    let fake = start(FakeProviderArgs::default()).await;
    let mut wrapped = 0;
    for case in 0..200 {
        let prompt = judge_prompt(&format!("case {case}"), 1, 5);
        let body: Value = fake
            .anthropic(None, &anthropic_body(&prompt))
            .await
            .json()
            .await
            .unwrap();
        wrapped += usize::from(serde_json::from_str::<Value>(&content_of(&body)).is_err());
    }
    assert!((20..=60).contains(&wrapped), "{wrapped} of 200 wrapped");
}

#[tokio::test]
async fn anthropic_prefill_is_continued() {
    let fake = start(FakeProviderArgs {
        wrap_rate: 1.0,
        ..FakeProviderArgs::default()
    })
    .await;
    let mut body = anthropic_body(&judge_prompt("prefilled", 1, 5));
    body["messages"]
        .as_array_mut()
        .unwrap()
        .push(json!({"role": "assistant", "content": "{"}));
    let reply: Value = fake.anthropic(None, &body).await.json().await.unwrap();
    let text = content_of(&reply);
    let full: Value = serde_json::from_str(&format!("{{{text}")).expect("prefill + reply is JSON");
    assert!((1..=5).contains(&full["score"].as_i64().unwrap()));

    body["messages"][1]["content"] = json!("{ ");
    assert_eq!(fake.anthropic(None, &body).await.status(), 400);
}
