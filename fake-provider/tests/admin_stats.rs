//! `POST /admin/config` changes behaviour at runtime (how tests make the provider answer 429 to
//! everything for a while), `GET /stats` counts what happened, `POST /admin/reset` zeroes it.

mod common;

use common::*;
use serde_json::{json, Value};

#[tokio::test]
async fn admin_config_switches_faults_at_runtime() {
    let fake = start(plain()).await;
    let body = openai_body(&judge_prompt("runtime", 1, 5), true);
    assert_eq!(fake.openai(None, &body).await.status(), 200);

    let resp = fake
        .admin(json!({"fault_429": 1.0, "fault_retry_after_ms": 2500}))
        .await;
    assert_eq!(resp.status(), 200);
    let config: Value = resp.json().await.unwrap();
    assert_eq!(config["fault_429"], 1.0);
    assert_eq!(config["wrap_rate"], 0.0, "fields not in the patch are kept");
    for _ in 0..5 {
        let resp = fake.openai(None, &body).await;
        assert_eq!(resp.status(), 429);
        assert_eq!(resp.headers()["retry-after"], "3");
        assert_eq!(resp.headers()["retry-after-ms"], "2500");
        assert_eq!(
            fake.anthropic(None, &anthropic_body("x")).await.status(),
            429
        );
    }

    fake.admin(json!({"fault_429": 0.0})).await;
    assert_eq!(fake.openai(None, &body).await.status(), 200);
}

#[tokio::test]
async fn admin_config_changes_limits_and_rejects_bad_patches() {
    let fake = start(plain()).await;
    fake.admin(json!({"rpm_openai": 3})).await;
    let body = openai_body("limited", true);
    let mut statuses = Vec::new();
    for _ in 0..5 {
        statuses.push(fake.openai(None, &body).await.status().as_u16());
    }
    assert_eq!(statuses, [200, 200, 200, 429, 429]);
    fake.admin(json!({"rpm_openai": 0})).await;
    assert_eq!(fake.openai(None, &body).await.status(), 200);

    let resp = fake.admin(json!({"fault_500": 1.5})).await;
    assert_eq!(resp.status(), 400);
    let err: Value = resp.json().await.unwrap();
    assert!(err["error"].as_str().unwrap().contains("fault_500"));
    let resp = fake.admin(json!({"fault_five_hundred": 0.5})).await;
    assert_eq!(resp.status(), 400, "unknown fields are refused");
    let resp = fake.admin(json!({"port": 1})).await;
    assert_eq!(resp.status(), 400, "the port is fixed");
    assert_eq!(fake.get_json("/admin/config").await["fault_500"], 0.0);
}

#[tokio::test]
async fn stats_count_by_provider_model_and_status() {
    let fake = start(plain()).await;
    let empty = fake.get_json("/stats").await;
    assert_eq!(empty["total"], 0);
    assert!(empty["first_request_at"].is_null());

    for _ in 0..3 {
        fake.openai(None, &openai_body("a", true)).await;
    }
    let mut other = openai_body("b", true);
    other["model"] = json!("gpt-4.1");
    fake.openai(None, &other).await;
    fake.anthropic(None, &anthropic_body("c")).await;
    fake.admin(json!({"fault_500": 1.0})).await;
    fake.anthropic(None, &anthropic_body("d")).await;

    let stats = fake.get_json("/stats").await;
    assert_eq!(stats["total"], 6);
    assert_eq!(stats["by_provider"], json!({"openai": 4, "anthropic": 2}));
    assert_eq!(
        stats["by_model"],
        json!({"anthropic/claude-3-5-haiku-latest": 2, "openai/gpt-4.1": 1, "openai/gpt-4o-mini": 3})
    );
    assert_eq!(stats["by_status"], json!({"200": 5, "500": 1}));
    assert_eq!(
        stats["by_provider_status"]["anthropic"],
        json!({"200": 1, "500": 1})
    );
    let first = stats["first_request_unix_ms"].as_u64().unwrap();
    let last = stats["last_request_unix_ms"].as_u64().unwrap();
    assert!(first > 0 && first <= last);
    let at = stats["first_request_at"].as_str().unwrap();
    assert!(at.ends_with('Z') && at.contains('T'), "{at}");
    assert!(stats.get("requests").is_none());
    let timeline = fake.get_json("/stats/timeline?provider=anthropic").await;
    assert_eq!(timeline["accepted_unix_ms"].as_array().unwrap().len(), 1);

    let resp = fake
        .http
        .post(format!("{}/admin/reset", fake.base))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let stats = fake.get_json("/stats").await;
    assert_eq!(stats["total"], 0);
    assert_eq!(stats["by_provider"], json!({}));
    assert!(stats["last_request_at"].is_null());
    let timeline = fake.get_json("/stats/timeline?provider=openai").await;
    assert_eq!(timeline["accepted_unix_ms"], json!([]));
    let resp = fake
        .http
        .get(format!("{}/stats/timeline?provider=x", fake.base))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
}
