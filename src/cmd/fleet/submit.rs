//! `evalfleet submit`: validate, register and publish a run; `--wait` follows it to its report.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use evalfleet_contract::store::ResultStore;
use evalfleet_dataset::Format;
use evalfleet_fleet::redis::{RedisStore, RunStatus};
use evalfleet_model::run_id::RunId;
use evalfleet_producer::submit::{submit, SubmitRequest};
use evalfleet_producer::Progress;
use evalfleet_suites::custom::BaselineSource;
use evalfleet_suites::spec::RunSpec;

use evalfleet_config::Config;
use evalfleet_fleet::amqp::AmqpQueue;
use evalfleet_suites::suite::Suite;

use super::Endpoints;
use crate::cmd::target::FoundTarget;
use crate::exit::{BadInput, Exit};
use crate::progress::RunProgress;

#[derive(Args)]
pub struct SubmitArgs {
    pub dataset: PathBuf,
    #[arg(long, short, default_value = "support-judge")]
    pub suite: String,
    /// Dataset format: jsonl, json (an array) or csv (default: from the file: `.csv` is CSV,
    /// `.jsonl` JSONL, otherwise a leading `[` means a JSON array).
    #[arg(long, value_parser = crate::cmd::parse_format)]
    pub format: Option<Format>,
    /// Run id; re-submitting under an existing id resumes that run. It must match
    /// ^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$.
    #[arg(long, value_parser = crate::cmd::parse_run_id)]
    pub run_id: Option<RunId>,
    /// Follow the run until its report exists; exit as `run` would.
    #[arg(long)]
    pub wait: bool,
    #[command(flatten)]
    pub judges: crate::cmd::judge::JudgeArgs,
    #[command(flatten)]
    pub target: crate::cmd::target::TargetArgs,
    /// Print the judge calls, tokens and cost, and exit: nothing is published.
    #[arg(long)]
    pub estimate: bool,
    /// With --wait: compare the finished report with this baseline (a report.json, a report
    /// directory or a run id in reports_dir) into <reports_dir>/compare-<baseline>-<run>/, and
    /// fail (exit 1) on a regression too. A pairwise dimension whose `against` is the judged
    /// field compares each answer with this run's answer of the same item (its outputs.jsonl),
    /// with or without --wait.
    #[arg(long)]
    pub baseline: Option<String>,
    #[command(flatten)]
    pub gate: crate::cmd::compare::GateArgs,
    #[command(flatten)]
    pub endpoints: Endpoints,
}

pub fn run(args: SubmitArgs, config: Option<&Path>) -> anyhow::Result<Exit> {
    let (mut config, suite) = crate::cmd::config_and_suite(config, &args.suite)?;
    args.judges.apply(&mut config);
    if args.estimate {
        let targets = args.target.estimators(&config, &suite)?;
        return crate::cmd::estimate::print_estimate(
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
        .map_or_else(crate::cmd::run::new_run_id, RunId::into_string);
    let runs = runs_of(&args, &config, &suite, &run_id)?;
    let baseline =
        crate::cmd::compare::baseline_answers(&suite, args.baseline.as_deref(), &config)?;
    if args.baseline.is_some() && baseline.is_none() && !args.wait {
        return Err(BadInput(
            "--baseline without --wait: the run is compared with its baseline once its report is written, which only --wait waits for".into(),
        )
        .into());
    }
    super::runtime()?.block_on(async {
        let store = args.endpoints.connect_redis(&config).await?;
        let queue = args.endpoints.connect_amqp(&config, 1).await?;
        for (id, target) in &runs {
            let spec = RunSpec {
                suite: suite.clone(),
                judge: args.judges.judge,
                judges: config.judges.clone(),
                model_prefixes: config.model_prefixes.clone(),
                dataset: args.dataset.display().to_string(),
                target: target.as_ref().map(|f| f.target.clone()),
                target_model: target.as_ref().and_then(|f| f.choice.model.clone()),
            };
            let limits = (config.fleet.max_queued, config.max_record_bytes);
            let send = (spec, baseline.clone());
            submit_one(&args, id, send, limits, &queue, &store).await?;
        }
        if !args.wait {
            return Ok(Exit::Success);
        }
        let mut exit = Exit::Success;
        for (id, _) in &runs {
            exit = exit.worst(wait_for_report(&store, id).await?);
        }
        let report_of = |dir: Option<String>, id: &str| {
            dir.map_or_else(|| config.reports_dir.join(id), PathBuf::from)
                .join("report.json")
        };
        let (baseline, base_name) = match (&args.baseline, runs.first()) {
            (Some(baseline), _) => (baseline.clone(), baseline_name(baseline)),
            // Several targets: each later run against the first.
            (None, Some((first, _))) if runs.len() > 1 => {
                let dir = store.field(first, "report_dir").await?;
                (report_of(dir, first).display().to_string(), first.clone())
            }
            _ => return Ok(exit),
        };
        let skip = usize::from(args.baseline.is_none());
        for (id, _) in runs.iter().skip(skip) {
            let report = report_of(store.field(id, "report_dir").await?, id);
            let out = config.reports_dir.join(format!("compare-{base_name}-{id}"));
            let compared = crate::cmd::compare::against_baseline(
                &baseline,
                &report,
                &out,
                args.gate,
                &config.reports_dir,
            )?;
            exit = exit.worst(compared);
        }
        Ok(exit)
    })
}

/// The runs a submission makes: `run_id` with the one target (or none), or with several
/// targets one run per target, `<run_id>-<label>`, each with its target found and checked.
fn runs_of(
    args: &SubmitArgs,
    config: &Config,
    suite: &Suite,
    run_id: &str,
) -> anyhow::Result<Vec<(String, Option<FoundTarget>)>> {
    let found = args.target.found(config, suite)?;
    if found.len() < 2 {
        return Ok(vec![(run_id.to_owned(), found.into_iter().next())]);
    }
    if args.baseline.is_some() {
        return Err(BadInput(
            "--baseline with several --target: each run is compared with the first target's; run `evalfleet compare` for a baseline".into(),
        )
        .into());
    }
    let labels = crate::cmd::target::run_labels(&found)?;
    labels
        .into_iter()
        .zip(found)
        .map(|(label, run)| Ok((crate::cmd::derived_run_id(run_id, &label)?, Some(run))))
        .collect()
}

/// Registers and publishes one run, with its progress bar; prints its id and what was sent.
async fn submit_one(
    args: &SubmitArgs,
    run_id: &str,
    (spec, baseline): (RunSpec, Option<Arc<dyn BaselineSource>>),
    (max_queued, max_record): (u64, usize),
    queue: &AmqpQueue,
    store: &RedisStore,
) -> anyhow::Result<()> {
    let bytes = crate::cmd::dataset_len(&args.dataset)?;
    let progress = Arc::new(Progress::default());
    let published = Arc::new(AtomicU64::new(0));
    let bar = RunProgress::start(bytes, progress.clone(), published.clone());
    let mirror = {
        let (progress, published) = (progress.clone(), published.clone());
        tokio::spawn(async move {
            loop {
                published.store(
                    progress.published.load(Ordering::Relaxed),
                    Ordering::Relaxed,
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    };
    let req = SubmitRequest {
        run_id: run_id.to_owned(),
        dataset: args.dataset.clone(),
        format: args.format,
        spec,
        max_queued: Some(max_queued).filter(|m| *m > 0),
        max_record,
        baseline,
    };
    let outcome = submit(&req, queue, store, progress.clone()).await;
    mirror.abort();
    bar.finish();
    let outcome = outcome?;
    println!("{run_id}");
    eprintln!(
        "{} run {run_id}: {} records, {} published, {} skipped",
        if outcome.resumed {
            "resumed"
        } else {
            "submitted"
        },
        outcome.records,
        outcome.published,
        outcome.skipped
    );
    let every = format!(
        "`skipped` of the run's report.json, or run `evalfleet validate {} --suite {}`",
        args.dataset.display(),
        args.suite
    );
    if let Some(skipped) = progress.skipped_summary(&every) {
        eprintln!("{skipped}");
    }
    if let Some(replaced) = progress.replaced_summary() {
        eprintln!("{replaced}");
    }
    Ok(())
}

/// A baseline's name in the compare directory's name: the run id, or the report directory's.
fn baseline_name(baseline: &str) -> String {
    let path = Path::new(baseline);
    let dir = if path.is_file() {
        path.parent()
    } else {
        Some(path)
    };
    dir.and_then(|d| d.file_name()).map_or_else(
        || "baseline".to_owned(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// Follows a run until it is complete, showing progress; then prints its summary.
pub async fn wait_for_report(store: &RedisStore, run_id: &str) -> anyhow::Result<Exit> {
    let bar =
        indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr());
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} · {per_sec} · ETA {eta}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    loop {
        let meta = store
            .run(run_id)
            .await?
            .ok_or_else(|| anyhow::anyhow!("run '{run_id}' disappeared from Redis"))?;
        let counts = store.counts(run_id).await?;
        if let Some(total) = meta.total {
            bar.set_length(total);
        }
        bar.set_position(counts.done());
        match meta.status {
            RunStatus::Complete => {
                bar.finish_and_clear();
                if let Some(summary) = store.summary(run_id).await? {
                    println!("{summary}");
                }
                if let Some(dir) = store.field(run_id, "report_dir").await? {
                    eprintln!("reports in {dir}");
                }
                return Ok(if meta.gates_passed == Some(true) {
                    Exit::Success
                } else {
                    Exit::GatesFailed
                });
            }
            RunStatus::Cancelled => {
                bar.finish_and_clear();
                anyhow::bail!("run '{run_id}' was cancelled");
            }
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}
