//! The Redis result store against a real Redis: the shared store contract, the Lua put's
//! atomicity under concurrent redeliveries, and streaming results back in index order.

#[path = "redis_support.rs"]
mod support;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use evalfleet_contract::conformance::{
    store_counts_each_index_once, store_keeps_scenarios_by_digest, store_streams_in_index_order,
};
use evalfleet_contract::store::{Counts, PutOutcome, ResultStore, StoreError};
use evalfleet_fleet::redis::{EventStream, RedisStore, RunItems};
use evalfleet_model::record::{Outcome, ResultRecord};
use evalfleet_report::{ItemSource, ReportError};
use support::{record, store};

/// The store for writing and RunItems for reading, as the one type the contract expects.
struct StoreAndItems {
    store: RedisStore,
    items: RunItems,
}

#[async_trait]
impl ResultStore for StoreAndItems {
    async fn put(&self, rec: ResultRecord) -> Result<PutOutcome, StoreError> {
        self.store.put(rec).await
    }
    async fn counts(&self, run_id: &str) -> Result<Counts, StoreError> {
        ResultStore::counts(&self.store, run_id).await
    }
    async fn stored(&self, run_id: &str, indices: &[u64]) -> Result<Vec<bool>, StoreError> {
        ResultStore::stored(&self.store, run_id, indices).await
    }
    async fn put_scenario(&self, run_id: &str, digest: &str, json: &str) -> Result<(), StoreError> {
        self.store.put_scenario(run_id, digest, json).await
    }
    async fn scenario(&self, run_id: &str, digest: &str) -> Result<Option<String>, StoreError> {
        self.store.scenario(run_id, digest).await
    }
}

impl ItemSource for StoreAndItems {
    fn for_each_item(
        &self,
        only: Option<Outcome>,
        f: &mut dyn FnMut(&ResultRecord) -> Result<(), ReportError>,
    ) -> Result<(), ReportError> {
        self.items.for_each_item(only, f)
    }
}

#[tokio::test]
async fn redis_store_honours_the_contract() {
    let (store, _cleanup) = store().await;
    store_counts_each_index_once(&store, "a").await;
    store_keeps_scenarios_by_digest(&store, "a").await;
    let items = RunItems::new(&store, "b", 6).unwrap();
    let both = StoreAndItems { store, items };
    store_streams_in_index_order(&both, "b").await;
    let stored = ResultStore::stored(&both, "a", &[0, 3, 4]).await.unwrap();
    assert_eq!(stored, vec![true, true, false]);
}

/// Through [`ResultStore::put`] (the group commit, many results to a script call) and through
/// `put_record` (a call each), concurrent redeliveries are stored and counted once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_redeliveries_are_stored_and_counted_once() {
    for grouped in [true, false] {
        concurrent_redeliveries(grouped).await;
    }
}

async fn concurrent_redeliveries(grouped: bool) {
    let (store, _cleanup) = store().await;
    let outcome = |i: u64| match i % 3 {
        0 => Outcome::Ok,
        1 => Outcome::Failed,
        _ => Outcome::Skipped,
    };
    let n = 60u64;
    let mut tasks = Vec::new();
    for t in 0..16u64 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let mut stored = 0;
            // Each task walks the indices from a different starting point.
            for k in 0..n {
                let i = (k + t * 7) % n;
                let rec = record("c", i, outcome(i));
                let put = if grouped {
                    ResultStore::put(&store, rec).await.unwrap()
                } else {
                    store.put_record(&rec).await.unwrap()
                };
                if put == PutOutcome::Stored {
                    stored += 1;
                }
            }
            stored
        }));
    }
    let mut stored = 0;
    for t in tasks {
        stored += t.await.unwrap();
    }
    assert_eq!(stored, n, "each index is stored by exactly one put");
    assert_eq!(
        store.run_counts("c").await.unwrap(),
        Counts {
            ok: 20,
            failed: 20,
            skipped: 20
        }
    );
    let mut events = EventStream::new(&store, "agg", "a1").await.unwrap();
    let got = events.read(1000, Duration::from_millis(100)).await.unwrap();
    let mut per_index: HashMap<u64, usize> = HashMap::new();
    for e in &got {
        assert_eq!(e.run_id, "c");
        assert_eq!(e.record.as_ref().unwrap().index, e.index);
        *per_index.entry(e.index).or_default() += 1;
    }
    assert_eq!(per_index.len(), n as usize, "an event for every index");
    assert!(per_index.values().all(|c| *c == 1), "one event per index");
}

#[tokio::test]
async fn items_stream_across_batches_with_gaps_and_outcome_filter() {
    let (store, _cleanup) = store().await;
    let total = 2_500u64;
    for i in (0..total).rev().filter(|i| i % 7 != 3) {
        let o = if i % 5 == 0 {
            Outcome::Failed
        } else {
            Outcome::Ok
        };
        store.put_record(&record("big", i, o)).await.unwrap();
    }
    let items = RunItems::new(&store, "big", total).unwrap();
    let items = Arc::new(items);
    let handles: Vec<_> = [None, Some(Outcome::Failed)]
        .into_iter()
        .map(|only| {
            let items = items.clone();
            std::thread::spawn(move || {
                let mut seen = Vec::new();
                items
                    .for_each_item(only, &mut |r| {
                        seen.push(r.index);
                        Ok(())
                    })
                    .unwrap();
                seen
            })
        })
        .collect();
    let mut results = handles.into_iter().map(|h| h.join().unwrap());
    let all = results.next().unwrap();
    let failed = results.next().unwrap();
    let want: Vec<u64> = (0..total).filter(|i| i % 7 != 3).collect();
    assert_eq!(all, want, "every stored index, in order, gaps skipped");
    let want_failed: Vec<u64> = want.iter().copied().filter(|i| i % 5 == 0).collect();
    assert_eq!(failed, want_failed);
    // The callback's error stops the stream and comes back unchanged.
    let err = items
        .for_each_item(None, &mut |_| Err(ReportError::Source("stop".into())))
        .unwrap_err();
    assert!(matches!(err, ReportError::Source(ref m) if m == "stop"));
}

#[tokio::test]
async fn a_corrupt_stored_record_is_reported_with_its_index() {
    let (store, cleanup) = store().await;
    store
        .put_record(&record("bad", 0, Outcome::Ok))
        .await
        .unwrap();
    let mut raw = support::raw();
    let _: () = redis::cmd("HSET")
        .arg(format!("{}run:bad:results", cleanup.0))
        .arg(1)
        .arg("{not json")
        .query(&mut raw)
        .unwrap();
    let items = RunItems::new(&store, "bad", 2).unwrap();
    let err = tokio::task::spawn_blocking(move || {
        items
            .for_each_item(None, &mut |_| Ok(()))
            .unwrap_err()
            .to_string()
    })
    .await
    .unwrap();
    assert!(err.contains("result 1 of run 'bad'"), "{err}");
}
