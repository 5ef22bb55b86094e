//! `run --estimate`: reads and validates the dataset as `run` does ([`Validator::checks`]: a
//! skipped record, a cut-off last one included, is counted and left out), builds every prompt a
//! live run would send, and prints the projected calls, tokens and cost per judge model.
//! Nothing is sent.
//!
//! With `--target`, each target's run is counted on its own pass over the dataset (its records
//! are checked for what its templates use): the target's calls as its own row, and the judge
//! calls on the records it would complete where they can be known
//! ([`evalfleet_worker::target::TargetEstimator`]). The total and the budget cover both.

use std::collections::BTreeMap;
use std::path::Path;

use evalfleet_config::Config;
use evalfleet_dataset::{DatasetReader, Format};
use evalfleet_suites::evaluate::{Checked, Evaluator, Validator, Work};
use evalfleet_suites::suite::Suite;
use evalfleet_worker::judge::estimate::{
    add_example, Estimate, ModelEstimate, TYPICAL_REPLY_TOKENS,
};
use evalfleet_worker::target::{TargetEstimate, TargetEstimator};

use crate::exit::Exit;

/// One pass over the dataset: its estimate and the records skipped.
struct Counted {
    estimate: Estimate,
    skipped: u64,
}

pub fn print_estimate(
    dataset: &Path,
    format: Option<Format>,
    config: &Config,
    suite: &Suite,
    targets: Vec<TargetEstimator>,
) -> anyhow::Result<Exit> {
    if targets.is_empty() {
        let counted = count(dataset, format, config, suite, None)?;
        print_judges_only(dataset, suite, config, &counted);
        return Ok(Exit::Success);
    }
    let runs = targets
        .into_iter()
        .map(|mut target| count(dataset, format, config, suite, Some(&mut target)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    print_target_runs(dataset, suite, config, &runs);
    Ok(Exit::Success)
}

/// Reads and validates the dataset once, counting every call a run would make: with `target`,
/// the records are its input.
fn count(
    dataset: &Path,
    format: Option<Format>,
    config: &Config,
    suite: &Suite,
    mut target: Option<&mut TargetEstimator>,
) -> anyhow::Result<Counted> {
    let evaluator = Evaluator::new(
        suite.clone().into(),
        config.model_prefixes.clone(),
        dataset.parent().map(Path::to_path_buf),
    );
    let reader = DatasetReader::open_with(dataset, &super::read_options(suite, format, config))?;
    let mut validator = Validator::new(evaluator);
    let mut estimate = Estimate::default();
    if let Some(target) = &target {
        validator = validator.with_target(target.plan());
        estimate = target.start();
    }
    let mut skipped = 0u64;
    for checked in validator.checks(reader) {
        match checked? {
            Checked::Valid {
                work: Work::Evaluate(example),
                ..
            } => add_example(&mut estimate, &config.judges, suite, &example),
            Checked::Valid {
                work: Work::Generate(pending),
                ..
            } => {
                if let Some(target) = target.as_deref_mut() {
                    target.add_record(&mut estimate, &pending);
                }
            }
            Checked::Skipped { .. } => skipped += 1,
        }
    }
    Ok(Counted { estimate, skipped })
}

/// A run without a target: the judges' calls on the recorded outputs.
fn print_judges_only(dataset: &Path, suite: &Suite, config: &Config, counted: &Counted) {
    let Counted { estimate, skipped } = counted;
    println!(
        "estimate for {} ({}): {} examples to judge, {skipped} records skipped; nothing was sent",
        dataset.display(),
        suite.name,
        estimate.examples
    );
    print_header("judge", LABEL_WIDTH);
    let total = estimate.total();
    for (judge, m) in &estimate.by_judge {
        print_row(judge, m, true, LABEL_WIDTH);
    }
    print_row("total", &total, true, LABEL_WIDTH);
    println!(
        "judge mode: {} — expected cost {:.4} USD; batch prices are live × each provider's batch_discount",
        judge_mode(config),
        total.mode_cost_usd_expected
    );
    println!("output tokens assume {TYPICAL_REPLY_TOKENS} per reply (max USD: every reply at max_tokens); re-asks and cache hits are not counted");
    print_unroutable(estimate.unroutable);
    if let Some(budget) = config.judges.budget_usd {
        println!(
            "budget: {budget:.4} USD — {}",
            fits(total.mode_cost_usd_expected, budget, true)
        );
    }
}

/// Runs with a target, one per `--target`: each target's row, the judges' rows over all runs,
/// and a total of both.
fn print_target_runs(dataset: &Path, suite: &Suite, config: &Config, runs: &[Counted]) {
    let targets: Vec<&TargetEstimate> = runs
        .iter()
        .filter_map(|r| r.estimate.target.as_ref())
        .collect();
    println!(
        "estimate for {} ({}) with {}; nothing was sent",
        dataset.display(),
        suite.name,
        plural(targets.len(), "target run")
    );
    for (run, target) in runs.iter().zip(&targets) {
        let judged = match target.reply {
            Some(_) => format!("{} examples to judge", run.estimate.examples),
            None => "judge calls not estimated: an http target's outputs come from its replies, whose shape (a trace) is unknown before it answers".into(),
        };
        println!(
            "{}: {} records for the target, {} records skipped; {judged}",
            target.label, target.records, run.skipped
        );
    }
    let mut judges: BTreeMap<&str, ModelEstimate> = BTreeMap::new();
    for run in runs {
        for (judge, m) in &run.estimate.by_judge {
            let row = judges
                .entry(judge.as_str())
                .or_insert_with(|| ModelEstimate::new(true));
            *row = std::mem::take(row).merge(m);
        }
    }
    let total = sum(runs.iter().map(|r| r.estimate.total()));
    let targets_total = sum(targets.iter().map(|t| t.row.clone()));
    let judges_total = sum(judges.values().cloned());
    let width = targets
        .iter()
        .map(|t| t.label.chars().count())
        .fold(LABEL_WIDTH, usize::max);
    print_header("target / judge", width);
    for target in &targets {
        print_row(&target.label, &target.row, target.reply.is_some(), width);
    }
    for (judge, m) in &judges {
        print_row(judge, m, true, width);
    }
    print_row("total", &total, true, width);
    println!(
        "judge mode: {} — expected cost {:.4} USD (targets {:.4} + judges {:.4}); batch prices are live × each provider's batch_discount (a target is always called live)",
        judge_mode(config),
        total.mode_cost_usd_expected,
        targets_total.mode_cost_usd_expected,
        judges_total.mode_cost_usd_expected
    );
    println!("judge output tokens assume {TYPICAL_REPLY_TOKENS} per reply (max USD: every reply at max_tokens); re-asks, retries and cache hits are not counted");
    for target in &targets {
        print_target_notes(target);
    }
    print_unroutable(runs.iter().map(|r| r.estimate.unroutable).sum());
    if let Some(budget) = config.judges.budget_usd {
        let fit = |run: &Counted| {
            let judged = run
                .estimate
                .target
                .as_ref()
                .is_none_or(|t| t.reply.is_some());
            fits(run.estimate.total().mode_cost_usd_expected, budget, judged)
        };
        match runs {
            [run] => println!(
                "budget: {budget:.4} USD, the target's and the judges' spend — {}",
                fit(run)
            ),
            _ => {
                let each: Vec<String> = runs
                    .iter()
                    .zip(&targets)
                    .map(|(run, target)| format!("{}: {}", target.label, fit(run)))
                    .collect();
                println!(
                    "budget: {budget:.4} USD per run, its target's and its judges' spend — {}",
                    each.join("; ")
                );
            }
        }
    }
}

/// What a target's row assumes, and the records it would not get to the judges.
fn print_target_notes(target: &TargetEstimate) {
    if let Some(reply) = &target.reply {
        let at_most = if reply.max_from == reply.expected_from {
            String::new()
        } else {
            format!(", at most {} ({})", reply.max, reply.max_from)
        };
        println!(
            "{}: replies assume {} output tokens each ({}){at_most}; its judges are estimated on a placeholder answer that long",
            target.label, reply.expected, reply.expected_from
        );
    }
    if let Some(reason) = &target.first_failure {
        println!(
            "{}: {} would fail before any judge call (the first: {reason})",
            target.label,
            plural(target.failing as usize, "record")
        );
    }
}

/// The rows added up.
fn sum(rows: impl Iterator<Item = ModelEstimate>) -> ModelEstimate {
    rows.fold(ModelEstimate::new(true), |t, m| t.merge(&m))
}

/// The label column's width: the judges' `provider/model` fit in it.
const LABEL_WIDTH: usize = 44;

fn print_header(calls_of: &str, width: usize) {
    println!(
        "{calls_of:<width$} {:>9} {:>13} {:>13} {:>12} {:>12} {:>12}",
        "calls", "input tok", "output tok", "live USD", "batch USD", "max USD"
    );
}

/// One row of the table; `tokens` false for calls whose tokens are not known (an http
/// target's), shown as `–`.
fn print_row(label: &str, m: &ModelEstimate, tokens: bool, width: usize) {
    let unpriced = if m.priced {
        ""
    } else {
        "  (no price configured)"
    };
    let (input, output) = if tokens {
        (
            m.input_tokens.to_string(),
            m.output_tokens_expected.to_string(),
        )
    } else {
        ("–".to_owned(), "–".to_owned())
    };
    println!(
        "{label:<width$} {:>9} {input:>13} {output:>13} {:>12.4} {:>12.4} {:>12.4}{unpriced}",
        m.calls, m.cost_usd_expected, m.batch_cost_usd_expected, m.cost_usd_max
    );
}

fn judge_mode(config: &Config) -> &'static str {
    if config.judges.batches() {
        "batch (the providers' Batch APIs) where configured"
    } else {
        "live"
    }
}

fn print_unroutable(unroutable: u64) {
    if unroutable > 0 {
        println!("{unroutable} examples have no judge route (see judges.judge_mapping)");
    }
}

/// Whether the expected cost fits the budget; `judged` is false when the judges' part could not
/// be estimated (an http target's run), so only the target's calls can be said to fit.
fn fits(expected: f64, budget: f64, judged: bool) -> &'static str {
    match (expected <= budget, judged) {
        (false, _) => "expected to run out",
        (true, true) => "expected to fit",
        (true, false) => "the target's calls expected to fit (its judges are not estimated)",
    }
}

/// `1 record`, `2 records`.
fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("{n} {noun}")
    } else {
        format!("{n} {noun}s")
    }
}
