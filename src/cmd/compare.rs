//! `evalfleet compare BASE NEW`: the paired comparison of two reports ([`evalfleet_compare`]),
//! its output files and its exit code; `run --baseline` and `submit --wait --baseline` reuse it.
//! A pairwise suite that compares with a baseline run's answers finds them here too
//! ([`baseline_answers`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;
use evalfleet_compare::{Comparison, Options};
use evalfleet_config::Config;
use evalfleet_producer::baseline::{BaselineError, BaselineIndex};
use evalfleet_suites::custom::BaselineSource;
use evalfleet_suites::suite::Suite;

use crate::exit::{BadInput, Exit};

#[derive(Args)]
pub struct CompareArgs {
    /// The baseline: a report.json, a report directory, or a run id in reports_dir.
    pub base: String,
    /// The candidate, as BASE.
    pub new: String,
    /// Output directory (default: <reports_dir>/compare-<base>-<new>/).
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub gate: GateArgs,
}

/// The comparison gate's flags, shared by `compare`, `run --baseline` and `submit --baseline`.
#[derive(Args, Clone, Copy)]
pub struct GateArgs {
    /// A worse quantity regresses only with Holm-adjusted p below this.
    #[arg(long, default_value_t = 0.05)]
    pub alpha: f64,
    /// ... and only when it drops by more than this (in its own units; a share for `passed`).
    /// The suite's `compare.max_drop` overrides it per dimension or metric.
    #[arg(long, default_value_t = 0.0)]
    pub max_drop: f64,
}

impl GateArgs {
    fn options(self) -> Options {
        Options {
            alpha: self.alpha,
            max_drop: self.max_drop,
        }
    }
}

pub fn compare(args: CompareArgs, config: Option<&Path>) -> anyhow::Result<Exit> {
    let config = crate::cmd::load_config(config)?;
    let base = evalfleet_compare::resolve(&args.base, &config.reports_dir)?;
    let new = evalfleet_compare::resolve(&args.new, &config.reports_dir)?;
    let c = evalfleet_compare::compare(&base, &new, &args.gate.options())?;
    let out = args
        .out
        .unwrap_or_else(|| evalfleet_compare::default_out_dir(&config.reports_dir, &c));
    report(&c, &out)
}

/// The baseline run's answers of every item, when a pairwise dimension of `suite` compares
/// with them (its `against` names the judged field): read from the `outputs.jsonl` of the run
/// `--baseline` names (as BASE is given). None when the suite needs no baseline.
pub fn baseline_answers(
    suite: &Suite,
    baseline: Option<&str>,
    config: &Config,
) -> anyhow::Result<Option<Arc<dyn BaselineSource>>> {
    let Some(custom) = suite.custom.as_deref().filter(|_| suite.needs_baseline()) else {
        return Ok(None);
    };
    let fields: Vec<&str> = custom.baseline_fields().collect();
    let Some(baseline) = baseline else {
        return Err(BadInput(format!(
            "suite '{}' compares its '{}' with a baseline run's (a pairwise dimension's `against` is the judged field): name that run with --baseline RUN (a report directory, its report.json, or a run id in reports_dir)",
            suite.name,
            fields.join("', '")
        ))
        .into());
    };
    let report = evalfleet_compare::resolve(baseline, &config.reports_dir)?;
    let index = BaselineIndex::for_report(&report, custom, config.max_record_bytes).map_err(
        |e| -> anyhow::Error {
            match e {
                BaselineError::Spill(_) => e.into(),
                _ => BadInput(format!("--baseline {baseline}: {e}")).into(),
            }
        },
    )?;
    eprintln!(
        "baseline: {} items' '{}' from {}",
        index.len(),
        fields.join("', '"),
        report.parent().unwrap_or(Path::new(".")).display()
    );
    Ok(Some(Arc::new(index)))
}

/// Compares `baseline` (as BASE is given) with the report just written at `new`, writes the
/// outputs into `out` and prints the verdict: what `run --baseline` and `submit --wait
/// --baseline` do once their own report is written.
pub fn against_baseline(
    baseline: &str,
    new: &Path,
    out: &Path,
    gate: GateArgs,
    reports_dir: &Path,
) -> anyhow::Result<Exit> {
    let base = evalfleet_compare::resolve(baseline, reports_dir)?;
    let c = evalfleet_compare::compare(&base, new, &gate.options())?;
    report(&c, out)
}

fn report(c: &Comparison, out: &Path) -> anyhow::Result<Exit> {
    evalfleet_compare::write_outputs(out, c)?;
    println!("compare: {}", c.verdict.summary);
    for q in c.comparisons.iter().filter(|q| q.regressed) {
        println!(
            "  {} {}: {:.4} → {:.4} (Δ {:+.4}, 95% CI [{:+.4}, {:+.4}], {} p = {:.3e}, Holm {:.3e})",
            q.kind.as_str(),
            q.name,
            q.mean_base.unwrap_or(f64::NAN),
            q.mean_new.unwrap_or(f64::NAN),
            q.delta.unwrap_or(f64::NAN),
            q.ci_low.unwrap_or(f64::NAN),
            q.ci_high.unwrap_or(f64::NAN),
            q.test,
            q.p_value.unwrap_or(f64::NAN),
            q.p_adjusted.unwrap_or(f64::NAN)
        );
    }
    let p = &c.pairing;
    if !p.only_in_base.is_empty() || !p.only_in_new.is_empty() {
        println!(
            "  {} items only in BASE, {} only in NEW (listed in compare.json)",
            p.only_in_base.len(),
            p.only_in_new.len()
        );
    }
    println!(
        "  compare outputs in {}: compare.json compare.md compare.html junit.xml",
        out.display()
    );
    Ok(if c.regressed() {
        Exit::GatesFailed
    } else {
        Exit::Success
    })
}
