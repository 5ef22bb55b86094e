//! `evalfleet validate`: a dry run. Reads and validates every record exactly as `run` would
//! (the same loop, [`Validator::checks`]), prints each problem with its line or index, and exits
//! non-zero when any record is invalid. With `--target`, a record is checked as a target run
//! checks it before any call: its id and what the target's templates use.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;
use evalfleet_config::Config;
use evalfleet_dataset::{DatasetReader, Format};
use evalfleet_suites::evaluate::{Checked, Evaluator, Validator};
use evalfleet_suites::suite::Suite;
use evalfleet_suites::target::{Secrets, TargetPlan};

use crate::exit::{BadInput, Exit};

#[derive(Args)]
pub struct ValidateArgs {
    pub dataset: PathBuf,
    #[arg(long, short, default_value = "support-judge")]
    pub suite: String,
    /// Dataset format: jsonl, json (an array) or csv (default: from the file: `.csv` is CSV,
    /// `.jsonl` JSONL, otherwise a leading `[` means a JSON array).
    #[arg(long, value_parser = super::parse_format)]
    pub format: Option<Format>,
    /// Print at most this many problems (all are counted).
    #[arg(long, default_value_t = 100)]
    pub max_problems: usize,
    #[command(flatten)]
    pub target: super::target::TargetArgs,
}

pub fn validate(args: ValidateArgs, config: Option<&Path>) -> anyhow::Result<Exit> {
    let (config, suite) = super::config_and_suite(config, &args.suite)?;
    super::dataset_len(&args.dataset)?;
    let found = args.target.found(&config, &suite)?;
    let mut exit = Exit::Success;
    if found.is_empty() {
        return check(&args, &config, &suite, None);
    }
    for target in found {
        let plan = TargetPlan::compile(target.target, Secrets::Keep).map_err(BadInput)?;
        exit = exit.worst(check(&args, &config, &suite, Some(plan))?);
    }
    Ok(exit)
}

/// Checks every record as a run of `suite` (with `target`, when given) would.
fn check(
    args: &ValidateArgs,
    config: &Config,
    suite: &Suite,
    target: Option<TargetPlan>,
) -> anyhow::Result<Exit> {
    let options = super::read_options(suite, args.format, config);
    let evaluator = Evaluator::new(
        suite.clone().into(),
        config.model_prefixes.clone(),
        args.dataset.parent().map(Path::to_path_buf),
    );
    let label = match &target {
        Some(plan) => format!("{}, target {}", args.suite, plan.name()),
        None => args.suite.clone(),
    };
    let mut validator = Validator::new(evaluator);
    if let Some(plan) = target {
        validator = validator.with_target(Arc::new(plan));
    }
    let reader = DatasetReader::open_with(&args.dataset, &options)?;
    let (mut valid, mut invalid) = (0u64, 0u64);
    for checked in validator.checks(reader) {
        match checked? {
            Checked::Valid { .. } => valid += 1,
            Checked::Skipped {
                position,
                id,
                reason,
                ..
            } => {
                invalid += 1;
                if invalid as usize <= args.max_problems {
                    let id = if id.is_empty() {
                        String::new()
                    } else {
                        format!(" ({id})")
                    };
                    println!("{}: {position}{id}: {reason}", args.dataset.display());
                }
            }
        }
    }
    if valid + invalid == 0 {
        return Err(BadInput(format!(
            "dataset '{}' contains no records",
            args.dataset.display()
        ))
        .into());
    }
    if invalid as usize > args.max_problems {
        println!(
            "… {} more problems not shown",
            invalid as usize - args.max_problems
        );
    }
    println!(
        "{}: {valid} valid, {invalid} invalid ({label})",
        args.dataset.display(),
    );
    Ok(if invalid == 0 {
        Exit::Success
    } else {
        Exit::GatesFailed
    })
}
