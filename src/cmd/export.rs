//! `evalfleet export RUN|REPORT`: a run's items for pandas, DuckDB, a warehouse or a
//! spreadsheet, streamed from its `items.parquet` (as Parquet, JSON lines or CSV).

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, ValueEnum};
use evalfleet_items::ExportFormat;

use crate::exit::{BadInput, Exit};

#[derive(Args)]
pub struct ExportArgs {
    /// A run id in reports_dir, a report directory, its report.json, or an items.parquet.
    pub run: String,
    /// What to write.
    #[arg(long, value_enum, default_value_t = Format::Jsonl)]
    pub format: Format,
    /// Output file (default: stdout).
    #[arg(long, short)]
    pub out: Option<PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum Format {
    Parquet,
    Jsonl,
    Csv,
}

impl From<Format> for ExportFormat {
    fn from(f: Format) -> Self {
        match f {
            Format::Parquet => ExportFormat::Parquet,
            Format::Jsonl => ExportFormat::Jsonl,
            Format::Csv => ExportFormat::Csv,
        }
    }
}

pub fn export(args: ExportArgs, config: Option<&Path>) -> anyhow::Result<Exit> {
    let config = crate::cmd::load_config(config)?;
    let items = items_file(&args.run, &config.reports_dir)?;
    let sink: Box<dyn Write> = match &args.out {
        Some(path) => Box::new(
            std::fs::File::create(path)
                .with_context(|| format!("creating '{}'", path.display()))?,
        ),
        None => Box::new(std::io::stdout().lock()),
    };
    let mut out = BufWriter::with_capacity(1 << 20, sink);
    let rows = evalfleet_items::export(&items, args.format.into(), &mut out)
        .with_context(|| format!("exporting '{}'", items.display()))?;
    out.flush().context("writing the export")?;
    if let Some(path) = &args.out {
        eprintln!("{rows} items written to {}", path.display());
    }
    Ok(Exit::Success)
}

/// The `items.parquet` that `arg` names: the file itself, or the one beside a report.
fn items_file(arg: &str, reports_dir: &Path) -> anyhow::Result<PathBuf> {
    let path = Path::new(arg);
    if path.is_file() && path.extension().is_some_and(|e| e == "parquet") {
        return Ok(path.to_owned());
    }
    let report =
        evalfleet_compare::resolve(arg, reports_dir).map_err(|e| BadInput(e.to_string()))?;
    let items = report.with_file_name(evalfleet_items::FILE_NAME);
    if !items.is_file() {
        return Err(BadInput(format!(
            "'{arg}': its report has no {} beside it ({} does not exist); reports written before \
             items.parquet existed cannot be exported",
            evalfleet_items::FILE_NAME,
            items.display()
        ))
        .into());
    }
    Ok(items)
}
