//! An ended batch's results, decoded as they download: one request's result at a time, so a
//! coordinator holds a chunk of the download rather than a 100,000-request results file and
//! everything decoded from it. Results are decoded with the live calls' response parsers, so a
//! reply means the same whichever way it came.

use std::collections::VecDeque;
use std::ops::Range;

use evalfleet_config::Api;
use reqwest::header::HeaderMap;
use serde_json::Value;

use super::batch::{malformed, str_field, BatchItem, BatchStatus};
use super::error::clean;
use super::{anthropic, classify_error, generate, openai, CallError, ProviderClient};

impl ProviderClient {
    /// The results of an ended batch, read as they download: OpenAI's output file then its
    /// error file; Anthropic's results JSONL.
    pub fn batch_results(&self, status: &BatchStatus) -> BatchResults<'_> {
        let urls = match self.api {
            Api::Openai => [&status.output_file_id, &status.error_file_id]
                .into_iter()
                .flatten()
                .map(|file| self.batch_url(&format!("/files/{file}/content")))
                .collect(),
            Api::Anthropic => VecDeque::from([self.batch_url(&format!("/{}/results", status.id))]),
        };
        BatchResults {
            client: self,
            urls,
            response: None,
            buf: Vec::new(),
            start: 0,
        }
    }
}

/// The results of one batch, as they download ([`ProviderClient::batch_results`]).
pub struct BatchResults<'a> {
    client: &'a ProviderClient,
    /// Files not opened yet.
    urls: VecDeque<String>,
    /// The file being read.
    response: Option<reqwest::Response>,
    /// Downloaded bytes; those before `start` are read.
    buf: Vec<u8>,
    start: usize,
}

impl BatchResults<'_> {
    /// The next request's result, or None after the last.
    pub async fn next(&mut self) -> Result<Option<(String, BatchItem)>, CallError> {
        let api = self.client.api;
        loop {
            if let Some(line) = self.line() {
                match decode_line(api, &self.buf[line]) {
                    None => continue,
                    Some(item) => return item.map(Some).map_err(malformed),
                }
            }
            if !self
                .fill()
                .await
                .map_err(|e| e.scrub(&self.client.api_key))?
            {
                return Ok(None);
            }
        }
    }

    /// The next whole line of the buffer, if it holds one.
    fn line(&mut self) -> Option<Range<usize>> {
        let unread = &self.buf[self.start..];
        let end = self.start + unread.iter().position(|&b| b == b'\n')?;
        let line = self.start..end;
        self.start = end + 1;
        Some(line)
    }

    /// Downloads more; false when every file is read. A file's last line may lack its newline.
    async fn fill(&mut self) -> Result<bool, CallError> {
        self.buf.drain(..self.start);
        self.start = 0;
        loop {
            let Some(response) = &mut self.response else {
                let Some(url) = self.urls.pop_front() else {
                    return Ok(false);
                };
                let client = self.client;
                self.response = Some(client.send(client.http.get(url)).await?);
                continue;
            };
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    self.buf.extend_from_slice(&chunk);
                    return Ok(true);
                }
                Ok(None) => {
                    self.response = None;
                    if !self.buf.is_empty() {
                        self.buf.push(b'\n');
                        return Ok(true);
                    }
                }
                Err(e) => return Err(self.client.transport_error(e)),
            }
        }
    }
}

/// One downloaded line of a results file: None for a blank line, else the request's result or
/// why the line cannot be read.
pub(super) fn decode_line(api: Api, line: &[u8]) -> Option<Result<(String, BatchItem), String>> {
    let line = match std::str::from_utf8(line) {
        Ok(line) => line,
        Err(e) => return Some(Err(e.to_string())),
    };
    if line.trim().is_empty() {
        return None;
    }
    Some(match api {
        Api::Openai => decode_openai(line),
        Api::Anthropic => decode_anthropic(line),
    })
}

/// One line of an OpenAI output or error file.
pub(super) fn decode_openai(line: &str) -> Result<(String, BatchItem), String> {
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
                    Ok((text, usage)) => BatchItem::Reply {
                        text,
                        usage,
                        model: generate::answering_model(&body),
                    },
                    Err(m) => BatchItem::Errored {
                        reason: clean(&format!("malformed response: {m}")),
                        retryable: true,
                    },
                }
            } else {
                let error = classify_error(Api::Openai, status, &HeaderMap::new(), &body);
                BatchItem::Errored {
                    reason: error.reason(),
                    retryable: error.retryable(),
                }
            }
        }
    };
    Ok((custom_id, item))
}

/// One line of an Anthropic results file.
pub(super) fn decode_anthropic(line: &str) -> Result<(String, BatchItem), String> {
    let value: Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
    let custom_id = str_field(&value, "custom_id")?.to_owned();
    let result = &value["result"];
    let item = match result["type"].as_str() {
        Some("succeeded") => match anthropic::parse_response(&result["message"].to_string()) {
            Ok((text, usage)) => BatchItem::Reply {
                text,
                usage,
                model: result["message"]["model"].as_str().map(str::to_owned),
            },
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
