//! The batch store's promises (see [`crate::batch_store::BatchStore`]).

use std::time::Duration;

use crate::batch_store::{
    parked_message, parking_value, BatchPhase, BatchRecord, BatchStore, Parking, Question, Queued,
};

/// A provider name of this suite: leases are per provider, not per run, so each function names
/// its providers after its run, and the functions can share one store (each with its own run).
fn batch_provider(run: &str, name: &str) -> String {
    format!("{name}-{run}")
}

/// A judge question for `provider`, with a recognisable batch line.
pub fn batch_question(provider: &str, custom_id: &str) -> Question {
    Question {
        provider: provider.into(),
        custom_id: custom_id.into(),
        line: format!("{{\"custom_id\":\"{custom_id}\"}}").into_bytes(),
    }
}

/// A freshly collected batch's record.
pub fn batch_record(provider: &str, requests: u64) -> BatchRecord {
    BatchRecord {
        provider: provider.into(),
        tag: "t1".into(),
        phase: BatchPhase::Collected,
        requests,
        collected_ms: 1,
        provider_id: None,
        provider_status: None,
    }
}

fn queued(q: &Question) -> Queued {
    (q.custom_id.clone(), q.line.clone())
}

async fn has_batch_work<B: BatchStore + ?Sized>(store: &B, run: &str) -> bool {
    store.runs().await.expect("runs").iter().any(|r| r == run)
}

/// A question is queued once, by the first example that asks it, however many examples wait
/// for it; each provider has its own queue, read in pages oldest first; a run that parked an
/// example has batch work.
pub async fn batch_store_queues_a_question_once<B: BatchStore + ?Sized>(store: &B, run: &str) {
    let (openai, anthropic) = (
        batch_provider(run, "openai"),
        batch_provider(run, "anthropic"),
    );
    let a = batch_question(&openai, &format!("{run}-0-a0"));
    let b = batch_question(&openai, &format!("{run}-1-a0"));
    let c = batch_question(&anthropic, &format!("{run}-1-a1"));
    assert_eq!(
        store
            .park(run, 0, "m0", &[a.clone(), b.clone()])
            .await
            .expect("park"),
        Parking::Parked,
        "an example waiting for unanswered questions is parked"
    );
    assert_eq!(
        store
            .park(run, 1, "m1", &[b.clone(), c.clone()])
            .await
            .expect("park"),
        Parking::Parked,
        "an example waiting for a question already queued is parked too"
    );
    assert_eq!(
        store.pending_len(run, &openai).await.expect("len"),
        2,
        "a question asked by two examples must be queued once"
    );
    assert_eq!(store.pending_len(run, &anthropic).await.expect("len"), 1);
    assert_eq!(
        store.pending(run, &openai, 0, 10).await.expect("page"),
        [queued(&a), queued(&b)],
        "the queue reads oldest first, with the lines as parked"
    );
    assert_eq!(
        store.pending(run, &openai, 1, 10).await.expect("page"),
        [queued(&b)],
        "a page starts at its start"
    );
    assert_eq!(
        store.pending(run, &openai, 0, 1).await.expect("page"),
        [queued(&a)],
        "a page holds at most count questions"
    );
    assert!(
        store
            .pending(run, &openai, 5, 10)
            .await
            .expect("page")
            .is_empty(),
        "a page past the end is empty"
    );
    assert_eq!(
        store.pending(run, &anthropic, 0, 10).await.expect("page"),
        [queued(&c)],
        "each provider has its own queue"
    );
    assert!(
        has_batch_work(store, run).await,
        "a run with a parked example has batch work"
    );
    let overview = store
        .overview(run, &[openai.clone(), anthropic.clone(), "none".into()])
        .await
        .expect("overview");
    assert_eq!(
        overview.pending,
        [(openai, 2), (anthropic, 1), ("none".to_owned(), 0)],
        "the overview counts each provider's queue"
    );
    assert_eq!(overview.parked, 2, "the overview counts parked examples");
    assert!(overview.batches.is_empty(), "no batch was collected");
}

/// Results are kept by custom_id per run; parking looks at them in the same step: an example
/// whose every result is in is not parked (nobody would wake it), and one that is parked waits
/// only for the results not yet in.
pub async fn batch_store_parking_sees_answers<B: BatchStore + ?Sized>(store: &B, run: &str) {
    let openai = batch_provider(run, "openai");
    let other_run = format!("{run}-other");
    let (a, b) = (
        batch_question(&openai, &format!("{run}-0-a0")),
        batch_question(&openai, &format!("{run}-0-a1")),
    );
    assert_eq!(store.answer(run, &a.custom_id).await.expect("answer"), None);
    store
        .put_answers(run, &[(a.custom_id.clone(), "\"yes\"".into())])
        .await
        .expect("put answers");
    assert_eq!(
        store
            .answer(run, &a.custom_id)
            .await
            .expect("answer")
            .as_deref(),
        Some("\"yes\""),
        "a stored result is read back by its custom_id"
    );
    assert_eq!(
        store
            .answer(&other_run, &a.custom_id)
            .await
            .expect("answer"),
        None,
        "results belong to their run"
    );
    assert_eq!(
        store
            .park(run, 0, "m0", std::slice::from_ref(&a))
            .await
            .expect("park"),
        Parking::Answered,
        "an example whose every result is in must not be parked"
    );
    assert_eq!(
        store.overview(run, &[]).await.expect("overview").parked,
        0,
        "an answered example is not parked"
    );
    assert_eq!(
        store.pending_len(run, &openai).await.expect("len"),
        0,
        "an answered question is not queued"
    );
    assert!(
        !has_batch_work(store, run).await,
        "a run that parked nothing has no batch work"
    );
    assert_eq!(
        store
            .park(run, 0, "m0", &[a.clone(), b.clone()])
            .await
            .expect("park"),
        Parking::Parked
    );
    assert_eq!(
        store.pending(run, &openai, 0, 10).await.expect("page"),
        [queued(&b)],
        "only the unanswered question is queued"
    );
    store
        .put_answers(run, &[(b.custom_id.clone(), "\"no\"".into())])
        .await
        .expect("put answers");
    let ready = store.ready(run, &[0]).await.expect("ready");
    assert_eq!(
        ready,
        [(0, parking_value(&[b.custom_id.as_str()], "m0"))],
        "the parking awaits only what was missing, and keeps the message"
    );
    assert_eq!(parked_message(&ready[0].1), "m0");
}

/// Only the holder of a provider's lease collects, and only its provider's questions: the
/// first `count` queued move, in order, into a new batch with a number above every earlier
/// one; a question in a batch is never queued again.
pub async fn batch_store_collects_only_with_the_lease<B: BatchStore + ?Sized>(
    store: &B,
    run: &str,
) {
    let (openai, anthropic) = (
        batch_provider(run, "openai"),
        batch_provider(run, "anthropic"),
    );
    let qs: Vec<Question> = (0..3)
        .map(|i| batch_question(&openai, &format!("{run}-{i}-a0")))
        .collect();
    let other = batch_question(&anthropic, &format!("{run}-0-a1"));
    for (i, q) in qs.iter().enumerate() {
        store
            .park(run, i as u64, "m", &[q.clone(), other.clone()])
            .await
            .expect("park");
    }
    assert!(store.lease(&openai, "me", 60_000).await.expect("lease"));
    assert!(
        !store.lease(&openai, "other", 60_000).await.expect("lease"),
        "a held lease must not pass to another holder"
    );
    assert!(
        store.lease(&openai, "me", 60_000).await.expect("lease"),
        "the holder keeps its lease"
    );
    let rec = batch_record(&openai, 2);
    assert_eq!(
        store.collect(run, "other", 2, &rec).await.expect("collect"),
        None,
        "only the lease holder collects"
    );
    assert_eq!(
        store
            .collect(run, "me", 1, &batch_record(&anthropic, 1))
            .await
            .expect("collect"),
        None,
        "a lease is for its provider only"
    );
    assert_eq!(
        store.pending_len(run, &openai).await.expect("len"),
        3,
        "a refused collection moves nothing"
    );
    assert!(store.batches(run).await.expect("batches").is_empty());

    let n = store
        .collect(run, "me", 2, &rec)
        .await
        .expect("collect")
        .expect("the holder collects");
    assert_eq!(
        store.pending(run, &openai, 0, 10).await.expect("page"),
        [queued(&qs[2])],
        "the first count questions left the queue"
    );
    assert_eq!(
        store.pending_len(run, &anthropic).await.expect("len"),
        1,
        "another provider's queue is untouched"
    );
    assert_eq!(
        store.batch_cids(run, n).await.expect("cids"),
        [qs[0].custom_id.clone(), qs[1].custom_id.clone()],
        "a batch holds the collected questions in queue order"
    );
    assert_eq!(
        store.batch_questions(run, n, 0, 10).await.expect("page"),
        [queued(&qs[0]), queued(&qs[1])],
        "a collected batch keeps its lines"
    );
    assert_eq!(
        store.batch_questions(run, n, 1, 5).await.expect("page"),
        [queued(&qs[1])],
        "a batch reads in pages"
    );
    let n2 = store
        .collect(run, "me", 5, &batch_record(&openai, 1))
        .await
        .expect("collect")
        .expect("the holder collects");
    assert!(n2 > n, "batch numbers grow ({n2} after {n})");
    assert_eq!(
        store.batch_cids(run, n2).await.expect("cids"),
        [qs[2].custom_id.clone()],
        "a collection takes at most what is queued"
    );
    assert_eq!(
        store.batches(run).await.expect("batches"),
        [(n, rec), (n2, batch_record(&openai, 1))],
        "the run's batches, by number, as recorded"
    );
    store
        .park(run, 7, "m7", std::slice::from_ref(&qs[0]))
        .await
        .expect("park");
    assert_eq!(
        store.pending_len(run, &openai).await.expect("len"),
        0,
        "a question in a batch must not be queued again"
    );
}

/// A batch's state is recorded only by the lease holder; once the provider has the batch its
/// lines may go, its questions stay asked.
pub async fn batch_store_records_batches_only_with_the_lease<B: BatchStore + ?Sized>(
    store: &B,
    run: &str,
) {
    let openai = batch_provider(run, "openai");
    let qs: Vec<Question> = (0..2)
        .map(|i| batch_question(&openai, &format!("{run}-{i}-a0")))
        .collect();
    store.park(run, 0, "m0", &qs).await.expect("park");
    assert!(store.lease(&openai, "me", 60_000).await.expect("lease"));
    let collected = batch_record(&openai, 2);
    let n = store
        .collect(run, "me", 2, &collected)
        .await
        .expect("collect")
        .expect("the holder collects");
    let running = BatchRecord {
        phase: BatchPhase::Running,
        provider_id: Some("batch_1".into()),
        provider_status: Some("in_progress".into()),
        ..collected.clone()
    };
    assert!(
        !store
            .set_batch(run, n, "other", &running)
            .await
            .expect("set batch"),
        "only the lease holder records a batch"
    );
    assert_eq!(
        store.batches(run).await.expect("batches"),
        [(n, collected)],
        "a refused record writes nothing"
    );
    assert_eq!(
        store.batch_questions(run, n, 0, 10).await.expect("page"),
        [queued(&qs[0]), queued(&qs[1])],
        "a refused record keeps the lines"
    );
    assert!(store
        .set_batch(run, n, "me", &running)
        .await
        .expect("set batch"));
    assert_eq!(
        store.batches(run).await.expect("batches"),
        [(n, running.clone())],
        "the holder's record is kept"
    );
    assert_eq!(
        store.batch_cids(run, n).await.expect("cids"),
        [qs[0].custom_id.clone(), qs[1].custom_id.clone()],
        "a running batch keeps its custom_ids"
    );
    let blank: Vec<Queued> = qs
        .iter()
        .map(|q| (q.custom_id.clone(), Vec::new()))
        .collect();
    assert_eq!(
        store.batch_questions(run, n, 0, 10).await.expect("page"),
        blank,
        "the lines of a batch the provider has are let go"
    );
    store
        .park(run, 1, "m1", std::slice::from_ref(&qs[1]))
        .await
        .expect("park");
    assert_eq!(
        store.pending_len(run, &openai).await.expect("len"),
        0,
        "a question of a running batch must not be queued again"
    );
    let done = BatchRecord {
        phase: BatchPhase::Done,
        ..running
    };
    assert!(store
        .set_batch(run, n, "me", &done)
        .await
        .expect("set batch"));
    assert_eq!(store.batches(run).await.expect("batches"), [(n, done)]);
}

/// Parked examples become ready once every awaited result is in; a parking is released only as
/// it was read (a re-park in between stays); a run is retired only with nothing parked, unless
/// forced, and parking again brings it back.
pub async fn batch_store_releases_parkings_as_read<B: BatchStore + ?Sized>(store: &B, run: &str) {
    let openai = batch_provider(run, "openai");
    let (a, b) = (
        batch_question(&openai, &format!("{run}-0-a0")),
        batch_question(&openai, &format!("{run}-1-a0")),
    );
    store
        .park(run, 0, "m0", &[a.clone(), b.clone()])
        .await
        .expect("park");
    store
        .park(run, 1, "m1", std::slice::from_ref(&b))
        .await
        .expect("park");
    assert!(
        store
            .ready(run, &[0, 1, 9])
            .await
            .expect("ready")
            .is_empty(),
        "nothing is ready before its results"
    );
    store
        .put_answers(run, &[(b.custom_id.clone(), "\"expired\"".into())])
        .await
        .expect("put answers");
    let ready = store.ready(run, &[0, 1, 9]).await.expect("ready");
    assert_eq!(
        ready,
        [(1, parking_value(&[b.custom_id.as_str()], "m1"))],
        "ready: exactly the parked examples whose every result is in"
    );
    assert!(
        !store.retire(run, false).await.expect("retire"),
        "a run with parked examples must not be retired"
    );

    // Example 1 is evaluated again and parks anew before its old parking is released.
    store
        .park(run, 1, "m1 again", std::slice::from_ref(&a))
        .await
        .expect("park");
    store.unpark(run, &ready).await.expect("unpark");
    assert_eq!(
        store.overview(run, &[]).await.expect("overview").parked,
        2,
        "a parking changed since it was read must not be released"
    );
    store
        .put_answers(run, &[(a.custom_id.clone(), "\"yes\"".into())])
        .await
        .expect("put answers");
    let ready = store.ready(run, &[1, 0]).await.expect("ready");
    assert_eq!(
        ready.iter().map(|(i, _)| *i).collect::<Vec<_>>(),
        [1, 0],
        "ready answers in the order asked"
    );
    assert_eq!(parked_message(&ready[0].1), "m1 again");
    store.unpark(run, &ready).await.expect("unpark");
    assert_eq!(
        store.overview(run, &[]).await.expect("overview").parked,
        0,
        "released parkings are gone"
    );
    assert!(
        store.ready(run, &[0, 1]).await.expect("ready").is_empty(),
        "a released example is not ready again"
    );
    assert!(store.retire(run, false).await.expect("retire"));
    assert!(
        !has_batch_work(store, run).await,
        "a retired run has no batch work"
    );

    let c = batch_question(&openai, &format!("{run}-2-a0"));
    store
        .park(run, 2, "m2", std::slice::from_ref(&c))
        .await
        .expect("park");
    assert!(
        has_batch_work(store, run).await,
        "parking again brings a retired run back"
    );
    assert!(
        store.retire(run, true).await.expect("retire"),
        "a forced retirement always retires"
    );
    assert!(!has_batch_work(store, run).await);
    assert_eq!(
        store.overview(run, &[]).await.expect("overview").parked,
        1,
        "retiring forgets the run, not its parkings"
    );
}

/// A lease not renewed in time passes to the next holder, and its old holder can no longer
/// collect or record. Sleeps (blocking) for a few milliseconds.
pub async fn batch_store_lease_expires<B: BatchStore + ?Sized>(store: &B, run: &str) {
    let openai = batch_provider(run, "openai");
    store
        .park(
            run,
            0,
            "m0",
            &[batch_question(&openai, &format!("{run}-0-a0"))],
        )
        .await
        .expect("park");
    assert!(store.lease(&openai, "old", 1).await.expect("lease"));
    std::thread::sleep(Duration::from_millis(30));
    let rec = batch_record(&openai, 1);
    assert_eq!(
        store.collect(run, "old", 1, &rec).await.expect("collect"),
        None,
        "an expired lease must not collect"
    );
    assert!(
        store.lease(&openai, "new", 60_000).await.expect("lease"),
        "an expired lease passes to the next holder"
    );
    assert!(
        !store.lease(&openai, "old", 60_000).await.expect("lease"),
        "the old holder does not get it back while the new one holds it"
    );
    let n = store
        .collect(run, "new", 1, &rec)
        .await
        .expect("collect")
        .expect("the new holder collects");
    assert!(
        !store
            .set_batch(run, n, "old", &rec)
            .await
            .expect("set batch"),
        "the old holder must not record a batch"
    );
}

/// Every [`BatchStore`] promise above, each under its own run `<run>-<promise>`.
pub async fn batch_store_honours_the_contract<B: BatchStore + ?Sized>(store: &B, run: &str) {
    batch_store_queues_a_question_once(store, &format!("{run}-queue")).await;
    batch_store_parking_sees_answers(store, &format!("{run}-answers")).await;
    batch_store_collects_only_with_the_lease(store, &format!("{run}-collect")).await;
    batch_store_records_batches_only_with_the_lease(store, &format!("{run}-record")).await;
    batch_store_releases_parkings_as_read(store, &format!("{run}-release")).await;
    batch_store_lease_expires(store, &format!("{run}-expiry")).await;
}
