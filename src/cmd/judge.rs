//! The judge flags `run` and `submit` share (`--judge`, `--judge-mode`, `--budget`): declared
//! once, so that both commands take them with the same names, defaults and help, and applied to
//! the configuration by one function, so that both override it alike.

use clap::Args;
use evalfleet_config::{CallMode, Config};
use evalfleet_worker::JudgeMode;

#[derive(Args)]
pub struct JudgeArgs {
    /// The judge: none, heuristic (offline, deterministic) or live (the providers under
    /// `judges:` in the config).
    #[arg(long, default_value = "heuristic", value_parser = super::parse_judge)]
    pub judge: JudgeMode,
    /// How a live judge's questions reach the providers: live (one call each) or batch (the
    /// providers' Batch APIs, half the price, answers within 24 hours). Overrides
    /// `judges.mode` and every provider's own `mode`.
    #[arg(long, value_parser = super::parse_call_mode)]
    pub judge_mode: Option<CallMode>,
    /// Stop judge calls once this many USD are spent (overrides `judges.budget_usd`).
    #[arg(long)]
    pub budget: Option<f64>,
}

impl JudgeArgs {
    /// Applies the flags that override the configuration's `judges:` section.
    pub fn apply(&self, config: &mut Config) {
        if let Some(budget) = self.budget {
            config.judges.budget_usd = Some(budget);
        }
        if let Some(mode) = self.judge_mode {
            config.judges.set_mode(mode);
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        judges: JudgeArgs,
    }

    #[test]
    fn the_flags_override_the_configuration() {
        let cli = Cli::parse_from(["x", "--judge-mode", "batch", "--budget", "2.5"]);
        assert_eq!(cli.judges.judge, JudgeMode::Heuristic, "the default judge");
        let mut config = Config::default();
        cli.judges.apply(&mut config);
        assert_eq!(config.judges.budget_usd, Some(2.5));
        assert!(config.judges.batches());

        let cli = Cli::parse_from(["x", "--judge", "live"]);
        assert_eq!(cli.judges.judge, JudgeMode::Live);
        let mut config = Config::default();
        let before = (config.judges.budget_usd, config.judges.batches());
        cli.judges.apply(&mut config);
        assert_eq!((config.judges.budget_usd, config.judges.batches()), before);
    }
}
