//! The contract every [`WorkQueue`], [`ResultStore`], [`RunRegistry`] and [`BatchStore`]
//! implementation must honour, as tests generic over the implementation: the in-process
//! adapters run them here, the RabbitMQ/Redis ones run the same functions against the real
//! engines. The functions are runtime-agnostic async code; each panics with a message naming the
//! broken promise. The queue's and the store's promises are here, the registry's in
//! [`registry`] and the batch store's in [`batch`].
//!
//! [`RunRegistry`]: crate::registry::RunRegistry
//! [`BatchStore`]: crate::batch_store::BatchStore

use crate::queue::{Delivery, Message, WorkQueue};
use crate::store::{Counts, PutOutcome, ResultStore};
use evalfleet_model::record::{Outcome, ResultRecord};
use evalfleet_report::ItemSource;
use evalfleet_suites::evaluate::{Example, Work};
use evalfleet_suites::support::SupportExample;

mod batch;
mod registry;

pub use batch::*;
pub use registry::*;

/// A message of `run_id` at `index`, with a recognisable example body.
pub fn message(run_id: &str, index: u64) -> Message {
    Message {
        v: Message::VERSION,
        run_id: run_id.into(),
        index,
        line: Some(index + 1),
        suite: "support-judge".into(),
        work: Work::Evaluate(Example::Support(SupportExample {
            id: format!("e{index}"),
            ticket: "VPN drops".into(),
            response: "Renew the lease.".into(),
            model: "gpt-4o".into(),
            prompt_version: "v1".into(),
            provider: "openai".into(),
            metadata: Default::default(),
            human: Default::default(),
        })),
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

    #[test]
    fn in_process_batch_store_honours_the_contract() {
        let store = crate::batch_memory::InProcessBatchStore::new();
        block_on(batch_store_honours_the_contract(&store, "r"));
        // Through the trait object the coordinator holds, and beside another run.
        let shared: &dyn crate::batch_store::BatchStore = &store;
        block_on(batch_store_honours_the_contract(shared, "s"));
    }
}
