//! Anthropic's Message Batches API: `POST /v1/messages/batches` (create), `GET
//! /v1/messages/batches` (list, newest first, `limit`/`before_id`/`after_id`), `GET
//! /v1/messages/batches/{id}` (retrieve), `POST /v1/messages/batches/{id}/cancel` and `GET
//! /v1/messages/batches/{id}/results` (JSONL, one line per request, in the results_url the
//! batch object names). Statuses: `in_progress`, `canceling`, `ended`; per-request results
//! `succeeded`, `errored`, `canceled`, `expired`.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{reply_to_create, Batch, BatchRequest, Counts, Final, Phase};
use crate::anthropic::{check_auth, error, message, MessagesAsk, MessagesRequest};
use crate::clock::{now_unix_ms, rfc3339_ms};
use crate::state::{base62, FakeProvider};
use crate::stats::Provider;
use crate::wire::json_response;

/// How long results stay available, and the processing deadline: 24 hours.
const WINDOW_MS: u64 = 24 * 3_600 * 1_000;

#[derive(Debug, Deserialize)]
struct CreateBody {
    requests: Option<Vec<RequestLine>>,
}

#[derive(Debug, Deserialize)]
struct RequestLine {
    custom_id: Option<String>,
    params: Option<MessagesRequest>,
}

/// `POST /v1/messages/batches`.
pub async fn create(
    State(fp): State<Arc<FakeProvider>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(denied) = refuse(&fp, &headers) {
        return denied;
    }
    let cfg = fp.config();
    if body.len() > cfg.batch_max_bytes_anthropic {
        let message = format!(
            "Request exceeds the maximum allowed number of bytes ({} > {}).",
            body.len(),
            cfg.batch_max_bytes_anthropic
        );
        return error(StatusCode::PAYLOAD_TOO_LARGE, "request_too_large", &message);
    }
    let body: CreateBody = match serde_json::from_slice(&body) {
        Ok(body) => body,
        Err(e) => return bad(&format!("Invalid request body: {e}")),
    };
    let requests = match parse_requests(body.requests, cfg.batch_max_requests_anthropic) {
        Ok(requests) => requests,
        Err(problem) => return bad(&problem),
    };
    let id = format!("msgbatch_01{}", base62(fp.next_id(0xba7c), 22));
    let batch = Batch::new(id, Provider::Anthropic, &cfg, requests, now_unix_ms());
    fp.batches().ledger().count_batch(Provider::Anthropic);
    let batch = fp.batches().insert(batch);
    let reply = {
        let batch = batch.lock().unwrap_or_else(|e| e.into_inner());
        ok(batch_json(&batch, &headers, now_unix_ms()))
    };
    reply_to_create(&cfg, reply).await
}

fn parse_requests(
    lines: Option<Vec<RequestLine>>,
    max: usize,
) -> Result<Vec<BatchRequest>, String> {
    let lines = lines.ok_or("requests: Field required")?;
    if lines.is_empty() {
        return Err("requests: List should have at least 1 item after validation, not 0".into());
    }
    if lines.len() > max {
        return Err(format!(
            "requests: List should have at most {max} items after validation, not {}",
            lines.len()
        ));
    }
    let mut seen = HashSet::with_capacity(lines.len());
    let mut requests = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        let custom_id = line
            .custom_id
            .as_deref()
            .ok_or_else(|| format!("requests.{i}.custom_id: Field required"))?;
        if !valid_custom_id(custom_id) {
            return Err(format!(
                "requests.{i}.custom_id: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
            ));
        }
        if !seen.insert(custom_id) {
            return Err(format!(
                "requests.{i}.custom_id: Duplicate custom_id '{custom_id}': each request in a \
                 batch must have a unique custom_id"
            ));
        }
        let params = line
            .params
            .as_ref()
            .ok_or_else(|| format!("requests.{i}.params: Field required"))?;
        let ask = MessagesAsk::parse(params).map_err(|e| format!("requests.{i}.params.{e}"))?;
        requests.push(BatchRequest {
            custom_id: custom_id.to_owned(),
            model: ask.model.to_owned(),
            prompt: ask.prompt,
            bare_json: false,
            prefill: ask.prefill,
        });
    }
    Ok(requests)
}

/// `^[a-zA-Z0-9_-]{1,64}$`, the API's custom_id pattern.
fn valid_custom_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// `GET /v1/messages/batches/{id}`.
pub async fn retrieve(
    State(fp): State<Arc<FakeProvider>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    with_batch(&fp, &headers, &id, |batch| {
        ok(batch_json(batch, &headers, now_unix_ms()))
    })
}

/// `POST /v1/messages/batches/{id}/cancel`.
pub async fn cancel(
    State(fp): State<Arc<FakeProvider>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    with_batch(&fp, &headers, &id, |batch| {
        let now = now_unix_ms();
        if batch.cancellable(now) {
            batch.cancel_requested_ms = Some(now);
        }
        ok(batch_json(batch, &headers, now))
    })
}

/// Answers with `f` of the batch `id` once the request is admitted, or as the API answers an
/// unknown id.
fn with_batch(
    fp: &FakeProvider,
    headers: &HeaderMap,
    id: &str,
    f: impl FnOnce(&mut Batch) -> Response,
) -> Response {
    if let Some(denied) = refuse(fp, headers) {
        return denied;
    }
    fp.batches()
        .with(Provider::Anthropic, id, f)
        .unwrap_or_else(|| not_found(id))
}

/// `GET /v1/messages/batches?limit=&before_id=&after_id=`, newest first.
pub async fn list(
    State(fp): State<Arc<FakeProvider>>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    if let Some(denied) = refuse(&fp, &headers) {
        return denied;
    }
    let limit = match query.get("limit").map(|l| l.parse::<usize>()) {
        None => 20,
        Some(Ok(limit @ 1..=1_000)) => limit,
        Some(_) => return bad("limit: Input should be between 1 and 1000"),
    };
    let ids = fp.batches().ids_newest_first(Provider::Anthropic);
    let page = super::page(&ids, query.get("after_id"), query.get("before_id"), limit);
    let now = now_unix_ms();
    let data: Vec<Value> = page
        .ids
        .iter()
        .filter_map(|id| {
            fp.batches()
                .with(Provider::Anthropic, id, |b| batch_json(b, &headers, now))
        })
        .collect();
    ok(json!({
        "data": data,
        "has_more": page.has_more,
        "first_id": page.ids.first(),
        "last_id": page.ids.last(),
    }))
}

/// `GET /v1/messages/batches/{id}/results`: JSONL, once the batch ended.
pub async fn results(
    State(fp): State<Arc<FakeProvider>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    with_batch(&fp, &headers, &id, |batch| results_jsonl(batch))
}

/// The results of an ended batch, a JSONL line per request.
fn results_jsonl(batch: &Batch) -> Response {
    let id = &batch.id;
    let Some(results) = batch.results(now_unix_ms()) else {
        return bad(&format!(
            "Message Batch {id} has not finished processing; its results are not available yet."
        ));
    };
    let mut out = Vec::with_capacity(batch.items.len() * 400);
    for (n, (item, result)) in results.enumerate() {
        let result = match result {
            Final::Reply {
                content,
                input_tokens,
                output_tokens,
            } => {
                let id = super::item_id(&batch.id, n);
                let message = message(&item.model, id, content, input_tokens, output_tokens);
                json!({"type": "succeeded", "message": message})
            }
            Final::Error => json!({
                "type": "errored",
                "error": {
                    "type": "error",
                    "error": {"type": "api_error", "message": "Internal server error"},
                },
            }),
            Final::Expired => json!({"type": "expired"}),
            Final::Canceled => json!({"type": "canceled"}),
        };
        let line = json!({"custom_id": &*item.custom_id, "result": result});
        if serde_json::to_writer(&mut out, &line).is_ok() {
            out.push(b'\n');
        }
    }
    super::jsonl_response(out, "application/x-jsonl")
}

/// The Message Batch object.
fn batch_json(batch: &Batch, headers: &HeaderMap, now_ms: u64) -> Value {
    let phase = batch.phase(now_ms);
    let (status, ended_at) = match phase {
        Phase::Cancelling { .. } => ("canceling", None),
        Phase::Ended { at_ms, .. } => ("ended", Some(rfc3339_ms(at_ms))),
        _ => ("in_progress", None),
    };
    let Counts {
        processing,
        succeeded,
        errored,
        expired,
        canceled,
    } = batch.counts(now_ms);
    let host = headers
        .get(axum::http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1");
    let results_url = ended_at
        .is_some()
        .then(|| format!("http://{host}/v1/messages/batches/{}/results", batch.id));
    json!({
        "id": batch.id,
        "type": "message_batch",
        "processing_status": status,
        "request_counts": {
            "processing": processing,
            "succeeded": succeeded,
            "errored": errored,
            "canceled": canceled,
            "expired": expired,
        },
        "ended_at": ended_at,
        "created_at": rfc3339_ms(batch.created_ms),
        "expires_at": rfc3339_ms(batch.created_ms + WINDOW_MS),
        "archived_at": null,
        "cancel_initiated_at": batch.cancel_requested_ms.map(rfc3339_ms),
        "results_url": results_url,
    })
}

/// The refusal of a request without the API key or the `anthropic-version` header, as on
/// `POST /v1/messages`.
fn refuse(fp: &FakeProvider, headers: &HeaderMap) -> Option<Response> {
    check_auth(fp.config().api_key.as_deref(), headers).or_else(|| {
        headers
            .get("anthropic-version")
            .is_none()
            .then(|| bad("anthropic-version: header is required"))
    })
}

fn ok(body: Value) -> Response {
    json_response(
        StatusCode::OK,
        HeaderMap::new(),
        serde_json::to_vec(&body).unwrap_or_default(),
    )
}

fn bad(message: &str) -> Response {
    error(StatusCode::BAD_REQUEST, "invalid_request_error", message)
}

fn not_found(id: &str) -> Response {
    let message = format!("No Message Batch found with id '{id}'.");
    error(StatusCode::NOT_FOUND, "not_found_error", &message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_ids_follow_the_pattern() {
        assert!(valid_custom_id("run-1_0-dim"));
        assert!(!valid_custom_id(""));
        assert!(!valid_custom_id("a.b"));
        assert!(!valid_custom_id(&"x".repeat(65)));
    }
}
