//! The raw broker ceiling: how many messages/s this RabbitMQ moves through a publish → consume →
//! ack loop with exactly the fleet's queue and message settings (quorum work queue with delivery
//! limit and dead-lettering, persistent JSON messages of the dataset's real size, publisher
//! confirms in batches of 256, prefetch) and no work at all. `scripts/bench-fleet.sh` runs it
//! beside the fleet to express the fleet's throughput as a ratio measured in the same run.
//!
//!   cargo run --release -p evalfleet-fleet --example broker_ceiling -- DATASET.jsonl [PREFETCH]

use std::sync::Arc;
use std::time::Instant;

use evalfleet_contract::queue::Message;
use evalfleet_fleet::amqp::{
    declare_topology, delete_topology, AmqpConfig, CONTENT_TYPE, MESSAGE_TYPE,
};
use evalfleet_model::routing::ProviderRules;
use evalfleet_model::suite::SuiteKind;
use evalfleet_suites::evaluate::{Evaluator, Work};
use evalfleet_suites::suite::Suite;
use futures_util::StreamExt;
use lapin::options::{
    BasicAckOptions, BasicConsumeOptions, BasicPublishOptions, BasicQosOptions,
    ConfirmSelectOptions,
};
use lapin::types::{FieldTable, ShortString};
use lapin::{BasicProperties, Connection, ConnectionProperties};

const BATCH: usize = 256;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dataset = args
        .next()
        .ok_or("usage: broker_ceiling DATASET.jsonl [PREFETCH]")?;
    let prefetch: u16 = args.next().map_or(Ok(128), |p| p.parse())?;
    let url = std::env::var("EVALFLEET_AMQP_URL")
        .unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".into());
    let cfg = AmqpConfig {
        url: url.clone(),
        prefix: format!("evalfleet-ceiling-{}", std::process::id()),
        prefetch,
        delivery_limit: 5,
    };

    // The same bodies the fleet publishes: one message per valid dataset line, the example
    // typed as the producer types it.
    let suite = Arc::new(Suite::builtin(SuiteKind::SupportJudge));
    let mut typer = Evaluator::new(suite, ProviderRules::default(), None);
    let bodies: Vec<Vec<u8>> = std::fs::read_to_string(&dataset)?
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .filter_map(|line| typer.parse(&serde_json::from_str(line).ok()?).ok())
        .enumerate()
        .map(|(i, example)| {
            let msg = Message {
                v: Message::VERSION,
                run_id: "ceiling".into(),
                index: i as u64,
                line: Some(i as u64 + 1),
                suite: "support-judge".into(),
                work: Work::Evaluate(example),
            };
            serde_json::to_vec(&msg).unwrap_or_default()
        })
        .collect();
    let n = bodies.len();
    let avg_bytes = bodies.iter().map(Vec::len).sum::<usize>() / n.max(1);

    let conn = Connection::connect(&url, ConnectionProperties::default()).await?;
    let setup = conn.create_channel().await?;
    declare_topology(&setup, &cfg).await?;
    let publisher = conn.create_channel().await?;
    publisher
        .confirm_select(ConfirmSelectOptions::default())
        .await?;
    let consumer_channel = conn.create_channel().await?;
    consumer_channel
        .basic_qos(prefetch, BasicQosOptions::default())
        .await?;
    let mut consumer = consumer_channel
        .basic_consume(
            ShortString::from(cfg.queue()),
            ShortString::from("ceiling"),
            BasicConsumeOptions::default(),
            FieldTable::default(),
        )
        .await?;

    let started = Instant::now();
    let (exchange, key) = (cfg.exchange(), cfg.routing_key());
    let publishing = tokio::spawn(async move {
        for (b, chunk) in bodies.chunks(BATCH).enumerate() {
            let mut confirms = Vec::with_capacity(chunk.len());
            for (i, body) in chunk.iter().enumerate() {
                let props = BasicProperties::default()
                    .with_content_type(ShortString::from(CONTENT_TYPE))
                    .with_delivery_mode(2)
                    .with_message_id(ShortString::from(format!("ceiling/{}", b * BATCH + i)))
                    .with_correlation_id(ShortString::from("ceiling"))
                    .with_type(ShortString::from(MESSAGE_TYPE));
                confirms.push(
                    publisher
                        .basic_publish(
                            ShortString::from(exchange.as_str()),
                            ShortString::from(key.as_str()),
                            BasicPublishOptions::default(),
                            body,
                            props,
                        )
                        .await?,
                );
            }
            for c in confirms {
                c.await?;
            }
        }
        Ok::<_, lapin::Error>(started.elapsed())
    });
    let mut acked = 0;
    while acked < n {
        let Some(delivery) = consumer.next().await else {
            break;
        };
        delivery?.ack(BasicAckOptions::default()).await?;
        acked += 1;
    }
    let total = started.elapsed();
    let published_in = publishing.await??;
    println!(
        "broker ceiling: {n} messages ({avg_bytes} bytes avg) published with confirms in {:.2} s, consumed and acked by {:.2} s = {:.0} messages/s",
        published_in.as_secs_f64(),
        total.as_secs_f64(),
        n as f64 / total.as_secs_f64()
    );
    delete_topology(&setup, &cfg).await?;
    conn.close(200, ShortString::from("done")).await?;
    Ok(())
}
