//! How many messages wait in the work queue and the dead-letter queue, for
//! `evalfleet_queue_messages{queue,state}`.
//!
//! An AMQP passive declare only tells *ready* messages; the messages workers hold (delivered,
//! not yet acked) are invisible to it, yet they are the fleet's work in progress. RabbitMQ's
//! management HTTP API reports both, so when `fleet.management_url` is configured it is the
//! source; the passive declare remains the fallback, both when no URL is configured and when
//! the API cannot be read (then only `state="ready"` is reported, never a stale unacked
//! count).

use std::time::Duration;

use async_trait::async_trait;
use evalfleet_contract::depth::DepthReading;
pub use evalfleet_contract::depth::{Depth, Depths, QueueDepths, QueueNames};
use evalfleet_model::redact::redact_url;

use super::{AmqpError, AmqpQueue};
use percent_encoding::percent_decode_str;
use reqwest::{StatusCode, Url};
use serde::Deserialize;

/// Connect timeout of a management API request.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// Whole-request timeout of a management API request (well under the polling interval).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
pub enum QueueDepthError {
    #[error("fleet.management_url: {0}")]
    Url(String),
    #[error("building the management API client: {0}")]
    Client(String),
    #[error("GET {url}: {message}")]
    Request { url: String, message: String },
    #[error("GET {url}: HTTP {status}{hint}")]
    Status {
        url: String,
        status: StatusCode,
        hint: &'static str,
    },
    #[error("GET {url}: unreadable reply: {message}")]
    Body { url: String, message: String },
    /// The queue exists but the management plugin has not collected its statistics yet.
    #[error("GET {url}: no message statistics yet")]
    NoStatistics { url: String },
    #[error(transparent)]
    Amqp(#[from] AmqpError),
}

/// Which source answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Management,
    PassiveDeclare,
}

/// A client of the management API's `GET /api/queues/{vhost}/{name}`.
#[derive(Debug, Clone)]
pub struct ManagementApi {
    client: reqwest::Client,
    /// The API root (`…/api/queues/{vhost}/`), without credentials: it appears in errors.
    queues: Url,
    user: String,
    password: Option<String>,
}

#[derive(Deserialize, Default)]
struct QueueInfo {
    messages_ready: Option<u64>,
    messages_unacknowledged: Option<u64>,
}

impl ManagementApi {
    /// `url` is `http(s)://user:password@host:port/[prefix/]vhost`: the last path segment is
    /// the vhost (percent-encoded; empty or `%2f` = the default vhost `/`), anything before it
    /// a path prefix for an API behind a reverse proxy — the convention of KEDA's RabbitMQ
    /// trigger, so one secret serves both.
    pub fn new(url: &str) -> Result<Self, QueueDepthError> {
        let mut parsed = Url::parse(url.trim()).map_err(|e| {
            QueueDepthError::Url(format!("'{}' is not a URL: {e}", redact_url(url.trim())))
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(QueueDepthError::Url(format!(
                "'{}' must be http:// or https://",
                redact_url(url)
            )));
        }
        let decode = |s: &str| percent_decode_str(s).decode_utf8_lossy().into_owned();
        let user = decode(parsed.username());
        let password = parsed.password().map(decode);
        // Credentials go in a header, never in the URL that errors and logs print.
        let _ = parsed.set_username("");
        let _ = parsed.set_password(None);
        let mut segments: Vec<String> = parsed
            .path_segments()
            .map(|s| s.map(decode).collect())
            .unwrap_or_default();
        let vhost = match segments.pop() {
            Some(v) if !v.is_empty() => v,
            _ => "/".to_owned(),
        };
        parsed.set_query(None);
        parsed.set_fragment(None);
        {
            let mut path = parsed
                .path_segments_mut()
                .map_err(|()| QueueDepthError::Url(format!("'{}' has no path", redact_url(url))))?;
            path.clear();
            path.extend(segments.iter().filter(|s| !s.is_empty()));
            path.extend(["api", "queues", vhost.as_str(), ""]);
        }
        let client = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(REQUEST_TIMEOUT)
            .build()
            .map_err(|e| QueueDepthError::Client(e.to_string()))?;
        Ok(ManagementApi {
            client,
            queues: parsed,
            user,
            password,
        })
    }

    /// The URL of `queue`'s resource.
    pub fn queue_url(&self, queue: &str) -> Url {
        let mut url = self.queues.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().push(queue);
        }
        url
    }

    /// Ready and unacked messages of `queue`.
    pub async fn depth(&self, queue: &str) -> Result<Depth, QueueDepthError> {
        let url = self.queue_url(queue);
        let shown = url.to_string();
        let mut request = self
            .client
            .get(url)
            .query(&[("columns", "messages_ready,messages_unacknowledged")]);
        if !self.user.is_empty() {
            request = request.basic_auth(&self.user, self.password.as_ref());
        }
        let reply = request.send().await.map_err(|e| QueueDepthError::Request {
            url: shown.clone(),
            message: error_chain(&e),
        })?;
        let status = reply.status();
        if !status.is_success() {
            let hint = match status {
                StatusCode::UNAUTHORIZED => {
                    " (wrong user or password, or the user lacks the monitoring tag)"
                }
                StatusCode::NOT_FOUND => " (no such queue in this vhost)",
                _ => "",
            };
            return Err(QueueDepthError::Status {
                url: shown,
                status,
                hint,
            });
        }
        let body: serde_json::Value = reply.json().await.map_err(|e| QueueDepthError::Body {
            url: shown.clone(),
            message: error_chain(&e),
        })?;
        // A queue whose statistics are not collected yet comes back as `[]` (or without the
        // columns) rather than with zeros.
        let info = match body {
            serde_json::Value::Array(a) if a.is_empty() => QueueInfo::default(),
            other => {
                serde_json::from_value::<QueueInfo>(other).map_err(|e| QueueDepthError::Body {
                    url: shown.clone(),
                    message: e.to_string(),
                })?
            }
        };
        match (info.messages_ready, info.messages_unacknowledged) {
            (Some(ready), Some(unacked)) => Ok(Depth {
                ready,
                unacked: Some(unacked),
            }),
            _ => Err(QueueDepthError::NoStatistics { url: shown }),
        }
    }
}

/// Where the aggregator reads queue depths: the management API when configured, else (or when
/// it fails) a passive declare over the aggregator's AMQP connection.
#[derive(Clone)]
pub struct QueueDepthReader {
    pub names: QueueNames,
    pub management: Option<ManagementApi>,
    pub amqp: Option<AmqpQueue>,
}

impl QueueDepthReader {
    /// Whether any source is configured.
    pub fn is_empty(&self) -> bool {
        self.management.is_none() && self.amqp.is_none()
    }

    /// The depths, and which source gave them. A failed management read falls back to the
    /// passive declare; its error is returned beside the result so the caller can log it.
    pub async fn read(
        &self,
    ) -> (
        Result<(Depths, Source), QueueDepthError>,
        Option<QueueDepthError>,
    ) {
        let mut management_error = None;
        if let Some(api) = &self.management {
            let (work, dead) =
                tokio::join!(api.depth(&self.names.work), api.depth(&self.names.dead));
            match (work, dead) {
                (Ok(work), Ok(dead)) => {
                    return (Ok((Depths { work, dead }, Source::Management)), None)
                }
                (Err(e), _) | (_, Err(e)) => management_error = Some(e),
            }
        }
        let declared = match &self.amqp {
            Some(queue) => queue
                .depths()
                .await
                .map(|d| {
                    let ready = |n: u32| Depth {
                        ready: u64::from(n),
                        unacked: None,
                    };
                    (
                        Depths {
                            work: ready(d.examples),
                            dead: ready(d.dead),
                        },
                        Source::PassiveDeclare,
                    )
                })
                .map_err(QueueDepthError::from),
            None => Err(management_error
                .take()
                .unwrap_or_else(|| QueueDepthError::Client("no queue-depth source".into()))),
        };
        (declared, management_error)
    }
}

#[async_trait]
impl QueueDepths for QueueDepthReader {
    fn names(&self) -> &QueueNames {
        &self.names
    }

    fn has_preferred(&self) -> bool {
        self.management.is_some()
    }

    async fn read(&self) -> DepthReading {
        let (depths, management_error) = QueueDepthReader::read(self).await;
        DepthReading {
            depths: depths.map(|(d, _source)| d).map_err(|e| e.to_string()),
            preferred_failed: management_error.map(|e| e.to_string()),
        }
    }
}

/// An error with its causes ("error sending request: connection refused").
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        out.push_str(": ");
        out.push_str(&c.to_string());
        cause = c.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_path_segment_is_the_vhost() {
        let api = ManagementApi::new("http://guest:guest@127.0.0.1:15672/").unwrap();
        assert_eq!(
            api.queue_url("evalfleet.examples").as_str(),
            "http://127.0.0.1:15672/api/queues/%2F/evalfleet.examples"
        );
        let api = ManagementApi::new("http://127.0.0.1:15672").unwrap();
        assert_eq!(
            api.queue_url("q").as_str(),
            "http://127.0.0.1:15672/api/queues/%2F/q"
        );
        let api = ManagementApi::new("https://u:p@mq.internal/%2f").unwrap();
        assert_eq!(
            api.queue_url("q").as_str(),
            "https://mq.internal/api/queues/%2F/q"
        );
        let api = ManagementApi::new("http://u:p@127.0.0.1:15672/rabbit/prod").unwrap();
        assert_eq!(
            api.queue_url("a b/c").as_str(),
            "http://127.0.0.1:15672/rabbit/api/queues/prod/a%20b%2Fc",
            "a proxy prefix is kept, and names are encoded"
        );
    }

    #[test]
    fn credentials_are_decoded_and_kept_out_of_the_url() {
        let api = ManagementApi::new("http://mon%40itor:p%3Ass@127.0.0.1:15672/").unwrap();
        assert_eq!(api.user, "mon@itor");
        assert_eq!(api.password.as_deref(), Some("p:ss"));
        assert!(!api.queue_url("q").as_str().contains("itor"));
    }

    #[test]
    fn bad_urls_are_refused_without_the_password() {
        for url in [
            "amqp://u:secret@127.0.0.1:5672/",
            "not a url",
            "http://u:secret@",
        ] {
            let err = ManagementApi::new(url).unwrap_err().to_string();
            assert!(err.starts_with("fleet.management_url"), "{err}");
            assert!(!err.contains("secret"), "{err}");
        }
    }
}
