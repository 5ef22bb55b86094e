//! Where the batches live: every batch of both dialects (newest last, for listing), the OpenAI
//! files, and the ledger; plus what both dialects' handlers share on the wire (a page of a
//! listing, a JSONL body).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::{openai_files, Batch, BatchLedger};
use crate::stats::Provider;

/// A JSONL body (batch results), as the providers send it.
pub(crate) fn jsonl_response(
    body: Vec<u8>,
    content_type: &'static str,
) -> axum::response::Response {
    let mut response = axum::response::Response::new(axum::body::Body::from(body));
    response.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static(content_type),
    );
    response
}

/// One page of a newest-first listing.
pub(crate) struct Page<'a> {
    pub ids: &'a [String],
    pub has_more: bool,
}

/// The page of at most `limit` ids that follows `after` (or, with `before`, precedes it) in
/// `ids`; both providers page this way (OpenAI names the cursor `after`).
pub(crate) fn page<'a>(
    ids: &'a [String],
    after: Option<&String>,
    before: Option<&String>,
    limit: usize,
) -> Page<'a> {
    let position = |cursor: &String| ids.iter().position(|id| id == cursor);
    let (start, end) = match (after, before) {
        (Some(after), _) => {
            let start = position(after).map_or(ids.len(), |i| i + 1);
            (start, (start + limit).min(ids.len()))
        }
        (None, Some(before)) => {
            let end = position(before).unwrap_or(0);
            (end.saturating_sub(limit), end)
        }
        (None, None) => (0, limit.min(ids.len())),
    };
    let has_more = if before.is_some() && after.is_none() {
        start > 0
    } else {
        end < ids.len()
    };
    Page {
        ids: &ids[start..end],
        has_more,
    }
}

/// Every batch of both dialects, newest last, and the OpenAI files.
#[derive(Debug, Default)]
pub(crate) struct Batches {
    inner: Mutex<Inner>,
    ledger: BatchLedger,
}

#[derive(Debug, Default)]
struct Inner {
    batches: HashMap<String, Arc<Mutex<Batch>>>,
    order: Vec<(Provider, String)>,
    files: HashMap<String, Arc<openai_files::File>>,
}

impl Batches {
    /// Registers a batch and counts its requests in the ledger.
    pub(crate) fn insert(&self, batch: Batch) -> Arc<Mutex<Batch>> {
        for item in &batch.items {
            self.ledger.count(batch.provider, &item.custom_id);
        }
        let mut inner = self.lock();
        let id = batch.id.clone();
        inner.order.push((batch.provider, id.clone()));
        let batch = Arc::new(Mutex::new(batch));
        inner.batches.insert(id, Arc::clone(&batch));
        batch
    }

    /// The batch with this id, if it belongs to `provider`.
    fn get(&self, provider: Provider, id: &str) -> Option<Arc<Mutex<Batch>>> {
        let batch = Arc::clone(self.lock().batches.get(id)?);
        let same = batch.lock().unwrap_or_else(|e| e.into_inner()).provider == provider;
        same.then_some(batch)
    }

    /// Runs `f` on the batch with this id, locked, if it belongs to `provider`.
    pub(crate) fn with<R>(
        &self,
        provider: Provider,
        id: &str,
        f: impl FnOnce(&mut Batch) -> R,
    ) -> Option<R> {
        let batch = self.get(provider, id)?;
        let mut batch = batch.lock().unwrap_or_else(|e| e.into_inner());
        Some(f(&mut batch))
    }

    /// The ids of `provider`'s batches, newest first.
    pub(crate) fn ids_newest_first(&self, provider: Provider) -> Vec<String> {
        self.lock()
            .order
            .iter()
            .rev()
            .filter(|(p, _)| *p == provider)
            .map(|(_, id)| id.clone())
            .collect()
    }

    pub(crate) fn put_file(&self, file: openai_files::File) -> Arc<openai_files::File> {
        let file = Arc::new(file);
        self.lock().files.insert(file.id.clone(), Arc::clone(&file));
        file
    }

    pub(crate) fn file(&self, id: &str) -> Option<Arc<openai_files::File>> {
        self.lock().files.get(id).cloned()
    }

    /// Requests accepted in batches, by `custom_id`.
    pub(crate) fn ledger(&self) -> &BatchLedger {
        &self.ledger
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_follow_and_precede_their_cursor() {
        let ids: Vec<String> = (0..5).map(|i| format!("b{i}")).collect();
        let first = page(&ids, None, None, 2);
        assert_eq!((first.ids, first.has_more), (&ids[0..2], true));
        let next = page(&ids, Some(&ids[1]), None, 2);
        assert_eq!(next.ids, &ids[2..4]);
        let last = page(&ids, Some(&ids[3]), None, 2);
        assert_eq!((last.ids, last.has_more), (&ids[4..5], false));
        let back = page(&ids, None, Some(&ids[3]), 2);
        assert_eq!((back.ids, back.has_more), (&ids[1..3], true));
    }
}
