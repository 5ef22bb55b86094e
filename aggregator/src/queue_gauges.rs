//! Queue-depth gauges (`evalfleet_queue_messages{queue,state}`), read on their own schedule so
//! a slow management API never holds up folding results.

use std::sync::Arc;
use std::time::Duration;

use evalfleet_contract::depth::QueueDepths;
use tokio_util::sync::CancellationToken;

use crate::metrics::metrics;

/// How often queue depths are read. The management API refreshes its counts every 5 s by
/// default, so polling faster would only repeat them.
pub(crate) const QUEUE_DEPTH_EVERY: Duration = Duration::from_secs(1);

/// Publishes the queue depths every [`QUEUE_DEPTH_EVERY`] until `stop` is cancelled.
pub(crate) async fn follow<D: QueueDepths>(reader: Arc<D>, stop: CancellationToken) {
    let mut management_failing = false;
    loop {
        management_failing = tokio::select! {
            () = stop.cancelled() => return,
            failing = publish(reader.as_ref(), management_failing) => failing,
        };
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(QUEUE_DEPTH_EVERY) => {}
        }
    }
}

/// Reads the work and dead-letter queue depths once and sets their gauges. Returns whether
/// the management API failed, so that a failure is logged when it starts and when it ends,
/// not on every poll.
pub async fn publish<D: QueueDepths>(reader: &D, management_was_failing: bool) -> bool {
    let reading = reader.read().await;
    let management_error = reading.preferred_failed;
    match (&management_error, management_was_failing) {
        (Some(e), false) => tracing::warn!(
            error = %e,
            "management API unreadable: queue depths fall back to a passive declare (ready only)"
        ),
        (None, true) if reader.has_preferred() => {
            tracing::info!("management API readable again: unacked counts are back")
        }
        _ => {}
    }
    match reading.depths {
        Ok(d) => {
            let m = metrics();
            m.set_queue_depth(&reader.names().work, d.work);
            m.set_queue_depth(&reader.names().dead, d.dead);
        }
        Err(e) => tracing::debug!(error = %e, "queue depths unavailable"),
    }
    management_error.is_some()
}
