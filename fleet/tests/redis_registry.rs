//! The run registry against a real Redis: registration and resume, listing, progress fields,
//! finishing (every key of the run gets the retention TTL), the report lock, and the kept
//! messages of failed examples for `retry`.

#[path = "redis_support.rs"]
mod support;

use std::time::Duration;

use evalfleet_contract::store::Counts;
use evalfleet_fleet::redis::{RedisError, RunMeta, RunStatus};
use evalfleet_model::record::Outcome;
use support::{raw, record, store, store_with};

fn meta(id: &str, created_at: &str) -> RunMeta {
    RunMeta {
        id: id.into(),
        suite: "rag-layers".into(),
        status: RunStatus::Submitting,
        total: None,
        published: 0,
        created_at: created_at.into(),
        finished_at: None,
        dataset: "golden.jsonl".into(),
        judge: "heuristic".into(),
        gates_passed: None,
    }
}

fn ttl_ms(conn: &mut redis::Connection, key: &str) -> i64 {
    redis::cmd("PTTL").arg(key).query(conn).unwrap()
}

#[tokio::test]
async fn registry_round_trip_and_resume() {
    let (store, _cleanup) = store().await;
    let m = meta("r1", "2026-03-01T10:00:00Z");
    assert!(store
        .register_run(&m, r#"{"suite":"rag-layers"}"#)
        .await
        .unwrap());
    assert_eq!(store.run("r1").await.unwrap(), Some(m.clone()));
    assert_eq!(
        store.spec("r1").await.unwrap().as_deref(),
        Some(r#"{"suite":"rag-layers"}"#)
    );
    // Re-submitting under the same id is a resume: nothing changes, the first spec stays.
    let mut again = m.clone();
    again.suite = "other".into();
    assert!(!store.register_run(&again, "{}").await.unwrap());
    assert_eq!(store.run("r1").await.unwrap(), Some(m));
    assert_eq!(
        store.spec("r1").await.unwrap().as_deref(),
        Some(r#"{"suite":"rag-layers"}"#)
    );

    store.set_status("r1", RunStatus::Running).await.unwrap();
    store.add_published("r1", 3).await.unwrap();
    store.add_published("r1", 2).await.unwrap();
    store.set_total("r1", 5).await.unwrap();
    store.set_field("r1", "owner", "ci").await.unwrap();
    let got = store.run("r1").await.unwrap().unwrap();
    assert_eq!(
        (got.status, got.published, got.total),
        (RunStatus::Running, 5, Some(5))
    );
    assert_eq!(
        store.field("r1", "owner").await.unwrap().as_deref(),
        Some("ci")
    );

    // Resume: which examples are already stored.
    for i in [0, 2] {
        store
            .put_record(&record("r1", i, Outcome::Ok))
            .await
            .unwrap();
    }
    assert_eq!(
        store.stored("r1", &[0, 1, 2, 3]).await.unwrap(),
        vec![true, false, true, false]
    );
    assert_eq!(store.stored("r1", &[]).await.unwrap(), Vec::<bool>::new());

    // Unknown runs are refused, never half-created.
    for e in [
        store.set_total("nope", 1).await.unwrap_err(),
        store.add_published("nope", 1).await.unwrap_err(),
        store
            .set_status("nope", RunStatus::Running)
            .await
            .unwrap_err(),
    ] {
        assert!(
            matches!(e, RedisError::UnknownRun { ref id, .. } if id == "nope"),
            "{e}"
        );
        assert!(!e.is_transient());
    }
    assert_eq!(store.run("nope").await.unwrap(), None);
}

#[tokio::test]
async fn runs_lists_newest_first_and_forgets_expired_ones() {
    let (store, cleanup) = store().await;
    for (id, t) in [
        ("old", "2026-01-01T00:00:00Z"),
        ("new", "2026-03-01T00:00:00Z"),
        ("mid", "2026-02-01T00:00:00Z"),
    ] {
        store.register_run(&meta(id, t), "{}").await.unwrap();
    }
    let ids = |runs: Vec<RunMeta>| runs.into_iter().map(|r| r.id).collect::<Vec<_>>();
    assert_eq!(ids(store.runs(10).await.unwrap()), ["new", "mid", "old"]);
    assert_eq!(ids(store.runs(2).await.unwrap()), ["new", "mid"]);
    // "mid" expired: its registry hash is gone, the index entry is pruned on the next listing.
    let mut conn = raw();
    let _: () = redis::cmd("DEL")
        .arg(format!("{}run:mid", cleanup.0))
        .query(&mut conn)
        .unwrap();
    assert_eq!(ids(store.runs(2).await.unwrap()), ["new", "old"]);
    let left: Vec<String> = redis::cmd("ZRANGE")
        .arg(format!("{}runs", cleanup.0))
        .arg(0)
        .arg(-1)
        .query(&mut conn)
        .unwrap();
    assert_eq!(left, ["old", "new"]);
}

#[tokio::test]
async fn finish_run_applies_the_retention_to_every_key_of_the_run() {
    let (store, cleanup) = store_with(Duration::from_secs(600)).await;
    store
        .register_run(&meta("f", "2026-03-01T00:00:00Z"), "{}")
        .await
        .unwrap();
    store.set_status("f", RunStatus::Running).await.unwrap();
    store
        .put_record(&record("f", 0, Outcome::Ok))
        .await
        .unwrap();
    store
        .put_record(&record("f", 1, Outcome::Failed))
        .await
        .unwrap();
    store
        .keep_failed_message("f", 1, r#"{"index":1}"#)
        .await
        .unwrap();
    let keys: Vec<String> = ["", ":spec", ":stored", ":counts", ":failed", ":failed_bits"]
        .iter()
        .map(|p| format!("{}run:f{p}", cleanup.0))
        .collect();
    let mut conn = raw();
    for k in &keys {
        assert_eq!(ttl_ms(&mut conn, k), -1, "{k} lives while the run runs");
    }
    store
        .finish_run("f", false, "# Summary\n", "/reports/f")
        .await
        .unwrap();
    for k in keys.iter().chain([&format!("{}run:f:summary", cleanup.0)]) {
        let ttl = ttl_ms(&mut conn, k);
        assert!(ttl > 590_000 && ttl <= 600_000, "{k} has TTL {ttl}");
    }
    let done = store.run("f").await.unwrap().unwrap();
    assert_eq!(done.status, RunStatus::Complete);
    assert_eq!(done.gates_passed, Some(false));
    assert!(done.finished_at.is_some());
    assert_eq!(
        store.summary("f").await.unwrap().as_deref(),
        Some("# Summary\n")
    );
    assert_eq!(
        store.field("f", "report_dir").await.unwrap().as_deref(),
        Some("/reports/f")
    );
    // `retry` reopens it: the keys are kept again, the old verdict is cleared.
    store.set_status("f", RunStatus::Running).await.unwrap();
    for k in &keys {
        assert_eq!(ttl_ms(&mut conn, k), -1, "{k} kept again after reopening");
    }
    let reopened = store.run("f").await.unwrap().unwrap();
    assert_eq!((reopened.finished_at, reopened.gates_passed), (None, None));
    // Cancelling finishes it too.
    store.set_status("f", RunStatus::Cancelled).await.unwrap();
    for k in &keys {
        assert!(ttl_ms(&mut conn, k) > 0, "{k} expires once cancelled");
    }

    // A redelivery after the run expired does not leave keys without a TTL behind.
    let _: () = redis::cmd("DEL").arg(&keys).query(&mut conn).unwrap();
    store
        .put_record(&record("f", 7, Outcome::Ok))
        .await
        .unwrap();
    assert!(ttl_ms(&mut conn, &keys[2]) > 0, "orphan results expire");
    assert!(ttl_ms(&mut conn, &keys[3]) > 0, "orphan counts expire");
}

#[tokio::test]
async fn the_report_lock_is_exclusive() {
    let (store, _cleanup) = store().await;
    let ttl = Duration::from_secs(30);
    assert!(store.try_lock_report("r", "agg-1", ttl).await.unwrap());
    assert!(!store.try_lock_report("r", "agg-2", ttl).await.unwrap());
    assert!(!store.try_lock_report("r", "agg-1", ttl).await.unwrap());
    assert!(
        !store.release_report_lock("r", "agg-2").await.unwrap(),
        "not its lock"
    );
    assert!(store.release_report_lock("r", "agg-1").await.unwrap());
    assert!(store
        .try_lock_report("r", "agg-2", Duration::from_millis(100))
        .await
        .unwrap());
    tokio::time::sleep(Duration::from_millis(250)).await;
    assert!(
        store.try_lock_report("r", "agg-3", ttl).await.unwrap(),
        "expired locks free up"
    );
}

#[tokio::test]
async fn take_failed_returns_kept_messages_and_uncounts_their_results() {
    let (store, _cleanup) = store().await;
    store
        .put_record(&record("t", 0, Outcome::Ok))
        .await
        .unwrap();
    for i in [1, 2] {
        store
            .put_record(&record("t", i, Outcome::Failed))
            .await
            .unwrap();
        store
            .keep_failed_message("t", i, &format!(r#"{{"index":{i}}}"#))
            .await
            .unwrap();
    }
    // Kept by a worker that crashed before storing its result: re-published as well.
    store
        .keep_failed_message("t", 3, r#"{"index":3}"#)
        .await
        .unwrap();
    let mut msgs = store.take_failed("t").await.unwrap();
    msgs.sort();
    assert_eq!(msgs, [r#"{"index":1}"#, r#"{"index":2}"#, r#"{"index":3}"#]);
    assert_eq!(
        store.run_counts("t").await.unwrap(),
        Counts {
            ok: 1,
            failed: 0,
            skipped: 0
        }
    );
    assert_eq!(
        store.stored("t", &[0, 1, 2]).await.unwrap(),
        [true, false, false]
    );
    assert!(
        store.take_failed("t").await.unwrap().is_empty(),
        "taken once"
    );
    // The re-published examples are stored and counted afresh.
    store
        .put_record(&record("t", 1, Outcome::Ok))
        .await
        .unwrap();
    assert_eq!(store.run_counts("t").await.unwrap().ok, 2);
}

/// The registry contract every role relies on, as the in-process registry honours it.
#[tokio::test]
async fn redis_registry_honours_the_contract() {
    let (store, _cleanup) = store().await;
    evalfleet_contract::conformance::registry_keeps_a_runs_life(&store, "life").await;
}
