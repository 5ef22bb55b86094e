//! What can cut a coordinator's step short. Every step is safe to cut short: the next tick
//! (or the next holder of the lease) does it again from what the store says.

use evalfleet_contract::queue::QueueError;
use evalfleet_contract::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub(crate) enum StepError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Queue(#[from] QueueError),
    #[error("provider: {0}")]
    Call(String),
    #[error("this worker lost the coordinator lease")]
    LeaseLost,
    #[error("spooling a batch body to a temporary file: {0}")]
    Spool(#[from] std::io::Error),
}
