//! Code scorers in a worker: the I/O half of a custom suite's `command` and `http` checks
//! (the pure half — spec, request, reply — is `evalfleet_suites::custom::external`).
//!
//! [`Scorers`] holds one scorer per code scorer check of a run's suite, built once with the
//! run's pipeline: a process pool (`pool.rs`, one process in `process.rs`, read line by line in
//! `lines.rs`) or an HTTP caller (`http.rs`). Embedded `run` and fleet workers ask them at the
//! same place, beside the judges ([`crate::process`]), so both produce the same records.
//!
//! Nothing a scorer does fails an example: a reply that is not JSON, a score out of range, a
//! timeout, a crash, an HTTP error after its retries, a scorer this worker may not run — each
//! gives the item's check a null with the reason.
//!
//! On a shared worker ([`ScorerPolicy::Fleet`]) a run's scorers obey `fleet.targets`, as its
//! target does: a command must be listed in `allowed_commands`, an http scorer's `${VAR}` in
//! `allowed_env`, and its URL's host must be one `allowed_hosts` allows.

mod http;
mod lines;
mod pool;
mod process;

use std::sync::Arc;

use evalfleet_config::{HostPolicy, TargetPolicy};
use evalfleet_suites::custom::{ExternalCheck, ExternalScore, ExternalScores, Scorer};
use evalfleet_suites::evaluate::ScorerTask;
use evalfleet_suites::suite::Suite;

use http::HttpScorer;
use pool::{Pool, PoolSpec};

/// What a run's code scorers may do in this process.
pub enum ScorerPolicy<'a> {
    /// `evalfleet run`: the user's own process runs any command, reads any variable and calls
    /// any host.
    Local,
    /// A shared fleet worker: `fleet.targets` says what the run may start, read and call.
    Fleet {
        policy: &'a TargetPolicy,
        hosts: Arc<HostPolicy>,
    },
}

/// A run's code scorers, in the order of the suite's code scorer checks.
#[derive(Default)]
pub struct Scorers {
    scorers: Vec<(String, Scoring)>,
}

/// One check's scorer, or why there is none here.
enum Scoring {
    Pool(Pool),
    Http(HttpScorer),
    Refused(String),
}

impl Scorers {
    /// No scorers: a suite without code scorers (any of its code scorers gives nulls).
    pub fn none() -> Scorers {
        Scorers::default()
    }

    /// The scorers of `suite`'s code scorer checks, under `policy`; `${VAR}` is read through
    /// `env`. Never fails: a check that cannot be scored here is refused with the reason
    /// ([`Scorers::refusals`]), and its items get nulls with it.
    pub fn build(
        suite: &Suite,
        policy: &ScorerPolicy<'_>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Scorers {
        let Some(custom) = suite.custom.as_deref() else {
            return Scorers::none();
        };
        let scorers = custom
            .external()
            .map(|check| {
                let scoring = scoring(check, policy, env).unwrap_or_else(|reason| {
                    Scoring::Refused(format!("check '{}': {reason}", check.name))
                });
                (check.name.clone(), scoring)
            })
            .collect();
        Scorers { scorers }
    }

    /// Why some checks cannot be scored here, one reason each (for the caller to log, or to
    /// refuse the run with).
    pub fn refusals(&self) -> impl Iterator<Item = &str> {
        self.scorers.iter().filter_map(|(_, s)| match s {
            Scoring::Refused(reason) => Some(reason.as_str()),
            _ => None,
        })
    }

    /// The scores of one example's scorer tasks ([`evalfleet_suites::evaluate::scorer_tasks`]),
    /// every scorer asked at once.
    pub async fn score(&self, tasks: &[ScorerTask<'_>]) -> ExternalScores {
        if tasks.is_empty() {
            return ExternalScores::default();
        }
        let asks = tasks.iter().enumerate().map(|(i, task)| async move {
            let scorer = self
                .scorers
                .get(i)
                .filter(|(name, _)| *name == task.check.name);
            let Some((_, scoring)) = scorer else {
                return ExternalScore::null("no scorer was built for this check in this process");
            };
            let line = match serde_json::to_string(&task.request) {
                Ok(line) => line,
                Err(e) => {
                    return ExternalScore::null(format!("the request does not serialise: {e}"))
                }
            };
            match scoring {
                Scoring::Pool(pool) => pool.ask(line.into()).await,
                Scoring::Http(http) => http.ask(&line).await,
                Scoring::Refused(reason) => ExternalScore::null(reason.clone()),
            }
        });
        ExternalScores(futures_util::future::join_all(asks).await)
    }
}

/// The scorer of one check under `policy`, or why this process may not run it.
fn scoring(
    check: &ExternalCheck,
    policy: &ScorerPolicy<'_>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Scoring, String> {
    match (&check.scorer, policy) {
        (Scorer::Command { command, .. }, ScorerPolicy::Fleet { policy, .. })
            if !policy.allows_command(command) =>
        {
            Err(format!(
                "the command `{}` is not allowed on this worker (fleet.targets.allowed_commands)",
                command.join(" ")
            ))
        }
        (Scorer::Command { command, processes }, _) => {
            let processes = match processes {
                Some(n) => *n as usize,
                None => std::thread::available_parallelism().map_or(1, |n| n.get()),
            };
            let spec = PoolSpec::new(&check.name, command, processes, check.timeout);
            Ok(Scoring::Pool(Pool::new(spec)))
        }
        (Scorer::Http { .. }, ScorerPolicy::Local) => {
            HttpScorer::new(check, env, None).map(Scoring::Http)
        }
        (Scorer::Http { .. }, ScorerPolicy::Fleet { policy, hosts }) => {
            if let Some(var) = check.secrets().iter().find(|v| !policy.allows_env(v)) {
                return Err(format!(
                    "${{{var}}} is not allowed on this worker (fleet.targets.allowed_env)"
                ));
            }
            HttpScorer::new(check, env, Some(hosts.clone())).map(Scoring::Http)
        }
    }
}

#[cfg(test)]
mod tests;
