//! `evalfleet run`: the whole pipeline in one process ([`evalfleet_embedded`]), with a progress
//! bar, the reports and the exit code.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use clap::Args;
use evalfleet_aggregator::write_reports;
use evalfleet_config::Config;
use evalfleet_dataset::Format;
use evalfleet_embedded::{run_embedded, EmbeddedRun, Finished};
use evalfleet_model::run_id::RunId;
use evalfleet_producer::Progress;
use evalfleet_report::{ReportInput, RunInfo};
use evalfleet_suites::custom::BaselineSource;
use evalfleet_suites::suite::Suite;
use evalfleet_worker::judge::cache::InMemoryCache;
use evalfleet_worker::scorer::{ScorerPolicy, Scorers};
use evalfleet_worker::target::RunTarget;
use evalfleet_worker::{build_judge, Judge, LiveParts, WorkerStats};

use super::target::FoundTarget;
use crate::exit::{BadInput, Exit};
use crate::progress::RunProgress;

#[derive(Args)]
pub struct RunArgs {
    /// Dataset: JSONL, a JSON array or CSV.
    pub dataset: PathBuf,
    /// Dataset format: jsonl, json (an array) or csv (default: from the file: `.csv` is CSV,
    /// `.jsonl` JSONL, otherwise a leading `[` means a JSON array).
    #[arg(long, value_parser = super::parse_format)]
    pub format: Option<Format>,
    /// Suite: support-judge, rag-layers, log-analysis, a file in suites_dir, or a path.
    #[arg(long, short, default_value = "support-judge")]
    pub suite: String,
    /// Report directory (default: <reports_dir>/<run_id>).
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    /// Examples evaluated at once (default: config `concurrency`, 0 = one per core).
    #[arg(long, short = 'j')]
    pub concurrency: Option<usize>,
    #[command(flatten)]
    pub judges: super::judge::JudgeArgs,
    #[command(flatten)]
    pub target: super::target::TargetArgs,
    /// Print the judge calls, tokens and cost a live run would make, and exit: nothing is sent.
    #[arg(long)]
    pub estimate: bool,
    /// Run id (default: generated from the time); it must match
    /// ^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$.
    #[arg(long, value_parser = super::parse_run_id)]
    pub run_id: Option<RunId>,
    /// Serve the worker metrics at http://ADDR/metrics while the run lasts.
    #[arg(long)]
    pub metrics_addr: Option<std::net::SocketAddr>,
    /// After the report, compare it with this baseline (a report.json, a report directory or a
    /// run id in reports_dir) into <out>/compare/, and fail (exit 1) on a regression too. A
    /// pairwise dimension whose `against` is the judged field compares each answer with this
    /// run's answer of the same item (its outputs.jsonl).
    #[arg(long)]
    pub baseline: Option<String>,
    #[command(flatten)]
    pub gate: super::compare::GateArgs,
}

pub fn run(args: RunArgs, config: Option<&Path>) -> anyhow::Result<Exit> {
    let (mut config, suite) = super::config_and_suite(config, &args.suite)?;
    args.judges.apply(&mut config);
    if args.estimate {
        let targets = args.target.estimators(&config, &suite)?;
        return super::estimate::print_estimate(
            &args.dataset,
            args.format,
            &config,
            &suite,
            targets,
        );
    }
    let run_id = args
        .run_id
        .clone()
        .map_or_else(new_run_id, RunId::into_string);
    let found = args.target.found(&config, &suite)?;
    let baseline = super::compare::baseline_answers(&suite, args.baseline.as_deref(), &config)?;
    // What the process's judges and targets share: one cache (verdicts and replies, as the
    // fleet's Redis) and one `RateLimit` per limit.
    let parts = LiveParts::new(Arc::new(InMemoryCache::default()));
    if found.len() < 2 {
        let target = found
            .into_iter()
            .next()
            .map(|f| f.choice.build(f.target, &config, &parts))
            .transpose()?;
        let out = args
            .out
            .clone()
            .unwrap_or_else(|| config.reports_dir.join(&run_id));
        let own = run_one(
            &args,
            &config,
            suite,
            (target, baseline),
            &parts,
            &run_id,
            &out,
        )?;
        return match &args.baseline {
            Some(baseline) => {
                let compared = super::compare::against_baseline(
                    baseline,
                    &out.join("report.json"),
                    &out.join("compare"),
                    args.gate,
                    &config.reports_dir,
                )?;
                Ok(own.worst(compared))
            }
            None => Ok(own),
        };
    }
    several_targets(&args, &config, suite, found, &parts, &run_id)
}

/// `--target a --target b`: the dataset run once per target (run ids `<run_id>-<label>`,
/// reports in `<out>/<label>` or `<reports_dir>/<run_id>-<label>`), then each run compared with
/// the first into its `compare/`, as `compare` does. Every target is found and built before the
/// first call, so a missing key or variable stops them all.
fn several_targets(
    args: &RunArgs,
    config: &Config,
    suite: Suite,
    found: Vec<FoundTarget>,
    parts: &LiveParts,
    run_id: &str,
) -> anyhow::Result<Exit> {
    if args.baseline.is_some() {
        return Err(BadInput(
            "--baseline with several --target: each run is compared with the first target's; run `evalfleet compare` for a baseline".into(),
        )
        .into());
    }
    let labels = super::target::run_labels(&found)?;
    let ids = (labels.iter())
        .map(|label| super::derived_run_id(run_id, label))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut targets = found
        .into_iter()
        .map(|f| f.choice.build(f.target, config, parts))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut exit = Exit::Success;
    let mut first: Option<PathBuf> = None;
    for ((label, id), target) in labels.iter().zip(ids).zip(targets.drain(..)) {
        let out = match &args.out {
            Some(out) => out.join(label),
            None => config.reports_dir.join(&id),
        };
        exit = exit.worst(run_one(
            args,
            config,
            suite.clone(),
            (Some(target), None),
            parts,
            &id,
            &out,
        )?);
        let report = out.join("report.json");
        match &first {
            None => first = Some(report),
            Some(base) => {
                println!("{id} against {}:", base.display());
                let compared = super::compare::against_baseline(
                    &base.display().to_string(),
                    &report,
                    &out.join("compare"),
                    args.gate,
                    &config.reports_dir,
                )?;
                exit = exit.worst(compared);
            }
        }
    }
    Ok(exit)
}

/// The answers a run compares with, when its suite is pairwise against a baseline run.
type Baseline = Option<Arc<dyn BaselineSource>>;

/// One run of the dataset (with `target`, when given; with a `baseline`'s answers, when its
/// suite compares with them) into `out`; its exit by the run gates.
fn run_one(
    args: &RunArgs,
    config: &Config,
    suite: Suite,
    (target, baseline): (Option<RunTarget>, Baseline),
    parts: &LiveParts,
    run_id: &str,
    out: &Path,
) -> anyhow::Result<Exit> {
    let dataset_bytes = super::dataset_len(&args.dataset)?;
    let judge = build_judge(args.judges.judge, &config.judges, parts).map_err(BadInput)?;
    let target = target.map(|t| t.serving(&judge, &config.judges));
    let live = matches!(judge, Judge::Live(_));
    // `run` is the user's own process: its code scorers may run any command, read any
    // variable, call any host. A variable that is not set is the user's to fix before the run.
    let scorers = Scorers::build(&suite, &ScorerPolicy::Local, &|v| std::env::var(v).ok());
    if let Some(reason) = scorers.refusals().next() {
        return Err(BadInput(format!("suite '{}': {reason}", suite.name)).into());
    }
    let concurrency = match args.concurrency.unwrap_or(config.concurrency) {
        // Offline judges are CPU-bound (one task per core); live ones, targets and code
        // scorers wait on the network or other processes (in batch mode an example waiting
        // for its batch is parked, and holds no task).
        0 if live || target.is_some() || suite.has_scorers() => 128,
        0 => std::thread::available_parallelism().map_or(2, |n| n.get()),
        n => n,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let suite = Arc::new(suite);
    let started_at = jiff::Timestamp::now();
    let clock = Instant::now();

    let read = Arc::new(Progress::default());
    let evaluated = Arc::new(AtomicU64::new(0));
    let stats = Arc::new(WorkerStats::default());
    let Finished {
        agg,
        store,
        items_ahead,
    } = runtime.block_on(async {
        if let Some(addr) = args.metrics_addr {
            evalfleet_worker::metrics::metrics()
                .init_known([suite.name.as_str()], live.then_some(&config.judges));
            // The server ends with the process: `run` finishes on its own.
            tokio::spawn(evalfleet_worker::http::serve(
                addr,
                stats.clone(),
                crate::shutdown::CancellationToken::new(),
            ));
        }
        let progress = RunProgress::start(dataset_bytes, read.clone(), evaluated.clone());
        let finished = run_embedded(EmbeddedRun {
            run_id,
            dataset: &args.dataset,
            read: super::read_options(&suite, args.format, config),
            suite: suite.clone(),
            rules: config.model_prefixes.clone(),
            judge,
            target,
            baseline,
            scorers,
            concurrency,
            progress: read.clone(),
            evaluated,
            stats,
            report_dir: out,
        })
        .await;
        progress.finish();
        finished
    })?;

    if agg.totals.examples == 0 {
        return Err(BadInput(format!(
            "dataset '{}' contains no records",
            args.dataset.display()
        ))
        .into());
    }
    let info = RunInfo {
        id: run_id.to_owned(),
        suite: suite.name.clone(),
        dataset: args.dataset.display().to_string(),
        judge: args.judges.judge,
        started_at: started_at.to_string(),
        finished_at: jiff::Timestamp::now().to_string(),
        duration_seconds: clock.elapsed().as_secs_f64(),
    };
    let input = ReportInput {
        info: &info,
        suite: &suite,
        agg: &agg,
        items: store.as_ref(),
        inline_items: config.reports.inline_items,
        items_ahead: Some(&items_ahead),
    };
    let paths = write_reports(out, &input)?;
    print_summary(&input, &paths);
    if let Some(skipped) = read.skipped_summary(&format!("`skipped` of {}", paths[0].display())) {
        println!("{skipped}");
    }
    if let Some(replaced) = read.replaced_summary() {
        println!("{replaced}");
    }
    if agg.all.total() == 0 {
        return Err(BadInput(format!(
            "no valid example in '{}': all {} records were skipped (see {})",
            args.dataset.display(),
            agg.totals.skipped,
            paths[0].display()
        ))
        .into());
    }
    Ok(if input.gates_passed() {
        Exit::Success
    } else {
        Exit::GatesFailed
    })
}

fn print_summary(input: &ReportInput<'_>, paths: &[PathBuf]) {
    let (agg, info) = (input.agg, input.info);
    let t = &agg.totals;
    println!(
        "evalfleet run {}: suite {} on {} (judge: {})",
        info.id, info.suite, info.dataset, info.judge
    );
    println!(
        "  examples {} · ok {} · failed {} · skipped {} · passed {}/{} ({}) · {:.1} s",
        t.examples,
        t.ok,
        t.failed,
        t.skipped,
        agg.all.passed,
        agg.all.total(),
        agg.all
            .pass_rate()
            .map_or("–".into(), |p| format!("{:.1}%", p * 100.0)),
        info.duration_seconds
    );
    let checks: Vec<String> = input
        .gate_checks()
        .iter()
        .map(|c| {
            format!(
                "{} {} (threshold {}){}",
                c.name,
                c.value.map_or("–".into(), |v| format!("{v:.3}")),
                c.threshold,
                if c.passed { "" } else { " FAILED" }
            )
        })
        .collect();
    println!(
        "  run gates: {} — {}",
        if input.gates_passed() {
            "passed"
        } else {
            "FAILED"
        },
        checks.join("; ")
    );
    if let Some(dir) = paths.first().and_then(|p| p.parent()) {
        let names: Vec<String> = paths
            .iter()
            .filter_map(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .collect();
        println!("  reports in {}: {}", dir.display(), names.join(" "));
    }
}

/// `run-20261123-071702-3f9a`: sortable by time, unique enough for one user's runs.
pub fn new_run_id() -> String {
    let now = jiff::Zoned::now().with_time_zone(jiff::tz::TimeZone::UTC);
    format!(
        "run-{}-{:04x}",
        now.strftime("%Y%m%d-%H%M%S"),
        rand::random::<u16>()
    )
}
