//! `evalfleet generate`: writes a deterministic synthetic dataset, the same generators that made
//! the bundled examples, at any size (benchmarks use 10^6 examples).

use std::io::{BufWriter, Write};
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use evalfleet_model::suite::SuiteKind;

use crate::exit::{BadInput, Exit};

#[derive(Args)]
pub struct GenerateArgs {
    /// support-judge, rag-layers or log-analysis.
    pub suite: String,
    /// Number of examples.
    #[arg(long, short = 'n', default_value_t = 1000)]
    pub count: u64,
    #[arg(long, default_value_t = 7)]
    pub seed: u64,
    /// Output file (default: stdout).
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    /// rag-layers: the gold items to build traces for (JSONL).
    #[arg(
        long,
        default_value = "tests/fixtures/seed-data/AMORE-PACIFIC-RAG-KG-HYBRID-AGENT-/laneige_golden_v2.jsonl"
    )]
    pub gold: PathBuf,
    /// log-analysis: scenario files, referenced relative to the output's directory.
    #[arg(long, default_value = "examples/scenarios")]
    pub scenarios: PathBuf,
}

pub fn generate(args: GenerateArgs) -> anyhow::Result<Exit> {
    let kind = SuiteKind::from_name(&args.suite)
        .ok_or_else(|| BadInput(format!("unknown suite '{}'", args.suite)))?;
    let sink: Box<dyn Write> = match &args.out {
        Some(path) => Box::new(
            std::fs::File::create(path)
                .with_context(|| format!("creating '{}'", path.display()))?,
        ),
        None => Box::new(std::io::stdout().lock()),
    };
    let mut out = BufWriter::with_capacity(1 << 20, sink);
    let items: Box<dyn Iterator<Item = serde_json::Value>> = match kind {
        SuiteKind::SupportJudge => {
            Box::new(evalfleet_generate::support_judge(args.count, args.seed))
        }
        SuiteKind::RagLayers => Box::new(evalfleet_generate::rag_layers(
            read_gold(&args.gold)?,
            args.count,
            args.seed,
        )),
        SuiteKind::LogAnalysis => Box::new(evalfleet_generate::log_analysis(
            &read_scenarios(&args)?,
            args.count,
            args.seed,
        )),
        SuiteKind::Custom => {
            return Err(BadInput("custom suites have no generator".to_owned()).into())
        }
    };
    for item in items {
        serde_json::to_writer(&mut out, &item).context("writing the dataset")?;
        out.write_all(b"\n").context("writing the dataset")?;
    }
    out.flush().context("writing the dataset")?;
    Ok(Exit::Success)
}

fn read_gold(path: &PathBuf) -> anyhow::Result<Vec<serde_json::Value>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| BadInput(format!("cannot read gold items '{}': {e}", path.display())))?;
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str(l)
                .map_err(|e| BadInput(format!("{}: record {}: {e}", path.display(), i + 1)).into())
        })
        .collect()
}

/// Scenario files as (path relative to the output file, JSON).
fn read_scenarios(args: &GenerateArgs) -> anyhow::Result<Vec<(String, serde_json::Value)>> {
    let base = args
        .out
        .as_ref()
        .and_then(|o| o.parent())
        .map(PathBuf::from)
        .unwrap_or_default();
    let mut out = Vec::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(&args.scenarios)
        .map_err(|e| {
            BadInput(format!(
                "cannot read scenarios directory '{}': {e}",
                args.scenarios.display()
            ))
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    entries.sort();
    for path in entries {
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading '{}'", path.display()))?;
        let json = serde_json::from_str(&text)
            .map_err(|e| BadInput(format!("scenario '{}': {e}", path.display())))?;
        let rel = pathdiff(&path, &base);
        out.push((rel, json));
    }
    Ok(out)
}

/// `path` relative to `base` when it lies inside it, else as given.
fn pathdiff(path: &std::path::Path, base: &std::path::Path) -> String {
    let abs = |p: &std::path::Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let (p, b) = (
        abs(path),
        abs(if base.as_os_str().is_empty() {
            std::path::Path::new(".")
        } else {
            base
        }),
    );
    p.strip_prefix(&b)
        .map(|r| r.display().to_string())
        .unwrap_or_else(|_| path.display().to_string())
}
