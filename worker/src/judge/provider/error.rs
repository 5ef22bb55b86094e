//! What an HTTP call's failure means: retry or not, how long the provider asked us to wait,
//! whether the key is bad (stop the run), and a short reason for reports.
//!
//! [`classify_error`] is pure (status, headers, body in; [`CallError`] out) so every status and
//! body shape the providers and gateways send is tested without a server. Error bodies are cut
//! to one short line and anything shaped like an API key is redacted; the client additionally
//! scrubs its own key from every message (`CallError::scrub`).

use std::time::Duration;

use evalfleet_config::Api;
use reqwest::header::HeaderMap;
use serde_json::Value;

use super::limits::{rate_limit_info, retry_after};
use super::RateLimitInfo;

/// Why a call failed. `Display` (and [`CallError::reason`]) is the short report text; messages
/// never contain the API key.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CallError {
    /// 429 `rate_limit_exceeded` / `rate_limit_error`: retry after a wait.
    #[error("HTTP 429 {message}")]
    RateLimited {
        retry_after: Option<Duration>,
        limits: RateLimitInfo,
        message: String,
    },
    /// OpenAI 429 `insufficient_quota`: the account is out of credit; retrying cannot help.
    #[error("HTTP 429 {message}")]
    QuotaExhausted { message: String },
    /// Anthropic 529, any 503: the provider is overloaded; retry after a wait.
    #[error("HTTP {status} {message}")]
    Overloaded {
        status: u16,
        retry_after: Option<Duration>,
        message: String,
    },
    /// Other 5xx, 408, 409: transient; retry.
    #[error("HTTP {status} {message}")]
    Server {
        status: u16,
        retry_after: Option<Duration>,
        message: String,
    },
    /// 401, 403: a bad key or missing permission; stop the run.
    #[error("HTTP {status} {message}")]
    Auth { status: u16, message: String },
    /// 400, 404 and other 4xx (and unexpected 1xx/3xx): the request itself is wrong.
    #[error("HTTP {status} {message}")]
    Rejected { status: u16, message: String },
    /// No (complete) response within the configured timeouts.
    #[error("timeout: {0}")]
    Timeout(String),
    /// The connection failed or broke.
    #[error("connection error: {0}")]
    Connect(String),
    /// A 2xx whose body is not the API's response shape.
    #[error("HTTP {status} malformed response: {message}")]
    Malformed { status: u16, message: String },
    /// Nothing was sent: the request could not be made here (a spooled batch body unreadable).
    #[error("{0}")]
    Local(String),
}

impl CallError {
    /// Whether another attempt may succeed. A 2xx whose body is not the API's shape is
    /// retried too: in practice it is a proxy or gateway cutting the body, not the model.
    pub fn retryable(&self) -> bool {
        matches!(
            self,
            CallError::RateLimited { .. }
                | CallError::Overloaded { .. }
                | CallError::Server { .. }
                | CallError::Timeout(_)
                | CallError::Connect(_)
                | CallError::Malformed { .. }
        )
    }

    /// The wait the provider asked for, when it did.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            CallError::RateLimited { retry_after, .. }
            | CallError::Overloaded { retry_after, .. }
            | CallError::Server { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// The HTTP status, when there was a response.
    pub fn status(&self) -> Option<u16> {
        match self {
            CallError::RateLimited { .. } | CallError::QuotaExhausted { .. } => Some(429),
            CallError::Overloaded { status, .. }
            | CallError::Server { status, .. }
            | CallError::Auth { status, .. }
            | CallError::Rejected { status, .. }
            | CallError::Malformed { status, .. } => Some(*status),
            CallError::Timeout(_) | CallError::Connect(_) | CallError::Local(_) => None,
        }
    }

    pub fn is_auth(&self) -> bool {
        matches!(self, CallError::Auth { .. })
    }

    /// The short text for reports, e.g. `HTTP 529 overloaded_error: Overloaded`.
    pub fn reason(&self) -> String {
        self.to_string()
    }

    /// Replaces every occurrence of `secret` in the message. Secrets shorter than 8 characters
    /// are test keys (`test`, `x`) whose replacement would only mangle the message.
    pub(super) fn scrub(mut self, secret: &str) -> Self {
        let message = match &mut self {
            CallError::RateLimited { message, .. }
            | CallError::QuotaExhausted { message }
            | CallError::Overloaded { message, .. }
            | CallError::Server { message, .. }
            | CallError::Auth { message, .. }
            | CallError::Rejected { message, .. }
            | CallError::Malformed { message, .. }
            | CallError::Timeout(message)
            | CallError::Connect(message)
            | CallError::Local(message) => message,
        };
        if secret.len() >= 8 && message.contains(secret) {
            *message = message.replace(secret, "<redacted>");
        }
        self
    }
}

/// Pure classification of an HTTP error response: testable without a server.
pub fn classify_error(api: Api, status: u16, headers: &HeaderMap, body: &str) -> CallError {
    let detail = ErrorDetail::parse(status, body);
    let message = detail.message();
    let wait = retry_after(headers);
    match status {
        429 if api == Api::Openai && detail.mentions("insufficient_quota") => {
            CallError::QuotaExhausted { message }
        }
        429 => {
            let limits = rate_limit_info(headers);
            CallError::RateLimited {
                retry_after: wait.or_else(|| limits.exhausted_reset()),
                limits,
                message,
            }
        }
        503 | 529 => CallError::Overloaded {
            status,
            retry_after: wait,
            message,
        },
        401 | 403 => CallError::Auth { status, message },
        408 | 409 | 500..=599 => CallError::Server {
            status,
            retry_after: wait,
            message,
        },
        200..=299 => CallError::Malformed { status, message },
        _ => CallError::Rejected { status, message },
    }
}

/// Error-body text is cut to this many characters.
pub(super) const MAX_MESSAGE_CHARS: usize = 300;

/// An error's code or type (`rate_limit_exceeded`) is cut to this many characters.
pub(super) const MAX_KIND_CHARS: usize = 60;

/// The useful part of an error body. Both APIs (and most compatible gateways) use
/// `{"error": {"type", "code"?, "message"}}`; gateways also send `{"error": "…"}`,
/// `{"message": "…"}`, `{"detail": "…"}` or plain text/HTML.
struct ErrorDetail {
    /// `error.code`, else `error.type`, else the status's reason phrase.
    kind: String,
    /// Every code/type string seen, for matching.
    labels: Vec<String>,
    text: String,
}

impl ErrorDetail {
    fn parse(status: u16, body: &str) -> ErrorDetail {
        let json: Option<Value> = serde_json::from_str(body).ok();
        let error = json.as_ref().and_then(|v| v.get("error"));
        let str_at = |v: Option<&Value>, key: &str| {
            v.and_then(|v| v.get(key))
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        let labels: Vec<String> = ["code", "type"]
            .iter()
            .filter_map(|k| str_at(error, k))
            .collect();
        let fallback_kind = reqwest::StatusCode::from_u16(status)
            .ok()
            .and_then(|s| s.canonical_reason())
            .unwrap_or("error");
        // A code or type is the provider's text too: one line, no key, and cut.
        let kind = labels
            .first()
            .map(|label| cut(&clean(label), MAX_KIND_CHARS))
            .unwrap_or_else(|| fallback_kind.to_owned());
        let text = str_at(error, "message")
            .or_else(|| error.and_then(Value::as_str).map(str::to_owned))
            .or_else(|| str_at(json.as_ref(), "message"))
            .or_else(|| str_at(json.as_ref(), "detail"))
            .unwrap_or_else(|| body.to_owned());
        ErrorDetail {
            kind,
            labels,
            text: clean(&text),
        }
    }

    fn mentions(&self, label: &str) -> bool {
        self.labels.iter().any(|l| l == label)
    }

    /// `kind: text`, or `kind` when the body said nothing.
    fn message(&self) -> String {
        if self.text.is_empty() {
            self.kind.clone()
        } else {
            format!("{}: {}", self.kind, self.text)
        }
    }
}

/// One line, at most [`MAX_MESSAGE_CHARS`] characters, with anything that looks like an API key
/// (`sk-…`) redacted.
pub(super) fn clean(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    cut(&redact_key_like(&one_line), MAX_MESSAGE_CHARS)
}

/// `text` cut to its first `max` characters, `…` marking the cut.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// `sk-abc…` (OpenAI and Anthropic key shapes, masked or not) → `sk-<redacted>`.
pub(super) fn redact_key_like(text: &str) -> String {
    let is_key_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '*');
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("sk-") {
        let starts_word = rest[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_ascii_alphanumeric());
        let after = &rest[at + 3..];
        let key_len = after.find(|c| !is_key_char(c)).unwrap_or(after.len());
        out.push_str(&rest[..at + 3]);
        if starts_word && key_len > 0 {
            out.push_str("<redacted>");
            rest = &after[key_len..];
        } else {
            rest = after;
        }
    }
    out.push_str(rest);
    out
}
