//! The providers' batch APIs, as [`ProviderClient`] methods: encode judge requests as batch
//! lines, submit a batch (OpenAI: upload the JSONL input file with purpose `batch`, then create
//! the batch with `completion_window: 24h`; Anthropic: one `POST /v1/messages/batches`), read
//! its status, download and decode its results, cancel it, and find a batch again by the tag
//! it was created with (after a crash between create and record).
//!
//! One call per method and no retry, like [`ProviderClient::complete`]: the coordinator owns
//! retries and polling. A batch's results are decoded with the same response parsers as the
//! live calls, so a reply means the same whichever way it came.

use evalfleet_shared::config::Api;
use reqwest::header::{HeaderMap, AUTHORIZATION};
use serde::Serialize;
use serde_json::Value;

use super::error::clean;
use super::{
    anthropic, classify_error, openai, CallError, ChatRequest, ProviderClient, TokenUsage,
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
pub struct Shape<'a> {
    /// When its questions were collected (unix ms): it was created after.
    pub collected_ms: u64,
    /// Its number of requests.
    pub requests: u64,
    /// Ids of batches already recorded: not it.
    pub known: &'a std::collections::HashSet<String>,
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
/// is evaluated again (`{"reply":{"text","usage"}}`, `{"errored":{…}}`, `"expired"`, `"canceled"`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BatchItem {
    /// The judge's reply, to be parsed like a live one.
    Reply { text: String, usage: TokenUsage },
    /// The provider answered this request with an error; `retryable` as for a live call.
    Errored { reason: String, retryable: bool },
    /// Not run within the completion window.
    Expired,
    /// Not run because the batch was cancelled.
    Canceled,
}

/// One batch line: `{"custom_id","method","url","body"}` (OpenAI) or `{"custom_id","params"}`
/// (Anthropic), serialised. Its length is what counts toward the batch's byte limit.
pub fn encode_line(api: Api, custom_id: &str, request: &ChatRequest<'_>) -> Vec<u8> {
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
            body: openai::request_body(request),
        }),
        Api::Anthropic => serde_json::to_vec(&AnthropicLine {
            custom_id,
            params: anthropic::request_body(request),
        }),
    };
    line.unwrap_or_default()
}

/// The bytes a batch of encoded lines is sent as, beyond the lines themselves.
pub fn framing_bytes(api: Api, lines: usize) -> usize {
    match api {
        // A newline after each line.
        Api::Openai => lines,
        // `{"requests":[` + commas + `]}`.
        Api::Anthropic => 13 + lines.saturating_sub(1) + 2,
    }
}

pub(super) fn batch_body<L: AsRef<[u8]>>(api: Api, lines: &[L]) -> Vec<u8> {
    let size =
        lines.iter().map(|l| l.as_ref().len()).sum::<usize>() + framing_bytes(api, lines.len());
    let mut body = Vec::with_capacity(size);
    match api {
        Api::Openai => {
            for line in lines {
                body.extend_from_slice(line.as_ref());
                body.push(b'\n');
            }
        }
        Api::Anthropic => {
            body.extend_from_slice(b"{\"requests\":[");
            for (i, line) in lines.iter().enumerate() {
                if i > 0 {
                    body.push(b',');
                }
                body.extend_from_slice(line.as_ref());
            }
            body.extend_from_slice(b"]}");
        }
    }
    body
}

impl ProviderClient {
    /// The batch API's base: `{base_url}` for OpenAI (`…/v1`), `…/v1/messages` for Anthropic.
    fn batch_url(&self, path: &str) -> String {
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
    async fn send(&self, builder: reqwest::RequestBuilder) -> Result<reqwest::Response, CallError> {
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

    /// Submits encoded lines as one batch tagged `tag` (OpenAI: `metadata.evalfleet_tag`, so
    /// [`Self::find_batch`] can find it again), and returns its status.
    pub async fn create_batch<L: AsRef<[u8]>>(
        &self,
        lines: &[L],
        tag: &str,
    ) -> Result<BatchStatus, CallError> {
        self.create(lines, tag)
            .await
            .map_err(|e| e.scrub(&self.api_key))
    }

    async fn create<L: AsRef<[u8]>>(
        &self,
        lines: &[L],
        tag: &str,
    ) -> Result<BatchStatus, CallError> {
        let body = batch_body(self.api, lines);
        let value = match self.api {
            Api::Openai => {
                let part = reqwest::multipart::Part::bytes(body)
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
                    .body(body);
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

    /// Every request's result of an ended batch, by custom_id.
    pub async fn batch_results(
        &self,
        status: &BatchStatus,
    ) -> Result<Vec<(String, BatchItem)>, CallError> {
        self.results(status)
            .await
            .map_err(|e| e.scrub(&self.api_key))
    }

    async fn results(&self, status: &BatchStatus) -> Result<Vec<(String, BatchItem)>, CallError> {
        let mut items = Vec::with_capacity(status.total as usize);
        match self.api {
            Api::Openai => {
                for file in [&status.output_file_id, &status.error_file_id]
                    .into_iter()
                    .flatten()
                {
                    let url = self.batch_url(&format!("/files/{file}/content"));
                    let body = self.download(url).await?;
                    for line in body.lines().filter(|l| !l.trim().is_empty()) {
                        items.push(self.decode_openai(line).map_err(malformed)?);
                    }
                }
            }
            Api::Anthropic => {
                let url = self.batch_url(&format!("/{}/results", status.id));
                let body = self.download(url).await?;
                for line in body.lines().filter(|l| !l.trim().is_empty()) {
                    items.push(decode_anthropic(line).map_err(malformed)?);
                }
            }
        }
        Ok(items)
    }

    async fn download(&self, url: String) -> Result<String, CallError> {
        let response = self.send(self.http.get(url)).await?;
        response.text().await.map_err(|e| self.transport_error(e))
    }

    fn decode_openai(&self, line: &str) -> Result<(String, BatchItem), String> {
        let value: Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
        let custom_id = str_field(&value, "custom_id")?.to_owned();
        let item = match value["error"]["code"].as_str() {
            Some("batch_expired") => BatchItem::Expired,
            Some("batch_cancelled") => BatchItem::Canceled,
            Some(code) => BatchItem::Errored {
                reason: clean(&format!("{code}: {}", value["error"]["message"])),
                retryable: true,
            },
            None => {
                let response = &value["response"];
                let status = response["status_code"].as_u64().unwrap_or(0) as u16;
                let body = response["body"].to_string();
                if status == 200 {
                    match openai::parse_response(&body) {
                        Ok((text, usage)) => BatchItem::Reply { text, usage },
                        Err(m) => BatchItem::Errored {
                            reason: clean(&format!("malformed response: {m}")),
                            retryable: true,
                        },
                    }
                } else {
                    let error = classify_error(self.api, status, &HeaderMap::new(), &body);
                    BatchItem::Errored {
                        reason: error.reason(),
                        retryable: error.retryable(),
                    }
                }
            }
        };
        Ok((custom_id, item))
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

pub(super) fn decode_anthropic(line: &str) -> Result<(String, BatchItem), String> {
    let value: Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
    let custom_id = str_field(&value, "custom_id")?.to_owned();
    let result = &value["result"];
    let item = match result["type"].as_str() {
        Some("succeeded") => match anthropic::parse_response(&result["message"].to_string()) {
            Ok((text, usage)) => BatchItem::Reply { text, usage },
            Err(m) => BatchItem::Errored {
                reason: clean(&format!("malformed response: {m}")),
                retryable: true,
            },
        },
        Some("errored") => {
            let kind = result
                .pointer("/error/error/type")
                .and_then(Value::as_str)
                .unwrap_or("error");
            let message = result
                .pointer("/error/error/message")
                .and_then(Value::as_str)
                .unwrap_or("");
            BatchItem::Errored {
                reason: clean(&format!("{kind}: {message}")),
                // The request itself is wrong: a later batch would fail the same way.
                retryable: kind != "invalid_request_error",
            }
        }
        Some("expired") => BatchItem::Expired,
        Some("canceled") => BatchItem::Canceled,
        other => return Err(format!("unknown result type {other:?}")),
    };
    Ok((custom_id, item))
}

fn str_field<'a>(value: &'a Value, key: &str) -> Result<&'a str, String> {
    value[key]
        .as_str()
        .ok_or_else(|| format!("no '{key}' string"))
}

/// A batch document (status, result line) the client cannot read.
fn malformed(e: impl std::fmt::Display) -> CallError {
    CallError::Malformed {
        status: 200,
        message: clean(&format!("batch document: {e}")),
    }
}
