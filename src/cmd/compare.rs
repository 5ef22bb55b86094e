//! `evalfleet compare BASE NEW`: the paired comparison of two reports ([`evalfleet_compare`]),
//! its output files and its exit code; `run --baseline` and `submit --wait --baseline` reuse it.

use std::path::{Path, PathBuf};

use clap::Args;
use evalfleet_compare::{Comparison, Options};

use crate::exit::Exit;

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
