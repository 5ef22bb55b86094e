//! The results' events: every stored result is announced once, and aggregators follow the
//! announcements in a consumer group, so each result is folded by one aggregator, and one that
//! crashes leaves its unacknowledged events to be claimed by another.
//!
//! The fleet aggregator meets its backend only through this contract (with [`ResultStore`]
//! and [`RunRegistry`]): Redis implements it with a stream and a consumer group. An event is
//! its result's only copy until an aggregator has written it durably (the aggregators' result
//! logs beside the run's report) and acknowledged it.
//!
//! [`ResultStore`]: crate::store::ResultStore
//! [`RunRegistry`]: crate::registry::RunRegistry

use std::time::Duration;

use async_trait::async_trait;
use evalfleet_model::record::ResultRecord;

use crate::store::StoreError;

/// A stored result, as announced.
#[derive(Debug, Clone, PartialEq)]
pub struct ResultEvent {
    /// The announcement's id, to acknowledge it.
    pub id: String,
    pub run_id: String,
    pub index: u64,
    /// None when the record is unreadable (logged); acknowledge it all the same.
    pub record: Option<ResultRecord>,
    /// The record as stored (JSON), for an aggregator that keeps the records it folds.
    pub json: Vec<u8>,
}

/// One aggregator's place in the group every aggregator joins.
#[async_trait]
pub trait EventReader: Send + 'static {
    /// Up to `count` events not yet handed to anyone, waiting up to `block` for the first.
    async fn read(&mut self, count: usize, block: Duration)
        -> Result<Vec<ResultEvent>, StoreError>;
    /// Up to `count` events another member was handed at least `min_idle` ago and never
    /// acknowledged (it crashed): now this reader's.
    async fn claim_stale(
        &mut self,
        min_idle: Duration,
        count: usize,
    ) -> Result<Vec<ResultEvent>, StoreError>;
    /// The events `(event id, run id)` are folded and written durably: nobody gets them
    /// again, and their results are no longer in flight.
    async fn ack(&mut self, events: &[(String, String)]) -> Result<(), StoreError>;
}

/// Where results are announced. An event carries its result until an aggregator has folded
/// it and written it durably: the store keeps only which indexes are stored, so what it holds
/// is set by the results in flight, not by the run's size.
#[async_trait]
pub trait ResultEvents: Send + Sync + 'static {
    type Reader: EventReader;
    /// Joins (creating it if needed) the consumer group `group` as `consumer`. A new group
    /// starts at the first event still kept, so results stored before any aggregator ran are
    /// not missed.
    async fn join(&self, group: &str, consumer: &str) -> Result<Self::Reader, StoreError>;
    /// How many of the run's stored results no aggregator has acknowledged yet (their events
    /// are their only copy): a run is reported once none is.
    async fn in_flight(&self, run_id: &str) -> Result<u64, StoreError>;
}
