//! Connection-loss tests against the real local Redis. They live inside the crate because they
//! need the store's own connection id: the outage is simulated by killing exactly this test's
//! connections (`CLIENT KILL ID <id> TYPE normal` from a second connection), never by
//! restarting the shared server or killing other clients' connections.

use std::time::{Duration, Instant};

use evalfleet_contract::store::{Counts, PutOutcome};
use evalfleet_model::record::{Outcome, ResultRecord};

use super::{EventStream, RedisConfig, RedisError, RedisStore};

const URL: &str = "redis://127.0.0.1:6379/";

async fn store() -> RedisStore {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let cfg = RedisConfig {
        url: URL.into(),
        prefix: format!("evalfleet-test-{}-{nanos}-reconnect:", std::process::id()),
        retention: Duration::from_secs(600),
    };
    RedisStore::connect(cfg, Duration::from_secs(10))
        .await
        .expect("a Redis at 127.0.0.1:6379")
}

fn rec(index: u64) -> ResultRecord {
    let mut r = ResultRecord::skipped(
        "r",
        "support-judge",
        index,
        None,
        format!("e{index}"),
        "x".into(),
    );
    r.outcome = Outcome::Ok;
    r
}

async fn client_id(conn: &mut redis::aio::ConnectionManager) -> i64 {
    redis::cmd("CLIENT")
        .arg("ID")
        .query_async(conn)
        .await
        .unwrap()
}

/// Kills one connection from a second connection, as a server-side drop would.
async fn kill(store: &RedisStore, id: i64) {
    let mut killer = store
        .client
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let killed: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("ID")
        .arg(id)
        .arg("TYPE")
        .arg("normal")
        .query_async(&mut killer)
        .await
        .unwrap();
    assert_eq!(killed, 1, "connection {id} killed");
}

/// Retries `put` the way a worker does (transient errors only) until it succeeds.
async fn put_until_stored(store: &RedisStore, index: u64) -> (PutOutcome, usize) {
    let start = Instant::now();
    let mut failures = 0;
    loop {
        match store.put_record(&rec(index)).await {
            Ok(o) => return (o, failures),
            Err(e) => {
                assert!(e.is_transient(), "an outage error must be transient: {e}");
                assert!(
                    start.elapsed() < Duration::from_secs(10),
                    "no reconnect: {e}"
                );
                failures += 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

#[tokio::test]
async fn puts_and_reads_go_on_after_the_connections_are_killed() {
    let store = store().await;
    assert_eq!(put_until_stored(&store, 0).await.0, PutOutcome::Stored);
    let mut events = EventStream::new(&store, "agg", "a1").await.unwrap();
    let store_conn = client_id(&mut store.conn.clone()).await;
    let events_conn = client_id(&mut events.conn).await;
    kill(&store, store_conn).await;
    kill(&store, events_conn).await;

    let (outcome, failures) = put_until_stored(&store, 1).await;
    assert_eq!(outcome, PutOutcome::Stored);
    eprintln!("put after the kill: {failures} transient failure(s) before it was stored");
    assert!(
        failures <= 2,
        "reconnected promptly ({failures} failed attempts)"
    );
    assert_ne!(
        client_id(&mut store.conn.clone()).await,
        store_conn,
        "a new connection"
    );
    assert_eq!(
        store.run_counts("r").await.unwrap(),
        Counts {
            ok: 2,
            failed: 0,
            skipped: 0
        },
        "nothing lost, nothing counted twice"
    );

    let start = Instant::now();
    let mut seen = Vec::new();
    while seen.len() < 2 {
        match events.read(10, Duration::from_millis(100)).await {
            Ok(got) => seen.extend(got.into_iter().map(|e| e.index)),
            Err(e) => assert!(e.is_transient(), "{e}"),
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "events never resumed"
        );
    }
    assert_eq!(seen, [0, 1]);
    store.purge_prefix().await.unwrap();
}

#[tokio::test]
async fn connect_gives_up_at_the_deadline_and_rejects_bad_urls() {
    let cfg = RedisConfig {
        url: "redis://:secret@127.0.0.1:1/".into(),
        ..RedisConfig::default()
    };
    let start = Instant::now();
    let err = RedisStore::connect(cfg, Duration::from_millis(300))
        .await
        .unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(5));
    assert!(
        matches!(err, RedisError::Connect { .. }) && err.is_transient(),
        "{err}"
    );
    assert!(!err.to_string().contains("secret"), "{err}");
    let bad = RedisConfig {
        url: "http://127.0.0.1/".into(),
        ..RedisConfig::default()
    };
    let err = RedisStore::connect(bad, Duration::from_secs(1))
        .await
        .unwrap_err();
    assert!(
        matches!(err, RedisError::Url { .. }) && !err.is_transient(),
        "{err}"
    );
}
