//! One module per subcommand.

pub mod compare;
pub mod estimate;
pub mod export;
pub mod fleet;
pub mod generate;
pub mod judge;
pub mod run;
pub mod suite;
pub mod target;
pub mod validate;

use std::path::Path;

use anyhow::Context;
use evalfleet_config::Config;
use evalfleet_dataset::Format;
use evalfleet_suites::suite::Suite;

use crate::exit::BadInput;

/// `evalfleet fake-provider`: serves until SIGINT/SIGTERM.
pub fn fake_provider(
    args: evalfleet_fake_provider::FakeProviderArgs,
) -> anyhow::Result<crate::exit::Exit> {
    args.validate().map_err(|e| BadInput(e.to_string()))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime
        .block_on(evalfleet_fake_provider::serve(args))
        .context("serving the fake provider")?;
    Ok(crate::exit::Exit::Success)
}

/// Loads the configuration (`--config`, else the default file when it exists) and says once
/// what its reader noticed (a key read from its old place).
pub fn load_config(path: Option<&Path>) -> anyhow::Result<Config> {
    let config = Config::load(path)?;
    for notice in &config.notices {
        tracing::warn!("{notice}");
    }
    Ok(config)
}

/// Loads the configuration and resolves `--suite` against it.
pub fn config_and_suite(config: Option<&Path>, suite: &str) -> anyhow::Result<(Config, Suite)> {
    let config = load_config(config)?;
    let suite = Suite::resolve(suite, Some(&config.suites_dir))?;
    Ok((config, suite))
}

/// `--format jsonl|json|csv`: how to read the dataset when its name does not say.
pub fn parse_format(s: &str) -> Result<Format, String> {
    Format::from_name(s)
        .ok_or_else(|| format!("unknown dataset format '{s}': use jsonl, json or csv"))
}

/// `--judge none|heuristic|live`: an unknown judge is a usage error here, before anything runs.
pub fn parse_judge(s: &str) -> Result<evalfleet_worker::JudgeMode, String> {
    s.parse()
}

pub fn parse_call_mode(s: &str) -> Result<evalfleet_config::CallMode, String> {
    s.parse()
}

/// The dataset's size, failing early (and as bad input) when it cannot be read.
pub fn dataset_len(path: &Path) -> anyhow::Result<u64> {
    let meta = std::fs::metadata(path)
        .map_err(|e| BadInput(format!("cannot read dataset '{}': {e}", path.display())))
        .context("opening the dataset")?;
    if meta.is_dir() {
        return Err(BadInput(format!("dataset '{}' is a directory", path.display())).into());
    }
    Ok(meta.len())
}
