//! The shared `WorkQueue` contract against a real RabbitMQ (127.0.0.1:5672), each test on a
//! private topology that is deleted afterwards; plus graceful stop.

use std::time::Duration;

use evalfleet_contract::conformance::{
    message, queue_delivers_each_message_once, queue_reject_removes, queue_requeue_redelivers,
};
use evalfleet_contract::queue::{Delivery, WorkQueue};
use evalfleet_fleet::amqp::testing::{eventually, unique_config, TopologyGuard};
use evalfleet_fleet::amqp::AmqpQueue;

const CONNECT: Duration = Duration::from_secs(10);

async fn queue(tag: &str) -> (AmqpQueue, TopologyGuard) {
    let cfg = unique_config(tag);
    let guard = TopologyGuard(cfg.clone());
    let q = AmqpQueue::connect(cfg, CONNECT)
        .await
        .expect("connect to RabbitMQ");
    (q, guard)
}

#[tokio::test(flavor = "multi_thread")]
async fn delivers_each_message_once() {
    let (q, _guard) = queue("once").await;
    queue_delivers_each_message_once(&q, "run-once", 200).await;
    assert_eq!(q.depths().await.expect("depths").examples, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn requeue_redelivers() {
    let (q, _guard) = queue("requeue").await;
    queue_requeue_redelivers(&q, "run-requeue").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn reject_removes_to_the_dead_letter_queue() {
    let (q, _guard) = queue("reject").await;
    queue_reject_removes(&q, "run-reject").await;
    let dead = q.dead_letters(10).await.expect("peek");
    assert_eq!(dead.len(), 1, "the rejected message is dead-lettered");
    assert_eq!(dead[0].index, Some(1));
    assert_eq!(dead[0].reason.as_deref(), Some("rejected"));
    assert_eq!(q.poison_count(), 0, "a worker's reject is not poison");
}

#[tokio::test(flavor = "multi_thread")]
async fn stop_consuming_requeues_what_was_not_handed_out() {
    let (q, _guard) = queue("stop").await;
    q.publish((0..5).map(|i| message("run-stop", i)).collect())
        .await
        .expect("publish");
    let first = q.next().await.expect("next").expect("a delivery");
    // Let the prefetch (16) bring the other four over before stopping.
    tokio::time::sleep(Duration::from_millis(300)).await;
    q.stop_consuming().await.expect("stop");
    assert!(
        q.next().await.expect("next after stop").is_none(),
        "nothing more is handed out"
    );
    eventually(
        "the four prefetched messages are back in the queue",
        Duration::from_secs(10),
        || async { (q.depths().await.expect("depths").examples == 4).then_some(()) },
    )
    .await;
    first
        .ack()
        .await
        .expect("a delivery handed out before the stop can be acked");
    assert!(q.next().await.expect("next").is_none(), "stays stopped");
    q.publish(vec![message("run-stop", 9)])
        .await
        .expect("publishing still works");
    let depths = q.depths().await.expect("depths");
    assert_eq!(
        (depths.examples, depths.consumers),
        (5, 0),
        "nothing consumed after the stop"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_producer_never_consumes_and_clones_share_one_consumer() {
    let (q, _guard) = queue("roles").await;
    q.publish(vec![message("run-roles", 0)])
        .await
        .expect("publish");
    assert_eq!(
        q.depths().await.expect("depths").consumers,
        0,
        "publishing alone opens no consumer"
    );
    let clone = q.clone();
    let d = clone.next().await.expect("next").expect("delivery");
    assert!(!d.redelivered());
    d.ack().await.expect("ack");
    assert_eq!(q.depths().await.expect("depths").consumers, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_credentials_fail_fast_and_say_where() {
    let mut cfg = unique_config("creds");
    cfg.url = cfg.url.replace("guest:guest", "guest:wrong");
    let started = std::time::Instant::now();
    let err = AmqpQueue::connect(cfg, CONNECT).await.expect_err("refused");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "a refusal is not retried"
    );
    let text = err.to_string();
    assert!(
        text.contains("ACCESS_REFUSED") && text.contains("guest:***@127.0.0.1"),
        "{text}"
    );
    assert!(
        !text.contains("wrong"),
        "the password is never printed: {text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn stop_consuming_wakes_a_waiting_next() {
    let (q, _guard) = queue("wake").await;
    let waiting = {
        let q = q.clone();
        tokio::spawn(async move { q.next().await })
    };
    eventually(
        "the consumer subscribed",
        Duration::from_secs(10),
        || async { (q.depths().await.expect("depths").consumers == 1).then_some(()) },
    )
    .await;
    q.stop_consuming().await.expect("stop");
    let ended = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("next() returns once stopped")
        .expect("join")
        .expect("next");
    assert!(ended.is_none());
}
