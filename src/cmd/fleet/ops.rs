//! Run operations: `status`, `report`, `cancel`, `retry`, `dlq list|requeue`.

use std::path::Path;

use clap::{Args, Subcommand};
use evalfleet_config::CallMode;
use evalfleet_contract::batch_store::{BatchPhase, BatchStore};
use evalfleet_contract::registry::RunRegistry;
use evalfleet_contract::store::ResultStore;
use evalfleet_fleet::redis::RedisStore;
use evalfleet_model::run_id::RunId;
use evalfleet_producer::ops::{self, OpError};

use super::Endpoints;
use crate::exit::{BadInput, Exit};

#[derive(Args)]
pub struct RunArg {
    /// The run's id (^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$).
    #[arg(value_parser = crate::cmd::parse_run_id)]
    pub run: RunId,
    #[command(flatten)]
    pub endpoints: Endpoints,
}

#[derive(Args)]
pub struct StatusArgs {
    /// A run; without it, the latest runs.
    #[arg(value_parser = crate::cmd::parse_run_id)]
    pub run: Option<RunId>,
    #[command(flatten)]
    pub endpoints: Endpoints,
}

#[derive(Args)]
pub struct DlqArgs {
    #[command(subcommand)]
    pub action: DlqAction,
    #[command(flatten)]
    pub endpoints: Endpoints,
}

#[derive(Subcommand)]
pub enum DlqAction {
    /// Show the dead-lettered messages (they stay in the queue).
    List {
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
    /// Move dead-lettered messages back to the work queue.
    Requeue {
        /// Only this run's messages.
        #[arg(long, value_parser = crate::cmd::parse_run_id)]
        run: Option<RunId>,
    },
}

pub fn status(args: StatusArgs, config: Option<&Path>) -> anyhow::Result<Exit> {
    let config = crate::cmd::load_config(config)?;
    super::runtime()?.block_on(async {
        let store = args.endpoints.connect_redis(&config).await?;
        let Some(run) = args.run else {
            println!(
                "{:<32} {:<14} {:<11} {:>17} {:>8} {:>8} {:>8}  created",
                "run", "suite", "status", "done/total", "ok", "failed", "skipped"
            );
            for meta in store.runs(50).await? {
                let c = store.counts(&meta.id).await?;
                let total = meta.total.map_or("?".into(), |t| t.to_string());
                println!(
                    "{:<32} {:<14} {:<11} {:>17} {:>8} {:>8} {:>8}  {}",
                    meta.id,
                    meta.suite,
                    format!("{:?}", meta.status).to_lowercase(),
                    format!("{}/{total}", c.done()),
                    c.ok,
                    c.failed,
                    c.skipped,
                    meta.created_at
                );
            }
            return Ok(Exit::Success);
        };
        let meta = store
            .run(&run)
            .await?
            .ok_or_else(|| BadInput(format!("no run '{run}'")))?;
        let c = store.counts(&run).await?;
        let elapsed = meta.created_at.parse::<jiff::Timestamp>().ok().map(|t| {
            jiff::Timestamp::now()
                .duration_since(t)
                .as_secs_f64()
                .max(1e-3)
        });
        let rate = elapsed.map(|e| c.done() as f64 / e);
        println!(
            "run {}: suite {}, status {:?}, judge {}",
            meta.id, meta.suite, meta.status, meta.judge
        );
        println!(
            "  dataset {}; published {}; created {}",
            meta.dataset, meta.published, meta.created_at
        );
        match meta.total {
            Some(total) if total > 0 => {
                let eta = rate
                    .filter(|r| *r > 0.0)
                    .map(|r| (total.saturating_sub(c.done())) as f64 / r);
                println!(
                    "  progress {}/{} ({:.1}%) · {:.1} examples/s · ETA {}",
                    c.done(),
                    total,
                    100.0 * c.done() as f64 / total as f64,
                    rate.unwrap_or(0.0),
                    eta.map_or("–".into(), |s| format!("{s:.0} s"))
                );
            }
            _ => println!(
                "  progress {} stored (total known once submission ends)",
                c.done()
            ),
        }
        println!(
            "  outcomes: ok {} · failed {} · skipped {}",
            c.ok, c.failed, c.skipped
        );
        print_batches(&store, &run).await?;
        if let Ok(queue) = args.endpoints.connect_amqp(&config, 1).await {
            let dead = queue.dead_letters(10_000).await?;
            let mine = dead
                .iter()
                .filter(|d| d.run_id.as_deref() == Some(run.as_str()))
                .count();
            println!("  dead-lettered messages of this run: {mine}");
        }
        if let Some(dir) = store.report_dir(&run).await? {
            println!("  reports in {dir}");
        }
        Ok(Exit::Success)
    })
}

/// Batch mode's lines of `status RUN`: the run's provider batches by state, the questions
/// waiting for a batch and the examples waiting for their results.
async fn print_batches(store: &RedisStore, run: &str) -> anyhow::Result<()> {
    let Ok(Some(spec)) = RunRegistry::spec(store, run).await else {
        return Ok(());
    };
    let providers: Vec<String> = spec
        .judges
        .providers
        .keys()
        .filter(|p| spec.judges.mode_of(p) == CallMode::Batch)
        .cloned()
        .collect();
    if providers.is_empty() {
        return Ok(());
    }
    let overview = store.overview(run, &providers).await?;
    for provider in &providers {
        let states: Vec<String> = BatchPhase::ALL
            .iter()
            .filter_map(|phase| {
                let n = overview
                    .batches
                    .iter()
                    .filter(|(_, b)| &b.provider == provider && b.phase == *phase)
                    .count();
                (n > 0).then(|| format!("{} {n}", phase.as_str()))
            })
            .collect();
        let pending = overview
            .pending
            .iter()
            .find(|(p, _)| p == provider)
            .map_or(0, |(_, n)| *n);
        println!(
            "  batches of {provider}: {}; requests pending {pending}",
            if states.is_empty() {
                "none yet".to_owned()
            } else {
                states.join(", ")
            }
        );
    }
    println!("  examples waiting for batch results: {}", overview.parked);
    Ok(())
}

pub fn report(args: RunArg, config: Option<&Path>) -> anyhow::Result<Exit> {
    let config = crate::cmd::load_config(config)?;
    super::runtime()?.block_on(async {
        let store = args.endpoints.connect_redis(&config).await?;
        let meta = store
            .run(&args.run)
            .await?
            .ok_or_else(|| BadInput(format!("no run '{}'", args.run)))?;
        match store.summary(&args.run).await? {
            Some(summary) => {
                println!("{summary}");
                Ok(if meta.gates_passed == Some(true) {
                    Exit::Success
                } else {
                    Exit::GatesFailed
                })
            }
            None => Err(BadInput(format!(
                "run '{}' has no report yet (status {:?})",
                args.run, meta.status
            ))
            .into()),
        }
    })
}

pub fn cancel(args: RunArg, config: Option<&Path>) -> anyhow::Result<Exit> {
    let config = crate::cmd::load_config(config)?;
    super::runtime()?.block_on(async {
        let store = args.endpoints.connect_redis(&config).await?;
        ops::cancel(&store, &args.run).await.map_err(refusal)?;
        println!(
            "run {} cancelled: workers drop its remaining messages without judging them",
            args.run
        );
        let open = store
            .batches(&args.run)
            .await?
            .iter()
            .filter(|(_, b)| b.phase.open())
            .count();
        if open > 0 {
            println!(
                "  its {open} open provider batches are being cancelled by the batch coordinator \
                 (see `evalfleet status {}`)",
                args.run
            );
        }
        Ok(Exit::Success)
    })
}

pub fn retry(args: RunArg, config: Option<&Path>) -> anyhow::Result<Exit> {
    let config = crate::cmd::load_config(config)?;
    super::runtime()?.block_on(async {
        let store = args.endpoints.connect_redis(&config).await?;
        if store.run(&args.run).await?.is_none() {
            return Err(BadInput(format!("no run '{}'", args.run)).into());
        }
        let queue = args.endpoints.connect_amqp(&config, 1).await?;
        let n = ops::retry(&store, &queue, &args.run)
            .await
            .map_err(refusal)?;
        println!("run {}: {n} failed examples re-enqueued", args.run);
        Ok(Exit::Success)
    })
}

/// A refused operation is bad input (exit 2); a failing registry or queue is infrastructure.
fn refusal(e: OpError) -> anyhow::Error {
    match e {
        OpError::UnknownRun(_) | OpError::AlreadyComplete(_) => BadInput(e.to_string()).into(),
        other => other.into(),
    }
}

pub fn dlq(args: DlqArgs, config: Option<&Path>) -> anyhow::Result<Exit> {
    let config = crate::cmd::load_config(config)?;
    super::runtime()?.block_on(async {
        let queue = args.endpoints.connect_amqp(&config, 1).await?;
        match args.action {
            DlqAction::List { limit } => {
                let dead = queue.dead_letters(limit).await?;
                println!(
                    "{} dead-lettered messages shown (limit {limit})",
                    dead.len()
                );
                for d in dead {
                    println!(
                        "- run {} index {} reason {}: {}",
                        d.run_id.as_deref().unwrap_or("?"),
                        d.index.map_or("?".into(), |i| i.to_string()),
                        d.reason.as_deref().unwrap_or("?"),
                        d.raw.chars().take(160).collect::<String>()
                    );
                }
            }
            DlqAction::Requeue { run } => {
                let n = queue.requeue_dead(run.as_deref()).await?;
                println!("{n} dead-lettered messages moved back to the work queue");
            }
        }
        Ok(Exit::Success)
    })
}
