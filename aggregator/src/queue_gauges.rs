//! Queue-depth gauges (`evalfleet_queue_messages{queue,state}`), read on their own schedule so
//! a slow management API never holds up folding results.

use std::time::Duration;

use evalfleet_fleet::amqp::depth::QueueDepthReader;
use tokio_util::sync::CancellationToken;

use crate::metrics::metrics;

/// How often queue depths are read. The management API refreshes its counts every 5 s by
/// default, so polling faster would only repeat them.
pub(crate) const QUEUE_DEPTH_EVERY: Duration = Duration::from_secs(1);

/// Publishes the queue depths every [`QUEUE_DEPTH_EVERY`] until `stop` is cancelled.
pub(crate) async fn follow(reader: QueueDepthReader, stop: CancellationToken) {
    let mut management_failing = false;
    loop {
        management_failing = tokio::select! {
            () = stop.cancelled() => return,
            failing = publish(&reader, management_failing) => failing,
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
pub async fn publish(reader: &QueueDepthReader, management_was_failing: bool) -> bool {
    let (depths, management_error) = reader.read().await;
    match (&management_error, management_was_failing) {
        (Some(e), false) => tracing::warn!(
            error = %e,
            "management API unreadable: queue depths fall back to a passive declare (ready only)"
        ),
        (None, true) if reader.management.is_some() => {
            tracing::info!("management API readable again: unacked counts are back")
        }
        _ => {}
    }
    match depths {
        Ok((d, _source)) => {
            let m = metrics();
            m.set_queue_depth(&reader.names.work, d.work);
            m.set_queue_depth(&reader.names.dead, d.dead);
        }
        Err(e) => tracing::debug!(error = %e, "queue depths unavailable"),
    }
    management_error.is_some()
}
