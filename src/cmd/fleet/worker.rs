//! `evalfleet worker`: consume example messages, evaluate, store, ack; graceful on SIGTERM.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use evalfleet_contract::batch_store::BatchStore;
use evalfleet_contract::judge_cache::JudgeCache;
use evalfleet_contract::shared_limit::SharedLimiter;
use evalfleet_fleet::limits::FleetLimits;
use evalfleet_fleet::redis::RedisJudgeCache;
use evalfleet_worker::coordinator::CoordinatorOptions;
use evalfleet_worker::service::{FleetWorker, ServiceOptions};
use evalfleet_worker::WorkerError;

use super::Endpoints;
use crate::exit::Exit;

#[derive(Args)]
pub struct WorkerArgs {
    /// Examples processed at once (default: config fleet.worker_concurrency).
    #[arg(long, short = 'j')]
    pub concurrency: Option<usize>,
    /// Where /metrics, /healthz and /readyz are served.
    #[arg(long, default_value = "127.0.0.1:9464")]
    pub metrics_addr: SocketAddr,
    #[command(flatten)]
    pub endpoints: Endpoints,
}

pub fn run(args: WorkerArgs, config: Option<&Path>) -> anyhow::Result<Exit> {
    let config = crate::cmd::load_config(config)?;
    let concurrency = args
        .concurrency
        .unwrap_or(config.fleet.worker_concurrency)
        .max(1);
    // Prefetch sized to concurrency (docs/DESIGN.md §3): enough to keep every slot busy, no hoarding.
    let prefetch = (concurrency * 2).min(u16::MAX as usize) as u16;
    super::runtime()?.block_on(async {
        let store = args.endpoints.connect_redis(&config).await?;
        let queue = args.endpoints.connect_amqp(&config, prefetch).await?;
        let cache: Arc<dyn JudgeCache> = Arc::new(RedisJudgeCache::new(
            &store,
            Duration::from_secs(config.fleet.judge_cache_ttl_s),
        ));
        let limiter: Option<Arc<dyn SharedLimiter>> = config
            .fleet
            .fleet_rate_limits
            .then(|| Arc::new(FleetLimits::new(&store, &config.judges)) as Arc<dyn SharedLimiter>);
        let batches: Arc<dyn BatchStore> = Arc::new(store.clone());
        let worker = FleetWorker::new(
            queue,
            Arc::new(store.clone()),
            Arc::new(store),
            cache,
            limiter,
            batches,
            config.fleet.targets.clone(),
        )
        .map_err(crate::exit::BadInput)?;
        let worker = Arc::new(worker);
        // The suites and judges this worker's config knows start at 0 (a run's spec may name
        // others: their series appear with their first example).
        let suites = evalfleet_worker::metrics::known_suites(Some(&config.suites_dir));
        evalfleet_worker::metrics::metrics()
            .init_known(suites.iter().map(String::as_str), Some(&config.judges));
        let shutdown = crate::shutdown::Shutdown::on_signal();
        tokio::spawn(evalfleet_worker::http::serve(
            args.metrics_addr,
            worker.stats.clone(),
            shutdown.server(),
        ));
        tracing::info!(concurrency, "worker started");
        let opts = ServiceOptions {
            concurrency,
            shutdown_deadline: Duration::from_secs(config.fleet.shutdown_deadline_s),
            coordinator: CoordinatorOptions {
                holder: holder_name(),
                lease: Duration::from_secs_f64(config.fleet.batch_lease_s.max(0.3)),
            },
        };
        match worker.serve(opts, shutdown.work()).await {
            Ok(()) => {
                tracing::info!("worker stopped");
                Ok(Exit::Success)
            }
            Err(WorkerError::Stopped(reason)) => Err(crate::exit::BadInput(reason).into()),
            Err(e) => Err(e.into()),
        }
    })
}

/// This process's name in the batch coordinator leases: host, pid and a random part (a
/// restarted process with a reused pid must not take its predecessor's lease for its own).
fn holder_name() -> String {
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "worker".into());
    format!(
        "{host}-{}-{:08x}",
        std::process::id(),
        rand::random::<u32>()
    )
}
