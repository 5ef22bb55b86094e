//! LLM provider clients for the judges: one HTTP call per [`ProviderClient::complete`], no
//! retry and no rate limiting (the caller owns both, because it shares them across calls,
//! workers and the fleet).
//!
//! What this module decides is what a response *means*: [`classify_error`] turns a status, its
//! headers and its body into a [`CallError`] that says whether to retry, how long the provider
//! asked us to wait, whether the key is bad (stop the run) and a short reason for reports. It is
//! pure, so every status/body combination is tested without a server. The API key lives only
//! inside [`ProviderClient`] (a sensitive header value, redacted in `Debug`) and is scrubbed
//! from every error message.

mod anthropic;
pub mod batch;
mod batch_body;
mod batch_results;
#[cfg(test)]
mod batch_tests;
#[cfg(test)]
mod client_tests;
mod error;
#[cfg(test)]
mod error_tests;
#[doc(hidden)]
pub mod fuzzing;
mod generate;
mod limits;
mod openai;

use std::time::Duration;

use evalfleet_config::{Api, ProviderConfig};
use evalfleet_model::redact::redact_url;
use reqwest::header::{HeaderValue, AUTHORIZATION};

use super::prompt::Prompt;

pub use error::{classify_error, CallError};
pub use generate::GenerateRequest;
pub use limits::{rate_limit_info, retry_after};

use error::clean;

/// One judge call's input.
#[derive(Debug, Clone, Copy)]
pub struct ChatRequest<'a> {
    pub model: &'a str,
    pub prompt: &'a Prompt,
    pub max_tokens: u32,
}

/// A chat message of a request body (both APIs share its shape).
#[derive(Debug, serde::Serialize)]
struct Message<'a> {
    role: &'static str,
    content: &'a str,
}

/// Tokens the provider billed for one call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TokenUsage {
    pub input: u64,
    pub output: u64,
}

/// What the provider said about its rate limits on this response (any header may be absent).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RateLimitInfo {
    pub limit_requests: Option<u64>,
    pub remaining_requests: Option<u64>,
    pub reset_requests: Option<Duration>,
    pub limit_tokens: Option<u64>,
    pub remaining_tokens: Option<u64>,
    pub reset_tokens: Option<Duration>,
}

impl RateLimitInfo {
    /// The longest reset among the buckets that are used up (remaining 0), if any.
    pub fn exhausted_reset(&self) -> Option<Duration> {
        let requests = (self.remaining_requests == Some(0)).then_some(self.reset_requests);
        let tokens = (self.remaining_tokens == Some(0)).then_some(self.reset_tokens);
        requests.flatten().into_iter().chain(tokens.flatten()).max()
    }
}

/// A successful call.
#[derive(Debug, Clone)]
pub struct Completion {
    pub text: String,
    pub usage: TokenUsage,
    pub limits: RateLimitInfo,
    pub status: u16,
}

/// `ProviderClient::new` refused the configuration or key.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct ClientError(pub String);

/// An HTTP client for one configured provider.
pub struct ProviderClient {
    api: Api,
    http: reqwest::Client,
    endpoint: String,
    /// `endpoint`, parsed once rather than on every call.
    url: reqwest::Url,
    /// The raw key, kept only to scrub it from error messages.
    api_key: String,
    /// The header carrying the key (`Authorization: Bearer …` or `x-api-key`), sensitive.
    auth: HeaderValue,
    anthropic_version: HeaderValue,
    timeout: Duration,
    connect_timeout: Duration,
}

impl std::fmt::Debug for ProviderClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderClient")
            .field("api", &self.api)
            .field("endpoint", &self.endpoint)
            .field("api_key", &"<redacted>")
            .field("anthropic_version", &self.anthropic_version)
            .field("timeout", &self.timeout)
            .field("connect_timeout", &self.connect_timeout)
            .finish()
    }
}

impl ProviderClient {
    pub fn new(config: &ProviderConfig, api_key: String) -> Result<Self, ClientError> {
        let err = |m: String| ClientError(m);
        let api_key = api_key.trim().to_owned();
        if api_key.is_empty() {
            return Err(err(format!(
                "the API key in {} is empty",
                config.api_key_env
            )));
        }
        let auth_text = match config.api {
            Api::Openai => format!("Bearer {api_key}"),
            Api::Anthropic => api_key.clone(),
        };
        let mut auth = HeaderValue::from_str(&auth_text).map_err(|_| {
            err(format!(
                "the API key in {} has characters not allowed in an HTTP header",
                config.api_key_env
            ))
        })?;
        auth.set_sensitive(true);
        let anthropic_version =
            HeaderValue::from_str(config.anthropic_version.trim()).map_err(|_| {
                err(format!(
                    "anthropic_version '{}' is not a valid header value",
                    config.anthropic_version
                ))
            })?;
        let endpoint = endpoint(config.api, &config.base_url)?;
        let url = reqwest::Url::parse(&endpoint)
            .map_err(|e| err(format!("endpoint '{endpoint}' is not a URL: {e}")))?;
        let seconds = |value: f64, name: &str| {
            Duration::try_from_secs_f64(value)
                .ok()
                .filter(|d| !d.is_zero())
                .ok_or_else(|| {
                    err(format!(
                        "{name} must be a positive number of seconds, not {value}"
                    ))
                })
        };
        let timeout = seconds(config.timeout_s, "timeout_s")?;
        let connect_timeout = seconds(config.connect_timeout_s, "connect_timeout_s")?;
        let read_timeout = seconds(config.read_timeout_s, "read_timeout_s")?;
        let http = reqwest::Client::builder()
            .use_rustls_tls()
            .connect_timeout(connect_timeout)
            .read_timeout(read_timeout)
            .timeout(timeout)
            .pool_idle_timeout(Duration::from_secs(90))
            .pool_max_idle_per_host(config.max_in_flight.max(1) as usize)
            // An API never redirects a POST; following one would send the key elsewhere.
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("evalfleet/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| err(format!("cannot build the HTTP client: {e}")))?;
        Ok(ProviderClient {
            api: config.api,
            http,
            endpoint,
            url,
            api_key,
            auth,
            anthropic_version,
            timeout,
            connect_timeout,
        })
    }

    pub fn api(&self) -> Api {
        self.api
    }

    /// The URL every call posts to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// One HTTP call, no retry (the caller owns retry and rate limiting).
    pub async fn complete(&self, req: &ChatRequest<'_>) -> Result<Completion, CallError> {
        self.call(req).await.map_err(|e| e.scrub(&self.api_key))
    }

    async fn call(&self, req: &ChatRequest<'_>) -> Result<Completion, CallError> {
        let (completion, _) = match self.api {
            Api::Openai => self.post(&openai::request_body(req)).await?,
            Api::Anthropic => self.post(&anthropic::request_body(req)).await?,
        };
        Ok(completion)
    }

    /// One generation call (a chat target), no retry: the reply and the model that answered.
    pub async fn generate(
        &self,
        req: &GenerateRequest<'_>,
    ) -> Result<(Completion, Option<String>), CallError> {
        let (completion, body) = self
            .post(&generate::body(self.api, req))
            .await
            .map_err(|e| e.scrub(&self.api_key))?;
        Ok((completion, generate::answering_model(&body)))
    }

    /// Posts `body` with this provider's auth; a 2xx reply's text, usage and limits, and the
    /// reply's body.
    async fn post<B: serde::Serialize>(&self, body: &B) -> Result<(Completion, String), CallError> {
        let builder = self.http.post(self.url.clone());
        let builder = match self.api {
            Api::Openai => builder.header(AUTHORIZATION, self.auth.clone()),
            Api::Anthropic => builder
                .header("x-api-key", self.auth.clone())
                .header("anthropic-version", self.anthropic_version.clone()),
        };
        let response = builder
            .json(body)
            .send()
            .await
            .map_err(|e| self.transport_error(e))?;
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            let headers = response.headers().clone();
            let body = response.text().await.map_err(|e| self.transport_error(e))?;
            return Err(classify_error(self.api, status, &headers, &body));
        }
        let limits = rate_limit_info(response.headers());
        let body = response.text().await.map_err(|e| self.transport_error(e))?;
        let parsed = match self.api {
            Api::Openai => openai::parse_response(&body),
            Api::Anthropic => anthropic::parse_response(&body),
        };
        let (text, usage) = parsed.map_err(|m| CallError::Malformed {
            status,
            message: clean(&m),
        })?;
        let completion = Completion {
            text,
            usage,
            limits,
            status,
        };
        Ok((completion, body))
    }

    fn transport_error(&self, e: reqwest::Error) -> CallError {
        if e.is_timeout() {
            return CallError::Timeout(if e.is_connect() {
                format!(
                    "no connection within {}s",
                    self.connect_timeout.as_secs_f64()
                )
            } else {
                format!(
                    "no complete response within {}s",
                    self.timeout.as_secs_f64()
                )
            });
        }
        CallError::Connect(clean(&error_chain(&e.without_url())))
    }
}

/// `{base_url}/chat/completions` (OpenAI) or `{base_url}/v1/messages` (Anthropic; a base URL
/// that already ends in `/v1` is accepted too).
fn endpoint(api: Api, base_url: &str) -> Result<String, ClientError> {
    let base = base_url.trim().trim_end_matches('/');
    let shown = redact_url(base_url);
    let url = reqwest::Url::parse(base)
        .map_err(|e| ClientError(format!("base_url '{shown}' is not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ClientError(format!(
            "base_url '{shown}' must be http:// or https://"
        )));
    }
    Ok(match api {
        Api::Openai => format!("{base}/chat/completions"),
        Api::Anthropic if base.ends_with("/v1") => format!("{base}/messages"),
        Api::Anthropic => format!("{base}/v1/messages"),
    })
}

/// An error and its sources, `: `-separated, without repeats.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut current = Some(e);
    while let Some(err) = current {
        let text = err.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        current = err.source();
    }
    parts.join(": ")
}
