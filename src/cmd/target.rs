//! `--target NAME|FILE` and `--target-model MODEL`: the system under test, which generates the
//! outputs the suite then evaluates. One set of flags, built into a run's target in one place.

use clap::Args;
use evalfleet_config::{Config, Target};
use evalfleet_model::suite::SuiteKind;
use evalfleet_suites::suite::Suite;
use evalfleet_worker::target::{RunTarget, TargetParts};
use evalfleet_worker::JudgeMode;

use crate::exit::BadInput;

#[derive(Debug, Args, Default)]
pub struct TargetArgs {
    /// Generate each record's outputs with this target first (a name in targets_dir, or a
    /// target file), then evaluate the completed records.
    #[arg(long)]
    pub target: Option<String>,
    /// Override a chat target's model.
    #[arg(long, requires = "target")]
    pub target_model: Option<String>,
}

impl TargetArgs {
    /// `--estimate` counts judge calls on recorded outputs; with a target the outputs do not
    /// exist yet, so an estimate would be wrong: refused until it counts target calls too.
    pub fn refuse_estimate(&self) -> anyhow::Result<()> {
        match &self.target {
            Some(_) => Err(BadInput(
                "--estimate with --target is not supported yet: the outputs it would judge do not exist before the target answers".into(),
            )
            .into()),
            None => Ok(()),
        }
    }

    /// The target `--target` names, checked against the suite and the judge mode; None without
    /// `--target`. Bad input (exit 2) when it cannot be used.
    pub fn find(
        &self,
        config: &Config,
        suite: &Suite,
        judge: JudgeMode,
    ) -> anyhow::Result<Option<Target>> {
        let Some(name) = &self.target else {
            return Ok(None);
        };
        let target =
            Target::find(name, &config.targets_dir).map_err(|e| BadInput(e.to_string()))?;
        if suite.kind == SuiteKind::LogAnalysis {
            return Err(BadInput(
                "--target: log-analysis suites cannot take a target yet (their records name scenario files)".into(),
            )
            .into());
        }
        if judge == JudgeMode::Live && config.judges.batches() {
            return Err(BadInput(
                "--target with --judge-mode batch is not supported yet: a parked example would ask the target again".into(),
            )
            .into());
        }
        if let (Some(_), Target::Http(t)) = (&self.target_model, &target) {
            return Err(BadInput(format!(
                "--target-model: target {} is an http target, it has no model to override",
                t.name
            ))
            .into());
        }
        Ok(Some(target))
    }

    /// The run's target, ready to call from this process (`run`): its provider, key and
    /// `${VAR}`s read now, so that a missing one stops the run before any call.
    pub fn build(
        &self,
        config: &Config,
        suite: &Suite,
        judge: JudgeMode,
    ) -> anyhow::Result<Option<RunTarget>> {
        let Some(target) = self.find(config, suite, judge)? else {
            return Ok(None);
        };
        let env = |name: &str| std::env::var(name).ok();
        let built = RunTarget::new(TargetParts {
            target,
            model: self.target_model.clone(),
            providers: &config.providers,
            retry: &config.judges.retry,
            prices: &config.judges.prices,
            rules: config.model_prefixes.clone(),
            env: &env,
        })
        .map_err(BadInput)?;
        Ok(Some(built))
    }
}
