//! An `http` scorer: each request object is POSTed to the scorer's URL and the reply body read
//! as the same reply a `command` scorer writes, with the http targets' retry rules
//! ([`crate::json_call`]). `${VAR}` in the URL and the header values is resolved once, when the
//! scorer is built, from the environment of the process that makes the calls; on a shared
//! worker the URL's host must be one `fleet.targets.allowed_hosts` allows, and every address a
//! name resolves to is filtered the same way ([`crate::target::hosts`]).

use std::sync::Arc;

use evalfleet_config::{HostPolicy, RetryConfig};
use evalfleet_suites::custom::{ExternalCheck, ExternalScore, Scorer};
use evalfleet_suites::target::expand_vars;
use reqwest::Method;

use crate::json_call::{call_json, CallFailure, JsonCall};
use crate::target::hosts;

/// An http scorer, ready to call.
pub(super) struct HttpScorer {
    /// The URL, secrets resolved: never logged or shown.
    url: String,
    headers: Vec<(String, String)>,
    http: reqwest::Client,
    retry: RetryConfig,
}

impl HttpScorer {
    /// Resolves `${VAR}` through `env` and checks the URL against `hosts` (a shared worker's
    /// policy; None in `run`). Err is the reason, without any secret.
    pub(super) fn new(
        check: &ExternalCheck,
        env: &dyn Fn(&str) -> Option<String>,
        hosts: Option<Arc<HostPolicy>>,
    ) -> Result<HttpScorer, String> {
        let Scorer::Http {
            url,
            headers,
            retry,
        } = &check.scorer
        else {
            return Err("not an http scorer".to_owned());
        };
        let unset = |key: String| {
            move |var: String| format!("{key}: the environment variable {var} is not set")
        };
        let url = expand_vars(url, env).map_err(unset("url".to_owned()))?;
        let headers = headers
            .iter()
            .map(|(name, value)| {
                let value = expand_vars(value, env).map_err(unset(format!("headers.{name}")))?;
                Ok((name.clone(), value))
            })
            .collect::<Result<Vec<_>, String>>()?;
        // The URL may hold a secret: only what is wrong with it is told.
        let parsed =
            reqwest::Url::parse(&url).map_err(|_| "'url' is not a valid URL".to_owned())?;
        let mut builder = reqwest::Client::builder().timeout(check.timeout);
        if let Some(policy) = hosts {
            if let Some(reason) = hosts::refused(&policy, &parsed) {
                return Err(reason);
            }
            builder = hosts::guarded(builder, policy);
        }
        let http = builder
            .build()
            .map_err(|e| format!("cannot build its HTTP client: {e}"))?;
        Ok(HttpScorer {
            url,
            headers,
            http,
            retry: retry.clone(),
        })
    }

    /// POSTs one request (its JSON) and reads the reply.
    pub(super) async fn ask(&self, body: &str) -> ExternalScore {
        let replied = call_json(JsonCall {
            http: &self.http,
            method: Method::POST,
            url: &self.url,
            headers: &self.headers,
            body: Some(body.as_bytes().to_vec()),
            retry: &self.retry,
            rate_limit: None,
            observe: &|_| {},
        })
        .await;
        match replied {
            Ok((reply, _)) => ExternalScore::from_value(&reply),
            Err(CallFailure::Status { status, attempts }) => {
                ExternalScore::null(format!("HTTP {status} after {attempts} attempts"))
            }
            Err(CallFailure::Transport { reason, attempts }) => {
                ExternalScore::null(format!("{reason} after {attempts} attempts"))
            }
            Err(CallFailure::NotJson(reason)) => ExternalScore::null(reason),
        }
    }
}
