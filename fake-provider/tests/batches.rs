//! Both batch APIs through real sockets: a batch is seen in progress, ends, and its results
//! carry the same verdicts as the live endpoints; errors, expiries, cancels, limits and the
//! per-custom_id ledger behave as the providers' do.

mod common;

use std::time::Duration;

use common::{anthropic_body, judge_prompt, openai_body, plain, score_in, start, Fake};
use evalfleet_fake_provider::{FakeProviderArgs, Verdict};
use serde_json::{json, Value};

fn openai_lines(n: usize) -> String {
    (0..n)
        .map(|i| {
            let body = openai_body(&judge_prompt(&format!("case {i}"), 1, 5), true);
            json!({"custom_id": format!("c-{i}"), "method": "POST",
                "url": "/v1/chat/completions", "body": body})
            .to_string()
                + "\n"
        })
        .collect()
}

impl Fake {
    async fn upload(&self, jsonl: String) -> Value {
        let form = reqwest::multipart::Form::new()
            .text("purpose", "batch")
            .part(
                "file",
                reqwest::multipart::Part::text(jsonl).file_name("input.jsonl"),
            );
        let resp = self
            .http
            .post(format!("{}/v1/files", self.base))
            .multipart(form);
        resp.send().await.unwrap().json().await.unwrap()
    }

    async fn create_openai(&self, file_id: &str) -> Value {
        let body = json!({"input_file_id": file_id, "endpoint": "/v1/chat/completions",
            "completion_window": "24h"});
        let resp = self
            .http
            .post(format!("{}/v1/batches", self.base))
            .json(&body);
        resp.send().await.unwrap().json().await.unwrap()
    }

    async fn anthropic_get(&self, path: &str) -> reqwest::Response {
        self.http
            .get(format!("{}{path}", self.base))
            .header("anthropic-version", "2023-06-01")
            .send()
            .await
            .unwrap()
    }

    async fn anthropic_post(&self, path: &str, body: &Value) -> reqwest::Response {
        self.http
            .post(format!("{}{path}", self.base))
            .header("anthropic-version", "2023-06-01")
            .json(body)
            .send()
            .await
            .unwrap()
    }

    /// Polls until `done(batch)`, at most 10 s.
    async fn poll(&self, path: &str, done: impl Fn(&Value) -> bool) -> Value {
        for _ in 0..200 {
            let batch = self
                .anthropic_get(path)
                .await
                .json::<Value>()
                .await
                .unwrap();
            if done(&batch) {
                return batch;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("{path} never got there");
    }
}

fn jsonl(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test]
async fn an_openai_batch_runs_its_course_with_live_verdicts() {
    let fake = start(FakeProviderArgs {
        batch_processing_ms: 600,
        ..plain()
    })
    .await;
    let file = fake.upload(openai_lines(20)).await;
    assert_eq!(file["object"], "file");
    assert_eq!(file["purpose"], "batch");
    let batch = fake.create_openai(file["id"].as_str().unwrap()).await;
    assert_eq!(batch["object"], "batch");
    assert_eq!(batch["status"], "validating");
    assert_eq!(batch["request_counts"]["total"], 20);
    let id = batch["id"].as_str().unwrap().to_owned();
    let path = format!("/v1/batches/{id}");
    let seen = fake.poll(&path, |b| b["status"] == "in_progress").await;
    assert!(seen["in_progress_at"].is_u64());
    let done = fake.poll(&path, |b| b["status"] == "completed").await;
    assert_eq!(
        done["request_counts"],
        json!({"total": 20, "completed": 20, "failed": 0})
    );
    assert!(done["error_file_id"].is_null());
    let out = fake.http.get(format!(
        "{}/v1/files/{}/content",
        fake.base,
        done["output_file_id"].as_str().unwrap()
    ));
    let lines = jsonl(&out.send().await.unwrap().text().await.unwrap());
    assert_eq!(lines.len(), 20);
    for line in &lines {
        let i: usize = line["custom_id"].as_str().unwrap()[2..].parse().unwrap();
        let prompt = format!(
            "You are a strict evaluator.\n{}",
            judge_prompt(&format!("case {i}"), 1, 5)
        );
        assert_eq!(line["response"]["status_code"], 200);
        let content = line["response"]["body"]["choices"][0]["message"]["content"]
            .as_str()
            .unwrap();
        assert_eq!(
            score_in(content),
            Some(Verdict::for_prompt(7, &prompt).score)
        );
    }
    // The live endpoint agrees.
    let live = fake
        .openai(None, &openai_body(&judge_prompt("case 3", 1, 5), true))
        .await;
    let live: Value = live.json().await.unwrap();
    let line = lines.iter().find(|l| l["custom_id"] == "c-3").unwrap();
    assert_eq!(
        live["choices"][0]["message"]["content"],
        line["response"]["body"]["choices"][0]["message"]["content"]
    );
    let stats = fake.get_json("/stats").await;
    assert_eq!(stats["batches"]["openai"]["requests"], 20);
    assert_eq!(stats["batches"]["openai"]["distinct_custom_ids"], 20);
    let listed = fake.get_json("/v1/batches?limit=5").await;
    assert_eq!(listed["data"][0]["id"], id.as_str());
}

#[tokio::test]
async fn openai_errors_expiries_and_cancels_land_in_the_error_file() {
    let fake = start(FakeProviderArgs {
        batch_processing_ms: 200,
        batch_error_rate: 0.3,
        batch_expiry_rate: 0.2,
        ..plain()
    })
    .await;
    let file = fake.upload(openai_lines(200)).await;
    let batch = fake.create_openai(file["id"].as_str().unwrap()).await;
    let path = format!("/v1/batches/{}", batch["id"].as_str().unwrap());
    let done = fake.poll(&path, |b| b["status"] == "expired").await;
    let counts = &done["request_counts"];
    assert_eq!(
        counts["completed"].as_u64().unwrap() + counts["failed"].as_u64().unwrap(),
        200
    );
    let errors = fake.http.get(format!(
        "{}/v1/files/{}/content",
        fake.base,
        done["error_file_id"].as_str().unwrap()
    ));
    let lines = jsonl(&errors.send().await.unwrap().text().await.unwrap());
    assert_eq!(lines.len() as u64, counts["failed"].as_u64().unwrap());
    let expired = lines
        .iter()
        .filter(|l| l["error"]["code"] == "batch_expired")
        .count();
    let errored = lines
        .iter()
        .filter(|l| l["response"]["status_code"] == 500)
        .count();
    assert!(
        expired > 10 && errored > 20,
        "{expired} expired, {errored} errored"
    );
    assert_eq!(expired + errored, lines.len());

    // A cancel stops what was not processed.
    fake.admin(
        json!({"batch_processing_ms": 60_000, "batch_error_rate": 0.0,
        "batch_expiry_rate": 0.0}),
    )
    .await;
    let file = fake.upload(openai_lines(10)).await;
    let batch = fake.create_openai(file["id"].as_str().unwrap()).await;
    let id = batch["id"].as_str().unwrap();
    let cancel = fake
        .http
        .post(format!("{}/v1/batches/{id}/cancel", fake.base));
    let cancelling: Value = cancel.send().await.unwrap().json().await.unwrap();
    assert_eq!(cancelling["status"], "cancelling");
    let again = fake
        .http
        .post(format!("{}/v1/batches/{id}/cancel", fake.base));
    assert_eq!(again.send().await.unwrap().status(), 409);
}

#[tokio::test]
async fn openai_limits_and_bad_lines_fail_validation_with_the_line() {
    let fake = start(FakeProviderArgs {
        batch_processing_ms: 100,
        batch_max_requests_openai: 5,
        batch_max_bytes_openai: 4_000,
        ..plain()
    })
    .await;
    let too_many = fake.upload(openai_lines(6)).await;
    let batch = fake.create_openai(too_many["id"].as_str().unwrap()).await;
    let path = format!("/v1/batches/{}", batch["id"].as_str().unwrap());
    let failed = fake.poll(&path, |b| b["status"] == "failed").await;
    assert_eq!(failed["errors"]["data"][0]["code"], "too_many_requests");

    let broken = format!("{}{{not json\n", openai_lines(1));
    let file = fake.upload(broken).await;
    let batch = fake.create_openai(file["id"].as_str().unwrap()).await;
    let path = format!("/v1/batches/{}", batch["id"].as_str().unwrap());
    let failed = fake.poll(&path, |b| b["status"] == "failed").await;
    assert_eq!(failed["errors"]["data"][0]["line"], 2);
    assert_eq!(
        fake.get_json("/stats").await["batches"]["openai"]["requests"],
        0
    );

    let form = reqwest::multipart::Form::new()
        .text("purpose", "batch")
        .part(
            "file",
            reqwest::multipart::Part::text(openai_lines(5) + &" ".repeat(4_000)),
        );
    let resp = fake
        .http
        .post(format!("{}/v1/files", fake.base))
        .multipart(form);
    let resp = resp.send().await.unwrap();
    assert_eq!(resp.status(), 400);
    let body: Value = resp.json().await.unwrap();
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("too large"));
}

fn anthropic_requests(ids: &[&str]) -> Value {
    let requests: Vec<Value> = ids
        .iter()
        .map(|id| json!({"custom_id": id, "params": anthropic_body(&judge_prompt(id, 0, 10))}))
        .collect();
    json!({"requests": requests})
}

#[tokio::test]
async fn an_anthropic_batch_ends_with_results_per_custom_id() {
    let fake = start(FakeProviderArgs {
        batch_processing_ms: 400,
        batch_error_rate: 0.25,
        ..plain()
    })
    .await;
    let ids: Vec<String> = (0..40).map(|i| format!("r-{i}")).collect();
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    let resp = fake
        .anthropic_post("/v1/messages/batches", &anthropic_requests(&ids))
        .await;
    assert_eq!(resp.status(), 200);
    let batch: Value = resp.json().await.unwrap();
    assert_eq!(batch["type"], "message_batch");
    assert_eq!(batch["processing_status"], "in_progress");
    assert!(batch["results_url"].is_null());
    let id = batch["id"].as_str().unwrap();
    assert!(id.starts_with("msgbatch_"));
    let early = fake
        .anthropic_get(&format!("/v1/messages/batches/{id}/results"))
        .await;
    assert_eq!(early.status(), 400);
    let path = format!("/v1/messages/batches/{id}");
    let ended = fake
        .poll(&path, |b| b["processing_status"] == "ended")
        .await;
    let url = ended["results_url"].as_str().unwrap();
    assert!(url.ends_with("/results"));
    let results = fake.http.get(url).header("anthropic-version", "2023-06-01");
    let lines = jsonl(&results.send().await.unwrap().text().await.unwrap());
    assert_eq!(lines.len(), 40);
    let counts = &ended["request_counts"];
    let errored = lines
        .iter()
        .filter(|l| l["result"]["type"] == "errored")
        .count();
    assert_eq!(counts["errored"].as_u64().unwrap() as usize, errored);
    assert!(errored > 3, "{errored}");
    for line in lines.iter().filter(|l| l["result"]["type"] == "succeeded") {
        let cid = line["custom_id"].as_str().unwrap();
        let prompt = format!("You are a strict evaluator.\n{}", judge_prompt(cid, 0, 10));
        let text = line["result"]["message"]["content"][0]["text"]
            .as_str()
            .unwrap();
        assert_eq!(score_in(text), Some(Verdict::for_prompt(7, &prompt).score));
    }
    let listed: Value = fake
        .anthropic_get("/v1/messages/batches?limit=1")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(listed["data"][0]["id"], id);
}

#[tokio::test]
async fn anthropic_refuses_what_the_provider_refuses() {
    let fake = start(FakeProviderArgs {
        batch_processing_ms: 5_000,
        batch_max_requests_anthropic: 3,
        ..plain()
    })
    .await;
    let dup = fake
        .anthropic_post("/v1/messages/batches", &anthropic_requests(&["a", "a"]))
        .await;
    assert_eq!(dup.status(), 400);
    let bad_id = fake
        .anthropic_post("/v1/messages/batches", &anthropic_requests(&["a.b"]))
        .await;
    assert_eq!(bad_id.status(), 400);
    let many = fake
        .anthropic_post(
            "/v1/messages/batches",
            &anthropic_requests(&["a", "b", "c", "d"]),
        )
        .await;
    assert_eq!(many.status(), 400);
    let no_version = fake
        .http
        .get(format!("{}/v1/messages/batches", fake.base))
        .send()
        .await
        .unwrap();
    assert_eq!(no_version.status(), 400);
    assert_eq!(
        fake.get_json("/stats").await["batches"]["anthropic"]["requests"],
        0
    );

    // A cancel leaves every unprocessed request `canceled`.
    let batch: Value = fake
        .anthropic_post("/v1/messages/batches", &anthropic_requests(&["x", "y"]))
        .await
        .json()
        .await
        .unwrap();
    let id = batch["id"].as_str().unwrap();
    let canceling: Value = fake
        .anthropic_post(&format!("/v1/messages/batches/{id}/cancel"), &json!({}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(canceling["processing_status"], "canceling");
    let path = format!("/v1/messages/batches/{id}");
    let ended = fake
        .poll(&path, |b| b["processing_status"] == "ended")
        .await;
    assert_eq!(ended["request_counts"]["canceled"], 2);
    let stats = fake.get_json("/stats").await;
    assert_eq!(stats["batches"]["anthropic"]["requests"], 2);
    assert_eq!(
        stats["batches"]["anthropic"]["repeated_custom_ids"],
        json!([])
    );
}
