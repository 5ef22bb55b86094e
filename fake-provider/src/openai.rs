//! The OpenAI Chat Completions dialect: `POST /v1/chat/completions` with Bearer auth, the real
//! response shape, `x-ratelimit-*` headers and OpenAI's error bodies (including the difference
//! between a retryable `rate_limit_exceeded` and a non-retryable `insufficient_quota` 429).

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::clock::{go_duration, now_unix_ms, retry_after_secs};
use crate::exchange::{truncate_body, Ask, Exchange, Outcome};
use crate::judge::splitmix64;
use crate::limiter::{LimitKind, Snapshot};
use crate::state::{base62, FakeProvider};
use crate::stats::Provider;
use crate::wire::{bearer_key, join_prompt, json_response, mask_key, put, Content};

const ORG: &str = "org-evalfleet-fake";

#[derive(Debug, Deserialize)]
pub(crate) struct ChatRequest {
    model: Option<String>,
    messages: Option<Vec<ChatMessage>>,
    #[serde(default)]
    response_format: Option<ResponseFormat>,
    #[serde(default)]
    stream: Option<bool>,
}

#[derive(Debug, Deserialize)]
struct ChatMessage {
    #[serde(default)]
    content: Option<Content>,
}

#[derive(Debug, Deserialize)]
struct ResponseFormat {
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Serialize)]
struct Completion<'a> {
    id: String,
    object: &'static str,
    created: u64,
    model: &'a str,
    choices: [Choice<'a>; 1],
    usage: Usage,
    service_tier: &'static str,
    system_fingerprint: &'static str,
}

#[derive(Serialize)]
struct Choice<'a> {
    index: u32,
    message: Message<'a>,
    logprobs: Option<()>,
    finish_reason: &'static str,
}

#[derive(Serialize)]
struct Message<'a> {
    role: &'static str,
    content: &'a str,
    refusal: Option<()>,
    annotations: &'static [()],
}

#[derive(Serialize)]
struct Usage {
    prompt_tokens: u32,
    completion_tokens: u32,
    total_tokens: u32,
    prompt_tokens_details: PromptDetails,
    completion_tokens_details: CompletionDetails,
}

#[derive(Serialize)]
struct PromptDetails {
    cached_tokens: u32,
}

#[derive(Serialize)]
struct CompletionDetails {
    reasoning_tokens: u32,
}

/// What a valid Chat Completions request asks, live or as a line of a batch input file.
pub(crate) struct ChatAsk<'a> {
    pub model: &'a str,
    /// Every message's text, joined with `\n`.
    pub prompt: String,
    /// `response_format` asks for bare JSON.
    pub bare_json: bool,
}

/// Why a Chat Completions request is invalid, as OpenAI's error names it.
#[derive(Debug)]
pub(crate) struct BadRequest {
    pub message: String,
    pub param: Option<&'static str>,
    pub code: Option<&'static str>,
}

impl<'a> ChatAsk<'a> {
    pub fn parse(request: &'a ChatRequest) -> Result<Self, BadRequest> {
        let bad = |message: &str, param, code| BadRequest {
            message: message.to_owned(),
            param,
            code,
        };
        let Some(model) = request.model.as_deref() else {
            return Err(bad("you must provide a model parameter", None, None));
        };
        let messages =
            match request.messages.as_deref() {
                None => {
                    return Err(bad(
                        "Missing required parameter: 'messages'.",
                        Some("messages"),
                        Some("missing_required_parameter"),
                    ))
                }
                Some([]) => return Err(bad(
                    "Invalid 'messages': empty array. Expected an array with minimum length 1, \
                     but got an empty array instead.",
                    Some("messages"),
                    Some("empty_array"),
                )),
                Some(messages) => messages,
            };
        if request.stream == Some(true) {
            return Err(bad(
                "stream=true is not supported by the evalfleet fake provider.",
                Some("stream"),
                Some("unsupported_value"),
            ));
        }
        let prompt = join_prompt(messages.iter().filter_map(|m| m.content.as_ref()));
        let bare_json = request
            .response_format
            .as_ref()
            .is_some_and(|f| f.kind == "json_object" || f.kind == "json_schema");
        Ok(Self {
            model,
            prompt,
            bare_json,
        })
    }
}

/// `POST /v1/chat/completions`.
pub async fn chat_completions(
    State(fp): State<Arc<FakeProvider>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(denied) = check_auth(fp.config().api_key.as_deref(), &headers) {
        return finish(&fp, None, denied, None);
    }
    let request: ChatRequest = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(e) if e.is_data() => {
            let message = format!("Invalid request body: {e}");
            return finish(&fp, None, bad_request(&message, None, None), None);
        }
        Err(_) => {
            let message = "We could not parse the JSON body of your request. (HINT: This likely \
                means you aren't using your HTTP library correctly. The OpenAI API expects a JSON \
                payload, but what was sent was not valid JSON.)";
            return finish(&fp, None, bad_request(message, None, None), None);
        }
    };
    let ask = match ChatAsk::parse(&request) {
        Ok(ask) => ask,
        Err(bad) => {
            let denied = bad_request(&bad.message, bad.param, bad.code);
            return finish(&fp, request.model.as_deref(), denied, None);
        }
    };
    let (model, prompt, bare_json) = (ask.model, ask.prompt, ask.bare_json);
    let exchange = fp
        .exchange(Ask {
            provider: Provider::OpenAi,
            prompt: &prompt,
            bare_json,
            prefill: None,
        })
        .await;
    let accepted = exchange.arrived_unix_ms;
    let response = render(model, &exchange);
    let accepted = (response.status() == StatusCode::OK).then_some(accepted);
    finish(&fp, Some(model), response, accepted)
}

fn finish(
    fp: &FakeProvider,
    model: Option<&str>,
    response: Response,
    accepted: Option<u64>,
) -> Response {
    let status = response.status().as_u16();
    fp.stats()
        .record(Provider::OpenAi, model, status, now_unix_ms(), accepted);
    response
}

pub(crate) fn check_auth(required: Option<&str>, headers: &HeaderMap) -> Option<Response> {
    let required = required?;
    let given = bearer_key(headers);
    let message = match given {
        Some(key) if key == required => return None,
        None | Some("") => "You didn't provide an API key. You need to provide your API key in \
            an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."
            .to_owned(),
        Some(key) => format!("Incorrect API key provided: {}.", mask_key(key)),
    };
    let code = given.filter(|k| !k.is_empty()).map(|_| "invalid_api_key");
    let body = error_body(&message, "invalid_request_error", None, code);
    Some(json_response(
        StatusCode::UNAUTHORIZED,
        HeaderMap::new(),
        body,
    ))
}

fn render(model: &str, ex: &Exchange) -> Response {
    let mut headers = HeaderMap::new();
    let request_id = format!("req_{:016x}{:016x}", ex.id, splitmix64(ex.id));
    put(&mut headers, "x-request-id", request_id);
    put(&mut headers, "openai-version", "2020-10-01");
    put(
        &mut headers,
        "openai-processing-ms",
        ex.started.elapsed().as_millis(),
    );
    put_ratelimit_headers(&mut headers, &ex.snapshot);
    match &ex.outcome {
        Outcome::Reply { content, malformed } => {
            let body = completion_body(model, ex, content);
            let body = if *malformed {
                truncate_body(body)
            } else {
                body
            };
            json_response(StatusCode::OK, headers, body)
        }
        Outcome::RateLimited {
            kind,
            limit,
            requested,
            too_large,
            retry_after,
            injected,
        } => {
            let (label, short) = match kind {
                LimitKind::Requests => ("requests", "RPM"),
                LimitKind::Tokens => ("tokens", "TPM"),
            };
            let wait = go_duration(*retry_after);
            let message = if *injected {
                format!(
                    "Rate limit reached for {model} in organization {ORG} on {label} per min \
                     ({short}): injected by the evalfleet fake provider. Please try again in {wait}."
                )
            } else if *too_large {
                format!(
                    "Request too large for {model} in organization {ORG} on {label} per min \
                     ({short}): Limit {limit}, Requested {requested}. The input or output tokens \
                     must be reduced in order to run successfully."
                )
            } else {
                let quota = match kind {
                    LimitKind::Requests => ex.snapshot.requests,
                    LimitKind::Tokens => ex.snapshot.tokens,
                };
                let used = quota.map_or(0, |q| u64::from(q.limit).saturating_sub(q.remaining));
                format!(
                    "Rate limit reached for {model} in organization {ORG} on {label} per min \
                     ({short}): Limit {limit}, Used {used}, Requested {requested}. Please try \
                     again in {wait}. Visit https://platform.openai.com/account/rate-limits to \
                     learn more."
                )
            };
            put(&mut headers, "retry-after", retry_after_secs(*retry_after));
            put(&mut headers, "retry-after-ms", retry_after.as_millis());
            let body = error_body(&message, label, None, Some("rate_limit_exceeded"));
            json_response(StatusCode::TOO_MANY_REQUESTS, headers, body)
        }
        Outcome::Quota => {
            let message = "You exceeded your current quota, please check your plan and billing \
                details. For more information on this error, read the docs: \
                https://platform.openai.com/docs/guides/error-codes/api-errors.";
            let body = error_body(
                message,
                "insufficient_quota",
                None,
                Some("insufficient_quota"),
            );
            json_response(StatusCode::TOO_MANY_REQUESTS, headers, body)
        }
        Outcome::ServerError => {
            let message =
                "The server had an error while processing your request. Sorry about that!";
            let body = error_body(message, "server_error", None, None);
            json_response(StatusCode::INTERNAL_SERVER_ERROR, headers, body)
        }
        Outcome::Overloaded => {
            let message = "The server is overloaded or not ready yet.";
            let body = error_body(message, "server_error", None, None);
            json_response(StatusCode::SERVICE_UNAVAILABLE, headers, body)
        }
    }
}

fn completion_body(model: &str, ex: &Exchange, content: &str) -> Vec<u8> {
    serde_json::to_vec(&completion(
        model,
        ex.id,
        content,
        ex.input_tokens,
        ex.output_tokens,
    ))
    .unwrap_or_default()
}

/// A chat completion: the live body, and the `response.body` of a batch output line.
pub(crate) fn completion<'a>(
    model: &'a str,
    id: u64,
    content: &'a str,
    input_tokens: u32,
    output_tokens: u32,
) -> impl Serialize + 'a {
    let created = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    Completion {
        id: format!("chatcmpl-{}", base62(id, 29)),
        object: "chat.completion",
        created,
        model,
        choices: [Choice {
            index: 0,
            message: Message {
                role: "assistant",
                content,
                refusal: None,
                annotations: &[],
            },
            logprobs: None,
            finish_reason: "stop",
        }],
        usage: Usage {
            prompt_tokens: input_tokens,
            completion_tokens: output_tokens,
            total_tokens: input_tokens.saturating_add(output_tokens),
            prompt_tokens_details: PromptDetails { cached_tokens: 0 },
            completion_tokens_details: CompletionDetails {
                reasoning_tokens: 0,
            },
        },
        service_tier: "default",
        system_fingerprint: "fp_evalfleet",
    }
}

fn put_ratelimit_headers(headers: &mut HeaderMap, snapshot: &Snapshot) {
    if let Some(q) = snapshot.requests {
        put(headers, "x-ratelimit-limit-requests", q.limit);
        put(headers, "x-ratelimit-remaining-requests", q.remaining);
        put(headers, "x-ratelimit-reset-requests", go_duration(q.reset));
    }
    if let Some(q) = snapshot.tokens {
        put(headers, "x-ratelimit-limit-tokens", q.limit);
        put(headers, "x-ratelimit-remaining-tokens", q.remaining);
        put(headers, "x-ratelimit-reset-tokens", go_duration(q.reset));
    }
}

pub(crate) fn bad_request(message: &str, param: Option<&str>, code: Option<&str>) -> Response {
    let body = error_body(message, "invalid_request_error", param, code);
    json_response(StatusCode::BAD_REQUEST, HeaderMap::new(), body)
}

/// `{"error":{"message","type","param","code"}}`, OpenAI's error envelope.
pub fn error_body(message: &str, kind: &str, param: Option<&str>, code: Option<&str>) -> Vec<u8> {
    let body = json!({"error": {"message": message, "type": kind, "param": param, "code": code}});
    serde_json::to_vec(&body).unwrap_or_default()
}
