//! The providers' batch APIs, as [`ProviderClient`] methods: encode judge requests as batch
//! lines, submit a batch (OpenAI: upload the JSONL input file with purpose `batch`, then create
//! the batch with `completion_window: 24h`; Anthropic: one `POST /v1/messages/batches`), read
//! its status, download and decode its results, cancel it, and find a batch again by the tag
//! it was created with (after a crash between create and record).
//!
//! One call per method and no retry, like [`ProviderClient::complete`]: the coordinator owns
//! retries and polling. A batch's results are decoded with the same response parsers as the
//! live calls, so a reply means the same whichever way it came.

use evalfleet_config::Api;
use reqwest::header::AUTHORIZATION;
use serde::Serialize;
use serde_json::Value;

pub use super::batch_body::{framing_bytes, BatchBody, BodyWriter};
pub use super::batch_results::BatchResults;
use super::error::clean;
use super::{
    anthropic, classify_error, generate, openai, CallError, ChatRequest, GenerateRequest,
    ProviderClient, TokenUsage,
};

/// The OpenAI endpoint every batch line targets.
pub(super) const OPENAI_LINE_URL: &str = "/v1/chat/completions";

/// What identifies a batch that may have been created before a crash.
pub struct Sought<'a> {
    /// Its tag (OpenAI `metadata.evalfleet_tag`).
    pub tag: &'a str,
    /// Anthropic: what else is known of it, or None not to look.
    pub shape: Option<Shape<'a>>,
}

/// What is known of an Anthropic batch before its id is.
#[derive(Clone, Copy)]
pub struct Shape<'a> {
    /// When its questions were collected (unix ms): it was created after.
    pub collected_ms: u64,
    /// Its number of requests.
    pub requests: u64,
    /// Ids of batches already recorded: not it.
    pub known: &'a std::collections::HashSet<String>,
}

/// The time [`Shape::collected_ms`] is in: unix milliseconds.
pub(crate) fn now_ms() -> u64 {
    jiff::Timestamp::now().as_millisecond().max(0) as u64
}

enum Match {
    Yes,
    No,
    /// Created before the sought batch could have been: the rest of the list is older still.
    OlderThanSought,
}

/// A batch as the provider reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchStatus {
    pub id: String,
    pub state: BatchState,
    /// Requests in the batch, and how many of them are finished (any outcome).
    pub total: u64,
    pub finished: u64,
    /// OpenAI: the output and error files, once the batch ended.
    pub output_file_id: Option<String>,
    pub error_file_id: Option<String>,
}

/// Where a batch is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchState {
    /// Validating, in progress, finalizing or cancelling: poll again later.
    Running,
    /// Results are ready (completed, expired or cancelled: per-request results say which).
    Ended,
    /// The provider refused the whole batch (OpenAI validation); no request was run.
    Failed(String),
}

/// What became of one request of a batch. In the fleet it is stored as JSON until its example
/// is evaluated again (`{"reply":{"text","usage","model"?}}`, `{"errored":{…}}`, `"expired"`,
/// `"canceled"`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BatchItem {
    /// The reply (a judge's, parsed like a live one; or a chat target's), and the model that
    /// answered when the provider said (a target's `model_field`).
    Reply {
        text: String,
        usage: TokenUsage,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
    },
    /// The provider answered this request with an error; `retryable` as for a live call.
    Errored { reason: String, retryable: bool },
    /// Not run within the completion window.
    Expired,
    /// Not run because the batch was cancelled.
    Canceled,
}

/// One judge question's batch line (see [`line`]).
pub fn encode_line(api: Api, custom_id: &str, request: &ChatRequest<'_>) -> Vec<u8> {
    match api {
        Api::Openai => line(api, custom_id, openai::request_body(request)),
        Api::Anthropic => line(api, custom_id, anthropic::request_body(request)),
    }
}

/// One chat target generation's batch line (see [`line`]): the body a live call sends.
pub fn encode_generate_line(api: Api, custom_id: &str, request: &GenerateRequest<'_>) -> Vec<u8> {
    line(api, custom_id, generate::body(api, request))
}

/// One batch line: `{"custom_id","method","url","body"}` (OpenAI) or `{"custom_id","params"}`
/// (Anthropic), serialised. Its length is what counts toward the batch's byte limit.
fn line<B: Serialize>(api: Api, custom_id: &str, body: B) -> Vec<u8> {
    #[derive(Serialize)]
    struct OpenAiLine<'a, B> {
        custom_id: &'a str,
        method: &'static str,
        url: &'static str,
        body: B,
    }
    #[derive(Serialize)]
    struct AnthropicLine<'a, B> {
        custom_id: &'a str,
        params: B,
    }
    let line = match api {
        Api::Openai => serde_json::to_vec(&OpenAiLine {
            custom_id,
            method: "POST",
            url: OPENAI_LINE_URL,
            body,
        }),
        Api::Anthropic => serde_json::to_vec(&AnthropicLine {
            custom_id,
            params: body,
        }),
    };
    line.unwrap_or_default()
}

impl ProviderClient {
    /// The batch API's base: `{base_url}` for OpenAI (`…/v1`), `…/v1/messages` for Anthropic.
    pub(super) fn batch_url(&self, path: &str) -> String {
        match self.api {
            Api::Openai => {
                let base = self.endpoint.trim_end_matches("/chat/completions");
                format!("{base}{path}")
            }
            Api::Anthropic => format!("{}/batches{path}", self.endpoint),
        }
    }

    fn authed(&self, builder: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match self.api {
            Api::Openai => builder.header(AUTHORIZATION, self.auth.clone()),
            Api::Anthropic => builder
                .header("x-api-key", self.auth.clone())
                .header("anthropic-version", self.anthropic_version.clone()),
        }
    }

    /// Sends a request; a non-2xx answer becomes the [`CallError`] a live call would get.
    pub(super) async fn send(
        &self,
        builder: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, CallError> {
        let response = self
            .authed(builder)
            .send()
            .await
            .map_err(|e| self.transport_error(e))?;
        let status = response.status().as_u16();
        if (200..300).contains(&status) {
            return Ok(response);
        }
        let headers = response.headers().clone();
        let body = response.text().await.map_err(|e| self.transport_error(e))?;
        Err(classify_error(self.api, status, &headers, &body))
    }

    async fn json(&self, builder: reqwest::RequestBuilder) -> Result<Value, CallError> {
        let response = self.send(builder).await?;
        let status = response.status().as_u16();
        let body = response.text().await.map_err(|e| self.transport_error(e))?;
        serde_json::from_str(&body).map_err(|e| CallError::Malformed {
            status,
            message: clean(&format!("body is not JSON: {e}")),
        })
    }

    /// Submits a batch body as one batch tagged `tag` (OpenAI: `metadata.evalfleet_tag`, so
    /// [`Self::find_batch`] can find it again), and returns its status.
    pub async fn create_batch(
        &self,
        body: &BatchBody,
        tag: &str,
    ) -> Result<BatchStatus, CallError> {
        self.create(body, tag)
            .await
            .map_err(|e| e.scrub(&self.api_key))
    }

    async fn create(&self, body: &BatchBody, tag: &str) -> Result<BatchStatus, CallError> {
        let spooled = body
            .open()
            .await
            .map_err(|e| CallError::Local(format!("reading the spooled batch body: {e}")))?;
        let value = match self.api {
            Api::Openai => {
                let part = reqwest::multipart::Part::stream_with_length(spooled, body.len())
                    .file_name(format!("{tag}.jsonl"))
                    .mime_str("application/jsonl")
                    .map_err(|e| CallError::Connect(e.to_string()))?;
                let form = reqwest::multipart::Form::new()
                    .text("purpose", "batch")
                    .part("file", part);
                let upload = self.http.post(self.batch_url("/files")).multipart(form);
                let file = self.json(upload).await?;
                let file_id = str_field(&file, "id").map_err(malformed)?;
                let create = serde_json::json!({
                    "input_file_id": file_id,
                    "endpoint": OPENAI_LINE_URL,
                    "completion_window": "24h",
                    "metadata": {"evalfleet_tag": tag},
                });
                self.json(self.http.post(self.batch_url("/batches")).json(&create))
                    .await?
            }
            Api::Anthropic => {
                let create = self
                    .http
                    .post(self.batch_url(""))
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .header(reqwest::header::CONTENT_LENGTH, body.len())
                    .body(spooled);
                self.json(create).await?
            }
        };
        self.status_of(&value).map_err(malformed)
    }

    /// The status document a request answers with.
    async fn status_at(&self, builder: reqwest::RequestBuilder) -> Result<BatchStatus, CallError> {
        match self.json(builder).await {
            Ok(value) => self.status_of(&value).map_err(malformed),
            Err(e) => Err(e.scrub(&self.api_key)),
        }
    }

    /// The batch's current status.
    pub async fn batch_status(&self, id: &str) -> Result<BatchStatus, CallError> {
        let path = match self.api {
            Api::Openai => format!("/batches/{id}"),
            Api::Anthropic => format!("/{id}"),
        };
        self.status_at(self.http.get(self.batch_url(&path))).await
    }

    /// Asks the provider to cancel the batch; it ends later, with its unrun requests cancelled.
    pub async fn cancel_batch(&self, id: &str) -> Result<BatchStatus, CallError> {
        let path = match self.api {
            Api::Openai => format!("/batches/{id}/cancel"),
            Api::Anthropic => format!("/{id}/cancel"),
        };
        self.status_at(self.http.post(self.batch_url(&path))).await
    }

    /// The batch created for `sought`, among the newest `scan` batches (the providers list
    /// newest first): OpenAI's by its tag; an Anthropic batch carries no metadata, so it is
    /// recognised by its shape when `sought.shape` is given — created after the questions were
    /// collected, with their number of requests, and not a batch already recorded.
    pub async fn find_batch(
        &self,
        sought: &Sought<'_>,
        scan: usize,
    ) -> Result<Option<BatchStatus>, CallError> {
        if self.api == Api::Anthropic && sought.shape.is_none() {
            return Ok(None);
        }
        let mut after: Option<String> = None;
        let mut seen = 0;
        while seen < scan {
            let (path, cursor) = match self.api {
                Api::Openai => ("/batches", "after"),
                Api::Anthropic => ("", "after_id"),
            };
            let mut url = format!("{}?limit=100", self.batch_url(path));
            if let Some(after) = &after {
                url.push_str(&format!("&{cursor}={after}"));
            }
            let page = self
                .json(self.http.get(url))
                .await
                .map_err(|e| e.scrub(&self.api_key))?;
            let data = page["data"].as_array().cloned().unwrap_or_default();
            for batch in &data {
                match self.matches(batch, sought) {
                    Match::Yes => return self.status_of(batch).map(Some).map_err(malformed),
                    Match::No => {}
                    Match::OlderThanSought => return Ok(None),
                }
            }
            seen += data.len();
            if data.is_empty() || page["has_more"] != Value::Bool(true) {
                break;
            }
            after = data
                .last()
                .and_then(|b| b["id"].as_str())
                .map(str::to_owned);
        }
        Ok(None)
    }

    fn matches(&self, batch: &Value, sought: &Sought<'_>) -> Match {
        if self.api == Api::Openai {
            let tag = batch
                .pointer("/metadata/evalfleet_tag")
                .and_then(Value::as_str);
            return if tag == Some(sought.tag) {
                Match::Yes
            } else {
                Match::No
            };
        }
        let Some(shape) = &sought.shape else {
            return Match::No;
        };
        let created_ms = batch["created_at"]
            .as_str()
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
            .map_or(0, |t| t.as_millisecond().max(0) as u64);
        // Clocks differ: a minute of slack.
        if created_ms + 60_000 < shape.collected_ms {
            return Match::OlderThanSought;
        }
        let requests = self.status_of(batch).map_or(0, |s| s.total);
        let id = batch["id"].as_str().unwrap_or_default();
        if requests == shape.requests && !shape.known.contains(id) {
            Match::Yes
        } else {
            Match::No
        }
    }

    /// A status document of either API as a [`BatchStatus`].
    fn status_of(&self, value: &Value) -> Result<BatchStatus, String> {
        let id = str_field(value, "id")?.to_owned();
        let count = |pointer: &str| value.pointer(pointer).and_then(Value::as_u64).unwrap_or(0);
        let file = |key: &str| value[key].as_str().map(str::to_owned);
        Ok(match self.api {
            Api::Openai => {
                let state = match str_field(value, "status")? {
                    "completed" | "expired" | "cancelled" => BatchState::Ended,
                    "failed" => BatchState::Failed(clean(&value["errors"].to_string())),
                    _ => BatchState::Running,
                };
                BatchStatus {
                    id,
                    state,
                    total: count("/request_counts/total"),
                    finished: count("/request_counts/completed") + count("/request_counts/failed"),
                    output_file_id: file("output_file_id"),
                    error_file_id: file("error_file_id"),
                }
            }
            Api::Anthropic => {
                let state = match str_field(value, "processing_status")? {
                    "ended" => BatchState::Ended,
                    _ => BatchState::Running,
                };
                let finished = ["succeeded", "errored", "canceled", "expired"]
                    .iter()
                    .map(|k| count(&format!("/request_counts/{k}")))
                    .sum::<u64>();
                BatchStatus {
                    id,
                    state,
                    total: finished + count("/request_counts/processing"),
                    finished,
                    output_file_id: None,
                    error_file_id: None,
                }
            }
        })
    }
}

pub(super) fn str_field<'a>(value: &'a Value, key: &str) -> Result<&'a str, String> {
    value[key]
        .as_str()
        .ok_or_else(|| format!("no '{key}' string"))
}

/// A batch document (status, result line) the client cannot read.
pub(super) fn malformed(e: impl std::fmt::Display) -> CallError {
    CallError::Malformed {
        status: 200,
        message: clean(&format!("batch document: {e}")),
    }
}
