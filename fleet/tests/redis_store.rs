//! The Redis result store against a real Redis: the shared store contract, the Lua put's
//! atomicity under concurrent redeliveries, and what a stored result leaves in Redis (a bit
//! and its event: the record lives in the event until an aggregator wrote it durably).

#[path = "redis_support.rs"]
mod support;

use std::collections::HashMap;
use std::time::Duration;

use evalfleet_contract::conformance::{
    store_counts_each_index_once, store_keeps_scenarios_by_digest,
};
use evalfleet_contract::store::{Counts, PutOutcome, ResultStore};
use evalfleet_fleet::redis::EventStream;
use evalfleet_model::record::Outcome;
use support::{record, store};

#[tokio::test]
async fn redis_store_honours_the_contract() {
    let (store, _cleanup) = store().await;
    store_counts_each_index_once(&store, "a").await;
    store_keeps_scenarios_by_digest(&store, "a").await;
    let stored = ResultStore::stored(&store, "a", &[0, 3, 4]).await.unwrap();
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

/// A stored result leaves a bit in the run's `stored` bitmap (and one in `failed_bits` when it
/// failed), its count, and its event carrying the record: no copy of the record stays in Redis
/// once its event is acknowledged.
#[tokio::test]
async fn a_stored_result_is_a_bit_a_count_and_an_event() {
    let (store, cleanup) = store().await;
    store
        .put_record(&record("s", 5, Outcome::Failed))
        .await
        .unwrap();
    store
        .put_record(&record("s", 9, Outcome::Ok))
        .await
        .unwrap();
    let mut raw = support::raw();
    let key = |part: &str| format!("{}run:s:{part}", cleanup.0);
    let bit = |raw: &mut redis::Connection, part: &str, i: u64| -> u8 {
        redis::cmd("GETBIT")
            .arg(key(part))
            .arg(i)
            .query(raw)
            .unwrap()
    };
    assert_eq!(
        (
            bit(&mut raw, "stored", 5),
            bit(&mut raw, "stored", 9),
            bit(&mut raw, "stored", 6)
        ),
        (1, 1, 0)
    );
    assert_eq!(
        (
            bit(&mut raw, "failed_bits", 5),
            bit(&mut raw, "failed_bits", 9)
        ),
        (1, 0)
    );
    let results: bool = redis::cmd("EXISTS")
        .arg(key("results"))
        .query(&mut raw)
        .unwrap();
    assert!(!results, "no record hash");
    let bytes: u64 = redis::cmd("STRLEN")
        .arg(key("stored"))
        .query(&mut raw)
        .unwrap();
    assert_eq!(bytes, 2, "ten indexes fit in two bytes");
    let mut events = EventStream::new(&store, "agg", "a1").await.unwrap();
    let got = events.read(10, Duration::from_millis(100)).await.unwrap();
    let indexes: Vec<u64> = got
        .iter()
        .map(|e| e.record.as_ref().unwrap().index)
        .collect();
    assert_eq!(indexes, [5, 9], "the records travel in their events");
}
