//! The work queue seam: one message per example, acknowledged only once its result is stored.
//!
//! `WorkQueue` has two implementations: RabbitMQ for the fleet and [`InProcessQueue`] for the
//! embedded `run`. Both give the same guarantees a worker relies on — at-least-once delivery,
//! `ack` / `requeue` / `reject` per message, and one way to stop: [`WorkQueue::stop_consuming`]
//! — so one consumer loop serves both.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use evalfleet_suites::evaluate::{Example, Work};
use evalfleet_suites::target::PendingRecord;

/// The message body of docs/DESIGN.md §3, version 2: `{"v":2, "run_id", "index", "suite",
/// "example": {...}}`, where `example` is the producer's typed [`Example`] (validated once, at
/// submit) rather than the raw record of version 1; a log-analysis example names its scenario
/// by digest. A target run's message carries `"record": {"id", "record"}` instead: the record
/// the worker has the target complete, then validates and evaluates.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "Wire")]
pub struct Message {
    pub v: u32,
    pub run_id: String,
    pub index: u64,
    pub line: Option<u64>,
    pub suite: String,
    pub work: Work,
}

/// A message as it travels: `example` or `record`, exactly one.
#[derive(Deserialize)]
struct Wire {
    v: u32,
    run_id: String,
    index: u64,
    #[serde(default)]
    line: Option<u64>,
    suite: String,
    #[serde(default)]
    example: Option<Example>,
    #[serde(default)]
    record: Option<PendingRecord>,
}

impl TryFrom<Wire> for Message {
    type Error = &'static str;

    fn try_from(w: Wire) -> Result<Self, Self::Error> {
        let work = match (w.example, w.record) {
            (Some(example), None) => Work::Evaluate(example),
            (None, Some(record)) => Work::Generate(record),
            (Some(_), Some(_)) => return Err("a message carries an example or a record, not both"),
            (None, None) => return Err("a message carries an example or a record"),
        };
        Ok(Message {
            v: w.v,
            run_id: w.run_id,
            index: w.index,
            line: w.line,
            suite: w.suite,
            work,
        })
    }
}

impl Serialize for Message {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct WireRef<'a> {
            v: u32,
            run_id: &'a str,
            index: u64,
            #[serde(skip_serializing_if = "Option::is_none")]
            line: Option<u64>,
            suite: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            example: Option<&'a Example>,
            #[serde(skip_serializing_if = "Option::is_none")]
            record: Option<&'a PendingRecord>,
        }
        let (example, record) = match &self.work {
            Work::Evaluate(e) => (Some(e), None),
            Work::Generate(r) => (None, Some(r)),
        };
        WireRef {
            v: self.v,
            run_id: &self.run_id,
            index: self.index,
            line: self.line,
            suite: &self.suite,
            example,
            record,
        }
        .serialize(s)
    }
}

impl Message {
    pub const VERSION: u32 = 2;

    /// `message_id` of docs/DESIGN.md §3: `<run_id>/<index>`.
    pub fn message_id(&self) -> String {
        format!("{}/{}", self.run_id, self.index)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    #[error("the queue is closed")]
    Closed,
    #[error("queue error: {0}")]
    Backend(String),
}

/// One delivered message and the means to settle it.
#[async_trait]
pub trait Delivery: Send + Sync + 'static {
    fn message(&self) -> &Message;
    /// Whether the broker delivered this message before (a worker died or requeued it).
    fn redelivered(&self) -> bool;
    /// The result is durably stored: remove the message.
    async fn ack(self) -> Result<(), QueueError>;
    /// A transient failure: deliver the message again later.
    async fn requeue(self) -> Result<(), QueueError>;
    /// A poison message: send it to the dead-letter queue.
    async fn reject(self) -> Result<(), QueueError>;
}

#[async_trait]
pub trait WorkQueue: Send + Sync + 'static {
    type Delivery: Delivery;
    /// Publishes a batch; returns once every message is confirmed.
    async fn publish(&self, batch: Vec<Message>) -> Result<(), QueueError>;
    /// The next delivery, or None once the queue is drained and closed, or consuming stopped.
    async fn next(&self) -> Result<Option<Self::Delivery>, QueueError>;
    /// Stops consuming (graceful shutdown): messages not handed out yet go back to the queue
    /// for other consumers at once, deliveries already handed out can still be settled, and
    /// `next()` returns None from now on.
    async fn stop_consuming(&self) -> Result<(), QueueError>;
    /// How many messages wait in the queue for a consumer, when the queue can tell (RabbitMQ's
    /// ready count); a producer keeps its window with it. None: it cannot (the in-process
    /// queue bounds itself).
    async fn backlog(&self) -> Result<Option<u64>, QueueError> {
        Ok(None)
    }
}

/// The embedded queue: publishers wait while `capacity` chunks are queued (so memory stays flat
/// however large the dataset), requeues never wait (so consumers cannot deadlock on a full
/// channel), and it closes itself once the producer is done and every message is settled.
///
/// Messages travel in chunks of up to `chunk`: handing examples over one by one costs a thread
/// wake-up each, more than a heuristic evaluation itself. A consumer works through its chunk
/// alone, so `chunk` is 1 when evaluations wait on the network (one slow judge call must not hold
/// other messages back) and larger when they are CPU-bound. Each clone has its own chunk buffer:
/// give every consumer task its own clone.
///
/// In batch mode an example can leave the queue to wait for its provider batches elsewhere
/// (parked in a batch store) and come back later: [`InProcessQueue::hold`] keeps it counted
/// until it is published again, so the queue does not close under it.
pub struct InProcessQueue {
    inner: Arc<Inner>,
    local: Mutex<std::collections::VecDeque<(Message, bool)>>,
}

impl Clone for InProcessQueue {
    fn clone(&self) -> Self {
        InProcessQueue {
            inner: self.inner.clone(),
            local: Mutex::new(Default::default()),
        }
    }
}

type Chunk = Vec<(Message, bool)>;

struct Inner {
    tx: async_channel::Sender<Chunk>,
    rx: async_channel::Receiver<Chunk>,
    chunk: usize,
    /// One token per queued chunk of first deliveries; a full channel here is the publisher's
    /// backpressure.
    permits: (async_channel::Sender<()>, async_channel::Receiver<()>),
    /// Published but not yet acked or rejected.
    outstanding: AtomicU64,
    producer_done: AtomicBool,
    /// `stop_consuming` was called: nothing more is handed out.
    stopped: AtomicBool,
    dead: Mutex<Vec<Message>>,
    /// Messages parked outside the queue (`message_id`s), each counted in `outstanding` until
    /// it is published again; `holding` is their number, read without the lock.
    held: Mutex<HashSet<String>>,
    holding: AtomicU64,
}

impl InProcessQueue {
    /// A queue holding at most `capacity` messages in chunks of `chunk`.
    pub fn new(capacity: usize, chunk: usize) -> Self {
        let chunk = chunk.max(1);
        let (tx, rx) = async_channel::unbounded();
        InProcessQueue {
            inner: Arc::new(Inner {
                tx,
                rx,
                chunk,
                permits: async_channel::bounded(capacity.div_ceil(chunk).max(1)),
                outstanding: AtomicU64::new(0),
                producer_done: AtomicBool::new(false),
                stopped: AtomicBool::new(false),
                dead: Mutex::new(Vec::new()),
                held: Mutex::new(HashSet::new()),
                holding: AtomicU64::new(0),
            }),
            local: Mutex::new(Default::default()),
        }
    }

    /// No more messages will be published: the queue closes once the rest are settled, and
    /// `next()` then returns None (the end of the input, not a stop: see `stop_consuming`).
    pub fn finish_publishing(&self) {
        self.inner.producer_done.store(true, Ordering::SeqCst);
        self.inner.close_if_drained();
    }

    /// Keeps `msg` outstanding while it waits outside the queue (before its delivery is
    /// acked): the queue stays open until it is published again. Holding twice is holding once.
    pub fn hold(&self, msg: &Message) {
        let mut held = self.inner.held.lock().unwrap_or_else(|e| e.into_inner());
        if held.insert(msg.message_id()) {
            self.inner.outstanding.fetch_add(1, Ordering::SeqCst);
            self.inner.holding.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Lets go of a hold without publishing (the message did not leave after all).
    pub fn unhold(&self, msg: &Message) {
        if self.inner.release(std::slice::from_ref(&msg.message_id())) > 0 {
            self.inner.close_if_drained();
        }
    }

    /// Messages rejected as poison.
    pub fn dead_letters(&self) -> Vec<Message> {
        self.inner
            .dead
            .lock()
            .map(|d| d.clone())
            .unwrap_or_default()
    }
}

impl Inner {
    /// Releases the holds of these messages; returns how many were held.
    fn release(&self, ids: &[String]) -> u64 {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let released = ids.iter().filter(|id| held.remove(id.as_str())).count() as u64;
        self.holding.fetch_sub(released, Ordering::SeqCst);
        self.outstanding.fetch_sub(released, Ordering::SeqCst);
        released
    }

    fn settle(&self) {
        self.outstanding.fetch_sub(1, Ordering::SeqCst);
        self.close_if_drained();
    }

    fn close_if_drained(&self) {
        if self.producer_done.load(Ordering::SeqCst) && self.outstanding.load(Ordering::SeqCst) == 0
        {
            self.tx.close();
        }
    }
}

#[async_trait]
impl WorkQueue for InProcessQueue {
    type Delivery = InProcessDelivery;

    async fn publish(&self, batch: Vec<Message>) -> Result<(), QueueError> {
        let mut batch = batch.into_iter().map(|m| (m, false)).peekable();
        while batch.peek().is_some() {
            let chunk: Chunk = batch.by_ref().take(self.inner.chunk).collect();
            self.inner
                .permits
                .0
                .send(())
                .await
                .map_err(|_| QueueError::Closed)?;
            let n = chunk.len() as u64;
            self.inner.outstanding.fetch_add(n, Ordering::SeqCst);
            // A held message coming back: its hold ends once the new copy is counted (so the
            // count never touches zero between the two) and before anyone can take the copy
            // (which may be parked and held again).
            if self.inner.holding.load(Ordering::SeqCst) > 0 {
                let ids: Vec<String> = chunk.iter().map(|(m, _)| m.message_id()).collect();
                self.inner.release(&ids);
            }
            if self.inner.tx.try_send(chunk).is_err() {
                self.inner.outstanding.fetch_sub(n, Ordering::SeqCst);
                return Err(QueueError::Closed);
            }
        }
        Ok(())
    }

    async fn next(&self) -> Result<Option<InProcessDelivery>, QueueError> {
        let local = || {
            self.local
                .lock()
                .map_err(|_| QueueError::Backend("queue buffer lock poisoned".into()))
        };
        if self.inner.stopped.load(Ordering::SeqCst) {
            return Ok(None);
        }
        let buffered = local()?.pop_front();
        let (message, redelivered) = match buffered {
            Some(item) => item,
            None => {
                let Ok(chunk) = self.inner.rx.recv().await else {
                    return Ok(None);
                };
                if self.inner.stopped.load(Ordering::SeqCst) {
                    // Nobody else consumes this process's queue: what is left is abandoned.
                    return Ok(None);
                }
                if chunk.iter().any(|(_, redelivered)| !redelivered) {
                    let _ = self.inner.permits.1.try_recv();
                }
                let mut buffer = local()?;
                buffer.extend(chunk);
                match buffer.pop_front() {
                    Some(item) => item,
                    None => return Err(QueueError::Backend("received an empty chunk".into())),
                }
            }
        };
        Ok(Some(InProcessDelivery {
            queue: self.inner.clone(),
            message,
            redelivered,
        }))
    }

    /// There is no other consumer of an in-process queue to hand messages to: stopping ends
    /// every consumer's `next()` (the run is abandoned, as on Ctrl-C).
    async fn stop_consuming(&self) -> Result<(), QueueError> {
        self.inner.stopped.store(true, Ordering::SeqCst);
        self.inner.tx.close();
        Ok(())
    }
}

pub struct InProcessDelivery {
    queue: Arc<Inner>,
    message: Message,
    redelivered: bool,
}

#[async_trait]
impl Delivery for InProcessDelivery {
    fn message(&self) -> &Message {
        &self.message
    }

    fn redelivered(&self) -> bool {
        self.redelivered
    }

    async fn ack(self) -> Result<(), QueueError> {
        self.queue.settle();
        Ok(())
    }

    async fn requeue(self) -> Result<(), QueueError> {
        // Still outstanding, so the channel cannot have closed under us; unbounded, so no wait.
        self.queue
            .tx
            .try_send(vec![(self.message, true)])
            .map_err(|_| QueueError::Closed)
    }

    async fn reject(self) -> Result<(), QueueError> {
        if let Ok(mut dead) = self.queue.dead.lock() {
            dead.push(self.message);
        }
        self.queue.settle();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conformance::message;
    use crate::testing::block_on;

    /// Whether the queue ended: its consumers get None once they drained it.
    fn closed(queue: &InProcessQueue) -> bool {
        queue.inner.tx.is_closed()
    }

    /// A queue whose producer published one message and is done, and that message's delivery.
    async fn one_delivery() -> (InProcessQueue, InProcessDelivery) {
        let queue = InProcessQueue::new(8, 1);
        queue.publish(vec![message("r", 0)]).await.unwrap();
        queue.finish_publishing();
        let delivery = queue.next().await.unwrap().expect("the message");
        (queue, delivery)
    }

    #[test]
    fn a_held_message_keeps_the_queue_open_until_it_is_published_again() {
        block_on(async {
            let (queue, delivery) = one_delivery().await;
            // Parked for its batches: held, then acked.
            queue.hold(delivery.message());
            queue.hold(delivery.message());
            delivery.ack().await.unwrap();
            assert!(!closed(&queue), "open while the message waits outside");
            // Back from its batches: delivered again, parked and held again, back again.
            queue.publish(vec![message("r", 0)]).await.unwrap();
            let again = queue.next().await.unwrap().expect("the message again");
            queue.hold(again.message());
            again.ack().await.unwrap();
            assert!(!closed(&queue), "held again");
            queue.publish(vec![message("r", 0)]).await.unwrap();
            let last = queue.next().await.unwrap().expect("the message, last time");
            assert_eq!(last.message().index, 0);
            assert!(!closed(&queue));
            last.ack().await.unwrap();
            assert!(closed(&queue), "closed once every message is settled");
            assert!(queue.next().await.unwrap().is_none());
        });
    }

    #[test]
    fn a_message_carries_an_example_or_a_record_to_complete() {
        let pending = crate::conformance::message("r", 3);
        let example = serde_json::to_value(&pending).unwrap();
        assert!(example.get("example").is_some() && example.get("record").is_none());
        let record = Message {
            work: Work::Generate(PendingRecord {
                id: "q1".into(),
                record: serde_json::json!({"id": "q1", "question": "why?"})
                    .as_object()
                    .unwrap()
                    .clone(),
                scenario: None,
                replaced: Vec::new(),
                baseline: Default::default(),
            }),
            ..pending
        };
        let wire = serde_json::to_string(&record).unwrap();
        assert!(wire.contains(r#""record":{"id":"q1""#), "{wire}");
        assert!(!wire.contains("scenario"), "no scenario, no key: {wire}");
        assert_eq!(serde_json::from_str::<Message>(&wire).unwrap(), record);
        let mut both = example.clone();
        both["record"] = serde_json::json!({"id": "q1", "record": {}});
        let err = serde_json::from_value::<Message>(both)
            .unwrap_err()
            .to_string();
        assert!(err.contains("not both"), "{err}");
        let mut neither = example;
        neither.as_object_mut().unwrap().remove("example");
        assert!(serde_json::from_value::<Message>(neither).is_err());
    }

    #[test]
    fn a_message_let_go_lets_the_queue_close() {
        block_on(async {
            let (queue, delivery) = one_delivery().await;
            queue.hold(delivery.message());
            queue.unhold(delivery.message());
            assert!(!closed(&queue), "its delivery is still unsettled");
            delivery.ack().await.unwrap();
            assert!(closed(&queue));
        });
    }
}
