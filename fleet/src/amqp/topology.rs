//! The fleet's exchanges and queues (docs/DESIGN.md §3), declared idempotently by every role on every
//! (re)connection, so no role depends on another having started first and a broker that lost
//! its definitions gets them back.
//!
//! - `{prefix}` — direct, durable — routes to `{prefix}.examples`: a durable **quorum** queue
//!   with `x-delivery-limit` and `x-dead-letter-exchange = {prefix}.dlx`;
//! - `{prefix}.dlx` — fanout, durable — routes to `{prefix}.dead`: a durable **classic** queue.
//!   Classic on purpose: peeking at dead letters (get, then nack with requeue) must not count
//!   as a delivery, and RabbitMQ 4 gives quorum queues a default delivery limit of 20 after
//!   which a peeked message would be dropped.
//!
//! The arguments are the ones RabbitMQ 3.10 understands and 4.x still accepts. Redeclaring with
//! other arguments (say another `delivery_limit`) is refused by the broker with
//! `PRECONDITION_FAILED - inequivalent arg …`, which the error passes on.

use lapin::options::{
    ExchangeDeclareOptions, ExchangeDeleteOptions, QueueBindOptions, QueueDeclareOptions,
    QueueDeleteOptions,
};
use lapin::types::{AMQPValue, FieldTable, LongString};
use lapin::{Channel, ExchangeKind};

use super::config::short;
use super::{AmqpConfig, AmqpError};

/// The work queue's arguments: quorum, delivery limit, dead-lettering.
pub(crate) fn work_queue_arguments(cfg: &AmqpConfig) -> FieldTable {
    let mut args = FieldTable::default();
    args.insert(
        short("x-queue-type"),
        AMQPValue::LongString(LongString::from("quorum")),
    );
    args.insert(
        short("x-delivery-limit"),
        AMQPValue::LongLongInt(i64::from(cfg.delivery_limit)),
    );
    args.insert(
        short("x-dead-letter-exchange"),
        AMQPValue::LongString(LongString::from(cfg.dlx())),
    );
    args
}

fn dead_queue_arguments() -> FieldTable {
    let mut args = FieldTable::default();
    args.insert(
        short("x-queue-type"),
        AMQPValue::LongString(LongString::from("classic")),
    );
    args
}

/// Declares the topology idempotently (every role calls it): exchange `{prefix}` (direct,
/// durable) → queue `{prefix}.examples` (quorum, durable, `x-delivery-limit`,
/// `x-dead-letter-exchange = {prefix}.dlx`), exchange `{prefix}.dlx` (fanout, durable) → queue
/// `{prefix}.dead` (durable, classic). Works on RabbitMQ 3.10 and 4.x.
///
/// A refusal (conflicting arguments, missing permissions) closes `channel`, as AMQP does.
pub async fn declare_topology(channel: &Channel, cfg: &AmqpConfig) -> Result<(), AmqpError> {
    cfg.validate()?;
    let durable_exchange = ExchangeDeclareOptions {
        durable: true,
        ..ExchangeDeclareOptions::default()
    };
    let durable_queue = QueueDeclareOptions {
        durable: true,
        ..QueueDeclareOptions::default()
    };
    let (exchange, queue, dlx, dead) = (cfg.exchange(), cfg.queue(), cfg.dlx(), cfg.dead_queue());

    // The dead-letter side first, so dead-lettering has somewhere to go from the start.
    channel
        .exchange_declare(
            short(dlx.as_str()),
            ExchangeKind::Fanout,
            durable_exchange,
            FieldTable::default(),
        )
        .await
        .map_err(AmqpError::broker("declare exchange", &dlx))?;
    channel
        .queue_declare(short(dead.as_str()), durable_queue, dead_queue_arguments())
        .await
        .map_err(AmqpError::broker("declare queue", &dead))?;
    channel
        .queue_bind(
            short(dead.as_str()),
            short(dlx.as_str()),
            short(""),
            QueueBindOptions::default(),
            FieldTable::default(),
        )
        .await
        .map_err(AmqpError::broker("bind queue", &dead))?;

    channel
        .exchange_declare(
            short(exchange.as_str()),
            ExchangeKind::Direct,
            durable_exchange,
            FieldTable::default(),
        )
        .await
        .map_err(AmqpError::broker("declare exchange", &exchange))?;
    channel
        .queue_declare(
            short(queue.as_str()),
            durable_queue,
            work_queue_arguments(cfg),
        )
        .await
        .map_err(AmqpError::broker("declare queue", &queue))?;
    channel
        .queue_bind(
            short(queue.as_str()),
            short(exchange.as_str()),
            short(cfg.routing_key()),
            QueueBindOptions::default(),
            FieldTable::default(),
        )
        .await
        .map_err(AmqpError::broker("bind queue", &queue))?;
    Ok(())
}

/// Deletes the topology with every message in it: for tests and for tearing down a fleet.
/// Missing pieces are not an error.
pub async fn delete_topology(channel: &Channel, cfg: &AmqpConfig) -> Result<(), AmqpError> {
    cfg.validate()?;
    for queue in [cfg.queue(), cfg.dead_queue()] {
        channel
            .queue_delete(short(queue.as_str()), QueueDeleteOptions::default())
            .await
            .map_err(AmqpError::broker("delete queue", &queue))?;
    }
    for exchange in [cfg.exchange(), cfg.dlx()] {
        channel
            .exchange_delete(short(exchange.as_str()), ExchangeDeleteOptions::default())
            .await
            .map_err(AmqpError::broker("delete exchange", &exchange))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_work_queue_is_a_quorum_queue_with_a_limit_and_a_dlx() {
        let cfg = AmqpConfig {
            prefix: "p".into(),
            delivery_limit: 7,
            ..AmqpConfig::default()
        };
        let args = work_queue_arguments(&cfg);
        let get = |k: &str| args.inner().get(k).cloned();
        assert_eq!(
            get("x-queue-type"),
            Some(AMQPValue::LongString("quorum".into()))
        );
        assert_eq!(get("x-delivery-limit"), Some(AMQPValue::LongLongInt(7)));
        assert_eq!(
            get("x-dead-letter-exchange"),
            Some(AMQPValue::LongString("p.dlx".into()))
        );
    }
}
