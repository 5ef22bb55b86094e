//! The contract every [`WorkQueue`], [`ResultStore`] and [`RunRegistry`] implementation must
//! honour, as tests
//! generic over the implementation: the in-process pair runs them here, the RabbitMQ/Redis pair
//! runs the same functions against the real engines. The functions are runtime-agnostic async
//! code; each panics with a message naming the broken promise.

use std::time::Duration;

use crate::queue::{Delivery, Message, WorkQueue};
use crate::registry::{RunMeta, RunRegistry, RunStatus, Verdict};
use crate::store::{Counts, PutOutcome, ResultStore};
use evalfleet_model::record::{Outcome, ResultRecord};
use evalfleet_model::suite::SuiteKind;
use evalfleet_report::ItemSource;
use evalfleet_suites::evaluate::Example;
use evalfleet_suites::spec::{JudgeMode, RunSpec};
use evalfleet_suites::suite::Suite;
use evalfleet_suites::support::SupportExample;

/// A message of `run_id` at `index`, with a recognisable example body.
pub fn message(run_id: &str, index: u64) -> Message {
    Message {
        v: Message::VERSION,
        run_id: run_id.into(),
        index,
        line: Some(index + 1),
        suite: "support-judge".into(),
        example: Example::Support(SupportExample {
            id: format!("e{index}"),
            ticket: "VPN drops".into(),
            response: "Renew the lease.".into(),
            model: "gpt-4o".into(),
            prompt_version: "v1".into(),
            provider: "openai".into(),
            metadata: Default::default(),
        }),
    }
}

/// Every published message is delivered, intact, exactly once when each is acked.
pub async fn queue_delivers_each_message_once<Q: WorkQueue>(queue: &Q, run_id: &str, n: u64) {
    let batch: Vec<Message> = (0..n).map(|i| message(run_id, i)).collect();
    queue.publish(batch.clone()).await.expect("publish");
    let mut seen = vec![false; n as usize];
    for _ in 0..n {
        let d = queue
            .next()
            .await
            .expect("next")
            .expect("a delivery for every published message");
        let m = d.message().clone();
        assert_eq!(m.run_id, run_id, "message of another run delivered");
        assert!(
            !seen[m.index as usize],
            "message {} delivered twice",
            m.index
        );
        assert_eq!(
            m, batch[m.index as usize],
            "message {} changed in transit",
            m.index
        );
        seen[m.index as usize] = true;
        d.ack().await.expect("ack");
    }
    assert!(seen.iter().all(|s| *s), "some message was never delivered");
}

/// A requeued message comes back, marked redelivered.
pub async fn queue_requeue_redelivers<Q: WorkQueue>(queue: &Q, run_id: &str) {
    queue
        .publish(vec![message(run_id, 7)])
        .await
        .expect("publish");
    let first = queue.next().await.expect("next").expect("delivery");
    assert_eq!(first.message().index, 7);
    first.requeue().await.expect("requeue");
    let again = queue
        .next()
        .await
        .expect("next")
        .expect("the requeued message comes back");
    assert_eq!(again.message().index, 7);
    assert!(
        again.redelivered(),
        "a requeued message must be marked redelivered"
    );
    again.ack().await.expect("ack");
}

/// A rejected message is not delivered again (it goes to the dead-letter queue).
pub async fn queue_reject_removes<Q: WorkQueue>(queue: &Q, run_id: &str) {
    queue
        .publish(vec![message(run_id, 1)])
        .await
        .expect("publish");
    let d = queue.next().await.expect("next").expect("delivery");
    d.reject().await.expect("reject");
    queue
        .publish(vec![message(run_id, 2)])
        .await
        .expect("publish");
    let next = queue.next().await.expect("next").expect("delivery");
    assert_eq!(
        next.message().index,
        2,
        "a rejected message was delivered again"
    );
    next.ack().await.expect("ack");
}

/// A result record of `run_id` at `index` with `outcome` (a skipped support-judge example
/// turned into the outcome asked for).
pub fn record(run_id: &str, index: u64, outcome: Outcome) -> ResultRecord {
    let mut r = ResultRecord::skipped(
        run_id,
        "support-judge",
        index,
        Some(index + 1),
        format!("e{index}"),
        "r".into(),
    );
    r.outcome = outcome;
    if outcome != Outcome::Skipped {
        r.reason = None;
    }
    r
}

/// A result is stored and counted once per index, whatever the redeliveries.
pub async fn store_counts_each_index_once<S: ResultStore>(store: &S, run_id: &str) {
    let plan = [
        (0, Outcome::Ok),
        (1, Outcome::Failed),
        (2, Outcome::Skipped),
        (3, Outcome::Ok),
    ];
    for (i, o) in plan {
        assert_eq!(
            store.put(record(run_id, i, o)).await.expect("put"),
            PutOutcome::Stored,
            "first put of {i}"
        );
    }
    for (i, o) in plan {
        assert_eq!(
            store.put(record(run_id, i, o)).await.expect("put"),
            PutOutcome::AlreadyStored,
            "a redelivery of {i} must not be stored again"
        );
    }
    assert_eq!(
        store
            .put(record(run_id, 1, Outcome::Ok))
            .await
            .expect("put"),
        PutOutcome::AlreadyStored,
        "the first result of an index wins"
    );
    assert_eq!(
        store.counts(run_id).await.expect("counts"),
        Counts {
            ok: 2,
            failed: 1,
            skipped: 1
        }
    );
}

/// Stored results stream back in index order, whole, optionally of one outcome only.
pub async fn store_streams_in_index_order<S: ResultStore + ItemSource>(store: &S, run_id: &str) {
    for i in [5u64, 0, 3, 1, 4, 2] {
        let o = if i % 2 == 0 {
            Outcome::Ok
        } else {
            Outcome::Failed
        };
        store.put(record(run_id, i, o)).await.expect("put");
    }
    let mut all = Vec::new();
    store
        .for_each_item(None, &mut |r| {
            all.push((r.index, r.outcome, r.id.clone()));
            Ok(())
        })
        .expect("stream");
    let want: Vec<(u64, Outcome, String)> = (0..6)
        .map(|i| {
            (
                i,
                if i % 2 == 0 {
                    Outcome::Ok
                } else {
                    Outcome::Failed
                },
                format!("e{i}"),
            )
        })
        .collect();
    assert_eq!(all, want, "items must stream in index order");
    let mut failed = Vec::new();
    store
        .for_each_item(Some(Outcome::Failed), &mut |r| {
            failed.push(r.index);
            Ok(())
        })
        .expect("stream");
    assert_eq!(failed, vec![1, 3, 5]);
}

/// A scenario is kept under its digest for its run: the first write wins, other runs and
/// digests see nothing.
pub async fn store_keeps_scenarios_by_digest<S: ResultStore>(store: &S, run_id: &str) {
    let digest = "ab".repeat(32);
    assert_eq!(
        store.scenario(run_id, &digest).await.expect("get"),
        None,
        "a scenario never stored was found"
    );
    store
        .put_scenario(run_id, &digest, r#"{"metrics":{"m":1.0}}"#)
        .await
        .expect("put");
    store
        .put_scenario(run_id, &digest, "{}")
        .await
        .expect("put again");
    assert_eq!(
        store
            .scenario(run_id, &digest)
            .await
            .expect("get")
            .as_deref(),
        Some(r#"{"metrics":{"m":1.0}}"#),
        "the first write of a digest must stay"
    );
    assert_eq!(
        store.scenario(run_id, &"cd".repeat(32)).await.expect("get"),
        None
    );
}

/// A registry entry for `id`, as `submit` registers it.
pub fn run_meta(id: &str) -> RunMeta {
    RunMeta {
        id: id.into(),
        suite: "support-judge".into(),
        status: RunStatus::Submitting,
        total: None,
        published: 0,
        created_at: "2026-11-25T10:00:00Z".into(),
        finished_at: None,
        dataset: "d.jsonl".into(),
        judge: "heuristic".into(),
        gates_passed: None,
    }
}

/// The spec of a support-judge run with the offline judge.
pub fn run_spec() -> RunSpec {
    RunSpec {
        suite: Suite::builtin(SuiteKind::SupportJudge),
        judge: JudgeMode::Heuristic,
        judges: Default::default(),
        model_prefixes: Default::default(),
        dataset: "d.jsonl".into(),
    }
}

/// A run's life through the registry: registered once (a second registration changes
/// nothing), progress recorded, finished with its verdict, reopened by a retry, and its failed
/// messages kept and taken once; the report lock is held by one owner at a time.
pub async fn registry_keeps_a_runs_life<R: RunRegistry>(registry: &R, id: &str) {
    let spec = run_spec();
    assert!(registry
        .register(&run_meta(id), &spec)
        .await
        .expect("register"));
    let mut again = run_meta(id);
    again.suite = "rag-layers".into();
    assert!(
        !registry
            .register(&again, &run_spec())
            .await
            .expect("register again"),
        "a second registration is a resume"
    );
    assert_eq!(
        registry.spec(id).await.expect("spec"),
        Some(spec),
        "the spec stays"
    );
    assert_eq!(registry.run("no-such-run").await.expect("run"), None);
    assert_eq!(registry.spec("no-such-run").await.expect("spec"), None);

    registry.add_published(id, 3).await.expect("published");
    registry.add_published(id, 2).await.expect("published");
    registry.set_total(id, 5).await.expect("total");
    registry
        .set_status(id, RunStatus::Running)
        .await
        .expect("status");
    let meta = registry.run(id).await.expect("run").expect("registered");
    assert_eq!(
        (meta.suite.as_str(), meta.published, meta.total),
        ("support-judge", 5, Some(5))
    );
    assert_eq!(meta.status, RunStatus::Running);
    assert!(registry
        .runs(10)
        .await
        .expect("runs")
        .iter()
        .any(|m| m.id == id));

    let ttl = Duration::from_secs(30);
    assert!(registry.try_lock_report(id, "a", ttl).await.expect("lock"));
    assert!(
        !registry.try_lock_report(id, "b", ttl).await.expect("lock"),
        "one owner at a time"
    );
    assert!(
        !registry
            .release_report_lock(id, "b")
            .await
            .expect("release"),
        "not b's lock"
    );
    assert!(registry
        .release_report_lock(id, "a")
        .await
        .expect("release"));
    assert!(
        registry.try_lock_report(id, "b", ttl).await.expect("lock"),
        "free again"
    );
    registry
        .release_report_lock(id, "b")
        .await
        .expect("release");

    registry
        .keep_failed_message(id, 4, "{\"m\":4}")
        .await
        .expect("keep");
    registry
        .keep_failed_message(id, 1, "{\"m\":1}")
        .await
        .expect("keep");
    let mut kept = registry.take_failed(id).await.expect("take");
    kept.sort();
    assert_eq!(kept, ["{\"m\":1}", "{\"m\":4}"]);
    assert!(
        registry.take_failed(id).await.expect("take").is_empty(),
        "taken once"
    );

    let verdict = Verdict {
        gates_passed: false,
        summary_md: "# summary",
        report_dir: "reports/x",
    };
    registry.finish(id, &verdict).await.expect("finish");
    let meta = registry.run(id).await.expect("run").expect("registered");
    assert_eq!(meta.status, RunStatus::Complete);
    assert_eq!(meta.gates_passed, Some(false));
    assert!(meta.finished_at.is_some(), "finished_at is set");
    assert_eq!(
        registry.summary(id).await.expect("summary").as_deref(),
        Some("# summary")
    );
    assert_eq!(
        registry.report_dir(id).await.expect("dir").as_deref(),
        Some("reports/x")
    );

    registry
        .set_status(id, RunStatus::Running)
        .await
        .expect("reopen");
    let meta = registry.run(id).await.expect("run").expect("registered");
    assert_eq!(
        (meta.gates_passed, meta.finished_at),
        (None, None),
        "the old verdict is cleared"
    );
}

#[cfg(test)]
mod in_process {
    use super::*;
    use crate::queue::InProcessQueue;
    use crate::store::InProcessStore;
    use crate::testing::block_on;

    #[test]
    fn in_process_queue_honours_the_contract() {
        for chunk in [1, 16] {
            let q = InProcessQueue::new(64, chunk);
            block_on(queue_delivers_each_message_once(&q, "r", 40));
            block_on(queue_requeue_redelivers(&q, "r"));
            block_on(queue_reject_removes(&q, "r"));
            assert_eq!(q.dead_letters().len(), 1);
        }
    }

    #[test]
    fn in_process_store_honours_the_contract() {
        let (store, _events) = InProcessStore::new("a", 1024, 1).expect("store");
        block_on(store_counts_each_index_once(&store, "a"));
        let (store, _events) = InProcessStore::new("b", 1024, 1).expect("store");
        block_on(store_streams_in_index_order(&store, "b"));
        block_on(store_keeps_scenarios_by_digest(&store, "b"));
    }

    #[test]
    fn in_process_registry_honours_the_contract() {
        let registry = crate::registry::InProcessRegistry::default();
        block_on(registry_keeps_a_runs_life(&registry, "r1"));
    }
}
