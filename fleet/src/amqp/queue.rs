//! [`AmqpQueue`]: the fleet's [`WorkQueue`] on RabbitMQ, tying together the supervised
//! connection, confirmed publishing and the shared consumer.
//!
//! Clones share one connection, one publishing channel and one consumer, so a worker hands a
//! clone to each of its tasks. Publishing waits through a reconnection (up to the publish
//! deadline) and re-publishes a batch whose confirms were lost with the connection.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use evalfleet_contract::queue::{Message, QueueError, WorkQueue};
use lapin::options::QueueDeclareOptions;
use lapin::types::FieldTable;
use lapin::Channel;
use tokio::time::Instant;

use super::config::short;
use super::consume::Consuming;
use super::delivery::AmqpDelivery;
use super::publish::{encode, publish_confirmed, PublishFailure};
use super::supervisor::{Session, Supervisor};
use super::{AmqpConfig, AmqpError};

/// How long `publish` waits for RabbitMQ to come back (and for the batch's confirms).
pub const PUBLISH_DEADLINE: Duration = Duration::from_secs(60);
/// How long inspection and DLQ operations wait for RabbitMQ to come back.
pub const OPERATION_DEADLINE: Duration = Duration::from_secs(30);

/// Ready messages in the work and dead-letter queues, and consumers of the work queue.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueDepths {
    pub examples: u32,
    pub dead: u32,
    pub consumers: u32,
}

pub(crate) struct Inner {
    pub(crate) supervisor: Supervisor,
    pub(crate) consuming: Consuming,
}

/// The fleet's work queue on RabbitMQ. Cheap to clone; clones share the connection.
#[derive(Clone)]
pub struct AmqpQueue {
    pub(crate) inner: Arc<Inner>,
    publish_deadline: Duration,
}

impl AmqpQueue {
    /// Connects (retrying with backoff until `connect_deadline`), declares the topology.
    /// Publishing works at once; consuming starts on the first `next()` (so a producer never
    /// consumes). Must be called inside a Tokio runtime.
    pub async fn connect(cfg: AmqpConfig, connect_deadline: Duration) -> Result<Self, AmqpError> {
        let consuming = Consuming::new(cfg.queue(), cfg.prefetch);
        let supervisor = Supervisor::start(cfg, connect_deadline).await?;
        Ok(AmqpQueue {
            inner: Arc::new(Inner {
                supervisor,
                consuming,
            }),
            publish_deadline: PUBLISH_DEADLINE,
        })
    }

    /// The same queue with another bound on how long `publish` waits for RabbitMQ.
    pub fn with_publish_deadline(mut self, deadline: Duration) -> Self {
        self.publish_deadline = deadline;
        self
    }

    pub fn config(&self) -> &AmqpConfig {
        self.inner.supervisor.config()
    }

    /// Ready message counts of the work queue and the dead-letter queue (passive declare), and
    /// the work queue's consumers.
    pub async fn depths(&self) -> Result<QueueDepths, AmqpError> {
        let cfg = self.config();
        let channel = self.scratch_channel("inspect", &cfg.queue()).await?;
        let passive = QueueDeclareOptions {
            passive: true,
            ..QueueDeclareOptions::default()
        };
        let (queue, dead) = (cfg.queue(), cfg.dead_queue());
        let examples = channel
            .queue_declare(short(queue.as_str()), passive, FieldTable::default())
            .await
            .map_err(AmqpError::broker("inspect queue", &queue))?;
        let dead_q = channel
            .queue_declare(short(dead.as_str()), passive, FieldTable::default())
            .await
            .map_err(AmqpError::broker("inspect queue", &dead))?;
        Ok(QueueDepths {
            examples: examples.message_count(),
            dead: dead_q.message_count(),
            consumers: examples.consumer_count(),
        })
    }

    /// Whether the connection is up right now (a readiness probe); false while reconnecting.
    pub fn is_connected(&self) -> bool {
        self.inner.supervisor.is_connected()
    }

    /// How many times the connection was lost and re-established.
    pub fn reconnections(&self) -> u64 {
        self.inner.supervisor.reconnections()
    }

    /// Poison messages rejected to the DLQ by this process so far.
    pub fn poison_count(&self) -> u64 {
        self.inner.consuming.poison_count()
    }

    /// The live session, waiting up to `deadline` through a reconnection.
    pub(crate) async fn session(
        &self,
        op: &'static str,
        target: &str,
        deadline: Duration,
    ) -> Result<Arc<Session>, AmqpError> {
        self.inner
            .supervisor
            .session(Some(Instant::now() + deadline))
            .await
            .ok_or_else(|| AmqpError::Unavailable {
                op,
                target: target.to_owned(),
                waited: deadline,
            })
    }

    /// A short-lived channel for one operation (closed when dropped), so a refusal — say a
    /// passive declare of a missing queue — cannot take the shared channels down with it.
    pub(crate) async fn scratch_channel(
        &self,
        op: &'static str,
        target: &str,
    ) -> Result<Channel, AmqpError> {
        let session = self.session(op, target, OPERATION_DEADLINE).await?;
        session
            .connection
            .create_channel()
            .await
            .map_err(AmqpError::broker(op, target))
    }

    async fn publish_batch(&self, batch: Vec<Message>) -> Result<(), AmqpError> {
        if batch.is_empty() {
            return Ok(());
        }
        let outgoing = encode(&batch)?;
        let cfg = self.config();
        let (exchange, routing_key) = (cfg.exchange(), cfg.routing_key());
        let started = Instant::now();
        let deadline = started + self.publish_deadline;
        let timed_out = || AmqpError::Timeout {
            op: "publish to",
            target: exchange.clone(),
            after: self.publish_deadline,
        };
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let Some(session) = self.inner.supervisor.session(Some(deadline)).await else {
                return Err(AmqpError::Unavailable {
                    op: "publish to",
                    target: exchange.clone(),
                    waited: started.elapsed(),
                });
            };
            let publishing =
                publish_confirmed(&session.publisher, &exchange, &routing_key, &outgoing);
            match tokio::time::timeout_at(deadline, publishing).await {
                Err(_) => return Err(timed_out()),
                Ok(Ok(())) => return Ok(()),
                Ok(Err(PublishFailure::Refused(e))) => return Err(e),
                Ok(Err(PublishFailure::Lost(e))) => {
                    tracing::warn!(
                        exchange = %exchange,
                        messages = outgoing.len(),
                        attempt,
                        error = %e,
                        "connection lost before the batch was confirmed; publishing it again"
                    );
                    self.inner.supervisor.report_broken(session.generation);
                    // Give the supervisor a moment to notice before asking it again.
                    let pause = Duration::from_millis(50 * u64::from(attempt.min(20)));
                    if Instant::now() + pause >= deadline {
                        return Err(timed_out());
                    }
                    tokio::time::sleep(pause).await;
                }
            }
        }
    }
}

impl std::fmt::Debug for AmqpQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AmqpQueue")
            .field("url", &self.config().redacted_url())
            .field("prefix", &self.config().prefix)
            .field("connected", &self.is_connected())
            .finish()
    }
}

#[async_trait]
impl WorkQueue for AmqpQueue {
    type Delivery = AmqpDelivery;

    /// Publishes a batch with publisher confirms; returns once every message is confirmed.
    async fn publish(&self, batch: Vec<Message>) -> Result<(), QueueError> {
        Ok(self.publish_batch(batch).await?)
    }

    /// The next valid delivery (poison messages are dead-lettered on the way); None once
    /// `stop_consuming` was called.
    async fn next(&self) -> Result<Option<AmqpDelivery>, QueueError> {
        Ok(self.inner.consuming.next(&self.inner.supervisor).await?)
    }

    /// Cancels the subscription (`basic_cancel`); the deliveries prefetched but not handed out
    /// are requeued at once, so another worker takes them while this one finishes its own.
    async fn stop_consuming(&self) -> Result<(), QueueError> {
        Ok(self.inner.consuming.stop().await?)
    }

    /// The work queue's ready messages (a passive declare).
    async fn backlog(&self) -> Result<Option<u64>, QueueError> {
        Ok(Some(u64::from(self.depths().await?.examples)))
    }
}
