//! `--target NAME|FILE` and `--target-model MODEL`: the system under test, which generates the
//! outputs the suite then evaluates. One set of flags, built into a run's target in one place.

use std::sync::Arc;

use clap::Args;
use evalfleet_config::{Config, Target};
use evalfleet_suites::suite::Suite;
use evalfleet_worker::target::{RunTarget, TargetEstimator, TargetParts};
use evalfleet_worker::LiveParts;

use crate::exit::BadInput;

#[derive(Debug, Args, Default)]
pub struct TargetArgs {
    /// Generate each record's outputs with this target first (a name in targets_dir, or a
    /// target file), then evaluate the completed records. Repeat it to run the dataset once per
    /// target and compare each run with the first.
    #[arg(long)]
    pub target: Vec<String>,
    /// Override a chat target's model. Repeat it with one --target to compare models; with as
    /// many --target as models, the n-th model is the n-th target's.
    #[arg(long, requires = "target")]
    pub target_model: Vec<String>,
    /// Generate and evaluate each example K times (overrides the target's `epochs`): the item
    /// gets the epoch means and `epochs`, the report pass@k and pass^k.
    #[arg(long, value_name = "K")]
    pub epochs: Option<u32>,
}

/// One run's system under test: a `--target` and the model that overrides its own.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetChoice {
    pub target: String,
    pub model: Option<String>,
    /// `--epochs`.
    pub epochs: Option<u32>,
}

impl TargetArgs {
    /// The runs `--target` and `--target-model` ask for: none without `--target`, else one per
    /// target (each with the one model, or the n-th model) or, for one target, one per model.
    pub fn choices(&self) -> anyhow::Result<Vec<TargetChoice>> {
        let choice = |target: &String, model: Option<&String>| TargetChoice {
            target: target.clone(),
            model: model.cloned(),
            epochs: self.epochs,
        };
        let (targets, models) = (&self.target, &self.target_model);
        let choices: Vec<TargetChoice> = match (targets.len(), models.len()) {
            (_, 0) => targets.iter().map(|t| choice(t, None)).collect(),
            (_, 1) => targets.iter().map(|t| choice(t, models.first())).collect(),
            (1, _) => models.iter().map(|m| choice(&targets[0], Some(m))).collect(),
            (t, m) if t == m => targets
                .iter()
                .zip(models)
                .map(|(t, m)| choice(t, Some(m)))
                .collect(),
            (t, m) => {
                return Err(BadInput(format!(
                    "--target-model given {m} times for {t} targets: give it once (for every target), once per target, or several times with one --target"
                ))
                .into())
            }
        };
        if let Some(twice) = first_repeat(&choices) {
            return Err(BadInput(format!(
                "--target {}{} is given twice",
                twice.target,
                twice
                    .model
                    .as_ref()
                    .map_or(String::new(), |m| format!(" with --target-model {m}"))
            ))
            .into());
        }
        Ok(choices)
    }

    /// The targets of the runs: each one `--target` names, found and checked, or else the
    /// suite's own (`target:` in its file); none when there is neither.
    pub fn found(&self, config: &Config, suite: &Suite) -> anyhow::Result<Vec<FoundTarget>> {
        let choices = self.choices()?;
        if !choices.is_empty() {
            return choices
                .into_iter()
                .map(|choice| {
                    let target = choice.find(config)?;
                    Ok(FoundTarget { choice, target })
                })
                .collect();
        }
        let Some(target) = &suite.target else {
            return match self.epochs {
                Some(_) => Err(BadInput(
                    "--epochs needs a target: --target, or a target: section in the suite".into(),
                )
                .into()),
                None => Ok(Vec::new()),
            };
        };
        let choice = TargetChoice {
            target: format!("suite {}", suite.name),
            model: None,
            epochs: self.epochs,
        };
        let target = choice.checked(target.clone())?;
        Ok(vec![FoundTarget { choice, target }])
    }

    /// What `--estimate` counts the target runs with, one per run `--target` asks for (none
    /// without it): each target found and checked as for the run (so an estimate of runs that
    /// would be refused is refused too), compiled without reading the environment.
    pub fn estimators(
        &self,
        config: &Config,
        suite: &Suite,
    ) -> anyhow::Result<Vec<TargetEstimator>> {
        let found = self.found(config, suite)?;
        if found.len() > 1 {
            run_labels(&found)?;
        }
        let suite = Arc::new(suite.clone());
        found
            .into_iter()
            .map(|FoundTarget { choice, target }| {
                TargetEstimator::new(
                    target,
                    choice.model,
                    &config.judges,
                    suite.clone(),
                    config.model_prefixes.clone(),
                )
                .map_err(|e| BadInput(e).into())
            })
            .collect()
    }
}

impl TargetChoice {
    /// The target this choice names, checked. Bad input (exit 2) when it cannot be used.
    pub fn find(&self, config: &Config) -> anyhow::Result<Target> {
        let target =
            Target::find(&self.target, &config.targets_dir).map_err(|e| BadInput(e.to_string()))?;
        self.checked(target)
    }

    /// `target` with `--epochs` applied, checked. Every suite and judge mode takes a target (a
    /// log-analysis record's scenario is resolved by the producer, before the call).
    fn checked(&self, mut target: Target) -> anyhow::Result<Target> {
        if let Some(k) = self.epochs {
            target
                .set_epochs(k)
                .map_err(|e| BadInput(format!("--epochs: {e}")))?;
        }
        if let (Some(_), Target::Http(t)) = (&self.model, &target) {
            return Err(BadInput(format!(
                "--target-model: target {} is an http target, it has no model to override",
                t.name
            ))
            .into());
        }
        Ok(target)
    }

    /// `target` (what [`TargetChoice::find`] found) ready to call from this process (`run`):
    /// its provider, key and `${VAR}`s read now, so that a missing one stops the run before any
    /// call.
    /// Its replies are kept in the cache of `parts` (the judges'), and its calls pass the
    /// rate limits of `parts` (a chat target its provider's, as the judges are).
    pub fn build(
        &self,
        target: Target,
        config: &Config,
        parts: &LiveParts,
    ) -> anyhow::Result<RunTarget> {
        let env = |name: &str| std::env::var(name).ok();
        let built = RunTarget::new(TargetParts {
            target,
            model: self.model.clone(),
            judges: &config.judges,
            rules: config.model_prefixes.clone(),
            env: &env,
            cache: parts.cache(),
            rate_limits: &parts.rate_limits(),
            // The user's own process: their environment, any host.
            hosts: None,
            parking: Some(parts.parking()),
        })
        .map_err(BadInput)?;
        Ok(built)
    }
}

/// A `--target` found and checked: what one run generates with.
pub struct FoundTarget {
    pub choice: TargetChoice,
    pub target: Target,
}

/// What each of several runs adds to the run id, `<run_id>-<label>`: the target's name, and
/// its model when one target runs with several (characters a run id cannot hold become `-`).
/// Bad input when two runs would share an id.
pub fn run_labels(runs: &[FoundTarget]) -> anyhow::Result<Vec<String>> {
    let models_vary = |name: &str| runs.iter().filter(|r| r.target.name() == name).count() > 1;
    let labels: Vec<String> = runs
        .iter()
        .map(|FoundTarget { choice, target }| match &choice.model {
            Some(model) if models_vary(target.name()) => format!("{}-{model}", target.name()),
            _ => target.name().to_owned(),
        })
        .map(|label| {
            label
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || "._-".contains(c) {
                        c
                    } else {
                        '-'
                    }
                })
                .collect()
        })
        .collect();
    if let Some(twice) = first_repeat(&labels) {
        return Err(BadInput(format!(
            "two of the --target runs would both be named '{twice}': give the targets different names"
        ))
        .into());
    }
    Ok(labels)
}

/// The first item that appeared before.
fn first_repeat<T: PartialEq>(items: &[T]) -> Option<&T> {
    items
        .iter()
        .enumerate()
        .find(|(i, item)| items[..*i].contains(item))
        .map(|(_, item)| item)
}
