//! Publishing with publisher confirms (docs/DESIGN.md §3).
//!
//! A batch is written whole and its confirms are then awaited together — one round trip per
//! batch, not per message. Each message is persistent JSON with `message_id = <run_id>/<index>`,
//! `correlation_id = <run_id>` and `type = example.v2`, and is published `mandatory`, so a
//! message the broker could not route comes back as an error instead of vanishing.
//!
//! Whether a failed batch is retried is the caller's business ([`PublishFailure`] says which
//! failures a new connection can fix); re-publishing a whole batch is safe because results are
//! stored once per index downstream.

use std::time::{SystemTime, UNIX_EPOCH};

use evalfleet_contract::queue::Message;
use lapin::options::BasicPublishOptions;
use lapin::types::ShortString;
use lapin::{BasicProperties, Channel, Confirmation};

use super::config::short;
use super::AmqpError;

/// The AMQP `type` of an example message (v2: the example typed by the producer).
pub const MESSAGE_TYPE: &str = "example.v2";
pub const CONTENT_TYPE: &str = "application/json";
const PERSISTENT: u8 = 2;

/// A message ready for the wire.
pub(crate) struct Outgoing {
    pub(crate) message_id: String,
    pub(crate) body: Vec<u8>,
    pub(crate) properties: BasicProperties,
}

/// Serialises a batch, refusing messages whose ids cannot be AMQP short strings.
pub(crate) fn encode(batch: &[Message]) -> Result<Vec<Outgoing>, AmqpError> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    batch
        .iter()
        .map(|m| {
            let message_id = m.message_id();
            let too_long = |what: &str| AmqpError::Encode {
                message_id: message_id.clone(),
                reason: format!("{what} longer than 255 bytes"),
            };
            let id =
                ShortString::try_new(message_id.clone()).map_err(|_| too_long("message_id"))?;
            let run = ShortString::try_new(m.run_id.clone()).map_err(|_| too_long("run id"))?;
            let body = serde_json::to_vec(m).map_err(|e| AmqpError::Encode {
                message_id: message_id.clone(),
                reason: e.to_string(),
            })?;
            let properties = BasicProperties::default()
                .with_content_type(short(CONTENT_TYPE))
                .with_delivery_mode(PERSISTENT)
                .with_message_id(id)
                .with_correlation_id(run)
                .with_type(short(MESSAGE_TYPE))
                .with_timestamp(now);
            Ok(Outgoing {
                message_id,
                body,
                properties,
            })
        })
        .collect()
}

/// Why a batch was not confirmed.
pub(crate) enum PublishFailure {
    /// The channel or connection failed under the batch: some confirms are unknown, so the
    /// whole batch must go again on a new connection.
    Lost(lapin::Error),
    /// The broker answered, negatively: retrying the same batch would be refused again.
    Refused(AmqpError),
}

/// Publishes every message, then awaits all their confirms; Ok only if every one was acked
/// and routed.
pub(crate) async fn publish_confirmed(
    channel: &Channel,
    exchange: &str,
    routing_key: &str,
    batch: &[Outgoing],
) -> Result<(), PublishFailure> {
    let options = BasicPublishOptions {
        mandatory: true,
        ..BasicPublishOptions::default()
    };
    let publishes = batch.iter().map(|out| {
        channel.basic_publish(
            short(exchange),
            short(routing_key),
            options,
            &out.body,
            out.properties.clone(),
        )
    });
    let confirms = futures_util::future::try_join_all(publishes)
        .await
        .map_err(PublishFailure::Lost)?;
    let outcomes = futures_util::future::join_all(confirms).await;
    let mut refused = Vec::new();
    for (out, outcome) in batch.iter().zip(outcomes) {
        match outcome.map_err(PublishFailure::Lost)? {
            Confirmation::Ack(None) | Confirmation::NotRequested => {}
            Confirmation::Ack(Some(returned)) => refused.push((
                &out.message_id,
                format!(
                    "unroutable ({} {})",
                    returned.reply_code, returned.reply_text
                ),
            )),
            Confirmation::Nack(_) => refused.push((&out.message_id, "nacked".to_owned())),
        }
    }
    match refused.first() {
        None => Ok(()),
        Some((first, reason)) => Err(PublishFailure::Refused(AmqpError::Refused {
            exchange: exchange.to_owned(),
            refused: refused.len(),
            total: batch.len(),
            first: (*first).clone(),
            reason: reason.clone(),
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use evalfleet_contract::conformance::message;

    #[test]
    fn messages_carry_the_contract_properties() {
        let out = encode(&[message("run-1", 3)]).expect("encode");
        let p = &out[0].properties;
        assert_eq!(out[0].message_id, "run-1/3");
        assert_eq!(p.message_id().as_ref().map(|s| s.as_str()), Some("run-1/3"));
        assert_eq!(
            p.correlation_id().as_ref().map(|s| s.as_str()),
            Some("run-1")
        );
        assert_eq!(p.kind().as_ref().map(|s| s.as_str()), Some("example.v2"));
        assert_eq!(
            p.content_type().as_ref().map(|s| s.as_str()),
            Some("application/json")
        );
        assert_eq!(*p.delivery_mode(), Some(2));
        let back: Message = serde_json::from_slice(&out[0].body).expect("json");
        assert_eq!(back, message("run-1", 3));
    }

    #[test]
    fn an_overlong_run_id_is_an_error_not_a_panic() {
        let err = encode(&[message(&"r".repeat(300), 0)])
            .err()
            .expect("refused");
        assert!(err.to_string().contains("longer than 255 bytes"), "{err}");
    }
}
