//! Coalesced acks against a real RabbitMQ: acks of consecutive deliveries go out as one
//! `multiple` frame, an ack never covers a delivery that is still being worked on, acks waiting
//! behind a slow delivery are bounded, and a requeue at the front releases the acks behind it.
//! Each test ends by closing the connection from the broker side: whatever was not acked comes
//! back to the queue, so the queue's ready count says exactly what the broker saw acked.

use std::time::Duration;

use evalfleet_contract::conformance::message;
use evalfleet_contract::queue::{Delivery, WorkQueue};
use evalfleet_fleet::amqp::testing::{close_broker_connections, unique_config, TopologyGuard};
use evalfleet_fleet::amqp::{AmqpDelivery, AmqpQueue};

async fn queue(tag: &str, published: u64) -> (AmqpQueue, TopologyGuard) {
    let mut cfg = unique_config(tag);
    cfg.prefetch = 128;
    let guard = TopologyGuard(cfg.clone());
    let q = AmqpQueue::connect(cfg, Duration::from_secs(10))
        .await
        .expect("connect to RabbitMQ");
    q.publish((0..published).map(|i| message("run-acks", i)).collect())
        .await
        .expect("publish");
    (q, guard)
}

async fn take(q: &AmqpQueue, n: usize) -> Vec<AmqpDelivery> {
    let mut got = Vec::with_capacity(n);
    for _ in 0..n {
        got.push(q.next().await.expect("next").expect("a delivery"));
    }
    got
}

/// Stops consuming, closes the connection from the broker's side, and returns the number of
/// messages back in the queue once it stays put.
async fn ready_after_close(q: &AmqpQueue) -> u32 {
    q.stop_consuming().await.expect("stop");
    close_broker_connections(&q.config().prefix).expect("close connections");
    let mut last = None;
    for _ in 0..30 {
        tokio::time::sleep(Duration::from_millis(700)).await;
        let Ok(depths) = q.depths().await else {
            continue;
        };
        if last == Some(depths.examples) {
            return depths.examples;
        }
        last = Some(depths.examples);
    }
    panic!("the queue did not settle: last ready count {last:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn acks_in_any_order_acknowledge_every_delivery() {
    let (q, _guard) = queue("acks-all", 100).await;
    let mut deliveries = take(&q, 100).await;
    // Settle from the back (every ack waits for the one before it), then the odd ones, then
    // the rest.
    deliveries.reverse();
    let (odd, even): (Vec<_>, Vec<_>) = deliveries
        .into_iter()
        .partition(|d| d.message().index % 2 == 1);
    for d in odd.into_iter().chain(even) {
        d.ack().await.expect("ack");
    }
    assert_eq!(ready_after_close(&q).await, 0, "every delivery was acked");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_ack_never_covers_a_delivery_still_being_worked_on() {
    let (q, _guard) = queue("acks-slow", 40).await;
    let mut deliveries = take(&q, 40).await;
    let slow = deliveries.remove(0);
    assert_eq!(slow.message().index, 0);
    // 39 acks behind the first delivery: when the 33rd arrives, more than the 32 that may wait
    // (a quarter of the prefetch of 128)
    // do, and those 33 go out one by one; the last 6 wait again.
    for d in deliveries {
        d.ack().await.expect("ack");
    }
    drop(slow); // the worker dies before the first delivery is settled
    assert_eq!(
        ready_after_close(&q).await,
        7,
        "the unsettled delivery and the 6 acks waiting behind it come back, nothing else"
    );
    let again = AmqpQueue::connect(q.config().clone(), Duration::from_secs(10))
        .await
        .expect("connect");
    let mut back: Vec<u64> = take(&again, 7)
        .await
        .iter()
        .map(|d| d.message().index)
        .collect();
    back.sort_unstable();
    assert_eq!(back, [0, 34, 35, 36, 37, 38, 39]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_requeue_at_the_front_releases_the_acks_behind_it() {
    let (q, _guard) = queue("acks-requeue", 10).await;
    let mut deliveries = take(&q, 10).await;
    let first = deliveries.remove(0);
    for d in deliveries {
        d.ack().await.expect("ack");
    }
    first.requeue().await.expect("requeue");
    let again = q
        .next()
        .await
        .expect("next")
        .expect("the requeued delivery");
    assert_eq!(again.message().index, 0);
    assert!(again.redelivered());
    again.ack().await.expect("ack");
    assert_eq!(ready_after_close(&q).await, 0);
}
