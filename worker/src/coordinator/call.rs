//! The coordinator's calls to a provider's Batch API: retried on transient errors as a live
//! judge call is, and what a failed call means for the questions of the batch.

use std::time::Duration;

use backon::Retryable;

use crate::judge::batch::BatchOptions;
use crate::judge::provider::batch::BatchItem;
use crate::judge::provider::CallError;
use crate::judge::retry_schedule;

/// How many of the newest batches a retried create looks through for its own.
pub(super) const FIND_SCAN: usize = 200;

/// A batch API call, retried on transient errors like a live judge call.
pub(super) async fn persist<T, F, Fut>(options: &BatchOptions, call: F) -> Result<T, CallError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, CallError>>,
{
    call.retry(retry_schedule(&options.retry))
        .when(CallError::retryable)
        .adjust(|e: &CallError, step: Option<Duration>| {
            step.map(|d| d.max(e.retry_after().unwrap_or_default()))
        })
        .await
}

/// What each question of a batch gets when a call for the whole batch failed.
pub(super) fn errored(e: &CallError) -> BatchItem {
    BatchItem::Errored {
        reason: e.reason(),
        retryable: e.retryable(),
    }
}

/// The `kind` label of a request that came back without a reply.
pub(super) fn error_kind(item: &BatchItem) -> Option<&'static str> {
    match item {
        BatchItem::Reply { .. } => None,
        BatchItem::Errored { .. } => Some("errored"),
        BatchItem::Expired => Some("expired"),
        BatchItem::Canceled => Some("canceled"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::BATCH_ERROR_KINDS;

    /// The metrics create a zero series for each kind; a kind named here but missing there
    /// would only appear once it happened.
    #[test]
    fn every_error_kind_has_a_zero_series() {
        let items = [
            BatchItem::Errored {
                reason: "r".into(),
                retryable: true,
            },
            BatchItem::Expired,
            BatchItem::Canceled,
        ];
        for item in &items {
            let kind = error_kind(item).expect("a kind");
            assert!(BATCH_ERROR_KINDS.contains(&kind), "{kind}");
        }
        assert!(BATCH_ERROR_KINDS.contains(&"missing"));
    }
}
