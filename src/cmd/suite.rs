//! `evalfleet suite init DATASET --name NAME`: writes a starter custom suite inferred from the
//! dataset's columns (the rules are in [`evalfleet_suites::custom::init`]), so that
//! `evalfleet run DATASET --suite FILE` works at once and the file is there to edit.
//!
//! The file goes to `--out`, else `<suites_dir>/NAME.yaml`; an existing file is never
//! overwritten (bad input), a missing parent directory is created, and the path written is the
//! only thing printed on stdout.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, Subcommand};
use evalfleet_dataset::{DatasetError, DatasetReader, Format, ReadOptions};
use evalfleet_suites::custom::init::{self, SAMPLE_RECORDS};

use crate::exit::{BadInput, Exit};

#[derive(Subcommand)]
pub enum SuiteArgs {
    /// Write a starter custom suite inferred from a dataset's columns (types, id, judged text,
    /// reference, routing and groupings), with comments on what to edit.
    Init(InitArgs),
}

#[derive(Args)]
pub struct InitArgs {
    /// Dataset: JSONL, a JSON array or CSV (the first 1,000 records are sampled).
    pub dataset: PathBuf,
    /// The suite's name (and the file name `NAME.yaml` when --out is not given).
    #[arg(long)]
    pub name: String,
    /// Where to write the suite (default: <suites_dir>/NAME.yaml). Never overwritten.
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    /// Dataset format: jsonl, json (an array) or csv (default: from the file: `.csv` is CSV,
    /// `.jsonl` JSONL, otherwise a leading `[` means a JSON array).
    #[arg(long, value_parser = super::parse_format)]
    pub format: Option<Format>,
}

pub fn suite(args: SuiteArgs, config: Option<&Path>) -> anyhow::Result<Exit> {
    match args {
        SuiteArgs::Init(args) => init(args, config),
    }
}

fn init(args: InitArgs, config: Option<&Path>) -> anyhow::Result<Exit> {
    let name = args.name.trim();
    if name.is_empty() {
        return Err(BadInput("--name is empty: give the suite a name".to_owned()).into());
    }
    let config = crate::cmd::load_config(config)?;
    let path = match &args.out {
        Some(out) => out.clone(),
        None => {
            let plain_file_name = !matches!(name, "." | "..")
                && !name.contains(['/', '\\'])
                && !name.chars().any(char::is_control);
            if !plain_file_name {
                return Err(BadInput(format!(
                    "--name '{name}' cannot be a file name in suites_dir: choose another name or give --out FILE"
                ))
                .into());
            }
            config.suites_dir.join(format!("{name}.yaml"))
        }
    };
    // Checked before reading the dataset to fail fast; `create_new` below is the real guard.
    if path.exists() {
        return Err(exists(&path).into());
    }
    super::dataset_len(&args.dataset)?;

    let options = ReadOptions {
        format: args.format,
        max_record: config.max_record_bytes,
        ..ReadOptions::default()
    };
    let reader = DatasetReader::open_with(&args.dataset, &options)?;
    let columns = reader.columns().map(<[String]>::to_vec);
    let (mut records, mut positions, mut seen) = (Vec::new(), Vec::new(), 0usize);
    let mut first_problem: Option<String> = None;
    for raw in reader.take(SAMPLE_RECORDS) {
        let raw = match raw {
            Ok(raw) => raw,
            // The records before a truncated array or trailing text are still a sample.
            Err(DatasetError::Truncated { .. } | DatasetError::TrailingData { .. }) => break,
            Err(e) => return Err(e.into()),
        };
        seen += 1;
        match raw.value {
            Ok(value) => {
                records.push(value);
                positions.push(raw.position.to_string());
            }
            Err(reason) => {
                first_problem.get_or_insert_with(|| format!("{}: {reason}", raw.position));
            }
        }
    }
    let dataset = args.dataset.display();
    if seen == 0 {
        return Err(BadInput(format!("dataset '{dataset}' contains no records")).into());
    }
    if records.is_empty() {
        return Err(BadInput(format!(
            "dataset '{dataset}': none of the first {seen} records could be read ({})",
            first_problem.unwrap_or_default()
        ))
        .into());
    }
    let inferred = init::infer(columns.as_deref(), &records, &config.model_prefixes)
        .map_err(|e| BadInput(format!("dataset '{dataset}': {e}")))?;

    // The header's commands pass --format only when the file would be read differently
    // without it (a CSV without `.csv`, or a name whose extension says another format).
    let implied = match args
        .dataset
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("csv") => Some(Format::Csv),
        Some("jsonl" | "ndjson") => Some(Format::JsonLines),
        _ => None,
    };
    let format_flag = args
        .format
        .filter(|&f| match implied {
            Some(i) => i != f,
            None => f == Format::Csv,
        })
        .map(|f| match f {
            Format::JsonLines => "jsonl",
            Format::JsonArray => "json",
            Format::Csv => "csv",
        });
    let text = init::render(
        &inferred,
        name,
        &args.dataset.display().to_string(),
        &suite_arg(&path),
        format_flag,
    );

    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating the directory '{}'", parent.display()))?;
    }
    let mut file = match OpenOptions::new().write(true).create_new(true).open(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Err(exists(&path).into()),
        Err(e) => {
            return Err(e).with_context(|| format!("creating the suite file '{}'", path.display()))
        }
    };
    if let Err(e) = file
        .write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
    {
        drop(file);
        let _ = std::fs::remove_file(&path);
        return Err(e).with_context(|| format!("writing the suite file '{}'", path.display()));
    }
    println!("{}", path.display());
    for field in inferred.fields.iter().filter(|f| f.not_numbers_count > 0) {
        let rows: Vec<String> = (field.not_numbers.iter())
            .map(|(record, value)| format!("{} ({value:?})", positions[*record]))
            .collect();
        let more = field.not_numbers_count - rows.len();
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        eprintln!(
            "column '{}' holds numbers and is typed number, but these sampled records hold something else and will be skipped: {}{more}; fix those values, or make the field a string",
            field.column,
            rows.join(", ")
        );
    }
    eprintln!(
        "wrote the starter suite '{name}' ({} fields from {} sampled records); try it with: evalfleet run {} --suite {}",
        inferred.fields.len(),
        inferred.sampled,
        args.dataset.display(),
        suite_arg(&path)
    );
    Ok(Exit::Success)
}

fn exists(path: &Path) -> BadInput {
    BadInput(format!(
        "'{}' already exists: suite init never overwrites a file (remove it, or choose another --out or --name)",
        path.display()
    ))
}

/// The path as `--suite` must be given to be read as a file: `run --suite X` takes a name
/// without `/` and not ending in `.yaml`/`.yml` for a suite name, so such a path gets `./`.
fn suite_arg(path: &Path) -> String {
    let s = path.display().to_string();
    let looks_like_path = s.ends_with(".yaml") || s.ends_with(".yml") || s.contains('/');
    if looks_like_path {
        s
    } else {
        format!("./{s}")
    }
}
