//! The fleet commands: `submit`, `worker`, `aggregator`, and the run operations.

pub mod aggregator;
pub mod ops;
pub mod submit;
pub mod worker;

use std::time::Duration;

use anyhow::Context;
use clap::Args;
use evalfleet_config::Config;
use evalfleet_fleet::amqp::{AmqpConfig, AmqpQueue};
use evalfleet_fleet::redis::{RedisConfig, RedisStore};
use evalfleet_model::redact::redact_url;

/// How long a command keeps trying to reach RabbitMQ or Redis at start.
const CONNECT_DEADLINE: Duration = Duration::from_secs(30);

/// Where the fleet's broker and store are (flags win over the environment, which wins over the
/// config file).
#[derive(Args, Clone)]
pub struct Endpoints {
    #[arg(long, env = "EVALFLEET_AMQP_URL")]
    pub amqp_url: Option<String>,
    #[arg(long, env = "EVALFLEET_REDIS_URL")]
    pub redis_url: Option<String>,
}

impl Endpoints {
    pub fn amqp(&self, config: &Config, prefetch: u16) -> AmqpConfig {
        AmqpConfig {
            url: self
                .amqp_url
                .clone()
                .unwrap_or_else(|| config.fleet.amqp_url.clone()),
            prefix: config.fleet.prefix.clone(),
            prefetch,
            delivery_limit: config.fleet.delivery_limit,
        }
    }

    pub fn redis(&self, config: &Config) -> RedisConfig {
        RedisConfig {
            url: self
                .redis_url
                .clone()
                .unwrap_or_else(|| config.fleet.redis_url.clone()),
            prefix: format!("{}:", config.fleet.prefix),
            retention: Duration::from_secs(config.fleet.retention_hours * 3600),
        }
    }

    pub async fn connect_redis(&self, config: &Config) -> anyhow::Result<RedisStore> {
        let cfg = self.redis(config);
        let url = cfg.url.clone();
        RedisStore::connect(cfg, CONNECT_DEADLINE)
            .await
            .with_context(|| format!("connecting to Redis at {}", redact_url(&url)))
    }

    pub async fn connect_amqp(&self, config: &Config, prefetch: u16) -> anyhow::Result<AmqpQueue> {
        let cfg = self.amqp(config, prefetch);
        let url = cfg.url.clone();
        AmqpQueue::connect(cfg, CONNECT_DEADLINE)
            .await
            .with_context(|| format!("connecting to RabbitMQ at {}", redact_url(&url)))
    }
}

pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}
