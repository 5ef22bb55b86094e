//! One http target's calls: the rendered request, sent with backoff on 408, 409, 429, 5xx,
//! 529, timeouts and connection errors (never sooner than the reply's `Retry-After`); any other
//! status fails at once. The reply must be JSON: the completed record is read out of it by
//! JSON Pointer.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use backon::Retryable;
use evalfleet_config::{HostPolicy, RetryConfig, Target};
use evalfleet_suites::target::TargetPlan;
use reqwest::Method;
use serde_json::{Map, Value};

use super::hosts;
use crate::judge::limit::Signal;
use crate::judge::provider::retry_after;
use crate::judge::retry_schedule;
use crate::metrics::metrics;
use crate::rate_limit::{Limits, RateLimit, RateLimits};

/// An http target, ready to call.
pub struct HttpTarget {
    plan: Arc<TargetPlan>,
    http: reqwest::Client,
    retry: RetryConfig,
    /// Its `rpm` (fleet-wide in a fleet) and its adaptive `max_in_flight`.
    rate_limit: Arc<RateLimit>,
    /// On a shared worker, the hosts it may call (`fleet.targets.allowed_hosts`).
    hosts: Option<Arc<HostPolicy>>,
}

/// A call that came back with JSON.
#[derive(Debug)]
pub struct Called {
    pub reply: Value,
    pub attempts: u32,
    pub latency_ms: f64,
}

/// Why a target gave no usable reply.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum TargetFailure {
    #[error("target {target}: HTTP {status} after {attempts} attempts")]
    Status {
        target: String,
        status: u16,
        attempts: u32,
    },
    #[error("target {target}: {reason} after {attempts} attempts")]
    Transport {
        target: String,
        reason: String,
        attempts: u32,
    },
    #[error("target {target}: {reason}")]
    Request { target: String, reason: String },
    /// A chat target's generation through its provider's batches failed for good.
    #[error("target {target}: {reason} (batch, after {attempts} attempts)")]
    Batch {
        target: String,
        reason: String,
        attempts: u32,
    },
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

impl HttpTarget {
    /// `plan` must be an http target's; its calls pass its rate limit in `rate_limits`, and
    /// on a shared worker go only where `hosts` allows.
    pub fn new(
        plan: Arc<TargetPlan>,
        rate_limits: &RateLimits,
        hosts: Option<Arc<HostPolicy>>,
    ) -> Result<Self, String> {
        let Target::Http(t) = &plan.target else {
            return Err(format!("target {} is not an http target", plan.name()));
        };
        let mut builder = reqwest::Client::builder().timeout(Duration::from_secs_f64(t.timeout_s));
        if let Some(policy) = &hosts {
            builder = hosts::guarded(builder, policy.clone());
        }
        let http = builder
            .build()
            .map_err(|e| format!("target {}: cannot build its HTTP client: {e}", plan.name()))?;
        let retry = t.retry.clone();
        let limits = Limits {
            rpm: t.rpm,
            tpm: 0,
            max_in_flight: t.max_in_flight,
        };
        let rate_limit = rate_limits.target(&t.name, limits);
        Ok(HttpTarget {
            plan,
            http,
            retry,
            rate_limit,
            hosts,
        })
    }

    /// Asks the target for `record`.
    pub async fn call(&self, record: &Map<String, Value>) -> Result<Called, TargetFailure> {
        let name = self.plan.name().to_owned();
        let request = self
            .plan
            .http(record)
            .map_err(|reason| TargetFailure::Request {
                target: name.clone(),
                reason,
            })?;
        if let Some(policy) = &self.hosts {
            // The URL may hold a secret: only its host is told.
            let url = reqwest::Url::parse(&request.url).map_err(|_| TargetFailure::Request {
                target: name.clone(),
                reason: "its url is not a valid URL".into(),
            })?;
            if let Some(reason) = hosts::refused(policy, &url) {
                return Err(TargetFailure::Request {
                    target: name,
                    reason,
                });
            }
        }
        let method =
            Method::from_bytes(request.method.as_bytes()).map_err(|_| TargetFailure::Request {
                target: name.clone(),
                reason: format!("'{}' is not an HTTP method", request.method),
            })?;
        let attempts = AtomicU32::new(0);
        let started = Instant::now();
        let once = || async {
            let _slot = self.rate_limit.admit(1).await;
            attempts.fetch_add(1, Ordering::Relaxed);
            let mut builder = self.http.request(method.clone(), &request.url);
            for (header, value) in &request.headers {
                builder = builder.header(header, value);
            }
            if method != Method::GET {
                builder = builder.json(&request.body);
            }
            // The URL may hold a secret: errors are told without it.
            let requests = &metrics().target_requests;
            let response = builder.send().await.map_err(|e| {
                let label = if e.is_timeout() { "timeout" } else { "error" };
                requests.with_label_values(&[&name, label]).inc();
                Attempt::Transport(transport(&e))
            })?;
            let status = response.status().as_u16();
            requests
                .with_label_values(&[&name, &status.to_string()])
                .inc();
            if !(200..300).contains(&status) {
                let wait = retry_after(response.headers());
                match status {
                    429 => self.rate_limit.signal(Signal::RateLimited {
                        retry_after: wait,
                        exhausted: None,
                    }),
                    503 | 529 => self.rate_limit.signal(Signal::Overloaded),
                    _ => {}
                }
                return Err(Attempt::Status { status, wait });
            }
            self.rate_limit.signal(Signal::Success);
            let bytes = response
                .bytes()
                .await
                .map_err(|e| Attempt::Transport(transport(&e)))?;
            serde_json::from_slice::<Value>(&bytes)
                .map_err(|e| Attempt::NotJson(format!("the reply is not JSON: {e}")))
        };
        let reply = once
            .retry(retry_schedule(&self.retry))
            .when(Attempt::retryable)
            .adjust(|e: &Attempt, step: Option<Duration>| match e {
                Attempt::Status { wait: Some(w), .. } => step.map(|d| d.max(*w)),
                _ => step,
            })
            .await;
        let attempts = attempts.into_inner();
        let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
        match reply {
            Ok(reply) => Ok(Called {
                reply,
                attempts,
                latency_ms,
            }),
            Err(Attempt::Status { status, .. }) => Err(TargetFailure::Status {
                target: name,
                status,
                attempts,
            }),
            Err(Attempt::Transport(reason)) => Err(TargetFailure::Transport {
                target: name,
                reason,
                attempts,
            }),
            Err(Attempt::NotJson(reason)) => Err(TargetFailure::Request {
                target: name,
                reason,
            }),
        }
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

#[cfg(test)]
mod tests;
