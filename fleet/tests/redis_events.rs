//! The events stream against a real Redis: an aggregator reads and acks the results the put
//! script announced, and a second aggregator claims what a crashed one read but never acked.

#[path = "redis_support.rs"]
mod support;

use std::time::{Duration, Instant};

use evalfleet_fleet::redis::EventStream;
use evalfleet_model::record::Outcome;
use support::{raw, record, store};

fn xlen(key: &str) -> u64 {
    redis::cmd("XLEN").arg(key).query(&mut raw()).unwrap()
}

/// A run's results stored but not yet acknowledged by an aggregator.
fn in_flight(counts: &str) -> u64 {
    let n: Option<u64> = redis::cmd("HGET")
        .arg(counts)
        .arg("in_flight")
        .query(&mut raw())
        .unwrap();
    n.unwrap_or(0)
}

#[tokio::test]
async fn read_then_ack_removes_events() {
    let (store, cleanup) = store().await;
    let events_key = format!("{}events", cleanup.0);
    let mut agg = EventStream::new(&store, "aggregators", "a1").await.unwrap();
    // Nothing yet: the read waits `block`, then answers empty.
    let t = Instant::now();
    assert!(agg
        .read(10, Duration::from_millis(200))
        .await
        .unwrap()
        .is_empty());
    assert!(t.elapsed() >= Duration::from_millis(150));

    for i in 0..5 {
        store
            .put_record(&record("ev", i, Outcome::Ok))
            .await
            .unwrap();
    }
    store
        .put_record(&record("ev", 2, Outcome::Ok))
        .await
        .unwrap(); // redelivery: no event
    let got = agg.read(3, Duration::from_millis(200)).await.unwrap();
    assert_eq!(got.iter().map(|e| e.index).collect::<Vec<_>>(), [0, 1, 2]);
    let rest = agg.read(10, Duration::from_millis(200)).await.unwrap();
    assert_eq!(rest.iter().map(|e| e.index).collect::<Vec<_>>(), [3, 4]);
    for e in got.iter().chain(&rest) {
        assert_eq!(e.run_id, "ev");
        let rec = e.record.as_ref().expect("record parses");
        assert_eq!(
            (rec.index, rec.id.as_str()),
            (e.index, format!("e{}", e.index).as_str())
        );
    }
    let ids: Vec<(String, String)> = got
        .iter()
        .chain(&rest)
        .map(|e| (e.id.clone(), e.run_id.clone()))
        .collect();
    let counts = format!("{}run:ev:counts", cleanup.0);
    assert_eq!(in_flight(&counts), 5, "stored, not yet acknowledged");
    agg.ack(&ids).await.unwrap();
    assert_eq!(in_flight(&counts), 0, "acknowledged: durable elsewhere");
    agg.ack(&ids).await.unwrap();
    assert_eq!(in_flight(&counts), 0, "counted once");
    agg.ack(&[]).await.unwrap();
    assert_eq!(xlen(&events_key), 0, "acked events are deleted");
    // A second EventStream in the same group (restart) sees nothing new.
    let mut again = EventStream::new(&store, "aggregators", "a1").await.unwrap();
    assert!(again
        .read(10, Duration::from_millis(50))
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn a_second_consumer_claims_what_a_crashed_one_left_unacked() {
    let (store, _cleanup) = store().await;
    let mut crashed = EventStream::new(&store, "aggregators", "a1").await.unwrap();
    let mut survivor = EventStream::new(&store, "aggregators", "a2").await.unwrap();
    for i in 0..4 {
        store
            .put_record(&record("cl", i, Outcome::Failed))
            .await
            .unwrap();
    }
    let taken = crashed.read(10, Duration::from_millis(200)).await.unwrap();
    assert_eq!(taken.len(), 4);
    drop(crashed); // never acks

    // Too fresh to claim yet.
    let min_idle = Duration::from_millis(300);
    assert!(survivor.claim_stale(min_idle, 10).await.unwrap().is_empty());
    assert!(survivor
        .read(10, Duration::from_millis(50))
        .await
        .unwrap()
        .is_empty());
    tokio::time::sleep(Duration::from_millis(350)).await;
    let claimed = survivor.claim_stale(min_idle, 3).await.unwrap();
    let more = survivor.claim_stale(min_idle, 3).await.unwrap();
    let mut indices: Vec<u64> = claimed.iter().chain(&more).map(|e| e.index).collect();
    indices.sort();
    assert_eq!(indices, [0, 1, 2, 3]);
    assert!(claimed.iter().chain(&more).all(|e| e
        .record
        .as_ref()
        .is_some_and(|r| r.outcome == Outcome::Failed)));
    let ids: Vec<(String, String)> = claimed
        .iter()
        .chain(&more)
        .map(|e| (e.id.clone(), e.run_id.clone()))
        .collect();
    survivor.ack(&ids).await.unwrap();
    tokio::time::sleep(Duration::from_millis(350)).await;
    assert!(
        survivor.claim_stale(min_idle, 10).await.unwrap().is_empty(),
        "acked: nothing left"
    );
}

#[tokio::test]
async fn an_unreadable_record_arrives_as_none_and_a_lost_group_is_recreated() {
    let (store, cleanup) = store().await;
    let key = format!("{}events", cleanup.0);
    let mut agg = EventStream::new(&store, "aggregators", "a1").await.unwrap();
    let mut conn = raw();
    let _: String = redis::cmd("XADD")
        .arg(&key)
        .arg("*")
        .arg("run")
        .arg("x")
        .arg("index")
        .arg(9)
        .arg("record")
        .arg("{broken")
        .query(&mut conn)
        .unwrap();
    let got = agg.read(10, Duration::from_millis(100)).await.unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!((got[0].run_id.as_str(), got[0].index), ("x", 9));
    assert!(got[0].record.is_none());
    agg.ack(&[(got[0].id.clone(), got[0].run_id.clone())])
        .await
        .unwrap();

    // Redis restarted without persistence: the stream and its group are gone.
    let _: () = redis::cmd("DEL").arg(&key).query(&mut conn).unwrap();
    store
        .put_record(&record("x", 0, Outcome::Ok))
        .await
        .unwrap();
    let got = agg.read(10, Duration::from_millis(100)).await.unwrap();
    assert_eq!(got.iter().map(|e| e.index).collect::<Vec<_>>(), [0]);
}
