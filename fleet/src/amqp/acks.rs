//! Coalesced acknowledgements: one `basic.ack multiple` for a run of settled deliveries instead
//! of a frame each.
//!
//! Acking every message alone costs the worker, and the broker, about as much CPU as the rest of
//! the AMQP path together (the broker-ceiling program spends ~40% less CPU when it acks every
//! 32nd delivery with `multiple`). Deliveries on one channel carry increasing tags, and an
//! example is acked only once its result is stored, so the window keeps the tags it handed out,
//! in order, and an ack becomes one `multiple` ack for the longest run of acked tags at the
//! front. An ack behind a tag that is still being worked on waits for it, but at most a quarter
//! of the prefetch do: past that they go out one by one, so a slow example never holds the
//! prefetch window shut. Requeues and rejects always go alone.
//!
//! Every frame goes out under one lock, in order: a `multiple` ack must never overtake the
//! single ack of a tag it covers (the broker closes the channel on an unknown tag). An ack that
//! waits has been promised, not sent: if the channel dies first, the broker redelivers the
//! message, and the result store's once-per-index write absorbs it.

use std::collections::BTreeMap;

use lapin::options::BasicAckOptions;
use lapin::Acker;

enum Slot {
    /// Handed out, not settled yet.
    Working,
    /// Acked by its consumer; the frame waits for the tags before it.
    Acked(Acker),
}

#[derive(Default)]
struct Slots {
    by_tag: BTreeMap<u64, Slot>,
    waiting: usize,
    /// Acks that may wait behind an unsettled delivery before they are sent alone.
    max_waiting: usize,
}

/// The deliveries of one channel that are not acknowledged to the broker yet.
pub(crate) struct AckWindow {
    slots: tokio::sync::Mutex<Slots>,
}

impl AckWindow {
    /// The window of a channel consuming with `prefetch`.
    pub(crate) fn new(prefetch: u16) -> Self {
        AckWindow {
            slots: tokio::sync::Mutex::new(Slots {
                max_waiting: usize::from(prefetch / 4).max(1),
                ..Slots::default()
            }),
        }
    }

    /// A delivery handed out; call in delivery order, before any later tag is settled.
    pub(crate) async fn register(&self, tag: u64) {
        self.slots.lock().await.by_tag.insert(tag, Slot::Working);
    }

    /// Acknowledges `tag`, now or together with the tags before it. `Ok(false)` when lapin
    /// found the channel closed.
    pub(crate) async fn ack(&self, tag: u64, acker: Acker) -> lapin::Result<bool> {
        let mut slots = self.slots.lock().await;
        match slots.by_tag.get_mut(&tag) {
            Some(slot @ Slot::Working) => {
                *slot = Slot::Acked(acker);
                slots.waiting += 1;
            }
            // Not handed out through this window: alone, as it came.
            _ => return acker.ack(BasicAckOptions::default()).await,
        }
        flush(&mut slots).await
    }

    /// Sends a requeue or reject of `tag` (`settle`, not polled yet) in order with the acks,
    /// then the acks it was holding back.
    pub(crate) async fn settle_alone(
        &self,
        tag: u64,
        settle: impl std::future::Future<Output = lapin::Result<bool>>,
    ) -> lapin::Result<bool> {
        let mut slots = self.slots.lock().await;
        let settled = settle.await;
        if let Some(Slot::Acked(_)) = slots.by_tag.remove(&tag) {
            slots.waiting -= 1;
        }
        let flushed = flush(&mut slots).await;
        let settled = settled?;
        flushed.map(|f| f && settled)
    }
}

/// Sends what can go: one `multiple` ack for the acked run at the front, and every waiting ack
/// alone when too many wait.
async fn flush(slots: &mut Slots) -> lapin::Result<bool> {
    let mut last = None;
    while let Some(front) = slots.by_tag.first_entry() {
        if !matches!(front.get(), Slot::Acked(_)) {
            break;
        }
        last = Some(front.remove());
        slots.waiting -= 1;
    }
    let mut sent = true;
    if let Some(Slot::Acked(acker)) = last {
        sent &= acker.ack(BasicAckOptions { multiple: true }).await?;
    }
    if slots.waiting > slots.max_waiting {
        let acked: Vec<u64> = slots
            .by_tag
            .iter()
            .filter(|(_, s)| matches!(s, Slot::Acked(_)))
            .map(|(tag, _)| *tag)
            .collect();
        for tag in acked {
            if let Some(Slot::Acked(acker)) = slots.by_tag.remove(&tag) {
                slots.waiting -= 1;
                sent &= acker.ack(BasicAckOptions::default()).await?;
            }
        }
    }
    Ok(sent)
}
