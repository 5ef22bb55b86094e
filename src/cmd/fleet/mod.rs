//! The fleet commands: `submit`, `worker`, `aggregator`, and the run operations.

pub mod aggregator;
pub mod ops;
pub mod submit;
pub mod worker;

use std::time::Duration;

use anyhow::Context;
use clap::Args;
use evalfleet_fleet::amqp::{AmqpConfig, AmqpQueue};
use evalfleet_fleet::redis::{RedisConfig, RedisStore};
use evalfleet_shared::config::Config;

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
            .with_context(|| format!("connecting to Redis at {}", redact(&url)))
    }

    pub async fn connect_amqp(&self, config: &Config, prefetch: u16) -> anyhow::Result<AmqpQueue> {
        let cfg = self.amqp(config, prefetch);
        let url = cfg.url.clone();
        AmqpQueue::connect(cfg, CONNECT_DEADLINE)
            .await
            .with_context(|| format!("connecting to RabbitMQ at {}", redact(&url)))
    }
}

/// A URL without its password, for messages.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let creds = &url[scheme + 3..at];
            let user = creds.split(':').next().unwrap_or("");
            format!("{}{user}:***{}", &url[..scheme + 3], &url[at..])
        }
        _ => url.to_owned(),
    }
}

/// Resolves on SIGTERM or SIGINT.
pub async fn shutdown_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate => {}
    }
}

pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

#[cfg(test)]
mod tests {
    #[test]
    fn passwords_are_redacted() {
        assert_eq!(
            super::redact("amqp://guest:secret@host:5672/%2f"),
            "amqp://guest:***@host:5672/%2f"
        );
        assert_eq!(
            super::redact("redis://127.0.0.1:6379/"),
            "redis://127.0.0.1:6379/"
        );
    }
}
