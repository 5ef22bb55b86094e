//! Batch mode: judge questions go into the providers' Batch APIs instead of one HTTP call each.
//!
//! A question to a batch-mode provider does not wait for its answer: without a stored result
//! its example is parked in the [`BatchStore`](evalfleet_contract::batch_store::BatchStore),
//! and the batch coordinator ([`crate::coordinator`]) packs the parked questions into provider
//! batches, sees them through and sends the example back into the queue once every answer is
//! in (`live/batched.rs`). The same coordinator serves `run` (over the in-process store) and
//! the fleet (over Redis). Here: what names a question and how a provider's batches are made.

use evalfleet_config::{Api, BatchConfig, CallMode, JudgeConfig, RetryConfig};
use evalfleet_contract::batch_store::BatchStore;

use crate::judge::provider::batch::BatchItem;

/// A short name of one example of one run, the stem of its batch requests' custom_ids
/// (`e1a2b3c4-17-0-0-a0`: example 17, dimension 0, judge 0, first ask, attempt 0). Both
/// providers take `^[a-zA-Z0-9_-]{1,64}$`; a run id may hold anything, so it goes in hashed.
pub fn example_key(run_id: &str, index: u64) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(run_id.as_bytes());
    let run = u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]]);
    format!("e{run:08x}-{index}")
}

/// Which evaluation of which example: a run, an example's index in it, and the epoch of a
/// target run (0 otherwise). It names what is kept for that evaluation: batch questions' and a
/// target's replies.
#[derive(Debug, Clone, Copy)]
pub struct ExampleAt<'a> {
    pub run_id: &'a str,
    pub index: u64,
    pub epoch: u32,
}

impl ExampleAt<'_> {
    /// The stem of this evaluation's batch custom_ids: [`example_key`], and for a later epoch
    /// `k<epoch>` after it (`e1a2b3c4-17k2`), so that each epoch's questions have their own
    /// results. Epoch 0 keeps the plain key.
    pub fn key(&self) -> String {
        let key = example_key(self.run_id, self.index);
        match self.epoch {
            0 => key,
            epoch => format!("{key}k{epoch}"),
        }
    }
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

impl BatchOptions {
    /// How provider `name`'s batches are made, when `judges` sends its calls in batches (its
    /// own `mode`, else `judges.mode`); None when they go live. The judges and a chat target
    /// on the same provider get the same options: their requests share the provider's batches.
    pub fn of(judges: &JudgeConfig, name: &str) -> Option<BatchOptions> {
        let provider = judges.providers.get(name)?;
        (judges.mode_of(name) == CallMode::Batch).then(|| BatchOptions {
            provider: name.to_owned(),
            api: provider.api,
            batch: judges.batch.clone(),
            retry: judges.retry.clone(),
            tag: format!("evalfleet-{name}"),
        })
    }
}

/// The stored result of a batch request (a judge's question, a target's generation), if in. A store that cannot be read counts as "not in": the
/// example is then parked, and parking finds the result if it is there after all.
pub(crate) async fn stored(
    store: &dyn BatchStore,
    run: &str,
    custom_id: &str,
) -> Option<BatchItem> {
    match store.answer(run, custom_id).await {
        Ok(Some(json)) => {
            Some(
                serde_json::from_str(&json).unwrap_or_else(|e| BatchItem::Errored {
                    reason: format!("the stored result of {custom_id} does not parse: {e}"),
                    retryable: true,
                }),
            )
        }
        Ok(None) => None,
        Err(e) => {
            tracing::warn!(error = %e, custom_id, "cannot read a batch result; parking the example");
            None
        }
    }
}
