//! `evalfleet`: one binary, one subcommand per role (like `celery worker`). This file only
//! parses arguments and maps outcomes to exit codes; the work lives in the library crates.

mod cmd;
mod exit;
mod progress;
mod shutdown;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::exit::Exit;

/// Records are built on one worker thread and freed on another; glibc's allocator serialises
/// such cross-thread frees on an arena lock, mimalloc does not.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "evalfleet", version, about = "Evaluate LLM systems at fleet scale.", long_about = None)]
struct Cli {
    /// Configuration file (default: config/evalfleet.yaml when it exists).
    #[arg(long, global = true, env = "EVALFLEET_CONFIG")]
    config: Option<PathBuf>,
    /// Log format on stderr.
    #[arg(long, global = true, value_enum, default_value = "text")]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Evaluate a dataset in this process (embedded mode: no RabbitMQ or Redis needed).
    Run(cmd::run::RunArgs),
    /// Compare two reports item by item: is NEW worse than BASE beyond noise? (paired tests,
    /// Holm-corrected; exit 1 on a regression).
    Compare(cmd::compare::CompareArgs),
    /// Check a dataset without evaluating it: every problem with its line or index.
    Validate(cmd::validate::ValidateArgs),
    /// Write a deterministic synthetic dataset (for demos and benchmarks).
    Generate(cmd::generate::GenerateArgs),
    /// Write a run's items as Parquet, JSON lines or CSV (for pandas, DuckDB, spreadsheets).
    Export(cmd::export::ExportArgs),
    /// Write a starter custom suite from a dataset's columns.
    #[command(subcommand)]
    Suite(cmd::suite::SuiteArgs),
    /// Validate a dataset, register the run in Redis and publish one message per example.
    Submit(cmd::fleet::submit::SubmitArgs),
    /// Consume example messages: evaluate, store the result, then ack (graceful on SIGTERM).
    Worker(cmd::fleet::worker::WorkerArgs),
    /// Tail results, finish runs, write their reports, serve the HTTP API.
    Aggregator(cmd::fleet::aggregator::AggregatorArgs),
    /// Progress, rates, outcomes and ETA of a run (or a list of the latest runs).
    Status(cmd::fleet::ops::StatusArgs),
    /// Print a finished run's summary.
    Report(cmd::fleet::ops::RunArg),
    /// Cancel a run: workers drop its remaining messages without judging them.
    Cancel(cmd::fleet::ops::RunArg),
    /// Re-enqueue a run's failed examples.
    Retry(cmd::fleet::ops::RunArg),
    /// Inspect or requeue dead-lettered messages.
    Dlq(cmd::fleet::ops::DlqArgs),
    /// Serve the OpenAI and Anthropic APIs locally with deterministic judge replies, rate
    /// limits and injected faults (tests, demos, load tests without API credits).
    FakeProvider(evalfleet_fake_provider::FakeProviderArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.log_format);
    let result = match cli.command {
        Command::Run(args) => cmd::run::run(args, cli.config.as_deref()),
        Command::Compare(args) => cmd::compare::compare(args, cli.config.as_deref()),
        Command::Validate(args) => cmd::validate::validate(args, cli.config.as_deref()),
        Command::Generate(args) => cmd::generate::generate(args),
        Command::Export(args) => cmd::export::export(args, cli.config.as_deref()),
        Command::Suite(args) => cmd::suite::suite(args, cli.config.as_deref()),
        Command::FakeProvider(args) => cmd::fake_provider(args),
        Command::Submit(args) => cmd::fleet::submit::run(args, cli.config.as_deref()),
        Command::Worker(args) => cmd::fleet::worker::run(args, cli.config.as_deref()),
        Command::Aggregator(args) => cmd::fleet::aggregator::run(args, cli.config.as_deref()),
        Command::Status(args) => cmd::fleet::ops::status(args, cli.config.as_deref()),
        Command::Report(args) => cmd::fleet::ops::report(args, cli.config.as_deref()),
        Command::Cancel(args) => cmd::fleet::ops::cancel(args, cli.config.as_deref()),
        Command::Retry(args) => cmd::fleet::ops::retry(args, cli.config.as_deref()),
        Command::Dlq(args) => cmd::fleet::ops::dlq(args, cli.config.as_deref()),
    };
    match result {
        Ok(exit) => exit.into(),
        Err(err) => {
            eprintln!("error: {err:#}");
            Exit::classify(&err).into()
        }
    }
}

fn init_logging(format: LogFormat) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}
