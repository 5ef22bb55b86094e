//! How the worker retries a result store that failed transiently, for every store call it
//! makes (writing a result, reading a scenario): its own module so that the consumer loop and
//! per-example processing both use it while the imports go one way (consume → process →
//! scenarios → here).

use std::future::Future;
use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use evalfleet_contract::store::StoreError;

/// Attempts at one store call before the message is handed back to the queue.
pub(crate) const STORE_ATTEMPTS: usize = 5;

/// How a transient store error is retried before the message goes back to the queue: a
/// requeue counts toward the quorum queue's delivery limit, a short outage should not.
fn store_retries() -> ExponentialBuilder {
    ExponentialBuilder::default()
        .with_min_delay(Duration::from_millis(100))
        .with_max_delay(Duration::from_secs(5))
        .with_max_times(STORE_ATTEMPTS - 1)
}

/// Calls `op` until it succeeds, fails for good, or [`STORE_ATTEMPTS`] transient failures
/// (with backoff) have passed; each retry is logged as "`doing` failed; retrying".
pub(crate) async fn retry_store<T, F, Fut>(doing: &str, op: F) -> Result<T, StoreError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, StoreError>>,
{
    op.retry(store_retries())
        .when(StoreError::is_transient)
        .notify(|e: &StoreError, wait: Duration| {
            tracing::warn!(error = %e, ?wait, "{doing} failed; retrying");
        })
        .await
}
