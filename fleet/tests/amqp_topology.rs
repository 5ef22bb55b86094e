//! The topology against a real RabbitMQ: idempotent declaration (also racing from two
//! connections), the quorum queue's delivery limit and dead-lettering by behaviour, and a
//! conflicting redeclaration refused with its context.

use std::time::Duration;

use evalfleet_contract::conformance::message;
use evalfleet_contract::queue::{Delivery, WorkQueue};
use evalfleet_fleet::amqp::testing::{
    cleanup, eventually, raw_channel, unique_config, TopologyGuard,
};
use evalfleet_fleet::amqp::{declare_topology, AmqpConfig, AmqpQueue};

const CONNECT: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread")]
async fn declaring_is_idempotent_even_from_two_connections_at_once() {
    let cfg = unique_config("idem");
    let _guard = TopologyGuard(cfg.clone());
    let (_c1, a) = raw_channel(&cfg).await.expect("connection 1");
    let (_c2, b) = raw_channel(&cfg).await.expect("connection 2");
    let (ra, rb) = tokio::join!(declare_topology(&a, &cfg), declare_topology(&b, &cfg));
    ra.expect("first declaration");
    rb.expect("concurrent declaration");
    declare_topology(&a, &cfg)
        .await
        .expect("declaring again on the same channel");
    declare_topology(&b, &cfg).await.expect("and on the other");
    // Every role declares on connect too.
    let q = AmqpQueue::connect(cfg.clone(), CONNECT)
        .await
        .expect("connect");
    q.publish(vec![message("run-idem", 0)])
        .await
        .expect("routable after all that");
    assert_eq!(q.depths().await.expect("depths").examples, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_conflicting_redeclaration_is_refused_with_its_context() {
    let cfg = unique_config("conflict");
    let _guard = TopologyGuard(cfg.clone());
    let (_c, ch) = raw_channel(&cfg).await.expect("connect");
    declare_topology(&ch, &cfg).await.expect("declare");
    let other = AmqpConfig {
        delivery_limit: cfg.delivery_limit + 1,
        ..cfg.clone()
    };
    let (_c2, ch2) = raw_channel(&cfg).await.expect("connect");
    let err = declare_topology(&ch2, &other).await.expect_err("refused");
    let text = err.to_string();
    assert!(
        text.contains("declare queue")
            && text.contains(&cfg.queue())
            && text.contains("x-delivery-limit"),
        "{text}"
    );
    assert!(!err.is_transient());
}

#[tokio::test(flavor = "multi_thread")]
async fn queues_have_the_contract_types() {
    let cfg = unique_config("types");
    let _guard = TopologyGuard(cfg.clone());
    let _q = AmqpQueue::connect(cfg.clone(), CONNECT)
        .await
        .expect("connect");
    let out = tokio::task::spawn_blocking(|| {
        std::process::Command::new("rabbitmqctl")
            .args(["-q", "list_queues", "name", "type", "durable", "arguments"])
            .output()
    })
    .await
    .expect("join")
    .expect("rabbitmqctl list_queues");
    let listing = String::from_utf8_lossy(&out.stdout);
    let line = |name: String| {
        listing
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name.as_str()))
            .unwrap_or_else(|| panic!("{name} not listed in:\n{listing}"))
            .to_owned()
    };
    let work = line(cfg.queue());
    assert!(work.contains("quorum") && work.contains("true"), "{work}");
    assert!(
        work.contains("x-delivery-limit") && work.contains(&cfg.dlx()),
        "{work}"
    );
    let dead = line(cfg.dead_queue());
    assert!(dead.contains("classic") && dead.contains("true"), "{dead}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_message_requeued_past_the_delivery_limit_is_dead_lettered() {
    let cfg = AmqpConfig {
        delivery_limit: 2,
        ..unique_config("limit")
    };
    let _guard = TopologyGuard(cfg.clone());
    let q = AmqpQueue::connect(cfg.clone(), CONNECT)
        .await
        .expect("connect");
    q.publish(vec![message("run-limit", 4)])
        .await
        .expect("publish");
    let mut flags = Vec::new();
    for _ in 0..=cfg.delivery_limit {
        let d = q.next().await.expect("next").expect("delivered again");
        assert_eq!(d.message().index, 4);
        flags.push((d.redelivered(), d.delivery_count()));
        d.requeue().await.expect("requeue");
    }
    assert!(!flags[0].0, "the first delivery is not a redelivery");
    assert!(flags[1..].iter().all(|(r, _)| *r), "{flags:?}");
    let depths = eventually(
        "the message in the dead-letter queue",
        Duration::from_secs(10),
        || async {
            let d = q.depths().await.expect("depths");
            (d.dead == 1).then_some(d)
        },
    )
    .await;
    assert_eq!(
        depths.examples,
        0,
        "gone from the work queue after {} requeues",
        cfg.delivery_limit + 1
    );
    let dead = q.dead_letters(5).await.expect("peek");
    assert_eq!(dead[0].reason.as_deref(), Some("delivery_limit"));
    assert_eq!(dead[0].message, Some(message("run-limit", 4)));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_topology_deleted_under_a_running_queue_is_declared_again() {
    let cfg = unique_config("heal");
    let _guard = TopologyGuard(cfg.clone());
    let q = AmqpQueue::connect(cfg.clone(), CONNECT)
        .await
        .expect("connect");
    q.publish(vec![message("run-heal", 0)])
        .await
        .expect("publish");
    q.next()
        .await
        .expect("next")
        .expect("delivery")
        .ack()
        .await
        .expect("ack");

    cleanup(&cfg)
        .await
        .expect("delete the topology under the running queue");
    q.publish(vec![message("run-heal", 1)])
        .await
        .expect("published after declaring the topology again");
    let d = tokio::time::timeout(Duration::from_secs(15), q.next())
        .await
        .expect("the consumer comes back")
        .expect("next")
        .expect("delivery");
    assert_eq!(d.message().index, 1);
    d.ack().await.expect("ack");
}
