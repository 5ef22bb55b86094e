//! OpenAI's Files API as batches use it: `POST /v1/files` (multipart, purpose `batch`), `GET
//! /v1/files/{id}`, and `GET /v1/files/{id}/content` for a batch's output and error files.
//!
//! An input file is parsed when it is uploaded and kept as parsed requests, not as bytes;
//! downloading it is refused as for any purpose-`batch` input. A file whose lines are invalid,
//! or that holds more requests than a batch may, is accepted and fails its batch's validation
//! with the line named, as the real API does.

use std::collections::HashSet;
use std::sync::Arc;

use axum::extract::{Multipart, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::Deserialize;
use serde_json::{json, Value};

use super::openai::{bad, ok, ENDPOINT};
use super::{Batch, BatchRequest, Final};
use crate::clock::now_unix_ms;
use crate::judge::splitmix64;
use crate::openai::{check_auth, completion, error_body, ChatAsk, ChatRequest};
use crate::state::{base62, FakeProvider};
use crate::stats::Provider;
use crate::wire::json_response;

/// An uploaded or generated file.
#[derive(Debug)]
pub(crate) struct File {
    pub id: String,
    pub bytes: usize,
    pub created_at: u64,
    pub filename: String,
    pub content: FileContent,
}

#[derive(Debug)]
pub(crate) enum FileContent {
    /// A batch input file, parsed: its requests, or the first problem with it.
    Input(Result<Vec<BatchRequest>, LineError>),
    /// A batch's output (`errors: false`) or error file, rendered on download.
    Results { batch_id: String, errors: bool },
}

impl File {
    fn purpose(&self) -> &'static str {
        match self.content {
            FileContent::Input(_) => "batch",
            FileContent::Results { .. } => "batch_output",
        }
    }
}

/// What fails a batch's validation, as its `errors.data` entry names it.
#[derive(Debug, Clone)]
pub(crate) struct LineError {
    code: &'static str,
    message: String,
    line: Option<usize>,
}

/// `POST /v1/files`.
pub async fn upload_file(
    State(fp): State<Arc<FakeProvider>>,
    headers: HeaderMap,
    mut multipart: Multipart,
) -> Response {
    if let Some(denied) = check_auth(fp.config().api_key.as_deref(), &headers) {
        return denied;
    }
    let (mut purpose, mut file) = (None, None);
    loop {
        match multipart.next_field().await {
            Ok(Some(field)) => {
                let name = field.name().unwrap_or_default().to_owned();
                let filename = field.file_name().map(str::to_owned);
                match field.bytes().await {
                    Ok(bytes) if name == "purpose" => {
                        purpose = Some(String::from_utf8_lossy(&bytes).into_owned());
                    }
                    Ok(bytes) if name == "file" => {
                        file = Some((filename.unwrap_or_else(|| "upload".into()), bytes));
                    }
                    Ok(_) => {}
                    Err(e) => return bad(&format!("Invalid multipart body: {e}"), None),
                }
            }
            Ok(None) => break,
            Err(e) => return bad(&format!("Invalid multipart body: {e}"), None),
        }
    }
    let Some(purpose) = purpose else {
        return bad("Missing required parameter: 'purpose'.", Some("purpose"));
    };
    let Some((filename, bytes)) = file else {
        return bad("Missing required parameter: 'file'.", Some("file"));
    };
    if purpose != "batch" {
        let message = format!(
            "The evalfleet fake provider accepts files of purpose 'batch' only, got '{purpose}'."
        );
        return bad(&message, Some("purpose"));
    }
    let cfg = fp.config();
    if bytes.len() > cfg.batch_max_bytes_openai {
        return bad(
            &format!(
                "File is too large: {} bytes, the limit for purpose 'batch' is {} bytes.",
                bytes.len(),
                cfg.batch_max_bytes_openai
            ),
            Some("file"),
        );
    }
    let file = File {
        id: format!("file-{}", base62(fp.next_id(0xf11e), 22)),
        bytes: bytes.len(),
        created_at: now_unix_ms() / 1_000,
        filename,
        content: FileContent::Input(parse_input(&bytes, cfg.batch_max_requests_openai)),
    };
    let file = fp.batches().put_file(file);
    ok(file_json(&file))
}

/// The lines of a batch input file: `{"custom_id","method":"POST","url","body"}` each.
fn parse_input(bytes: &[u8], max_requests: usize) -> Result<Vec<BatchRequest>, LineError> {
    #[derive(Deserialize)]
    struct Line {
        custom_id: Option<String>,
        method: Option<String>,
        url: Option<String>,
        body: Option<ChatRequest>,
    }
    let fail = |code, message: String, line| LineError {
        code,
        message,
        line,
    };
    let text = std::str::from_utf8(bytes).map_err(|_| {
        fail(
            "invalid_file_format",
            "The file is not UTF-8 text.".into(),
            None,
        )
    })?;
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return Err(fail(
            "empty_file",
            "The batch input file is empty.".into(),
            None,
        ));
    }
    if lines.len() > max_requests {
        let message = format!(
            "The batch input file holds {} requests; a batch may hold at most {max_requests}.",
            lines.len()
        );
        return Err(fail("too_many_requests", message, None));
    }
    let mut seen = HashSet::with_capacity(lines.len());
    let mut requests = Vec::with_capacity(lines.len());
    for (i, raw) in lines.into_iter().enumerate() {
        let n = Some(i + 1);
        let line: Line = serde_json::from_str(raw).map_err(|e| {
            fail(
                "invalid_json_line",
                format!("This line is not valid JSON: {e}"),
                n,
            )
        })?;
        let custom_id = line
            .custom_id
            .ok_or_else(|| fail("missing_custom_id", "The line has no custom_id.".into(), n))?;
        if !seen.insert(custom_id.clone()) {
            let message = format!("The custom_id '{custom_id}' is used by an earlier line.");
            return Err(fail("duplicate_custom_id", message, n));
        }
        if line.method.as_deref() != Some("POST") {
            let message = "The line's method must be 'POST'.".into();
            return Err(fail("invalid_method", message, n));
        }
        if line.url.as_deref() != Some(ENDPOINT) {
            let message = format!("The line's url must be '{ENDPOINT}', the batch's endpoint.");
            return Err(fail("mismatched_endpoint", message, n));
        }
        let body = line
            .body
            .ok_or_else(|| fail("missing_body", "The line has no body.".into(), n))?;
        let ask = ChatAsk::parse(&body).map_err(|e| fail("invalid_request", e.message, n))?;
        requests.push(BatchRequest {
            custom_id,
            model: ask.model.to_owned(),
            prompt: ask.prompt,
            bare_json: ask.bare_json,
            prefill: None,
        });
    }
    Ok(requests)
}

/// `GET /v1/files/{id}`.
pub async fn retrieve_file(
    State(fp): State<Arc<FakeProvider>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    if let Some(denied) = check_auth(fp.config().api_key.as_deref(), &headers) {
        return denied;
    }
    match fp.batches().file(&id) {
        Some(file) => ok(file_json(&file)),
        None => no_such_file(&id),
    }
}

/// `GET /v1/files/{id}/content`: a batch's output or error file as JSONL.
pub async fn file_content(
    State(fp): State<Arc<FakeProvider>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    if let Some(denied) = check_auth(fp.config().api_key.as_deref(), &headers) {
        return denied;
    }
    let Some(file) = fp.batches().file(&id) else {
        return no_such_file(&id);
    };
    let FileContent::Results { batch_id, errors } = &file.content else {
        return bad("Not allowed to download files of purpose: batch.", None);
    };
    let body = fp.batches().with(Provider::OpenAi, batch_id, |batch| {
        render_results(batch, *errors, now_unix_ms())
    });
    match body {
        Some(body) => super::jsonl_response(body, "application/octet-stream"),
        None => no_such_file(&id),
    }
}

/// The output (`errors: false`) or error lines of an ended batch.
pub(super) fn render_results(batch: &Batch, errors: bool, now_ms: u64) -> Vec<u8> {
    let Some(results) = batch.results(now_ms) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (n, (item, result)) in results.enumerate() {
        if matches!(result, Final::Reply { .. }) == errors {
            continue;
        }
        let seed = super::item_id(&batch.id, n);
        let request_id = format!("req_{:016x}{:016x}", seed, splitmix64(seed));
        let (response, error) = match result {
            Final::Reply {
                content,
                input_tokens,
                output_tokens,
            } => {
                let body = completion(&item.model, seed, content, input_tokens, output_tokens);
                let response = json!({"status_code": 200, "request_id": request_id, "body": body});
                (response, Value::Null)
            }
            Final::Error => {
                let message = "The server had an error while processing your request. Sorry \
                    about that!";
                let body: Value =
                    serde_json::from_slice(&error_body(message, "server_error", None, None))
                        .unwrap_or(Value::Null);
                let response = json!({"status_code": 500, "request_id": request_id, "body": body});
                (response, Value::Null)
            }
            Final::Expired => (
                Value::Null,
                json!({"code": "batch_expired", "message": "This request could not be executed \
                    before the completion window expired."}),
            ),
            Final::Canceled => (
                Value::Null,
                json!({"code": "batch_cancelled", "message": "This request was not executed \
                    because the batch was cancelled."}),
            ),
        };
        let line = json!({
            "id": format!("batch_req_{:016x}{:016x}", splitmix64(seed), seed),
            "custom_id": &*item.custom_id,
            "response": response,
            "error": error,
        });
        if serde_json::to_writer(&mut out, &line).is_ok() {
            out.push(b'\n');
        }
    }
    out
}

pub(super) fn errors_json(e: &LineError) -> Value {
    json!({
        "object": "list",
        "data": [{"code": e.code, "message": e.message, "param": null, "line": e.line}],
    })
}

fn file_json(file: &File) -> Value {
    json!({
        "id": file.id,
        "object": "file",
        "bytes": file.bytes,
        "created_at": file.created_at,
        "filename": file.filename,
        "purpose": file.purpose(),
        "status": "processed",
        "expires_at": null,
        "status_details": null,
    })
}

pub(super) fn no_such_file(id: &str) -> Response {
    let body = error_body(
        &format!("No such File object: {id}"),
        "invalid_request_error",
        Some("id"),
        None,
    );
    json_response(StatusCode::NOT_FOUND, HeaderMap::new(), body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(id: &str) -> String {
        json!({"custom_id": id, "method": "POST", "url": ENDPOINT,
            "body": {"model": "m", "messages": [{"role": "user", "content": "hi"}]}})
        .to_string()
    }

    #[test]
    fn input_lines_are_checked_with_their_number() {
        let good = format!("{}\n{}\n", line("a"), line("b"));
        assert_eq!(parse_input(good.as_bytes(), 10).unwrap().len(), 2);
        let dup = format!("{}\n{}\n", line("a"), line("a"));
        let e = parse_input(dup.as_bytes(), 10).unwrap_err();
        assert_eq!((e.code, e.line), ("duplicate_custom_id", Some(2)));
        let broken = format!("{}\n{{oops\n", line("a"));
        let e = parse_input(broken.as_bytes(), 10).unwrap_err();
        assert_eq!((e.code, e.line), ("invalid_json_line", Some(2)));
        let e = parse_input(good.as_bytes(), 1).unwrap_err();
        assert_eq!(e.code, "too_many_requests");
    }
}
