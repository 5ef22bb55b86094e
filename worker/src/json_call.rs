//! One HTTP call whose reply must be JSON, with the targets' retry rules: backoff on 408, 409,
//! 429, 5xx, 529, timeouts and connection errors, never sooner than the reply's `Retry-After`;
//! any other status fails at once, and so does a reply that is not JSON. The one place these
//! rules live for the calls a worker makes to the user's endpoints: http targets
//! ([`crate::target::HttpTarget`]) and http code scorers ([`crate::scorer`]).

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use backon::Retryable;
use evalfleet_config::RetryConfig;
use reqwest::header::CONTENT_TYPE;
use reqwest::Method;
use serde_json::Value;

use crate::judge::limit::Signal;
use crate::judge::provider::retry_after;
use crate::judge::retry_schedule;
use crate::rate_limit::RateLimit;

/// One call, as the caller rendered it. Header values and the URL may hold secrets: they are
/// never part of an error.
pub(crate) struct JsonCall<'a> {
    pub http: &'a reqwest::Client,
    pub method: Method,
    pub url: &'a str,
    pub headers: &'a [(String, String)],
    /// The JSON body, sent with `content-type: application/json`; None sends none.
    pub body: Option<Vec<u8>>,
    pub retry: &'a RetryConfig,
    /// Admits each attempt and hears how it went (429s, overloads, successes).
    pub rate_limit: Option<&'a RateLimit>,
    /// Told each attempt's outcome: its status code, `timeout` or `error`.
    pub observe: &'a (dyn Fn(&str) + Sync),
}

/// Why a call gave no JSON, after how many attempts.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum CallFailure {
    /// The last status was not a success.
    Status { status: u16, attempts: u32 },
    /// The last attempt got no reply (a timeout, a refused connection), in words.
    Transport { reason: String, attempts: u32 },
    /// A reply came, and it is not JSON (not retried).
    NotJson(String),
}

/// One attempt's failure, and whether another attempt may succeed.
#[derive(Debug)]
enum Attempt {
    Status { status: u16, wait: Option<Duration> },
    Transport(String),
    NotJson(String),
}

impl Attempt {
    fn retryable(&self) -> bool {
        match self {
            Attempt::Status { status, .. } => {
                matches!(status, 408 | 409 | 429 | 529) || (500..600).contains(status)
            }
            Attempt::Transport(_) => true,
            Attempt::NotJson(_) => false,
        }
    }
}

/// Makes the call with retries: the reply's JSON and the attempts it took.
pub(crate) async fn call_json(call: JsonCall<'_>) -> Result<(Value, u32), CallFailure> {
    let attempts = AtomicU32::new(0);
    let once = || async {
        let _slot = match call.rate_limit {
            Some(limit) => Some(limit.admit(1).await),
            None => None,
        };
        attempts.fetch_add(1, Ordering::Relaxed);
        let mut builder = call.http.request(call.method.clone(), call.url);
        for (header, value) in call.headers {
            builder = builder.header(header, value);
        }
        if let Some(body) = &call.body {
            let typed = call
                .headers
                .iter()
                .any(|(h, _)| h.eq_ignore_ascii_case(CONTENT_TYPE.as_str()));
            if !typed {
                builder = builder.header(CONTENT_TYPE, "application/json");
            }
            builder = builder.body(body.clone());
        }
        let response = builder.send().await.map_err(|e| {
            (call.observe)(if e.is_timeout() { "timeout" } else { "error" });
            Attempt::Transport(transport(&e))
        })?;
        let status = response.status().as_u16();
        (call.observe)(&status.to_string());
        if !(200..300).contains(&status) {
            let wait = retry_after(response.headers());
            if let Some(limit) = call.rate_limit {
                match status {
                    429 => limit.signal(Signal::RateLimited {
                        retry_after: wait,
                        exhausted: None,
                    }),
                    503 | 529 => limit.signal(Signal::Overloaded),
                    _ => {}
                }
            }
            return Err(Attempt::Status { status, wait });
        }
        if let Some(limit) = call.rate_limit {
            limit.signal(Signal::Success);
        }
        let bytes = response
            .bytes()
            .await
            .map_err(|e| Attempt::Transport(transport(&e)))?;
        serde_json::from_slice::<Value>(&bytes)
            .map_err(|e| Attempt::NotJson(format!("the reply is not JSON: {e}")))
    };
    let reply = once
        .retry(retry_schedule(call.retry))
        .when(Attempt::retryable)
        .adjust(|e: &Attempt, step: Option<Duration>| match e {
            Attempt::Status { wait: Some(w), .. } => step.map(|d| d.max(*w)),
            _ => step,
        })
        .await;
    let attempts = attempts.into_inner();
    match reply {
        Ok(reply) => Ok((reply, attempts)),
        Err(Attempt::Status { status, .. }) => Err(CallFailure::Status { status, attempts }),
        Err(Attempt::Transport(reason)) => Err(CallFailure::Transport { reason, attempts }),
        Err(Attempt::NotJson(reason)) => Err(CallFailure::NotJson(reason)),
    }
}

/// A transport error in words, without the URL (it may hold a secret): its causes only.
fn transport(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        return "no reply within the timeout".to_owned();
    }
    let mut reason = if e.is_connect() {
        "cannot connect".to_owned()
    } else {
        "the call failed".to_owned()
    };
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        reason.push_str(": ");
        reason.push_str(&cause.to_string());
        source = cause.source();
    }
    reason
}
