//! `evalfleet aggregator`: tail results, finish runs, write reports, serve the HTTP API.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::builder::{BoolishValueParser, NonEmptyStringValueParser};
use clap::Args;
use evalfleet_aggregator::http::auth::all_loopback;
use evalfleet_aggregator::http::ApiToken;
use evalfleet_aggregator::service::{Aggregator, AggregatorOptions};
use evalfleet_fleet::amqp::depth::{ManagementApi, QueueDepthReader, QueueNames};

use super::Endpoints;
use crate::exit::{BadInput, Exit};

#[derive(Args)]
pub struct AggregatorArgs {
    /// Where the HTTP API (/runs, /runs/{id}, /runs/{id}/report, /runs/{a}/compare/{b},
    /// /metrics, /healthz, /readyz) listens: IP:PORT or HOST:PORT. Without --api-token-env it
    /// must be loopback (every address HOST resolves to), unless --insecure-no-auth.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub http_addr: String,
    /// Require `Authorization: Bearer <token>` on every route but /healthz, /readyz and
    /// /metrics; the token is read at start from the environment variable VAR.
    #[arg(
        long,
        value_name = "VAR",
        value_parser = NonEmptyStringValueParser::new(),
        env = "EVALFLEET_API_TOKEN_ENV"
    )]
    pub api_token_env: Option<String>,
    /// Serve the HTTP API without a token on an address that is not loopback (logged as a
    /// warning). Anyone who can reach it reads every run and report.
    #[arg(
        long,
        env = "EVALFLEET_INSECURE_NO_AUTH",
        value_parser = BoolishValueParser::new()
    )]
    pub insecure_no_auth: bool,
    /// Where `<run_id>/` report directories are written (default: config reports_dir).
    #[arg(long)]
    pub reports_dir: Option<PathBuf>,
    #[command(flatten)]
    pub endpoints: Endpoints,
}

pub fn run(args: AggregatorArgs, config: Option<&Path>) -> anyhow::Result<Exit> {
    let (http_addrs, token) = http_access(&args)?;
    let config = crate::cmd::load_config(config)?;
    super::runtime()?.block_on(async {
        let store = args.endpoints.connect_redis(&config).await?;
        let consumer = format!("{}-{}", hostname(), std::process::id());
        let opts = AggregatorOptions {
            reports_dir: args
                .reports_dir
                .clone()
                .unwrap_or(config.reports_dir.clone()),
            inline_items: config.reports.inline_items,
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
        let http = evalfleet_aggregator::http::serve(
            http_addrs,
            Arc::new(aggregator.store().clone()),
            token,
            shutdown.server(),
        );
        tokio::spawn(async move {
            if let Err(e) = http.await {
                tracing::error!(error = %e, "the HTTP API stopped");
            }
        });
        tracing::info!(http = %args.http_addr, "aggregator started");
        aggregator.serve(shutdown.work()).await?;
        tracing::info!("aggregator stopped");
        Ok(Exit::Success)
    })
}

/// Where the HTTP API listens and the token it requires, checked before anything connects: the
/// token from the variable `--api-token-env` names; without one, loopback addresses only unless
/// `--insecure-no-auth` (then a warning, once).
fn http_access(args: &AggregatorArgs) -> anyhow::Result<(Vec<SocketAddr>, Option<ApiToken>)> {
    let addr = args.http_addr.as_str();
    let addrs: Vec<SocketAddr> = addr
        .to_socket_addrs()
        .map_err(|e| BadInput(format!("--http-addr {addr}: {e}")))?
        .collect();
    if addrs.is_empty() {
        return Err(BadInput(format!("--http-addr {addr} resolves to no address")).into());
    }
    if let Some(var) = &args.api_token_env {
        // Checked here, not by clap: clap would count EVALFLEET_INSECURE_NO_AUTH=false as given.
        if args.insecure_no_auth {
            return Err(BadInput(
                "--api-token-env and --insecure-no-auth contradict each other: pass one".into(),
            )
            .into());
        }
        let token = std::env::var(var).map_err(|e| {
            BadInput(match e {
                std::env::VarError::NotPresent => {
                    format!("--api-token-env {var}: the environment variable {var} is not set")
                }
                std::env::VarError::NotUnicode(_) => format!(
                    "--api-token-env {var}: the environment variable {var} is not valid UTF-8"
                ),
            })
        })?;
        let token = ApiToken::new(&token).map_err(|e| {
            BadInput(format!(
                "--api-token-env {var}: the token in the environment variable {var} is unusable: {e}"
            ))
        })?;
        return Ok((addrs, Some(token)));
    }
    if all_loopback(&addrs) {
        return Ok((addrs, None));
    }
    let resolved: Vec<String> = addrs.iter().map(SocketAddr::to_string).collect();
    if !args.insecure_no_auth {
        return Err(BadInput(format!(
            "refusing to serve the HTTP API without authentication on --http-addr {addr} ({}), which is not loopback: \
             it serves users' data. Require a token with --api-token-env VAR (the token in the environment variable VAR), \
             bind a loopback address, or pass --insecure-no-auth to serve it open anyway",
            resolved.join(", ")
        ))
        .into());
    }
    tracing::warn!(
        http = addr,
        resolved = %resolved.join(", "),
        "--insecure-no-auth: the HTTP API serves every run and report without authentication to anyone who can reach it"
    );
    Ok((addrs, None))
}

fn hostname() -> String {
    std::fs::read_to_string("/etc/hostname")
        .map(|h| h.trim().to_owned())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "aggregator".into())
}
