//! A batch goes through the coordinator a page at a time, never whole: its questions from the
//! store into a batch body spooled on disk, and its results from the download into the store.
//! A provider batch holds up to 100,000 requests (256 MB); a page is a thousand.

use evalfleet_config::Api;
use evalfleet_contract::batch_store::BatchStore;
use evalfleet_contract::store::StoreError;

use super::crash_point;
use super::error::StepError;
use crate::judge::provider::batch::{framing_bytes, BatchBody, BatchItem, BodyWriter};

/// How many questions or examples one store call reads or writes.
pub(super) const SLICE: usize = 1000;

/// The head of a provider's queue, spooled.
pub(super) struct Head {
    /// As many of the first questions as fit the limits.
    pub body: BodyWriter,
    /// The first question (custom_id, bytes), when it alone is over the byte limit.
    pub oversize: Option<(String, usize)>,
}

/// Spools the first questions queued for `provider` into a batch body, as many as fit
/// `(max_requests, max_bytes)`.
pub(super) async fn spool_head(
    store: &dyn BatchStore,
    run: &str,
    provider: &str,
    api: Api,
    (max_requests, max_bytes): (usize, usize),
) -> Result<Head, StepError> {
    let mut body = BodyWriter::new(api)?;
    let mut bytes = 0;
    while body.requests() < max_requests {
        let want = SLICE.min(max_requests - body.requests());
        let page = store.pending(run, provider, body.requests(), want).await?;
        let last = page.len() < want;
        for (cid, line) in page {
            if bytes + line.len() + framing_bytes(api, body.requests() + 1) > max_bytes {
                let oversize = (body.requests() == 0).then_some((cid, line.len()));
                return Ok(Head { body, oversize });
            }
            bytes += line.len();
            body.push(&line)?;
        }
        if last {
            break;
        }
    }
    Ok(Head {
        body,
        oversize: None,
    })
}

/// Batch `n`'s body, spooled from the store (for a create after a crash).
pub(super) async fn spool_batch(
    store: &dyn BatchStore,
    run: &str,
    n: u64,
    api: Api,
) -> Result<BatchBody, StepError> {
    let mut body = BodyWriter::new(api)?;
    loop {
        let page = store
            .batch_questions(run, n, body.requests(), SLICE)
            .await?;
        let last = page.len() < SLICE;
        for (_, line) in &page {
            body.push(line)?;
        }
        if last {
            return Ok(body.finish()?);
        }
    }
}

/// Results on their way to the store, a page at a time.
pub(super) struct Answers<'a> {
    store: &'a dyn BatchStore,
    run: &'a str,
    page: Vec<(String, String)>,
    first: bool,
}

impl<'a> Answers<'a> {
    pub fn new(store: &'a dyn BatchStore, run: &'a str) -> Self {
        Answers {
            store,
            run,
            page: Vec::with_capacity(SLICE),
            first: true,
        }
    }

    pub async fn push(&mut self, custom_id: String, item: &BatchItem) -> Result<(), StoreError> {
        self.page.push((custom_id, to_json(item)));
        if self.page.len() == SLICE {
            self.flush().await?;
        }
        Ok(())
    }

    /// Stores what is pushed so far.
    pub async fn flush(&mut self) -> Result<(), StoreError> {
        if self.page.is_empty() {
            return Ok(());
        }
        self.store.put_answers(self.run, &self.page).await?;
        self.page.clear();
        if std::mem::take(&mut self.first) {
            crash_point("batch-downloading");
        }
        Ok(())
    }
}

/// A result as the store keeps it.
pub(super) fn to_json(item: &BatchItem) -> String {
    serde_json::to_string(item).unwrap_or_else(|_| "\"canceled\"".into())
}
