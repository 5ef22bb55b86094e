//! One http target's calls: the rendered request, sent with the retry rules of
//! [`crate::json_call`] (backoff on 408, 409, 429, 5xx, 529, timeouts and connection errors,
//! never sooner than the reply's `Retry-After`; any other status fails at once). The reply must
//! be JSON: the completed record is read out of it by JSON Pointer.

use std::sync::Arc;
use std::time::{Duration, Instant};

use evalfleet_config::{HostPolicy, RetryConfig, Target};
use evalfleet_suites::target::TargetPlan;
use reqwest::Method;
use serde_json::{Map, Value};

use super::hosts;
use crate::json_call::{call_json, CallFailure, JsonCall};
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
    /// The request could not be built from the record (a template failed, or a `${VAR}` is not
    /// allowed): the reason already names the target.
    #[error("{0}")]
    Render(String),
    /// A chat target's generation through its provider's batches failed for good.
    #[error("target {target}: {reason} (batch, after {attempts} attempts)")]
    Batch {
        target: String,
        reason: String,
        attempts: u32,
    },
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
        let request = self.plan.http(record).map_err(TargetFailure::Render)?;
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
        let body = if method == Method::GET {
            None
        } else {
            Some(
                serde_json::to_vec(&request.body).map_err(|e| TargetFailure::Request {
                    target: name.clone(),
                    reason: format!("its body is not JSON: {e}"),
                })?,
            )
        };
        let requests = &metrics().target_requests;
        let observe = |label: &str| requests.with_label_values(&[&name, label]).inc();
        let started = Instant::now();
        let reply = call_json(JsonCall {
            http: &self.http,
            method,
            url: &request.url,
            headers: &request.headers,
            body,
            retry: &self.retry,
            rate_limit: Some(&self.rate_limit),
            observe: &observe,
        })
        .await;
        let latency_ms = started.elapsed().as_secs_f64() * 1000.0;
        match reply {
            Ok((reply, attempts)) => Ok(Called {
                reply,
                attempts,
                latency_ms,
            }),
            Err(CallFailure::Status { status, attempts }) => Err(TargetFailure::Status {
                target: name,
                status,
                attempts,
            }),
            Err(CallFailure::Transport { reason, attempts }) => Err(TargetFailure::Transport {
                target: name,
                reason,
                attempts,
            }),
            Err(CallFailure::NotJson(reason)) => Err(TargetFailure::Request {
                target: name,
                reason,
            }),
        }
    }
}

#[cfg(test)]
mod tests;
