//! Errors of the Redis adapter. Each names the operation and the key it touched, because "Redis
//! error: broken pipe" in a worker log is useless without knowing what was being written, and
//! each can say whether it is worth retrying: a worker nacks with requeue on a transient error
//! (Redis restarting) and dead-letters on a permanent one.

use std::time::Duration;

use evalfleet_contract::store::StoreError;
use redis::{ErrorKind, ServerErrorKind};

#[derive(Debug, thiserror::Error)]
pub enum RedisError {
    #[error("invalid Redis URL '{url}': {source}")]
    Url {
        url: String,
        source: redis::RedisError,
    },
    #[error("cannot connect to Redis at {url} within {waited:?}: {reason}")]
    Connect {
        url: String,
        waited: Duration,
        reason: String,
        transient: bool,
    },
    #[error("Redis {op} on '{key}' failed: {source}")]
    Command {
        op: &'static str,
        key: String,
        source: redis::RedisError,
    },
    #[error("Redis {op} on '{key}' got no answer within {after:?}")]
    Timeout {
        op: &'static str,
        key: String,
        after: Duration,
    },
    #[error("Redis {op} on '{key}': {message}")]
    Data {
        op: &'static str,
        key: String,
        message: String,
    },
    #[error("run '{id}' is not registered in Redis ({op})")]
    UnknownRun { op: &'static str, id: String },
}

impl RedisError {
    /// Whether retrying the same operation later can succeed: the connection dropped, timed out
    /// or was refused, or the server is loading / read-only / failing over. Bad data, unknown
    /// runs, script errors and authentication failures are permanent.
    pub fn is_transient(&self) -> bool {
        match self {
            RedisError::Connect { transient, .. } => *transient,
            RedisError::Command { source, .. } => transient(source),
            RedisError::Timeout { .. } => true,
            RedisError::Url { .. } | RedisError::Data { .. } | RedisError::UnknownRun { .. } => {
                false
            }
        }
    }

    /// The operation that failed.
    pub fn op(&self) -> &'static str {
        match self {
            RedisError::Url { .. } => "open",
            RedisError::Connect { .. } => "connect",
            RedisError::Command { op, .. }
            | RedisError::Timeout { op, .. }
            | RedisError::Data { op, .. }
            | RedisError::UnknownRun { op, .. } => op,
        }
    }
}

/// The store seam's view: transient errors stay transient ([`StoreError::is_transient`]), so a
/// consumer that only sees the trait retries exactly what is worth retrying.
impl From<RedisError> for StoreError {
    fn from(e: RedisError) -> StoreError {
        store_error(&e)
    }
}

/// The store seam's view of an adapter error: transient ones stay transient. By reference, for
/// an error that fails several callers at once (a group commit).
pub(crate) fn store_error(e: &RedisError) -> StoreError {
    if e.is_transient() {
        StoreError::Unavailable(e.to_string())
    } else {
        StoreError::Backend(e.to_string())
    }
}

/// Whether a driver error is worth retrying (see [`RedisError::is_transient`]).
pub(crate) fn transient(e: &redis::RedisError) -> bool {
    e.is_io_error()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || e.is_timeout()
        || matches!(
            e.kind(),
            ErrorKind::Server(
                ServerErrorKind::BusyLoading
                    | ServerErrorKind::TryAgain
                    | ServerErrorKind::ClusterDown
                    | ServerErrorKind::MasterDown
                    | ServerErrorKind::ReadOnly
            )
        )
}

/// Builds the `map_err` closure of a command: `.map_err(cmd_err("HMGET", &key))`.
pub(crate) fn cmd_err<'a>(
    op: &'static str,
    key: &'a str,
) -> impl FnOnce(redis::RedisError) -> RedisError + 'a {
    move |source| RedisError::Command {
        op,
        key: key.to_owned(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_are_transient_and_script_errors_are_not() {
        let io = RedisError::Command {
            op: "EVALSHA",
            key: "k".into(),
            source: std::io::Error::from(std::io::ErrorKind::ConnectionReset).into(),
        };
        assert!(io.is_transient());
        let script = RedisError::Command {
            op: "EVALSHA",
            key: "k".into(),
            source: (ErrorKind::Client, "bad").into(),
        };
        assert!(!script.is_transient());
        assert!(!RedisError::UnknownRun {
            op: "HSET",
            id: "r".into()
        }
        .is_transient());
    }
}
