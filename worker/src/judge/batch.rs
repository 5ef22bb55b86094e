//! Batch mode: judge questions go into the providers' Batch APIs instead of one HTTP call each.
//!
//! A question to a batch-mode provider does not wait for its answer: without a stored result
//! its example is parked in the [`BatchStore`](evalfleet_contract::batch_store::BatchStore),
//! and the batch coordinator ([`crate::coordinator`]) packs the parked questions into provider
//! batches, sees them through and sends the example back into the queue once every answer is
//! in (`live/batched.rs`). The same coordinator serves `run` (over the in-process store) and
//! the fleet (over Redis). Here: what names a question and how a provider's batches are made.

use evalfleet_config::{Api, BatchConfig, RetryConfig};

/// A short name of one example of one run, the stem of its batch requests' custom_ids
/// (`e1a2b3c4-17-0-0-a0`: example 17, dimension 0, judge 0, first ask, attempt 0). Both
/// providers take `^[a-zA-Z0-9_-]{1,64}$`; a run id may hold anything, so it goes in hashed.
pub fn example_key(run_id: &str, index: u64) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(run_id.as_bytes());
    let run = u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]]);
    format!("e{run:08x}-{index}")
}

/// How one provider's batches are made: the provider, its limits and timings.
#[derive(Clone)]
pub struct BatchOptions {
    /// The provider's name, for metrics and logs.
    pub provider: String,
    pub api: Api,
    pub batch: BatchConfig,
    /// Transient failures of batch API calls (create, poll, download) are retried like live
    /// calls are.
    pub retry: RetryConfig,
    /// The stem of each batch's tag (`<tag>-<random>`, OpenAI `metadata.evalfleet_tag`), by
    /// which a batch can be found again.
    pub tag: String,
}
