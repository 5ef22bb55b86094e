//! Queue depth as the aggregator reports it, against the real RabbitMQ on 127.0.0.1 and its
//! management API (plugin `rabbitmq_management`, port 15672, guest/guest; `.ci/run` enables
//! it): with messages held by a consumer that does not ack, the management API source reports
//! them as `unacked` beside the `ready` ones, for the work queue and the dead-letter queue;
//! without it (not configured, or unreachable) the passive declare reports `ready` only and no
//! stale unacked count is left behind. Without the management API the test is skipped, saying
//! why, except under `CI=true`.

mod common;

use std::time::Duration;

use evalfleet_aggregator::metrics::metrics;
use evalfleet_aggregator::service::{Aggregator, AggregatorOptions};
use evalfleet_fleet::amqp::depth::{
    Depth, Depths, ManagementApi, QueueDepthError, QueueDepthReader, QueueNames, Source,
};
use evalfleet_fleet::amqp::testing::{cleanup, raw_channel, unique_config};
use evalfleet_fleet::amqp::{AmqpConfig, AmqpQueue};
use evalfleet_fleet::redis::{RedisConfig, RedisStore};
use futures_util::StreamExt;
use lapin::options::{
    BasicConsumeOptions, BasicPublishOptions, BasicQosOptions, ConfirmSelectOptions,
};
use lapin::types::FieldTable;
use lapin::BasicProperties;

const MANAGEMENT: &str = "http://guest:guest@127.0.0.1:15672/";
const WORK: u64 = 7;
const HELD: u64 = 3;
const DEAD: u64 = 2;

async fn publish(channel: &lapin::Channel, exchange: &str, routing_key: &str, n: u64) {
    for i in 0..n {
        channel
            .basic_publish(
                exchange.into(),
                routing_key.into(),
                BasicPublishOptions::default(),
                format!("depth test {i}").as_bytes(),
                BasicProperties::default().with_delivery_mode(2),
            )
            .await
            .expect("publish")
            .await
            .expect("confirm");
    }
}

/// The gauge `evalfleet_queue_messages{queue,state}`, if the series exists.
fn gauge(queue: &str, state: &str) -> Option<i64> {
    metrics().queue_depth(queue, state)
}

async fn aggregator(depths: QueueDepthReader) -> Aggregator<RedisStore, QueueDepthReader> {
    let store = RedisStore::connect(
        RedisConfig {
            url: "redis://127.0.0.1:6379/".into(),
            prefix: "evalfleet-test-depth-unused:".into(),
            retention: Duration::from_secs(60),
        },
        Duration::from_secs(10),
    )
    .await
    .expect("Redis on 127.0.0.1:6379");
    let opts = AggregatorOptions {
        reports_dir: std::env::temp_dir(),
        inline_items: 100_000,
        consumer: "depth-test".into(),
        claim_after: Duration::from_secs(30),
    };
    Aggregator::new(store, opts).with_queue_depths(depths)
}

fn names(cfg: &AmqpConfig) -> QueueNames {
    QueueNames {
        work: cfg.queue(),
        dead: cfg.dead_queue(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn management_api_reports_ready_and_unacked_and_passive_declare_ready_only() {
    if !common::management_available("management_api_reports_ready_and_unacked") {
        return;
    }
    let cfg = unique_config("depth");
    let queue = AmqpQueue::connect(cfg.clone(), Duration::from_secs(30))
        .await
        .expect("RabbitMQ on 127.0.0.1:5672 (declares the test's topology)");
    let (conn, channel) = raw_channel(&cfg).await.expect("a raw channel");
    channel
        .confirm_select(ConfirmSelectOptions::default())
        .await
        .expect("confirms");
    publish(&channel, &cfg.exchange(), &cfg.routing_key(), WORK).await;
    publish(&channel, "", &cfg.dead_queue(), DEAD).await;

    // A consumer that takes HELD messages and never acks them.
    let holder = conn.create_channel().await.expect("consumer channel");
    holder
        .basic_qos(HELD as u16, BasicQosOptions::default())
        .await
        .expect("qos");
    let mut consumer = holder
        .basic_consume(
            cfg.queue().as_str().into(),
            "depth-holder".into(),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await
        .expect("consume");
    let mut held = Vec::new();
    while (held.len() as u64) < HELD {
        let delivery = tokio::time::timeout(Duration::from_secs(10), consumer.next())
            .await
            .expect("a delivery within 10 s")
            .expect("the consumer is open")
            .expect("a delivery");
        held.push(delivery);
    }

    let api = ManagementApi::new(MANAGEMENT).expect("management URL");
    let want = Depths {
        work: Depth {
            ready: WORK - HELD,
            unacked: Some(HELD),
        },
        dead: Depth {
            ready: DEAD,
            unacked: Some(0),
        },
    };
    // The management plugin refreshes its counts every 5 s (collect_statistics_interval).
    let management = QueueDepthReader {
        names: names(&cfg),
        management: Some(api.clone()),
        amqp: Some(queue.clone()),
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (depths, error) = management.read().await;
        match error {
            // A new queue has no statistics until the plugin's next collection.
            Some(QueueDepthError::NoStatistics { .. }) => {}
            Some(e) => panic!("management API error: {e}"),
            None => {
                let (depths, source) = depths.expect("depths");
                assert_eq!(source, Source::Management);
                if depths == want {
                    break;
                }
            }
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "after 30 s the management API still does not say {want:?}: {:?}",
            management.read().await
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }

    // Through the aggregator: both states of both queues are exported.
    let agg = aggregator(management).await;
    assert!(
        !agg.publish_queue_metrics(false).await,
        "the management API read fine"
    );
    assert_eq!(gauge(&cfg.queue(), "ready"), Some((WORK - HELD) as i64));
    assert_eq!(gauge(&cfg.queue(), "unacked"), Some(HELD as i64));
    assert_eq!(gauge(&cfg.dead_queue(), "ready"), Some(DEAD as i64));
    assert_eq!(gauge(&cfg.dead_queue(), "unacked"), Some(0));

    // The management API unreachable (nothing listens on this port of 127.0.0.1): the passive
    // declare takes over, with ready counts only, and the unacked series go away.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let unreachable = aggregator(QueueDepthReader {
        names: names(&cfg),
        management: Some(
            ManagementApi::new(&format!("http://guest:guest@127.0.0.1:{closed}/")).unwrap(),
        ),
        amqp: Some(queue.clone()),
    })
    .await;
    assert!(
        unreachable.publish_queue_metrics(false).await,
        "the failure is reported to the caller"
    );
    assert_eq!(
        gauge(&cfg.queue(), "ready"),
        Some((WORK - HELD) as i64),
        "a passive declare counts ready messages only"
    );
    assert_eq!(
        gauge(&cfg.queue(), "unacked"),
        None,
        "no stale unacked count"
    );
    assert_eq!(gauge(&cfg.dead_queue(), "ready"), Some(DEAD as i64));
    assert_eq!(gauge(&cfg.dead_queue(), "unacked"), None);

    // No management API configured: the same, from the passive declare alone.
    let declared = QueueDepthReader {
        names: names(&cfg),
        management: None,
        amqp: Some(queue.clone()),
    };
    let (depths, error) = declared.read().await;
    assert!(error.is_none());
    assert_eq!(
        depths.expect("passive declare"),
        (
            Depths {
                work: Depth {
                    ready: WORK - HELD,
                    unacked: None
                },
                dead: Depth {
                    ready: DEAD,
                    unacked: None
                },
            },
            Source::PassiveDeclare
        )
    );

    // Wrong credentials: a 401 that says what to check, and never the password.
    let wrong = ManagementApi::new("http://guest:not-the-password@127.0.0.1:15672/").unwrap();
    let err = wrong.depth(&cfg.queue()).await.unwrap_err();
    assert!(
        matches!(err, QueueDepthError::Status { status, .. } if status == 401),
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.contains("401") && text.contains("monitoring tag"),
        "{text}"
    );
    assert!(!text.contains("not-the-password"), "{text}");
    // A queue that does not exist in the vhost: 404, named.
    let err = api
        .depth(&format!("{}.nope", cfg.prefix))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no such queue"), "{err}");

    drop(held);
    let _ = holder.close(200, "done".into()).await;
    let _ = conn.close(200, "done".into()).await;
    cleanup(&cfg).await.expect("cleanup");
}
