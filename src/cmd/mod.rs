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
    // Every template this process compiles from now on renders within these bounds.
    evalfleet_suites::bounded::set_limits(config.templates);
    Ok(config)
}

/// Loads the configuration and resolves `--suite` against it.
pub fn config_and_suite(config: Option<&Path>, suite: &str) -> anyhow::Result<(Config, Suite)> {
    let config = load_config(config)?;
    let suite = Suite::resolve(suite, Some(&config.suites_dir))?;
    Ok((config, suite))
}

/// How to read a dataset for `suite`: its format (None = from the file), the suite's CSV cell
/// types, and the configuration's `max_record_bytes`.
pub fn read_options(
    suite: &Suite,
    format: Option<Format>,
    config: &Config,
) -> evalfleet_dataset::ReadOptions {
    evalfleet_dataset::ReadOptions {
        max_record: config.max_record_bytes,
        ..suite.read_options(format)
    }
}

/// `--format jsonl|json|csv`: how to read the dataset when its name does not say.
pub fn parse_format(s: &str) -> Result<Format, String> {
    Format::from_name(s)
        .ok_or_else(|| format!("unknown dataset format '{s}': use jsonl, json or csv"))
}

/// A run id given on the command line (`--run-id`, `status RUN`, ...): the one rule, or a usage
/// error (exit 2) that states it.
pub fn parse_run_id(s: &str) -> Result<evalfleet_model::run_id::RunId, String> {
    s.parse()
        .map_err(|e: evalfleet_model::run_id::BadRunId| e.to_string())
}

/// A run id made from a given one and a suffix (`<run_id>-<target>`), checked against the rule
/// as a given one is (it may grow past its length).
pub fn derived_run_id(id: &str, suffix: &str) -> anyhow::Result<String> {
    let derived = format!("{id}-{suffix}");
    evalfleet_model::run_id::check(&derived).map_err(|e| BadInput(e.to_string()))?;
    Ok(derived)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configured_record_limit_is_the_readers_default() {
        assert_eq!(
            evalfleet_config::DEFAULT_MAX_RECORD_BYTES,
            evalfleet_dataset::DEFAULT_MAX_RECORD_BYTES
        );
        let config = Config {
            max_record_bytes: 1234,
            ..Config::default()
        };
        let suite = Suite::builtin(evalfleet_model::suite::SuiteKind::SupportJudge);
        let options = read_options(&suite, Some(Format::Csv), &config);
        assert_eq!(
            (options.max_record, options.format),
            (1234, Some(Format::Csv))
        );
    }

    #[test]
    fn run_ids_are_parsed_against_the_rule() {
        assert_eq!(parse_run_id("r-1").unwrap().as_str(), "r-1");
        let err = parse_run_id("a/b").unwrap_err();
        assert!(err.contains(evalfleet_model::run_id::RULE), "{err}");
        assert_eq!(derived_run_id("r", "agent-a").unwrap(), "r-agent-a");
        let long = "r".repeat(120);
        let err = derived_run_id(&long, "agent-a-gpt-4o")
            .unwrap_err()
            .to_string();
        assert!(err.contains("more than 128"), "{err}");
    }
}
