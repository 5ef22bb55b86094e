//! How deep the work and dead-letter queues are, for the aggregator's
//! `evalfleet_queue_messages{queue,state}` gauges and for autoscalers reading them.
//!
//! A reader may have a preferred source that sees more (RabbitMQ's management API: ready and
//! unacknowledged messages) and a fallback that sees less (a passive declare: ready only); a
//! failure of the preferred source is reported beside the depths it fell back to, so that it is
//! logged when it starts and when it ends.

use async_trait::async_trait;

/// One queue's messages. `unacked` is None when the source cannot see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Depth {
    pub ready: u64,
    pub unacked: Option<u64>,
}

/// Both queues' depths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Depths {
    pub work: Depth,
    pub dead: Depth,
}

/// The work and dead-letter queue names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueNames {
    pub work: String,
    pub dead: String,
}

/// One reading of both queues.
#[derive(Debug)]
pub struct DepthReading {
    /// The depths, or why no source could give them.
    pub depths: Result<Depths, String>,
    /// Why the preferred source failed, when it did (the depths then come from the fallback).
    pub preferred_failed: Option<String>,
}

#[async_trait]
pub trait QueueDepths: Send + Sync + 'static {
    fn names(&self) -> &QueueNames;
    /// Whether a preferred source is configured (its recovery is worth a log line).
    fn has_preferred(&self) -> bool;
    async fn read(&self) -> DepthReading;
}
