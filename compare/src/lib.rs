//! `evalfleet compare`: is NEW worse than BASE beyond noise? Items of two reports of the same
//! suite are paired by id ([`pair`]); every score dimension and metric is tested with the
//! Wilcoxon signed-rank test (Pratt zeros) and the pass/fail outcome with McNemar's exact test,
//! with paired bootstrap and t intervals of the mean difference ([`stats`]); Holm's correction
//! covers the family the verdict looks at, and a quantity regresses only when it is both
//! significantly and materially worse ([`verdict`]). The same runs per group, and the items that
//! flipped are listed ([`flips`]).
//!
//! Pure: it reads two report files and writes four output files, so the CLI, `run --baseline`,
//! `submit --wait --baseline` and the aggregator's HTTP API share it.

mod flips;
mod human;
mod pair;
mod quantity;
mod read;
mod render;
mod stats;
mod verdict;

use std::path::{Path, PathBuf};

use serde::Serialize;

pub use flips::{Flip, FlipScore, FlipSide, FlipView, Flips};
pub use human::{HumanChange, HumanDelta, HumanFigures};
pub use pair::PairingSummary;
pub use quantity::Quantity;
pub use read::{resolve, Kind};
pub use render::OutputFile;

/// The gate's settings.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Options {
    /// Holm-adjusted p below which a worse quantity counts as significant.
    pub alpha: f64,
    /// The drop (in each quantity's units) a significant decrease must exceed, unless the
    /// suite's `compare.max_drop` names the quantity.
    pub max_drop: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            alpha: 0.05,
            max_drop: 0.0,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error("cannot find report '{arg}': {looked}")]
    NotFound { arg: String, looked: String },
    #[error("cannot read report '{path}'")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("'{path}' is not a readable evalfleet report: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("the reports are of different suites: BASE ({base_path}) ran '{base}', NEW ({new_path}) ran '{new}'")]
    DifferentSuites {
        base: String,
        new: String,
        base_path: PathBuf,
        new_path: PathBuf,
    },
    #[error("no item id is in both reports ({base_items} evaluated items in '{base}', {new_items} in '{new}'): items are paired by id")]
    NoCommonItems {
        base: PathBuf,
        new: PathBuf,
        base_items: usize,
        new_items: usize,
    },
    #[error("the suite's {key} names nothing compared (compared: {known})")]
    UnknownName { key: String, known: String },
    #[error("{0}")]
    BadOption(String),
    #[error("cannot write '{path}'")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl CompareError {
    /// Whether the user can fix it by changing the input (exit 2); otherwise the file system
    /// failed (exit 3).
    pub fn is_bad_input(&self) -> bool {
        !matches!(self, CompareError::Write { .. })
    }
}

/// One side's identity in the outputs.
#[derive(Debug, Clone, Serialize)]
pub struct Side {
    pub path: PathBuf,
    pub run_id: Option<String>,
    pub suite: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    /// True when any overall quantity regressed: `compare` exits 1.
    pub regressed: bool,
    /// The regressed quantities' names.
    pub regressions: Vec<String>,
    /// One line for people and CI logs.
    pub summary: String,
}

/// How the figures were computed, so a reader can reproduce them.
#[derive(Debug, Clone, Serialize)]
pub struct Settings {
    pub alpha: f64,
    pub max_drop: f64,
    pub max_drop_overrides: std::collections::BTreeMap<String, f64>,
    pub confidence: f64,
    pub correction: &'static str,
    /// Which family the verdict gates on (`overall`); per-group results are flagged only.
    pub gated: &'static str,
    pub bootstrap_resamples: usize,
    pub bootstrap_seed: u64,
    pub bootstrap_max_pairs: usize,
}

/// compare.json: everything, unrounded.
#[derive(Debug, Serialize)]
pub struct Comparison {
    pub verdict: Verdict,
    pub base: Side,
    pub new: Side,
    pub settings: Settings,
    pub pairing: PairingSummary,
    /// Scores or metrics only one report has (not compared).
    pub not_compared: Vec<String>,
    /// The overall family: one object per dimension, metric and `passed`.
    pub comparisons: Vec<Quantity>,
    /// The same per group of each `group_by` entry (each object carries `group`).
    pub groups: Vec<Quantity>,
    pub flips: Flips,
    /// How the judges' agreement with people changed, where either run measured it (shown,
    /// not gated).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub human_agreement: Vec<HumanChange>,
}

impl Comparison {
    pub fn regressed(&self) -> bool {
        self.verdict.regressed
    }
}

/// Compares the reports at `base` and `new` (paths of report.json files).
pub fn compare(base: &Path, new: &Path, opts: &Options) -> Result<Comparison, CompareError> {
    if !(opts.alpha > 0.0 && opts.alpha < 1.0) {
        return Err(CompareError::BadOption(format!(
            "--alpha {} must be in (0, 1)",
            opts.alpha
        )));
    }
    if !(opts.max_drop.is_finite() && opts.max_drop >= 0.0) {
        return Err(CompareError::BadOption(format!(
            "--max-drop {} must be a number ≥ 0",
            opts.max_drop
        )));
    }
    // Phase timings at debug level (`RUST_LOG=evalfleet_compare=debug`), for the benchmark.
    let clock = std::time::Instant::now();
    let phase = |name: &str| {
        tracing::debug!(
            phase = name,
            at_s = clock.elapsed().as_secs_f64(),
            "compare"
        )
    };
    // The two reports are read at once, one thread each.
    let (b, n) = std::thread::scope(|s| {
        let b = s.spawn(|| read::read_report(base));
        let n = read::read_report(new);
        (b.join().unwrap_or_else(|p| std::panic::resume_unwind(p)), n)
    });
    let (b, n) = (b?, n?);
    if b.suite.name != n.suite.name || b.suite.kind != n.suite.kind {
        return Err(CompareError::DifferentSuites {
            base: format!("{} ({})", b.suite.name, b.suite.kind),
            new: format!("{} ({})", n.suite.name, n.suite.kind),
            base_path: b.path.clone(),
            new_path: n.path.clone(),
        });
    }
    phase("read");
    let pairing = pair::pair(&b, &n)?;
    let (names, not_compared) = verdict::quantities(&b, &n);
    verdict::check_overrides(&n, &names)?;
    let comparisons = verdict::overall(&b, &n, &pairing, &names, opts);
    phase("overall");
    let groups = verdict::per_group(&b, &n, &pairing, &names, opts);
    phase("groups");
    let mut flips = flips::collect(&b, &n, &pairing, &names);
    let pairing = pairing.summary;
    let regressions: Vec<String> = comparisons
        .iter()
        .filter(|q| q.regressed)
        .map(|q| q.name.clone())
        .collect();
    let summary = if regressions.is_empty() {
        format!(
            "no regression: {} paired items, {} comparisons, none significantly and materially worse (Holm-adjusted p < {}, drop > max_drop)",
            pairing.paired,
            comparisons.len(),
            opts.alpha
        )
    } else {
        format!(
            "REGRESSION in {}: {} paired items (Holm-adjusted p < {}, drop > max_drop)",
            regressions.join(", "),
            pairing.paired,
            opts.alpha
        )
    };
    let side = |r: &read::Report| Side {
        path: r.path.clone(),
        run_id: r.run_id.clone(),
        suite: r.suite.name.clone(),
    };
    let (base_side, new_side) = (side(&b), side(&n));
    let max_drop_overrides = n.suite.compare.max_drop.clone();
    let human_agreement = human::changes(&b.human, &n.human);
    let (base_items, new_items) = (b.items_at(), n.items_at());
    // The reports' columns are no longer needed: free them before the flips' second pass.
    drop((b, n));
    flips::add_details(&mut flips, &base_items, &new_items)?;
    phase("flips");
    Ok(Comparison {
        verdict: Verdict {
            regressed: !regressions.is_empty(),
            regressions,
            summary,
        },
        base: base_side,
        new: new_side,
        settings: Settings {
            alpha: opts.alpha,
            max_drop: opts.max_drop,
            max_drop_overrides,
            confidence: stats::CONFIDENCE,
            correction: "holm",
            gated: "overall",
            bootstrap_resamples: stats::bootstrap::RESAMPLES,
            bootstrap_seed: stats::bootstrap::SEED,
            bootstrap_max_pairs: stats::bootstrap::MAX_RAW_PAIRS,
        },
        pairing,
        not_compared,
        comparisons,
        groups,
        flips,
        human_agreement,
    })
}

/// Writes compare.json, compare.md, compare.html and junit.xml into `dir` (created if needed).
pub fn write_outputs(dir: &Path, c: &Comparison) -> Result<Vec<PathBuf>, CompareError> {
    render::write_all(dir, c)
}

/// The default output directory: `<reports_dir>/compare-<base>-<new>/`, named after the run ids
/// (or the report directories' names: a report's id that breaks the run-id rule, from an older
/// version, never becomes part of a path).
pub fn default_out_dir(reports_dir: &Path, c: &Comparison) -> PathBuf {
    let name = |s: &Side| {
        let id = (s.run_id.clone()).filter(|id| evalfleet_model::run_id::check(id).is_ok());
        id.unwrap_or_else(|| {
            s.path
                .parent()
                .and_then(|p| p.file_name())
                .map_or_else(|| "report".to_owned(), |n| n.to_string_lossy().into_owned())
        })
    };
    reports_dir.join(format!("compare-{}-{}", name(&c.base), name(&c.new)))
}

#[cfg(test)]
mod tests;
