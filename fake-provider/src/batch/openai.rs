//! OpenAI's Batch API: `POST /v1/batches`, `GET /v1/batches` (newest first, `limit`/`after`),
//! `GET /v1/batches/{id}` and `POST /v1/batches/{id}/cancel`, with the statuses `validating`,
//! `in_progress`, `finalizing`, `completed`, `expired`, `cancelling`, `cancelled` and `failed`.
//! Input, output and error files are in `openai_files.rs`.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::Deserialize;
use serde_json::{json, Value};

use super::openai_files::{errors_json, no_such_file, render_results, File, FileContent};
use super::{reply_to_create, Batch, Final, Phase};
use crate::clock::now_unix_ms;
use crate::openai::{bad_request, check_auth, error_body};
use crate::state::{base62, FakeProvider};
use crate::stats::Provider;
use crate::wire::json_response;

/// The one endpoint batches of the fake may target.
pub(super) const ENDPOINT: &str = "/v1/chat/completions";
/// The one completion window the API accepts.
const WINDOW: &str = "24h";
const WINDOW_S: u64 = 24 * 3_600;

#[derive(Debug, Deserialize)]
struct CreateBatch {
    input_file_id: Option<String>,
    endpoint: Option<String>,
    completion_window: Option<String>,
    #[serde(default)]
    metadata: Option<Value>,
}

/// `POST /v1/batches`.
pub async fn create(
    State(fp): State<Arc<FakeProvider>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(denied) = check_auth(fp.config().api_key.as_deref(), &headers) {
        return denied;
    }
    let request: CreateBatch = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(e) => return bad(&format!("Invalid request body: {e}"), None),
    };
    let Some(file_id) = request.input_file_id else {
        return bad(
            "Missing required parameter: 'input_file_id'.",
            Some("input_file_id"),
        );
    };
    if request.endpoint.as_deref() != Some(ENDPOINT) {
        let message =
            format!("Invalid 'endpoint': the evalfleet fake provider batches '{ENDPOINT}' only.");
        return bad(&message, Some("endpoint"));
    }
    if request.completion_window.as_deref() != Some(WINDOW) {
        let message = format!("Invalid 'completion_window': only '{WINDOW}' is supported.");
        return bad(&message, Some("completion_window"));
    }
    let Some(file) = fp.batches().file(&file_id) else {
        return no_such_file(&file_id);
    };
    let FileContent::Input(parsed) = &file.content else {
        let message = format!("File {file_id} is not a batch input file.");
        return bad(&message, Some("input_file_id"));
    };
    let cfg = fp.config();
    let id = format!("batch_{:016x}{:016x}", fp.next_id(0xba7), fp.next_id(0xba8));
    let (requests, errors) = match parsed {
        Ok(requests) => (requests.clone(), Value::Null),
        Err(e) => (Vec::new(), errors_json(e)),
    };
    let mut batch = Batch::new(id, Provider::OpenAi, &cfg, requests, now_unix_ms());
    batch.meta = json!({
        "input_file_id": file_id,
        "metadata": request.metadata,
        "errors": errors,
    });
    if errors.is_null() {
        fp.batches().ledger().count_batch(Provider::OpenAi);
    }
    let batch = fp.batches().insert(batch);
    let reply = {
        let mut batch = batch.lock().unwrap_or_else(|e| e.into_inner());
        ok(batch_json(&fp, &mut batch, now_unix_ms()))
    };
    reply_to_create(&cfg, reply).await
}

/// `GET /v1/batches/{id}`.
pub async fn retrieve(
    State(fp): State<Arc<FakeProvider>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    with_batch(&fp, &headers, &id, |batch| {
        ok(batch_json(&fp, batch, now_unix_ms()))
    })
}

/// `POST /v1/batches/{id}/cancel`.
pub async fn cancel(
    State(fp): State<Arc<FakeProvider>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    with_batch(&fp, &headers, &id, |batch| {
        let now = now_unix_ms();
        if !batch.cancellable(now) || failed(batch) {
            let status = status(batch, now);
            let message = format!("Cannot cancel a batch with status '{status}'.");
            let body = error_body(&message, "invalid_request_error", None, None);
            return json_response(StatusCode::CONFLICT, HeaderMap::new(), body);
        }
        batch.cancel_requested_ms = Some(now);
        ok(batch_json(&fp, batch, now))
    })
}

/// Answers with `f` of the batch `id` once the key is checked, or as the API answers an unknown
/// id.
fn with_batch(
    fp: &FakeProvider,
    headers: &HeaderMap,
    id: &str,
    f: impl FnOnce(&mut Batch) -> Response,
) -> Response {
    if let Some(denied) = check_auth(fp.config().api_key.as_deref(), headers) {
        return denied;
    }
    fp.batches()
        .with(Provider::OpenAi, id, f)
        .unwrap_or_else(|| no_such_batch(id))
}

/// `GET /v1/batches?limit=&after=`, newest first.
pub async fn list(
    State(fp): State<Arc<FakeProvider>>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    if let Some(denied) = check_auth(fp.config().api_key.as_deref(), &headers) {
        return denied;
    }
    let limit = match query.get("limit").map(|l| l.parse::<usize>()) {
        None => 20,
        Some(Ok(limit @ 1..=100)) => limit,
        Some(_) => return bad("Invalid 'limit': must be between 1 and 100.", Some("limit")),
    };
    let ids = fp.batches().ids_newest_first(Provider::OpenAi);
    let page = super::page(&ids, query.get("after"), None, limit);
    let now = now_unix_ms();
    let data: Vec<Value> = page
        .ids
        .iter()
        .filter_map(|id| {
            fp.batches()
                .with(Provider::OpenAi, id, |b| batch_json(&fp, b, now))
        })
        .collect();
    ok(json!({
        "object": "list",
        "data": data,
        "first_id": page.ids.first(),
        "last_id": page.ids.last(),
        "has_more": page.has_more,
    }))
}

/// A batch whose input failed validation.
fn failed(batch: &Batch) -> bool {
    !batch.meta["errors"].is_null()
}

fn status(batch: &Batch, now_ms: u64) -> &'static str {
    match batch.phase(now_ms) {
        Phase::Validating => "validating",
        _ if failed(batch) => "failed",
        Phase::InProgress { .. } => "in_progress",
        Phase::Finalizing => "finalizing",
        Phase::Cancelling { .. } => "cancelling",
        Phase::Ended {
            cancelled: true, ..
        } => "cancelled",
        Phase::Ended { .. } if batch.has_expiries() => "expired",
        Phase::Ended { .. } => "completed",
    }
}

/// The Batch object; an ended batch gets its output and error files on first sight.
fn batch_json(fp: &FakeProvider, batch: &mut Batch, now_ms: u64) -> Value {
    let status = status(batch, now_ms);
    let secs = |ms: u64| ms / 1_000;
    let step = batch.processing_ms / 10;
    let created = batch.created_ms;
    let ended = match batch.phase(now_ms) {
        Phase::Ended { at_ms, .. } if !failed(batch) => Some(at_ms),
        _ => None,
    };
    if ended.is_some() && batch.output_file_id.is_none() && batch.error_file_id.is_none() {
        attach_result_files(fp, batch, now_ms);
    }
    let counts = batch.counts(now_ms);
    let at = |reached: bool, ms: u64| reached.then(|| secs(ms));
    let past_validation = !matches!(batch.phase(now_ms), Phase::Validating) && !failed(batch);
    let cancel = batch.cancel_requested_ms;
    json!({
        "id": batch.id,
        "object": "batch",
        "endpoint": ENDPOINT,
        "errors": batch.meta["errors"],
        "input_file_id": batch.meta["input_file_id"],
        "completion_window": WINDOW,
        "status": status,
        "output_file_id": batch.output_file_id,
        "error_file_id": batch.error_file_id,
        "created_at": secs(created),
        "in_progress_at": at(past_validation, created + step),
        "expires_at": secs(created) + WINDOW_S,
        "finalizing_at": at(status == "finalizing" || matches!(status, "completed" | "expired"),
            created + batch.processing_ms),
        "completed_at": at(status == "completed", ended.unwrap_or(0)),
        "failed_at": at(status == "failed", created + step),
        "expired_at": at(status == "expired", ended.unwrap_or(0)),
        "cancelling_at": cancel.map(secs),
        "cancelled_at": at(status == "cancelled", ended.unwrap_or(0)),
        "request_counts": {
            "total": batch.items.len(),
            "completed": counts.succeeded,
            "failed": counts.errored + counts.expired + counts.canceled,
        },
        "metadata": batch.meta["metadata"],
    })
}

/// Registers the output and error files of an ended batch (each only if it has lines).
fn attach_result_files(fp: &FakeProvider, batch: &mut Batch, now_ms: u64) {
    let Some(results) = batch.results(now_ms) else {
        return;
    };
    let (mut replies, mut failures) = (0usize, 0usize);
    for (_, result) in results {
        if matches!(result, Final::Reply { .. }) {
            replies += 1;
        } else {
            failures += 1;
        }
    }
    let file = |errors: bool| {
        let bytes = render_results(batch, errors, now_ms).len();
        let file = File {
            id: format!("file-{}", base62(fp.next_id(0xf11f), 22)),
            bytes,
            created_at: now_ms / 1_000,
            filename: format!(
                "{}_{}.jsonl",
                batch.id,
                if errors { "error" } else { "output" }
            ),
            content: FileContent::Results {
                batch_id: batch.id.clone(),
                errors,
            },
        };
        fp.batches().put_file(file).id.clone()
    };
    let output = (replies > 0).then(|| file(false));
    let error = (failures > 0).then(|| file(true));
    batch.output_file_id = output;
    batch.error_file_id = error;
}

pub(super) fn ok(body: Value) -> Response {
    json_response(
        StatusCode::OK,
        HeaderMap::new(),
        serde_json::to_vec(&body).unwrap_or_default(),
    )
}

pub(super) fn bad(message: &str, param: Option<&str>) -> Response {
    bad_request(message, param, None)
}

fn no_such_batch(id: &str) -> Response {
    let body = error_body(
        &format!("No batch found with id '{id}'."),
        "invalid_request_error",
        Some("id"),
        None,
    );
    json_response(StatusCode::NOT_FOUND, HeaderMap::new(), body)
}
