//! The dead-letter tools against a real RabbitMQ: peeking leaves the queue as it was; requeueing
//! moves messages back to the work queue, all of them or one run's only.

use std::time::Duration;

use evalfleet_contract::conformance::message;
use evalfleet_contract::queue::{Delivery, WorkQueue};
use evalfleet_fleet::amqp::testing::{eventually, unique_config, TopologyGuard};
use evalfleet_fleet::amqp::{AmqpQueue, QueueDepths};

const WAIT: Duration = Duration::from_secs(10);

/// Waits for `dead` dead letters and, when given, `ready` messages in the work queue (once
/// this process consumes, the broker pushes ready messages to it at once: not ready any more).
async fn depths_become(q: &AmqpQueue, ready: Option<u32>, dead: u32) -> QueueDepths {
    eventually(
        &format!("{ready:?} ready and {dead} dead"),
        WAIT,
        || async {
            let d = q.depths().await.expect("depths");
            (ready.is_none_or(|r| d.examples == r) && d.dead == dead).then_some(d)
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn peek_leaves_the_dlq_unchanged_and_requeue_moves_back() {
    let cfg = unique_config("dlq");
    let _guard = TopologyGuard(cfg.clone());
    let q = AmqpQueue::connect(cfg, Duration::from_secs(10))
        .await
        .expect("connect");

    let mut batch: Vec<_> = (0..3).map(|i| message("run-a", i)).collect();
    batch.extend((0..2).map(|i| message("run-b", i)));
    q.publish(batch).await.expect("publish");
    for _ in 0..5 {
        let d = q.next().await.expect("next").expect("delivery");
        d.reject().await.expect("reject");
    }
    depths_become(&q, Some(0), 5).await;

    let all = q.dead_letters(100).await.expect("peek");
    assert_eq!(all.len(), 5);
    let ids: Vec<_> = all
        .iter()
        .map(|d| (d.run_id.clone().unwrap_or_default(), d.index))
        .collect();
    assert!(
        ids.contains(&("run-a".into(), Some(2))) && ids.contains(&("run-b".into(), Some(1))),
        "{ids:?}"
    );
    assert!(all
        .iter()
        .all(|d| d.reason.as_deref() == Some("rejected") && d.message.is_some()));
    let two = q.dead_letters(2).await.expect("peek two");
    assert_eq!(two.len(), 2);
    depths_become(&q, Some(0), 5).await;
    assert_eq!(
        q.dead_letters(100).await.expect("peek again"),
        all,
        "peeking changes nothing"
    );

    assert_eq!(
        q.requeue_dead(Some("run-a")).await.expect("requeue run-a"),
        3
    );
    depths_become(&q, None, 2).await;
    for _ in 0..3 {
        let d = q.next().await.expect("next").expect("requeued delivery");
        assert_eq!(d.message().run_id, "run-a", "only the chosen run moved");
        assert!(!d.redelivered(), "a requeued dead letter starts afresh");
        d.ack().await.expect("ack");
    }
    let left = q.dead_letters(100).await.expect("peek");
    assert!(left.iter().all(|d| d.run_id.as_deref() == Some("run-b")) && left.len() == 2);

    assert_eq!(
        q.requeue_dead(Some("no-such-run"))
            .await
            .expect("requeue none"),
        0
    );
    assert_eq!(q.requeue_dead(None).await.expect("requeue all"), 2);
    for _ in 0..2 {
        let d = q.next().await.expect("next").expect("delivery");
        assert_eq!(d.message().run_id, "run-b");
        d.ack().await.expect("ack");
    }
    depths_become(&q, Some(0), 0).await;
    assert!(q.dead_letters(10).await.expect("peek").is_empty());
}
