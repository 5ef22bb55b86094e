//! What can go wrong talking to RabbitMQ, always with the operation and the queue or exchange
//! it concerned, so an operator reading one log line knows where to look.

use std::time::Duration;

use evalfleet_contract::queue::QueueError;
use lapin::protocol::{AMQPErrorKind, AMQPHardError, AMQPSoftError};

/// An AMQP adapter failure.
#[derive(Debug, thiserror::Error)]
pub enum AmqpError {
    /// A bad URL, prefix or limit: fix the configuration, retrying will not help.
    #[error("invalid AMQP configuration: {0}")]
    Config(String),
    /// The first connection could not be made before the caller's deadline.
    #[error("cannot connect to RabbitMQ at {url} ({attempts} attempt(s) in {waited:?}): {last}")]
    Connect {
        url: String,
        attempts: u32,
        waited: Duration,
        #[source]
        last: Box<AmqpError>,
    },
    /// The broker or the client library refused an operation.
    #[error("{op} `{target}`: {source}")]
    Broker {
        op: &'static str,
        target: String,
        #[source]
        source: lapin::Error,
    },
    /// RabbitMQ stayed unreachable for the whole wait; the adapter keeps reconnecting.
    #[error("{op} `{target}`: RabbitMQ unreachable for {waited:?} (still reconnecting)")]
    Unavailable {
        op: &'static str,
        target: String,
        waited: Duration,
    },
    /// The broker did not answer in time.
    #[error("{op} `{target}`: no answer from RabbitMQ within {after:?}")]
    Timeout {
        op: &'static str,
        target: String,
        after: Duration,
    },
    /// Publisher confirms came back negative (nack) or the broker returned unroutable messages.
    #[error("publish to `{exchange}`: RabbitMQ refused {refused} of {total} message(s), first {first}: {reason}")]
    Refused {
        exchange: String,
        refused: usize,
        total: usize,
        first: String,
        reason: String,
    },
    /// The delivery arrived on a channel that has since closed (connection lost); the broker
    /// will deliver the message again, to this process or another.
    #[error("{op} message {message_id} from `{queue}`: its channel is closed; RabbitMQ will redeliver it")]
    ChannelClosed {
        op: &'static str,
        queue: String,
        message_id: String,
    },
    /// A message that cannot be sent as it is (e.g. a run id too long for `message_id`).
    #[error("encode message {message_id}: {reason}")]
    Encode { message_id: String, reason: String },
}

impl AmqpError {
    pub(crate) fn broker(
        op: &'static str,
        target: impl Into<String>,
    ) -> impl FnOnce(lapin::Error) -> Self {
        let target = target.into();
        move |source| AmqpError::Broker { op, target, source }
    }

    /// Whether retrying the same thing can succeed (the broker is away or restarting), as
    /// opposed to a refusal that will repeat (bad credentials, conflicting queue arguments).
    pub fn is_transient(&self) -> bool {
        match self {
            AmqpError::Config(_) | AmqpError::Encode { .. } | AmqpError::Refused { .. } => false,
            AmqpError::Connect { last, .. } => last.is_transient(),
            AmqpError::Broker { source, .. } => match source.kind() {
                // The broker closing on us (shutdown, `close_connection`) or failing inside is
                // worth another try; other refusals (credentials, vhost, arguments) repeat.
                lapin::ErrorKind::ProtocolError(e) => matches!(
                    e.kind(),
                    AMQPErrorKind::Hard(
                        AMQPHardError::CONNECTIONFORCED | AMQPHardError::INTERNALERROR
                    ) | AMQPErrorKind::Soft(AMQPSoftError::RESOURCELOCKED)
                ),
                _ => true,
            },
            AmqpError::Unavailable { .. } | AmqpError::Timeout { .. } => true,
            AmqpError::ChannelClosed { .. } => true,
        }
    }
}

impl From<AmqpError> for QueueError {
    fn from(e: AmqpError) -> Self {
        QueueError::Backend(e.to_string())
    }
}
