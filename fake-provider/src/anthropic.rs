//! The Anthropic Messages dialect: `POST /v1/messages` with `x-api-key` (or a Bearer token) and
//! a required `anthropic-version`, text content blocks, `anthropic-ratelimit-*` headers, and
//! Anthropic's error envelope (429 `rate_limit_error` with `retry-after`, 529
//! `overloaded_error`, ...).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::clock::{now_unix_ms, retry_after_secs, rfc3339_after};
use crate::exchange::{truncate_body, Ask, Exchange, Outcome};
use crate::judge::splitmix64;
use crate::limiter::{LimitKind, Snapshot};
use crate::state::{base62, FakeProvider};
use crate::stats::Provider;
use crate::wire::{bearer_key, join_prompt, json_response, put, Content};

#[derive(Debug, Deserialize)]
pub(crate) struct MessagesRequest {
    model: Option<String>,
    max_tokens: Option<u64>,
    messages: Option<Vec<InputMessage>>,
    #[serde(default)]
    system: Option<Content>,
    #[serde(default)]
    stream: Option<bool>,
}

#[derive(Debug, Deserialize)]
struct InputMessage {
    role: String,
    content: Content,
}

#[derive(Serialize)]
struct MessageResponse<'a> {
    id: String,
    #[serde(rename = "type")]
    kind: &'static str,
    role: &'static str,
    model: &'a str,
    content: [TextBlock<'a>; 1],
    stop_reason: &'static str,
    stop_sequence: Option<()>,
    usage: Usage,
}

#[derive(Serialize)]
struct TextBlock<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

#[derive(Serialize)]
struct Usage {
    input_tokens: u32,
    output_tokens: u32,
    cache_creation_input_tokens: u32,
    cache_read_input_tokens: u32,
}

/// What a valid Messages request asks, for the live endpoint and for Message Batches.
pub(crate) struct MessagesAsk<'a> {
    pub model: &'a str,
    /// The `system` text and every message's text, joined with `\n`.
    pub prompt: String,
    /// The text of a final assistant message, which the reply continues.
    pub prefill: Option<String>,
}

impl<'a> MessagesAsk<'a> {
    /// The request's model, prompt and prefill, or the API's message for what is wrong with it.
    pub fn parse(request: &'a MessagesRequest) -> Result<Self, String> {
        let Some(model) = request.model.as_deref() else {
            return Err("model: Field required".into());
        };
        let problem = match (&request.max_tokens, request.messages.as_deref()) {
            (None, _) => Some("max_tokens: Field required"),
            (Some(0), _) => Some("max_tokens: Input should be greater than or equal to 1"),
            (_, None) => Some("messages: Field required"),
            (_, Some([])) => Some("messages: at least one message is required"),
            _ if request.stream == Some(true) => {
                Some("stream: streaming is not supported by the evalfleet fake provider")
            }
            _ => None,
        };
        if let Some(problem) = problem {
            return Err(problem.into());
        }
        let messages = request.messages.as_deref().unwrap_or_default();
        let prefill = messages
            .last()
            .filter(|m| m.role == "assistant")
            .map(|m| m.content.text());
        if prefill.as_deref().is_some_and(|p| p.trim_end() != p) {
            return Err(
                "messages: final assistant content cannot end with trailing whitespace".into(),
            );
        }
        let prompt = join_prompt(
            request
                .system
                .iter()
                .chain(messages.iter().map(|m| &m.content)),
        );
        Ok(Self {
            model,
            prompt,
            prefill,
        })
    }
}

/// `POST /v1/messages`.
pub async fn messages(
    State(fp): State<Arc<FakeProvider>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let request_id = format!("req_011{}", base62(fp.next_id(0xa17), 21));
    let bad = |message: &str| error(StatusCode::BAD_REQUEST, "invalid_request_error", message);
    if let Some(denied) = check_auth(fp.config().api_key.as_deref(), &headers) {
        return finish(&fp, None, denied, &request_id, None);
    }
    if headers.get("anthropic-version").is_none() {
        let denied = bad("anthropic-version: header is required");
        return finish(&fp, None, denied, &request_id, None);
    }
    let request: MessagesRequest = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(e) => {
            let denied = bad(&format!("Invalid request body: {e}"));
            return finish(&fp, None, denied, &request_id, None);
        }
    };
    let ask = match MessagesAsk::parse(&request) {
        Ok(ask) => ask,
        Err(problem) => {
            return finish(
                &fp,
                request.model.as_deref(),
                bad(&problem),
                &request_id,
                None,
            );
        }
    };
    let (model, prompt, prefill) = (ask.model, ask.prompt, ask.prefill);
    let exchange = fp
        .exchange(Ask {
            provider: Provider::Anthropic,
            prompt: &prompt,
            bare_json: false,
            prefill: prefill.as_deref(),
        })
        .await;
    let response = render(model, &exchange);
    let accepted = (response.status() == StatusCode::OK).then_some(exchange.arrived_unix_ms);
    finish(&fp, Some(model), response, &request_id, accepted)
}

fn finish(
    fp: &FakeProvider,
    model: Option<&str>,
    mut response: Response,
    request_id: &str,
    accepted: Option<u64>,
) -> Response {
    put(response.headers_mut(), "request-id", request_id);
    let status = response.status().as_u16();
    fp.stats()
        .record(Provider::Anthropic, model, status, now_unix_ms(), accepted);
    response
}

/// The real API takes the key as `x-api-key` or, as current SDKs may send it, as
/// `Authorization: Bearer <key>`; `x-api-key` wins when both are there.
pub(crate) fn check_auth(required: Option<&str>, headers: &HeaderMap) -> Option<Response> {
    let required = required?;
    let given = headers
        .get("x-api-key")
        .and_then(|v| v.to_str().ok())
        .or_else(|| bearer_key(headers));
    let message = match given {
        Some(key) if key == required => return None,
        None | Some("") => "x-api-key header is required",
        Some(_) => "invalid x-api-key",
    };
    Some(error(
        StatusCode::UNAUTHORIZED,
        "authentication_error",
        message,
    ))
}

fn render(model: &str, ex: &Exchange) -> Response {
    let mut headers = HeaderMap::new();
    put_ratelimit_headers(&mut headers, &ex.snapshot, ex.arrived_unix_ms);
    let (status, kind, message) = match &ex.outcome {
        Outcome::Reply { content, malformed } => {
            let body = message_body(model, ex, content);
            let body = if *malformed {
                truncate_body(body)
            } else {
                body
            };
            return json_response(StatusCode::OK, headers, body);
        }
        Outcome::RateLimited {
            kind,
            limit,
            retry_after,
            injected,
            too_large,
            ..
        } => {
            put(&mut headers, "retry-after", retry_after_secs(*retry_after));
            let unit = match kind {
                LimitKind::Requests => "requests",
                LimitKind::Tokens => "tokens",
            };
            let message = if *injected {
                "This request would exceed your organization's rate limit (injected by the \
                 evalfleet fake provider). Please try again later."
                    .to_owned()
            } else if *too_large {
                format!(
                    "This request would exceed your organization's rate limit of {limit} {unit} \
                     per minute on its own. Please reduce the prompt length or the maximum \
                     tokens requested."
                )
            } else {
                format!(
                    "This request would exceed your organization's rate limit of {limit} {unit} \
                     per minute. For details, refer to: \
                     https://docs.anthropic.com/en/api/rate-limits. You can see the response \
                     headers for current usage. Please reduce the prompt length or the maximum \
                     tokens requested, or try again later."
                )
            };
            (StatusCode::TOO_MANY_REQUESTS, "rate_limit_error", message)
        }
        Outcome::Quota => (
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            "Your credit balance is too low to access the Anthropic API. Please go to Plans & \
             Billing to upgrade or purchase credits."
                .to_owned(),
        ),
        Outcome::ServerError => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "api_error",
            "Internal server error".to_owned(),
        ),
        Outcome::Overloaded => (overloaded(), "overloaded_error", "Overloaded".to_owned()),
    };
    let mut response = error(status, kind, &message);
    response.headers_mut().extend(headers);
    response
}

/// 529, Anthropic's "overloaded" status.
fn overloaded() -> StatusCode {
    StatusCode::from_u16(529).unwrap_or(StatusCode::SERVICE_UNAVAILABLE)
}

fn message_body(model: &str, ex: &Exchange, text: &str) -> Vec<u8> {
    serde_json::to_vec(&message(
        model,
        ex.id,
        text,
        ex.input_tokens,
        ex.output_tokens,
    ))
    .unwrap_or_default()
}

/// A Messages API reply: the live body, and the `message` of a succeeded batch result.
pub(crate) fn message<'a>(
    model: &'a str,
    id: u64,
    text: &'a str,
    input_tokens: u32,
    output_tokens: u32,
) -> impl Serialize + 'a {
    MessageResponse {
        id: format!("msg_01{}", base62(splitmix64(id), 22)),
        kind: "message",
        role: "assistant",
        model,
        content: [TextBlock { kind: "text", text }],
        stop_reason: "end_turn",
        stop_sequence: None,
        usage: Usage {
            input_tokens,
            output_tokens,
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: 0,
        },
    }
}

fn put_ratelimit_headers(headers: &mut HeaderMap, snapshot: &Snapshot, now_ms: u64) {
    if let Some(q) = snapshot.requests {
        put(headers, "anthropic-ratelimit-requests-limit", q.limit);
        put(
            headers,
            "anthropic-ratelimit-requests-remaining",
            q.remaining,
        );
        let reset = rfc3339_after(now_ms, q.reset);
        put(headers, "anthropic-ratelimit-requests-reset", reset);
    }
    if let Some(q) = snapshot.tokens {
        put(headers, "anthropic-ratelimit-tokens-limit", q.limit);
        put(headers, "anthropic-ratelimit-tokens-remaining", q.remaining);
        let reset = rfc3339_after(now_ms, q.reset);
        put(headers, "anthropic-ratelimit-tokens-reset", reset);
    }
}

/// `{"type":"error","error":{"type","message"}}`, Anthropic's error envelope.
pub(crate) fn error(status: StatusCode, kind: &str, message: &str) -> Response {
    let body = json!({"type": "error", "error": {"type": kind, "message": message}});
    let body = serde_json::to_vec(&body).unwrap_or_default();
    json_response(status, HeaderMap::new(), body)
}
