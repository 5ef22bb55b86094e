//! `run --estimate`: reads and validates the dataset as `run` does ([`Validator::checks`]: a
//! skipped record, a cut-off last one included, is counted and left out), builds every prompt a
//! live run would send, and prints the projected calls, tokens and cost per judge model.
//! Nothing is sent.

use std::path::Path;

use evalfleet_config::Config;
use evalfleet_dataset::{DatasetReader, Format};
use evalfleet_suites::evaluate::{Checked, Evaluator, Validator, Work};
use evalfleet_suites::suite::Suite;
use evalfleet_worker::judge::estimate::{add_example, Estimate, TYPICAL_REPLY_TOKENS};

use crate::exit::Exit;

pub fn print_estimate(
    dataset: &Path,
    format: Option<Format>,
    config: &Config,
    suite: &Suite,
) -> anyhow::Result<Exit> {
    let evaluator = Evaluator::new(
        suite.clone().into(),
        config.model_prefixes.clone(),
        dataset.parent().map(Path::to_path_buf),
    );
    let reader = DatasetReader::open_with(dataset, &suite.read_options(format))?;
    let mut estimate = Estimate::default();
    let mut skipped = 0u64;
    for checked in Validator::new(evaluator).checks(reader) {
        match checked? {
            Checked::Valid {
                work: Work::Evaluate(example),
                ..
            } => add_example(&mut estimate, &config.judges, suite, &example),
            // A record for a target to complete: not in an estimate of judge calls.
            Checked::Valid { .. } => {}
            Checked::Skipped { .. } => skipped += 1,
        }
    }
    println!(
        "estimate for {} ({}): {} examples to judge, {skipped} records skipped; nothing was sent",
        dataset.display(),
        suite.name,
        estimate.examples
    );
    println!(
        "{:<44} {:>9} {:>13} {:>13} {:>12} {:>12} {:>12}",
        "judge", "calls", "input tok", "output tok", "live USD", "batch USD", "max USD"
    );
    let total = estimate.total();
    for (judge, m) in estimate
        .by_judge
        .iter()
        .chain(std::iter::once((&"total".to_owned(), &total)))
    {
        let unpriced = if m.priced {
            ""
        } else {
            "  (no price configured)"
        };
        println!(
            "{judge:<44} {:>9} {:>13} {:>13} {:>12.4} {:>12.4} {:>12.4}{unpriced}",
            m.calls,
            m.input_tokens,
            m.output_tokens_expected,
            m.cost_usd_expected,
            m.batch_cost_usd_expected,
            m.cost_usd_max
        );
    }
    let mode = if config.judges.batches() {
        "batch (the providers' Batch APIs) where configured"
    } else {
        "live"
    };
    println!(
        "judge mode: {mode} — expected cost {:.4} USD; batch prices are live × each provider's batch_discount",
        total.mode_cost_usd_expected
    );
    println!("output tokens assume {TYPICAL_REPLY_TOKENS} per reply (max USD: every reply at max_tokens); re-asks and cache hits are not counted");
    if estimate.unroutable > 0 {
        println!(
            "{} examples have no judge route (see judges.judge_mapping)",
            estimate.unroutable
        );
    }
    if let Some(budget) = config.judges.budget_usd {
        println!(
            "budget: {budget:.4} USD — {}",
            if total.mode_cost_usd_expected <= budget {
                "expected to fit"
            } else {
                "expected to run out"
            }
        );
    }
    Ok(Exit::Success)
}
