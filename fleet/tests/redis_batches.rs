//! Batch mode's store against a real Redis: a question is queued once however many examples
//! ask it, parking sees a result already in, only the lease holder collects, a parking is
//! released only as it was read, and a finished run's batch keys expire with the rest of it;
//! and the `BatchStore` conformance suite the in-process store passes too.

#[path = "redis_support.rs"]
mod support;

use std::time::Duration;

use evalfleet_contract::batch_store::{BatchStore, Parking};
use evalfleet_contract::conformance::{
    batch_question as question, batch_record as record, batch_store_honours_the_contract,
};
use evalfleet_fleet::redis::{RunMeta, RunStatus};
use support::{raw, store_with};

fn ttl_ms(conn: &mut redis::Connection, key: &str) -> i64 {
    redis::cmd("PTTL").arg(key).query(conn).unwrap()
}

#[tokio::test]
async fn redis_batch_store_honours_the_contract() {
    let (store, _cleanup) = store_with(Duration::from_secs(600)).await;
    batch_store_honours_the_contract(&store, "c").await;
}

#[tokio::test]
async fn questions_are_queued_once_and_collected_by_the_lease_holder_only() {
    let (store, _cleanup) = store_with(Duration::from_secs(600)).await;
    let (a, b) = (question("openai", "e1-0-a0"), question("openai", "e1-1-a0"));
    let parked = store
        .park("r", 0, "m0", &[a.clone(), b.clone()])
        .await
        .unwrap();
    assert_eq!(parked, Parking::Parked);
    // Another example asking one of the same questions waits for it without queueing it again.
    let parked = store
        .park("r", 1, "m1", std::slice::from_ref(&b))
        .await
        .unwrap();
    assert_eq!(parked, Parking::Parked);
    assert_eq!(store.pending_len("r", "openai").await.unwrap(), 2);
    let second = store.pending("r", "openai", 1, 10).await.unwrap();
    assert_eq!(second, [(b.custom_id.clone(), b.line.clone())], "a page");
    assert_eq!(BatchStore::runs(&store).await.unwrap(), ["r"]);

    assert!(store.lease("openai", "me", 10_000).await.unwrap());
    assert!(!store.lease("openai", "other", 10_000).await.unwrap());
    let rec = record("openai", 2);
    assert_eq!(store.collect("r", "other", 2, &rec).await.unwrap(), None);
    let n = store.collect("r", "me", 2, &rec).await.unwrap().unwrap();
    assert_eq!(store.pending_len("r", "openai").await.unwrap(), 0);
    let queued = store.batch_questions("r", n, 1, 5).await.unwrap();
    assert_eq!(queued, [(b.custom_id.clone(), b.line.clone())], "a page");
    let cids = store.batch_cids("r", n).await.unwrap();
    assert_eq!(cids, [a.custom_id.clone(), b.custom_id.clone()]);

    // One result in: example 1 is ready, example 0 still waits for the other.
    let answer = (b.custom_id.clone(), "\"expired\"".to_owned());
    store.put_answers("r", &[answer]).await.unwrap();
    let ready = store.ready("r", &[0, 1]).await.unwrap();
    assert_eq!(ready.len(), 1);
    assert_eq!(ready[0].0, 1);
    // Parking an example whose every result is in does not park it.
    let again = store
        .park("r", 2, "m2", std::slice::from_ref(&b))
        .await
        .unwrap();
    assert_eq!(again, Parking::Answered);

    // A re-park between reading and releasing is kept.
    store
        .park("r", 1, "m1 again", std::slice::from_ref(&a))
        .await
        .unwrap();
    store.unpark("r", &ready).await.unwrap();
    assert_eq!(store.overview("r", &[]).await.unwrap().parked, 2);
    assert!(
        !store.retire("r", false).await.unwrap(),
        "examples are parked"
    );
    assert!(store.retire("r", true).await.unwrap());
    assert!(BatchStore::runs(&store).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_finished_runs_batch_keys_expire_with_the_run() {
    let (store, cleanup) = store_with(Duration::from_secs(600)).await;
    let meta = RunMeta {
        id: "f".into(),
        suite: "support-judge".into(),
        status: RunStatus::Running,
        total: Some(3),
        published: 3,
        created_at: "2026-11-25T00:00:00Z".into(),
        finished_at: None,
        dataset: "d.jsonl".into(),
        judge: "live".into(),
        gates_passed: None,
    };
    store.register_run(&meta, "{}").await.unwrap();
    let questions = [question("openai", "q1"), question("anthropic", "q2")];
    store.park("f", 0, "m0", &questions).await.unwrap();
    store
        .park("f", 1, "m1", &[question("openai", "q3")])
        .await
        .unwrap();
    assert!(store.lease("openai", "me", 10_000).await.unwrap());
    let n = store
        .collect("f", "me", 1, &record("openai", 1))
        .await
        .unwrap()
        .unwrap();
    store
        .put_answers("f", &[("q1".into(), "\"expired\"".into())])
        .await
        .unwrap();

    let key = |part: &str| format!("{}run:f:batch:{part}", cleanup.0);
    let keys: Vec<String> = [
        "questions",
        "answers",
        "parked",
        "batches",
        "next",
        "providers",
        &format!("cids:{n}"),
        "pending:openai",
        "pending:anthropic",
    ]
    .iter()
    .map(|p| key(p))
    .collect();
    let mut conn = raw();
    for k in &keys {
        assert_eq!(
            ttl_ms(&mut conn, k),
            -1,
            "{k} exists and lives while the run runs"
        );
    }
    store.finish_run("f", true, "", "/r").await.unwrap();
    for k in &keys {
        let ttl = ttl_ms(&mut conn, k);
        assert!(ttl > 590_000 && ttl <= 600_000, "{k} has TTL {ttl}");
    }
    store.set_status("f", RunStatus::Running).await.unwrap();
    for k in &keys {
        assert_eq!(ttl_ms(&mut conn, k), -1, "{k} kept again after reopening");
    }
}
