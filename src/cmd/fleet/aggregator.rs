//! `evalfleet aggregator`: tail results, finish runs, write reports, serve the HTTP API.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use evalfleet_aggregator::service::{Aggregator, AggregatorOptions};
use evalfleet_fleet::amqp::depth::{ManagementApi, QueueDepthReader, QueueNames};

use super::Endpoints;
use crate::exit::{BadInput, Exit};

#[derive(Args)]
pub struct AggregatorArgs {
    /// Where the HTTP API (/runs, /runs/{id}, /runs/{id}/report, /runs/{a}/compare/{b}, /healthz,
    /// /readyz) listens.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub http_addr: SocketAddr,
    /// Where `<run_id>/` report directories are written (default: config reports_dir).
    #[arg(long)]
    pub reports_dir: Option<PathBuf>,
    #[command(flatten)]
    pub endpoints: Endpoints,
}

pub fn run(args: AggregatorArgs, config: Option<&Path>) -> anyhow::Result<Exit> {
    let config = crate::cmd::load_config(config)?;
    super::runtime()?.block_on(async {
        let store = args.endpoints.connect_redis(&config).await?;
        let consumer = format!("{}-{}", hostname(), std::process::id());
        let opts = AggregatorOptions {
            reports_dir: args
                .reports_dir
                .clone()
                .unwrap_or(config.reports_dir.clone()),
            consumer,
            claim_after: Duration::from_secs(30),
        };
        let amqp = args.endpoints.amqp(&config, 1);
        let management = config
            .fleet
            .management_url()
            .map(ManagementApi::new)
            .transpose()
            .map_err(|e| BadInput(e.to_string()))?;
        let queue = match args.endpoints.connect_amqp(&config, 1).await {
            Ok(queue) => Some(queue),
            Err(e) if management.is_some() => {
                tracing::warn!(error = %e, "RabbitMQ is unreachable: queue depths from the management API only");
                None
            }
            Err(e) => {
                tracing::warn!(error = %e, "no queue-depth metrics: RabbitMQ is unreachable");
                None
            }
        };
        tracing::info!(
            source = if management.is_some() { "management API" } else { "passive declare" },
            "queue-depth metrics"
        );
        let depths = QueueDepthReader {
            names: QueueNames {
                work: amqp.queue(),
                dead: amqp.dead_queue(),
            },
            management,
            amqp: queue,
        };
        let aggregator = match depths.is_empty() {
            true => Aggregator::new(store, opts),
            false => Aggregator::new(store, opts).with_queue_depths(depths),
        };
        let aggregator = Arc::new(aggregator);
        let shutdown = crate::shutdown::Shutdown::on_signal();
        tokio::spawn(evalfleet_aggregator::http::serve(
            args.http_addr,
            Arc::new(aggregator.store().clone()),
            shutdown.server(),
        ));
        tracing::info!(http = %args.http_addr, "aggregator started");
        aggregator.serve(shutdown.work()).await?;
        tracing::info!("aggregator stopped");
        Ok(Exit::Success)
    })
}

fn hostname() -> String {
    std::fs::read_to_string("/etc/hostname")
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "aggregator".into())
}
