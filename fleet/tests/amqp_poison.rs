//! Poison messages against a real RabbitMQ: bodies that are not current (v2) messages are rejected to
//! the dead-letter queue, counted, and never handed to the caller, who gets the next valid one.

use std::time::Duration;

use evalfleet_contract::conformance::message;
use evalfleet_contract::queue::{Delivery, WorkQueue};
use evalfleet_fleet::amqp::testing::{eventually, raw_channel, unique_config, TopologyGuard};
use evalfleet_fleet::amqp::AmqpQueue;
use lapin::options::{BasicPublishOptions, ConfirmSelectOptions};
use lapin::BasicProperties;

#[tokio::test(flavor = "multi_thread")]
async fn poison_is_dead_lettered_counted_and_skipped() {
    let cfg = unique_config("poison");
    let _guard = TopologyGuard(cfg.clone());
    let q = AmqpQueue::connect(cfg.clone(), Duration::from_secs(10))
        .await
        .expect("connect");

    let (_conn, raw) = raw_channel(&cfg).await.expect("raw channel");
    raw.confirm_select(ConfirmSelectOptions::default())
        .await
        .expect("confirms");
    let mut v3 = message("run-p", 1);
    v3.v = 3;
    let bodies: Vec<(&str, Vec<u8>)> = vec![
        ("run-p/0", b"{not json".to_vec()),
        ("run-p/1", serde_json::to_vec(&v3).expect("json")),
        ("run-p/x", vec![0xff, 0xfe, 0x00]),
    ];
    for (id, body) in &bodies {
        raw.basic_publish(
            cfg.exchange().as_str().into(),
            cfg.routing_key().as_str().into(),
            BasicPublishOptions::default(),
            body,
            BasicProperties::default().with_message_id((*id).into()),
        )
        .await
        .expect("publish raw")
        .await
        .expect("confirmed");
    }
    q.publish(vec![message("run-p", 2)])
        .await
        .expect("publish a valid message");

    let d = q.next().await.expect("next").expect("the valid message");
    assert_eq!(
        d.message(),
        &message("run-p", 2),
        "poison is never handed out"
    );
    d.ack().await.expect("ack");
    assert_eq!(q.poison_count(), 3);

    let depths = eventually("three dead letters", Duration::from_secs(10), || async {
        let d = q.depths().await.expect("depths");
        (d.dead == 3).then_some(d)
    })
    .await;
    assert_eq!(depths.examples, 0);
    let dead = q.dead_letters(10).await.expect("peek");
    assert_eq!(dead.len(), 3);
    assert!(dead
        .iter()
        .all(|d| d.message.is_none() && d.reason.as_deref() == Some("rejected")));
    assert_eq!(dead[0].raw, "{not json");
    assert_eq!(
        (dead[0].run_id.as_deref(), dead[0].index),
        (Some("run-p"), Some(0))
    );
    assert_eq!(
        (dead[2].run_id.as_deref(), dead[2].index),
        (Some("run-p"), None)
    );
    assert_eq!(dead[2].message_id.as_deref(), Some("run-p/x"));
}
