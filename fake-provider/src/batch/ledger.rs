//! Every request accepted into a batch, counted by `custom_id`: the proof a test needs that a
//! client never paid for a request twice. Keys are 64-bit hashes (a million-request run costs
//! tens of megabytes, not the ids' text); the ids seen more than once are kept in full.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::{json, Value};

use crate::judge::stable_hash;
use crate::stats::Provider;

/// The most repeated ids listed in full.
const MAX_LISTED: usize = 1_000;

#[derive(Debug, Default)]
pub(crate) struct BatchLedger {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    counts: [HashMap<u64, u32>; 2],
    requests: [u64; 2],
    batches: [u64; 2],
    repeated: [Vec<String>; 2],
}

impl BatchLedger {
    /// Counts one request accepted into a batch.
    pub(crate) fn count(&self, provider: Provider, custom_id: &str) {
        let p = provider as usize;
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.requests[p] += 1;
        let n = inner.counts[p]
            .entry(stable_hash(0, custom_id))
            .or_insert(0);
        *n += 1;
        if *n == 2 && inner.repeated[p].len() < MAX_LISTED {
            inner.repeated[p].push(custom_id.to_owned());
        }
    }

    /// Counts one batch accepted.
    pub(crate) fn count_batch(&self, provider: Provider) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.batches[provider as usize] += 1;
    }

    /// How often `custom_id` went into a batch of `provider`.
    #[cfg(test)]
    pub fn times(&self, provider: Provider, custom_id: &str) -> u32 {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.counts[provider as usize]
            .get(&stable_hash(0, custom_id))
            .copied()
            .unwrap_or(0)
    }

    /// Forgets everything (`POST /admin/reset`).
    pub(crate) fn reset(&self) {
        *self.inner.lock().unwrap_or_else(|e| e.into_inner()) = Inner::default();
    }

    /// The `batches` part of `GET /stats`: per provider, batches and requests accepted,
    /// distinct custom_ids, and the ids accepted more than once.
    pub(crate) fn to_json(&self) -> Value {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = serde_json::Map::new();
        for provider in Provider::ALL {
            let p = provider as usize;
            out.insert(
                provider.name().into(),
                json!({
                    "batches": inner.batches[p],
                    "requests": inner.requests[p],
                    "distinct_custom_ids": inner.counts[p].len(),
                    "repeated_custom_ids": inner.repeated[p],
                }),
            );
        }
        Value::Object(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_are_listed() {
        let ledger = BatchLedger::default();
        ledger.count(Provider::OpenAi, "a");
        ledger.count(Provider::OpenAi, "b");
        ledger.count(Provider::OpenAi, "a");
        ledger.count(Provider::Anthropic, "a");
        assert_eq!(ledger.times(Provider::OpenAi, "a"), 2);
        assert_eq!(ledger.times(Provider::Anthropic, "a"), 1);
        let json = ledger.to_json();
        assert_eq!(json["openai"]["requests"], 3);
        assert_eq!(json["openai"]["distinct_custom_ids"], 2);
        assert_eq!(json["openai"]["repeated_custom_ids"], json!(["a"]));
        assert_eq!(json["anthropic"]["repeated_custom_ids"], json!([]));
    }
}
