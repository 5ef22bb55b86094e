//! `evalfleet`: one binary, one subcommand per role (like `celery worker`). This file only
//! parses arguments and maps outcomes to exit codes; the work lives in the library crates.

mod cmd;
mod exit;
mod progress;

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
    /// Check a dataset without evaluating it: every problem with its line or index.
    Validate(cmd::validate::ValidateArgs),
    /// Write a deterministic synthetic dataset (for demos and benchmarks).
    Generate(cmd::generate::GenerateArgs),
    /// Serve the OpenAI and Anthropic APIs locally with deterministic judge replies, rate
    /// limits and injected faults (tests, demos, load tests without API credits).
    FakeProvider(evalfleet_fake_provider::FakeProviderArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.log_format);
    let result = match cli.command {
        Command::Run(args) => cmd::run::run(args, cli.config.as_deref()),
        Command::Validate(args) => cmd::validate::validate(args, cli.config.as_deref()),
        Command::Generate(args) => cmd::generate::generate(args),
        Command::FakeProvider(args) => cmd::fake_provider(args),
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
