//! One delivered example and the means to settle it (ack, requeue, reject).
//!
//! Settling goes through the channel the message arrived on, and through its [`AckWindow`],
//! which sends acks of consecutive deliveries as one frame. If that channel has died (the
//! connection was lost), the message can no longer be settled from here: the broker has
//! already put it back for redelivery, so every settle then returns an error instead of
//! pretending — and never blocks for longer than [`SETTLE_TIMEOUT`].

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use evalfleet_contract::queue::{Delivery, Message, QueueError};
use lapin::options::{BasicNackOptions, BasicRejectOptions};
use lapin::types::{AMQPValue, FieldTable};
use lapin::Acker;

use super::acks::AckWindow;
use super::AmqpError;

/// Longest wait for an ack, nack or reject to be handed to the connection.
pub const SETTLE_TIMEOUT: Duration = Duration::from_secs(30);

/// A delivered, decoded example.
pub struct AmqpDelivery {
    acker: Acker,
    tag: u64,
    window: Arc<AckWindow>,
    message: Message,
    message_id: String,
    redelivered: bool,
    delivery_count: Option<u64>,
    queue: Arc<str>,
}

impl AmqpDelivery {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        acker: Acker,
        tag: u64,
        window: Arc<AckWindow>,
        message: Message,
        message_id: Option<String>,
        redelivered_flag: bool,
        headers: Option<&FieldTable>,
        queue: Arc<str>,
    ) -> Self {
        let delivery_count = headers.and_then(|h| header_u64(h, "x-delivery-count"));
        AmqpDelivery {
            acker,
            tag,
            window,
            message_id: message_id.unwrap_or_else(|| message.message_id()),
            message,
            redelivered: redelivered_flag || delivery_count.is_some_and(|n| n > 0),
            delivery_count,
            queue,
        }
    }

    /// The AMQP `message_id` (`<run_id>/<index>`).
    pub fn message_id(&self) -> &str {
        &self.message_id
    }

    /// Earlier deliveries of this message, as the quorum queue counts them
    /// (`x-delivery-count`); None when the broker did not say.
    pub fn delivery_count(&self) -> Option<u64> {
        self.delivery_count
    }

    async fn settle(
        &self,
        op: &'static str,
        fut: impl std::future::Future<Output = lapin::Result<bool>>,
    ) -> Result<(), AmqpError> {
        let closed = || AmqpError::ChannelClosed {
            op,
            queue: self.queue.to_string(),
            message_id: self.message_id.clone(),
        };
        if !self.acker.usable() {
            return Err(closed());
        }
        match tokio::time::timeout(SETTLE_TIMEOUT, fut).await {
            Ok(Ok(true)) => Ok(()),
            // lapin reports a settle on a dead channel as "nothing done".
            Ok(Ok(false)) => Err(closed()),
            Ok(Err(e)) if self.acker.poisoned() => {
                tracing::debug!(error = %e, "settle failed on a closing channel");
                Err(closed())
            }
            Ok(Err(source)) => Err(AmqpError::Broker {
                op,
                target: format!("{} (message {})", self.queue, self.message_id),
                source,
            }),
            Err(_) => Err(AmqpError::Timeout {
                op,
                target: format!("{} (message {})", self.queue, self.message_id),
                after: SETTLE_TIMEOUT,
            }),
        }
    }
}

impl std::fmt::Debug for AmqpDelivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AmqpDelivery")
            .field("message_id", &self.message_id)
            .field("redelivered", &self.redelivered)
            .field("delivery_count", &self.delivery_count)
            .finish()
    }
}

#[async_trait]
impl Delivery for AmqpDelivery {
    fn message(&self) -> &Message {
        &self.message
    }

    /// The AMQP `redelivered` flag, or a quorum queue's `x-delivery-count` above 0.
    fn redelivered(&self) -> bool {
        self.redelivered
    }

    async fn ack(self) -> Result<(), QueueError> {
        let fut = self.window.ack(self.tag, self.acker.clone());
        Ok(self.settle("ack", fut).await?)
    }

    async fn requeue(self) -> Result<(), QueueError> {
        let nack = self.acker.nack(BasicNackOptions {
            multiple: false,
            requeue: true,
        });
        let fut = self.window.settle_alone(self.tag, nack);
        Ok(self.settle("requeue", fut).await?)
    }

    async fn reject(self) -> Result<(), QueueError> {
        let reject = self.acker.reject(BasicRejectOptions { requeue: false });
        let fut = self.window.settle_alone(self.tag, reject);
        Ok(self.settle("reject", fut).await?)
    }
}

/// An integer header of any AMQP integer type.
pub(crate) fn header_u64(headers: &FieldTable, key: &str) -> Option<u64> {
    value_u64(headers.inner().get(key)?)
}

pub(crate) fn value_u64(value: &AMQPValue) -> Option<u64> {
    match *value {
        AMQPValue::ShortShortInt(n) => u64::try_from(n).ok(),
        AMQPValue::ShortShortUInt(n) => Some(u64::from(n)),
        AMQPValue::ShortInt(n) => u64::try_from(n).ok(),
        AMQPValue::ShortUInt(n) => Some(u64::from(n)),
        AMQPValue::LongInt(n) => u64::try_from(n).ok(),
        AMQPValue::LongUInt(n) => Some(u64::from(n)),
        AMQPValue::LongLongInt(n) => u64::try_from(n).ok(),
        AMQPValue::Timestamp(n) => Some(n),
        _ => None,
    }
}

/// A string header (long or short string).
pub(crate) fn value_str(value: &AMQPValue) -> Option<String> {
    match value {
        AMQPValue::LongString(s) => Some(String::from_utf8_lossy(s.as_bytes()).into_owned()),
        AMQPValue::ShortString(s) => Some(s.as_str().to_owned()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delivery_counts_of_any_integer_type_are_read() {
        let mut h = FieldTable::default();
        h.insert("x-delivery-count".into(), AMQPValue::LongLongInt(2));
        assert_eq!(header_u64(&h, "x-delivery-count"), Some(2));
        h.insert("x-delivery-count".into(), AMQPValue::LongInt(-1));
        assert_eq!(header_u64(&h, "x-delivery-count"), None);
        h.insert("x-delivery-count".into(), AMQPValue::ShortUInt(4));
        assert_eq!(header_u64(&h, "x-delivery-count"), Some(4));
        assert_eq!(header_u64(&h, "missing"), None);
    }
}
