//! `evalfleet validate`: a dry run. Reads and validates every record exactly as `run` would
//! (the same loop, [`Validator::checks`]), prints each problem with its line or index, and exits
//! non-zero when any record is invalid.

use std::path::{Path, PathBuf};

use clap::Args;
use evalfleet_dataset::{DatasetReader, Format};
use evalfleet_suites::evaluate::{Checked, Evaluator, Validator};

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
}

pub fn validate(args: ValidateArgs, config: Option<&Path>) -> anyhow::Result<Exit> {
    let (config, suite) = super::config_and_suite(config, &args.suite)?;
    super::dataset_len(&args.dataset)?;
    let options = suite.read_options(args.format);
    let evaluator = Evaluator::new(
        suite.into(),
        config.model_prefixes,
        args.dataset.parent().map(Path::to_path_buf),
    );
    let reader = DatasetReader::open_with(&args.dataset, &options)?;
    let (mut valid, mut invalid) = (0u64, 0u64);
    for checked in Validator::new(evaluator).checks(reader) {
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
        "{}: {valid} valid, {invalid} invalid ({})",
        args.dataset.display(),
        args.suite
    );
    Ok(if invalid == 0 {
        Exit::Success
    } else {
        Exit::GatesFailed
    })
}
