//! Consuming: one consumer per process, shared by every task calling `next()`.
//!
//! The consumer starts on the first `next()` (a producer never consumes), with `basic_qos`
//! prefetch on its own channel. It survives the broker: when its channel or connection dies it
//! re-subscribes on the supervisor's next session, and deliveries still buffered from the dead
//! channel are dropped (they can no longer be acked; the broker redelivers them).
//!
//! Poison messages — bodies that are not a current (v2) [`Message`] — never reach the caller: they are
//! rejected without requeue (so the quorum queue dead-letters them), logged with their
//! `message_id`, and counted (docs/DESIGN.md §3, §8).
//!
//! `stop()` cancels the subscription (`basic_cancel`) but keeps the channel open, so the
//! deliveries already handed out can still be acked. The deliveries prefetched but not handed
//! out are requeued as `next()` drains the subscription, so another worker takes them at once
//! instead of waiting for this process to exit; `next()` then returns None.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use evalfleet_contract::queue::Message;
use futures_util::StreamExt;
use lapin::message::Delivery as LapinDelivery;
use lapin::options::{
    BasicCancelOptions, BasicConsumeOptions, BasicQosOptions, BasicRejectOptions,
};
use lapin::types::{FieldTable, ShortString};
use lapin::{Channel, Consumer};
use tokio::sync::watch;

use super::acks::AckWindow;
use super::config::short;
use super::delivery::AmqpDelivery;
use super::supervisor::{backoff, Supervisor};
use super::topology::declare_topology;
use super::AmqpError;

const CANCEL_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a stopping consumer waits for the rest of its subscription's buffer.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(1);

struct Active {
    generation: u64,
    channel: Channel,
    /// The channel's unacknowledged deliveries (kept when re-subscribing on the same channel:
    /// delivery tags belong to the channel).
    window: Arc<AckWindow>,
    consumer: Consumer,
    /// The stream ended after `stop()`: keep the channel open for acks, deliver nothing more.
    ended: bool,
}

pub(crate) struct Consuming {
    queue: Arc<str>,
    prefetch: u16,
    /// The subscription; the lock is held while waiting for a delivery, so tasks take turns.
    active: tokio::sync::Mutex<Option<Active>>,
    /// The channel and tag to cancel, reachable while a `next()` holds `active`.
    cancel_handle: Mutex<Option<(Channel, ShortString)>>,
    stopped: watch::Sender<bool>,
    poison: AtomicU64,
}

impl Consuming {
    pub(crate) fn new(queue: String, prefetch: u16) -> Self {
        Consuming {
            queue: queue.into(),
            prefetch: prefetch.max(1),
            active: tokio::sync::Mutex::new(None),
            cancel_handle: Mutex::new(None),
            stopped: watch::channel(false).0,
            poison: AtomicU64::new(0),
        }
    }

    pub(crate) fn poison_count(&self) -> u64 {
        self.poison.load(Ordering::Relaxed)
    }

    /// The next valid delivery; None once stopped and drained. Waits through outages.
    pub(crate) async fn next(&self, sup: &Supervisor) -> Result<Option<AmqpDelivery>, AmqpError> {
        let mut stopped = self.stopped.subscribe();
        let mut guard = self.active.lock().await;
        let mut delays = None;
        loop {
            let is_stopped = *stopped.borrow_and_update();
            let usable = matches!(guard.as_ref(), Some(a) if !a.ended && self.current(a, sup));
            if !usable {
                if is_stopped {
                    return Ok(None);
                }
                match self.subscribe(sup, &mut stopped, guard.take()).await {
                    Ok(Some(active)) => {
                        *guard = Some(active);
                        delays = None;
                    }
                    Ok(None) => return Ok(None),
                    Err(e) => {
                        let delay = delays
                            .get_or_insert_with(backoff)
                            .next()
                            .unwrap_or_default();
                        tracing::warn!(queue = %self.queue, error = %e, retry_in = ?delay, "cannot subscribe; retrying");
                        tokio::select! {
                            _ = tokio::time::sleep(delay) => {}
                            _ = stopped.changed() => {}
                        }
                    }
                }
                continue;
            }
            let Some(active) = guard.as_mut() else {
                continue;
            };
            match active.consumer.next().await {
                Some(Ok(delivery)) if *stopped.borrow() => give_back(delivery).await,
                Some(Ok(delivery)) => {
                    let window = active.window.clone();
                    if let Some(found) = self.accept(delivery, window).await {
                        return Ok(Some(found));
                    }
                }
                Some(Err(e)) => {
                    tracing::warn!(queue = %self.queue, error = %e, "consumer failed; re-subscribing");
                    active.ended = true;
                    sup.report_broken(active.generation);
                }
                None if *stopped.borrow() => {
                    active.ended = true;
                    return Ok(None);
                }
                None => {
                    tracing::warn!(queue = %self.queue, "subscription ended by the broker; re-subscribing");
                    // Re-subscribed by the next turn (on the same channel if it still lives).
                    active.ended = true;
                    sup.report_broken(active.generation);
                }
            }
        }
    }

    /// Whether `active` belongs to the live session and its channel is open.
    fn current(&self, active: &Active, sup: &Supervisor) -> bool {
        active.channel.status().connected() && sup.generation() == Some(active.generation)
    }

    /// Subscribes, on `previous`'s channel when it is still open (the broker only cancelled
    /// the consumer), else on a new channel of the live session. None if stopped meanwhile.
    async fn subscribe(
        &self,
        sup: &Supervisor,
        stopped: &mut watch::Receiver<bool>,
        previous: Option<Active>,
    ) -> Result<Option<Active>, AmqpError> {
        let queue = self.queue.to_string();
        let (generation, channel, window) = match previous {
            Some(p) if self.current(&p, sup) => (p.generation, p.channel, p.window),
            _ => {
                let session = tokio::select! {
                    s = sup.session(None) => match s {
                        Some(s) => s,
                        None => return Ok(None),
                    },
                    _ = wait_true(stopped) => return Ok(None),
                };
                let channel = session
                    .connection
                    .create_channel()
                    .await
                    .map_err(AmqpError::broker("open consumer channel for", &queue))?;
                // Cheap, and heals a queue deleted while this process stays connected.
                declare_topology(&channel, sup.config()).await?;
                channel
                    .basic_qos(self.prefetch, BasicQosOptions::default())
                    .await
                    .map_err(AmqpError::broker("set prefetch on", &queue))?;
                (
                    session.generation,
                    channel,
                    Arc::new(AckWindow::new(self.prefetch)),
                )
            }
        };
        let consumer = channel
            .basic_consume(
                short(queue.as_str()),
                short(""),
                BasicConsumeOptions::default(),
                FieldTable::default(),
            )
            .await
            .map_err(AmqpError::broker("consume from", &queue))?;
        tracing::info!(queue = %self.queue, generation, prefetch = self.prefetch, tag = %consumer.tag(), "consuming");
        if let Ok(mut handle) = self.cancel_handle.lock() {
            *handle = Some((channel.clone(), consumer.tag()));
        }
        if *stopped.borrow() {
            // stop() ran while we subscribed and found nothing to cancel.
            self.cancel().await?;
        }
        Ok(Some(Active {
            generation,
            channel,
            window,
            consumer,
            ended: false,
        }))
    }

    /// A decoded delivery, or None after dealing with a dead-channel or poison delivery.
    async fn accept(
        &self,
        delivery: LapinDelivery,
        window: Arc<AckWindow>,
    ) -> Option<AmqpDelivery> {
        let message_id = delivery
            .properties
            .message_id()
            .as_ref()
            .map(|s| s.as_str().to_owned());
        if !delivery.acker.usable() {
            tracing::debug!(
                ?message_id,
                "dropping a delivery of a closed channel; it will be redelivered"
            );
            return None;
        }
        match decode(&delivery.data) {
            Ok(message) => {
                window.register(delivery.delivery_tag).await;
                Some(AmqpDelivery::new(
                    delivery.acker,
                    delivery.delivery_tag,
                    window,
                    message,
                    message_id,
                    delivery.redelivered,
                    delivery.properties.headers().as_ref(),
                    self.queue.clone(),
                ))
            }
            Err(reason) => {
                let id = message_id.as_deref().unwrap_or("<none>");
                let rejected = delivery
                    .acker
                    .reject(BasicRejectOptions { requeue: false })
                    .await;
                match rejected {
                    Ok(true) => {
                        self.poison.fetch_add(1, Ordering::Relaxed);
                        tracing::warn!(queue = %self.queue, message_id = id, %reason, bytes = delivery.data.len(), "poison message rejected to the dead-letter queue");
                    }
                    Ok(false) | Err(_) => {
                        tracing::warn!(queue = %self.queue, message_id = id, %reason, "poison message could not be rejected (channel closed); it will come back");
                    }
                }
                None
            }
        }
    }

    /// Stops new deliveries; those already handed out stay ackable, the prefetched rest goes
    /// back to the queue.
    pub(crate) async fn stop(&self) -> Result<(), AmqpError> {
        self.stopped.send_replace(true);
        let cancelled = self.cancel().await;
        // When every task is busy, nobody reads the subscription: give its buffer back now,
        // not when a task comes back for more. (A task waiting in `next()` holds the lock and
        // gives the buffer back itself.)
        if let Ok(mut guard) = self.active.try_lock() {
            if let Some(active) = guard.as_mut().filter(|a| !a.ended) {
                while let Ok(Some(Ok(delivery))) =
                    tokio::time::timeout(DRAIN_TIMEOUT, active.consumer.next()).await
                {
                    give_back(delivery).await;
                }
                active.ended = true;
            }
        }
        cancelled
    }

    async fn cancel(&self) -> Result<(), AmqpError> {
        let handle = self.cancel_handle.lock().ok().and_then(|mut h| h.take());
        let Some((channel, tag)) = handle else {
            return Ok(());
        };
        if !channel.status().connected() {
            return Ok(());
        }
        let queue = self.queue.to_string();
        match tokio::time::timeout(
            CANCEL_TIMEOUT,
            channel.basic_cancel(tag, BasicCancelOptions::default()),
        )
        .await
        {
            Ok(result) => result.map_err(AmqpError::broker("cancel consumer of", queue)),
            Err(_) => Err(AmqpError::Timeout {
                op: "cancel consumer of",
                target: queue,
                after: CANCEL_TIMEOUT,
            }),
        }
    }
}

/// A prefetched delivery this stopping consumer will not start: back to the queue, now. (If
/// the channel is gone, the broker requeues it anyway.)
async fn give_back(delivery: LapinDelivery) {
    let requeue = BasicRejectOptions { requeue: true };
    if let Err(e) = delivery.acker.reject(requeue).await {
        tracing::debug!(error = %e, "could not requeue a prefetched delivery; the broker will");
    }
}

/// A message of the current version whose run id follows the run-id rule (it names Redis keys
/// and a report directory), or why the body is poison.
pub(crate) fn decode(body: &[u8]) -> Result<Message, String> {
    let unsupported = |v: u32| {
        format!(
            "unsupported message version {v} (expected {}: drain the queue with the evalfleet that published it)",
            Message::VERSION
        )
    };
    match serde_json::from_slice::<Message>(body) {
        Ok(message) if message.v == Message::VERSION => {
            match evalfleet_model::run_id::check(&message.run_id) {
                Ok(()) => Ok(message),
                Err(e) => Err(e.to_string()),
            }
        }
        Ok(message) => Err(unsupported(message.v)),
        Err(e) => {
            // Only on the poison path: tell an older message apart from a broken one.
            #[derive(serde::Deserialize)]
            struct Versioned {
                v: u32,
            }
            match serde_json::from_slice::<Versioned>(body) {
                Ok(Versioned { v }) if v != Message::VERSION => Err(unsupported(v)),
                _ => Err(format!("not a v{} message: {e}", Message::VERSION)),
            }
        }
    }
}

async fn wait_true(rx: &mut watch::Receiver<bool>) {
    while !*rx.borrow_and_update() {
        if rx.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use evalfleet_contract::conformance::message;

    #[test]
    fn only_current_messages_decode() {
        let good = serde_json::to_vec(&message("r", 1)).expect("json");
        assert_eq!(decode(&good).expect("valid"), message("r", 1));
        assert!(decode(b"{not json")
            .unwrap_err()
            .contains("not a v2 message"));
        assert!(decode(b"\xff\xfe").is_err());
        let evil = serde_json::to_vec(&message("a:counts", 1)).expect("json");
        assert!(decode(&evil)
            .unwrap_err()
            .contains(evalfleet_model::run_id::RULE));
        let mut v3 = message("r", 1);
        v3.v = 3;
        let v3 = serde_json::to_vec(&v3).expect("json");
        assert!(decode(&v3).unwrap_err().contains("version 3"));
        // A v1 message carried the raw record: refused with its version, not as broken JSON.
        let v1 = br#"{"v":1,"run_id":"r","index":0,"suite":"support-judge","example":{"id":"a"}}"#;
        assert!(
            decode(v1).unwrap_err().contains("version 1"),
            "{:?}",
            decode(v1)
        );
        assert!(decode(br#"{"v":2,"run_id":"r"}"#)
            .unwrap_err()
            .contains("not a v2 message"));
    }
}
