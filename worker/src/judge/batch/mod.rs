//! Batch mode: judge questions go into the providers' Batch APIs instead of one HTTP call each.
//!
//! A [`Batcher`] stands for one provider. [`Batcher::ask`] hands it one encoded request and
//! waits for that request's result; the batcher's coordinator task (`coordinator.rs`) packs
//! waiting requests into batches within the provider's limits, submits each, polls it with
//! backoff, downloads its results and answers every waiting request. What the judge does with
//! an answer — parse it, re-ask, retry an expired request, fall back to a live call — stays in
//! the judge (`live.rs`), so a reply means the same whichever way it came.
//!
//! This is the in-process coordinator `run` uses: the examples wait in memory while their
//! batches run, so the run's concurrency bounds how many requests a batch can gather.

mod coordinator;
mod pack;

pub(crate) use coordinator::{error_kind, errored, persist, FIND_SCAN};
pub(crate) use pack::IDLE;

use std::sync::Arc;
use std::time::Duration;

use evalfleet_config::{Api, BatchConfig, RetryConfig};
use tokio::sync::{mpsc, oneshot};

use super::provider::batch::BatchItem;
use super::provider::ProviderClient;

/// A short name of one example of one run, the stem of its batch requests' custom_ids
/// (`e1a2b3c4-17-0-0-a0`: example 17, dimension 0, judge 0, first ask, attempt 0). Both
/// providers take `^[a-zA-Z0-9_-]{1,64}$`; a run id may hold anything, so it goes in hashed.
pub fn example_key(run_id: &str, index: u64) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(run_id.as_bytes());
    let run = u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]]);
    format!("e{run:08x}-{index}")
}

/// One request waiting for its batch.
struct Waiting {
    custom_id: String,
    line: Vec<u8>,
    answer: oneshot::Sender<BatchItem>,
}

/// The in-process batch coordinator of one provider.
pub struct Batcher {
    queue: mpsc::UnboundedSender<Waiting>,
}

/// How the coordinator of one provider works: the provider, its limits and timings.
#[derive(Clone)]
pub struct BatcherOptions {
    /// The provider's name, for metrics and logs.
    pub provider: String,
    pub api: Api,
    pub batch: BatchConfig,
    /// Transient failures of batch API calls (create, poll, download) are retried like live
    /// calls are.
    pub retry: RetryConfig,
    /// The stem of each batch's tag (`<tag>-<n>`, OpenAI `metadata.evalfleet_tag`), by which a
    /// batch can be found again.
    pub tag: String,
}

impl BatcherOptions {
    fn max_wait(&self) -> Duration {
        Duration::from_secs_f64(self.batch.max_wait_s)
    }
}

impl Batcher {
    /// Starts the coordinator of one provider on the current runtime. It runs until the last
    /// `Batcher` handle is dropped and every submitted batch has answered.
    pub fn spawn(client: Arc<ProviderClient>, options: BatcherOptions) -> Self {
        let (queue, waiting) = mpsc::unbounded_channel();
        tokio::spawn(coordinator::run(client, options, waiting));
        Batcher { queue }
    }

    /// Puts one encoded request (see [`super::provider::batch::encode_line`]) into the next
    /// batch and waits for its result. A coordinator that is gone answers `Canceled`.
    pub async fn ask(&self, custom_id: String, line: Vec<u8>) -> BatchItem {
        let (answer, result) = oneshot::channel();
        let waiting = Waiting {
            custom_id,
            line,
            answer,
        };
        if self.queue.send(waiting).is_err() {
            return BatchItem::Canceled;
        }
        result.await.unwrap_or(BatchItem::Canceled)
    }
}
