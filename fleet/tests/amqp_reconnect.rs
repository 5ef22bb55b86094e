//! Reconnection against a real RabbitMQ, without restarting the broker other tests share: the
//! test's own connections are closed from the broker side (`rabbitmqctl close_connection`), or
//! cut at the network level for a while by a local proxy (as a broker restart looks: no
//! goodbye, then refused connections). Publishing and consuming must resume by
//! themselves and no message may be lost (duplicates are allowed: results are stored once per
//! index downstream).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use evalfleet_contract::conformance::message;
use evalfleet_contract::queue::{Delivery, Message, WorkQueue};
use evalfleet_fleet::amqp::testing::{
    close_broker_connections, eventually, unique_config, FlakyProxy, TopologyGuard,
};
use evalfleet_fleet::amqp::AmqpQueue;

const WAIT: Duration = Duration::from_secs(20);

async fn kill_connections(prefix: &str) -> usize {
    let prefix = prefix.to_owned();
    tokio::task::spawn_blocking(move || close_broker_connections(&prefix))
        .await
        .expect("join")
        .expect("rabbitmqctl close_connection")
}

fn batch(run: &str, indices: std::ops::Range<u64>) -> Vec<Message> {
    indices.map(|i| message(run, i)).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn consuming_and_publishing_resume_after_the_connection_is_killed() {
    let cfg = unique_config("reconnect");
    let _guard = TopologyGuard(cfg.clone());
    let q = AmqpQueue::connect(cfg.clone(), Duration::from_secs(10))
        .await
        .expect("connect");
    q.publish(batch("run-r", 0..40)).await.expect("publish");
    let mut acked = BTreeSet::new();
    for _ in 0..10 {
        let d = q.next().await.expect("next").expect("delivery");
        acked.insert(d.message().index);
        d.ack().await.expect("ack before the outage");
    }
    let mut held = Vec::new();
    for _ in 0..5 {
        held.push(q.next().await.expect("next").expect("delivery"));
    }

    assert_eq!(
        kill_connections(&cfg.prefix).await,
        1,
        "one connection per queue handle"
    );
    // Published during the outage: waits for the new connection, or re-publishes.
    q.publish(batch("run-r", 40..60))
        .await
        .expect("publishing resumes by itself");
    eventually("a new connection", WAIT, || async {
        (q.reconnections() >= 1 && q.is_connected()).then_some(())
    })
    .await;

    for d in held {
        let settled = tokio::time::timeout(Duration::from_secs(5), d.ack())
            .await
            .expect("an ack on a dead channel never blocks");
        let err = settled.expect_err("a delivery of the dead channel cannot be acked");
        assert!(err.to_string().contains("redeliver"), "{err}");
    }

    let give_up = tokio::time::Instant::now() + WAIT;
    while acked.len() < 60 {
        let d = tokio::time::timeout_at(give_up, q.next())
            .await
            .unwrap_or_else(|_| panic!("lost messages: only {} of 60 acked", acked.len()))
            .expect("next")
            .expect("delivery");
        let index = d.message().index;
        if d.ack().await.is_ok() {
            acked.insert(index);
        }
    }
    assert_eq!(acked, (0..60).collect::<BTreeSet<_>>());
    eventually("an empty work queue", WAIT, || async {
        let d = q.depths().await.expect("depths");
        (d.examples == 0 && d.dead == 0 && d.consumers == 1).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_publishing_stream_and_concurrent_consumers_survive_an_outage() {
    let cfg = unique_config("stream");
    let _guard = TopologyGuard(cfg.clone());
    let q = AmqpQueue::connect(cfg.clone(), Duration::from_secs(10))
        .await
        .expect("connect");
    let acked = Arc::new(Mutex::new(BTreeSet::new()));
    let mut consumers = tokio::task::JoinSet::new();
    for _ in 0..4 {
        let (q, acked) = (q.clone(), acked.clone());
        consumers.spawn(async move {
            while let Some(d) = q.next().await.expect("next never fails; it waits") {
                let index = d.message().index;
                if d.ack().await.is_ok() {
                    acked.lock().expect("lock").insert(index);
                }
            }
        });
    }

    // Publish back to back, so the outage lands on a batch in flight (its confirms are lost
    // and it is published again), until well after the connection came back.
    const SIZE: u64 = 100;
    let prefix = cfg.prefix.clone();
    let kill = tokio::spawn(async move { kill_connections(&prefix).await });
    let mut batches = 0u64;
    let mut after_reconnect = 0;
    while after_reconnect < 5 {
        q.publish(batch("run-s", batches * SIZE..(batches + 1) * SIZE))
            .await
            .unwrap_or_else(|e| panic!("batch {batches} not published: {e}"));
        batches += 1;
        if q.reconnections() >= 1 {
            after_reconnect += 1;
        }
        assert!(batches < 2000, "the connection was never replaced");
    }
    assert_eq!(kill.await.expect("join"), 1);

    let total = (batches * SIZE) as usize;
    eventually("every message acked at least once", WAIT, || async {
        (acked.lock().expect("lock").len() == total).then_some(())
    })
    .await;
    q.stop_consuming().await.expect("stop");
    while let Some(done) = consumers.join_next().await {
        done.expect("consumer task");
    }
    assert_eq!(
        q.depths().await.expect("depths").dead,
        0,
        "nothing was dead-lettered"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_broker_gone_for_a_while_is_waited_for_then_everything_resumes() {
    let proxy = FlakyProxy::start("127.0.0.1:5672").expect("proxy");
    let mut cfg = unique_config("outage");
    let _guard = TopologyGuard(cfg.clone());
    cfg.url = proxy.url(&cfg.url);
    let q = AmqpQueue::connect(cfg.clone(), Duration::from_secs(10))
        .await
        .expect("connect through the proxy");
    q.publish(batch("run-o", 0..20)).await.expect("publish");
    let mut acked = BTreeSet::new();
    for _ in 0..5 {
        let d = q.next().await.expect("next").expect("delivery");
        acked.insert(d.message().index);
        d.ack().await.expect("ack");
    }

    proxy.cut();
    eventually("the loss noticed", WAIT, || async {
        (!q.is_connected()).then_some(())
    })
    .await;
    // A publish during the outage waits for the broker instead of failing...
    let publisher = {
        let q = q.clone();
        tokio::spawn(async move { q.publish(batch("run-o", 20..40)).await })
    };
    // ...and so does a consumer.
    let consumer = {
        let q = q.clone();
        tokio::spawn(async move { q.next().await })
    };
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        !publisher.is_finished() && !consumer.is_finished(),
        "both wait through the outage"
    );
    assert_eq!(
        q.reconnections(),
        0,
        "no connection while the broker is away"
    );
    proxy.restore();

    publisher
        .await
        .expect("join")
        .expect("the batch is published once the broker is back");
    let mut pending = vec![consumer
        .await
        .expect("join")
        .expect("next")
        .expect("delivery")];
    let give_up = tokio::time::Instant::now() + WAIT;
    while acked.len() < 40 {
        let d = match pending.pop() {
            Some(d) => d,
            None => tokio::time::timeout_at(give_up, q.next())
                .await
                .unwrap_or_else(|_| panic!("lost messages: only {} of 40 acked", acked.len()))
                .expect("next")
                .expect("delivery"),
        };
        let index = d.message().index;
        if d.ack().await.is_ok() {
            acked.insert(index);
        }
    }
    assert_eq!(acked, (0..40).collect::<BTreeSet<_>>());
    assert_eq!(q.reconnections(), 1);
}
