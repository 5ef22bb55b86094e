//! Dead-letter tools behind `evalfleet dlq list|requeue`.
//!
//! Both work with `basic_get` on a scratch channel. Listing peeks: it holds what it read
//! unacked and gives it all back (`nack`, requeue) so the dead-letter queue is unchanged.
//! Requeueing moves messages back to the work exchange with publisher confirms and acks each
//! dead copy only once its re-publication is confirmed, so a crash in between can duplicate a
//! message (harmless: results are stored once per index) but never lose one. Messages left
//! where they are stay unacked until the end — with a classic queue a nacked message returns to
//! the head and would be read again — and are then given back in one `nack`.

use lapin::message::BasicGetMessage;
use lapin::options::{
    BasicAckOptions, BasicGetOptions, BasicNackOptions, BasicPublishOptions, ConfirmSelectOptions,
    QueueDeclareOptions,
};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{BasicProperties, Channel, Confirmation, PublisherConfirm};

use evalfleet_contract::queue::Message;

use super::config::short;
use super::consume::decode;
use super::delivery::value_str;
use super::queue::OPERATION_DEADLINE;
use super::{AmqpError, AmqpQueue};

/// Bytes of a dead body kept in [`DeadLetter::raw`].
pub const RAW_LIMIT: usize = 2048;
/// Re-publications awaited together while requeueing.
const CONFIRM_WINDOW: usize = 256;

/// A message in the dead-letter queue.
#[derive(Debug, Clone, PartialEq)]
pub struct DeadLetter {
    /// The decoded example, None for a poison body.
    pub message: Option<Message>,
    /// The body as text (lossy UTF-8), cut to [`RAW_LIMIT`] bytes.
    pub raw: String,
    /// Why it died: `rejected`, `delivery_limit`, `expired`, `maxlen`, …
    pub reason: Option<String>,
    pub run_id: Option<String>,
    pub index: Option<u64>,
    /// The AMQP `message_id` (`<run_id>/<index>`), when it has one.
    pub message_id: Option<String>,
}

impl DeadLetter {
    pub(crate) fn from_delivery(properties: &BasicProperties, body: &[u8]) -> Self {
        let message = decode(body).ok();
        let message_id = properties
            .message_id()
            .as_ref()
            .map(|s| s.as_str().to_owned());
        // The body says best; else the message id `<run_id>/<index>`; else the correlation id.
        let from_id = message_id.as_deref().and_then(|id| {
            let (run, index) = id.rsplit_once('/')?;
            Some((run.to_owned(), index.parse::<u64>().ok()))
        });
        let run_id = message
            .as_ref()
            .map(|m| m.run_id.clone())
            .or_else(|| from_id.as_ref().map(|(run, _)| run.clone()))
            .or_else(|| {
                properties
                    .correlation_id()
                    .as_ref()
                    .map(|s| s.as_str().to_owned())
            });
        let index = message
            .as_ref()
            .map(|m| m.index)
            .or_else(|| from_id.and_then(|(_, index)| index));
        DeadLetter {
            message,
            raw: lossy_prefix(body, RAW_LIMIT),
            reason: properties.headers().as_ref().and_then(death_reason),
            run_id,
            index,
            message_id,
        }
    }
}

/// The first death's reason: `x-first-death-reason`, else the oldest `x-death` entry.
pub(crate) fn death_reason(headers: &FieldTable) -> Option<String> {
    let h = headers.inner();
    if let Some(reason) = h.get("x-first-death-reason").and_then(value_str) {
        return Some(reason);
    }
    let AMQPValue::FieldArray(deaths) = h.get("x-death")? else {
        return None;
    };
    deaths.as_slice().iter().rev().find_map(|d| match d {
        AMQPValue::FieldTable(t) => t.inner().get("reason").and_then(value_str),
        _ => None,
    })
}

/// At most `limit` bytes of `body` as text, cut on a character boundary.
fn lossy_prefix(body: &[u8], limit: usize) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(limit)]);
    let mut end = text.len().min(limit);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

/// A dead copy's properties for its trip back to the work queue: the broker's death and
/// delivery bookkeeping removed, so the message starts afresh.
fn republish_properties(properties: &BasicProperties) -> BasicProperties {
    let Some(headers) = properties.headers() else {
        return properties.clone();
    };
    let kept: FieldTable = headers
        .inner()
        .iter()
        .filter(|(k, _)| {
            let k = k.as_str();
            !(k == "x-death" || k.starts_with("x-first-death") || k.starts_with("x-last-death"))
                && k != "x-delivery-count"
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect::<std::collections::BTreeMap<_, _>>()
        .into();
    properties.clone().with_headers(kept)
}

impl AmqpQueue {
    /// Peeks at up to `limit` dead letters, oldest first, leaving the queue unchanged.
    pub async fn dead_letters(&self, limit: usize) -> Result<Vec<DeadLetter>, AmqpError> {
        let dead = self.config().dead_queue();
        let channel = self.scratch_channel("peek at", &dead).await?;
        let mut letters = Vec::new();
        while letters.len() < limit {
            match get(&channel, &dead).await? {
                None => break,
                Some(m) => letters.push(DeadLetter::from_delivery(
                    &m.delivery.properties,
                    &m.delivery.data,
                )),
            }
        }
        if !letters.is_empty() {
            give_back(&channel, &dead).await?;
        }
        Ok(letters)
    }

    /// Moves dead letters — all, or only those of `run_id` — back to the work exchange;
    /// returns how many moved. Each dead copy is acked only after its re-publication is
    /// confirmed; the others are given back unchanged.
    pub async fn requeue_dead(&self, run_id: Option<&str>) -> Result<usize, AmqpError> {
        let cfg = self.config();
        let (dead, exchange, routing_key) = (cfg.dead_queue(), cfg.exchange(), cfg.routing_key());
        let session = self
            .session("requeue from", &dead, OPERATION_DEADLINE)
            .await?;
        let channel = session
            .connection
            .create_channel()
            .await
            .map_err(AmqpError::broker("requeue from", &dead))?;
        channel
            .confirm_select(ConfirmSelectOptions::default())
            .await
            .map_err(AmqpError::broker("enable publisher confirms for", &dead))?;
        // Read no more than what is there now: re-published messages may die again meanwhile.
        let present = channel
            .queue_declare(
                short(dead.as_str()),
                QueueDeclareOptions {
                    passive: true,
                    ..QueueDeclareOptions::default()
                },
                FieldTable::default(),
            )
            .await
            .map_err(AmqpError::broker("inspect queue", &dead))?
            .message_count();
        let options = BasicPublishOptions {
            mandatory: true,
            ..BasicPublishOptions::default()
        };
        let mut window: Vec<(u64, String, PublisherConfirm)> = Vec::new();
        let (mut moved, mut failed, mut read) = (0usize, Vec::new(), 0usize);
        for _ in 0..present {
            let Some(m) = get(&channel, &dead).await? else {
                break;
            };
            let d = &m.delivery;
            read += 1;
            let letter = DeadLetter::from_delivery(&d.properties, &d.data);
            if run_id.is_some_and(|r| letter.run_id.as_deref() != Some(r)) {
                continue;
            }
            let confirm = channel
                .basic_publish(
                    short(exchange.as_str()),
                    short(routing_key.as_str()),
                    options,
                    &d.data,
                    republish_properties(&d.properties),
                )
                .await
                .map_err(AmqpError::broker("publish to", &exchange))?;
            let id = letter
                .message_id
                .unwrap_or_else(|| format!("#{}", d.delivery_tag));
            window.push((d.delivery_tag, id, confirm));
            if window.len() >= CONFIRM_WINDOW {
                moved += settle(&channel, &mut window, &mut failed, &dead).await?;
            }
        }
        moved += settle(&channel, &mut window, &mut failed, &dead).await?;
        if read > moved {
            give_back(&channel, &dead).await?;
        }
        tracing::info!(queue = %dead, moved, run = ?run_id, "dead letters moved back to the work queue");
        match failed.first() {
            None => Ok(moved),
            Some((first, reason)) => Err(AmqpError::Refused {
                exchange,
                refused: failed.len(),
                total: failed.len() + moved,
                first: first.clone(),
                reason: format!("{reason}; {moved} moved, the refused stay in `{dead}`"),
            }),
        }
    }
}

async fn get(channel: &Channel, queue: &str) -> Result<Option<BasicGetMessage>, AmqpError> {
    channel
        .basic_get(short(queue), BasicGetOptions { no_ack: false })
        .await
        .map_err(AmqpError::broker("get from", queue))
}

/// Returns every message still unacked on `channel` to the queue, in its original place
/// (`nack` of delivery tag 0 with `multiple`: all outstanding).
async fn give_back(channel: &Channel, queue: &str) -> Result<(), AmqpError> {
    channel
        .basic_nack(
            0,
            BasicNackOptions {
                multiple: true,
                requeue: true,
            },
        )
        .await
        .map_err(AmqpError::broker("give back to", queue))
}

/// Awaits the window's confirms; acks the dead copy of each confirmed re-publication.
async fn settle(
    channel: &Channel,
    window: &mut Vec<(u64, String, PublisherConfirm)>,
    failed: &mut Vec<(String, String)>,
    dead: &str,
) -> Result<usize, AmqpError> {
    let mut moved = 0;
    for (tag, id, confirm) in window.drain(..) {
        let outcome = confirm
            .await
            .map_err(AmqpError::broker("confirm re-publication from", dead))?;
        match outcome {
            Confirmation::Ack(None) | Confirmation::NotRequested => {
                channel
                    .basic_ack(tag, BasicAckOptions::default())
                    .await
                    .map_err(AmqpError::broker("ack dead copy in", dead))?;
                moved += 1;
            }
            Confirmation::Ack(Some(r)) => failed.push((
                id,
                format!("unroutable ({} {})", r.reply_code, r.reply_text),
            )),
            Confirmation::Nack(_) => failed.push((id, "nacked".into())),
        }
    }
    Ok(moved)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lapin::types::{FieldArray, LongString};

    #[test]
    fn the_first_death_reason_is_found() {
        let mut h = FieldTable::default();
        let mut death = FieldTable::default();
        death.insert(
            "reason".into(),
            AMQPValue::LongString(LongString::from("delivery_limit")),
        );
        h.insert(
            "x-death".into(),
            AMQPValue::FieldArray(FieldArray::from(vec![AMQPValue::FieldTable(death)])),
        );
        assert_eq!(death_reason(&h).as_deref(), Some("delivery_limit"));
        h.insert(
            "x-first-death-reason".into(),
            AMQPValue::LongString(LongString::from("rejected")),
        );
        assert_eq!(death_reason(&h).as_deref(), Some("rejected"));
    }

    #[test]
    fn poison_bodies_are_described_from_their_properties() {
        let props = BasicProperties::default()
            .with_message_id("run-9/41".into())
            .with_correlation_id("run-9".into());
        let body = vec![b'x'; 5000];
        let d = DeadLetter::from_delivery(&props, &body);
        assert_eq!(d.message, None);
        assert_eq!(d.raw.len(), RAW_LIMIT);
        assert_eq!(d.run_id.as_deref(), Some("run-9"));
        assert_eq!(d.index, Some(41));
        assert_eq!(lossy_prefix("é".repeat(3).as_bytes(), 3), "é");
    }

    #[test]
    fn republication_drops_the_death_bookkeeping() {
        let mut h = FieldTable::default();
        h.insert("x-death".into(), AMQPValue::Void);
        h.insert("x-first-death-queue".into(), AMQPValue::Void);
        h.insert("x-delivery-count".into(), AMQPValue::LongLongInt(5));
        h.insert("trace".into(), AMQPValue::Boolean(true));
        let p = republish_properties(&BasicProperties::default().with_headers(h));
        let kept = p.headers().clone().expect("headers");
        assert_eq!(
            kept.inner().keys().map(|k| k.as_str()).collect::<Vec<_>>(),
            vec!["trace"]
        );
    }
}
