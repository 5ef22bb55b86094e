//! Building a [`Judge`] from a run's judge mode, in one place for `evalfleet run` and the fleet
//! worker, so that both decide the same way which cache a live judge uses, when it parks its
//! examples and which limits it shares.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use evalfleet_config::JudgeConfig;
use evalfleet_contract::batch_memory::InProcessBatchStore;
use evalfleet_contract::batch_store::BatchStore;
use evalfleet_contract::judge_cache::{JudgeCache, NoCache};
use evalfleet_contract::shared_limit::SharedLimiter;

use super::{Judge, JudgeMode, LiveJudge};
use crate::rate_limit::RateLimits;

/// What a live judge is built with besides its configuration: what the process around it
/// offers (a cache, in the fleet a batch store and a fleet-wide limiter) and whether runs with
/// the same judge configuration share one judge.
pub struct LiveParts {
    /// Where verdicts are cached; used only when the run's configuration turns the cache on
    /// (`judges.cache`), so a run's spec decides whether its verdicts may come from it.
    cache: Arc<dyn JudgeCache>,
    /// Batch mode: examples wait for their batches parked here, not in a held message (a
    /// batch takes hours, more than the broker's consumer timeout): in memory for `run`, in
    /// Redis for the fleet.
    parking: Arc<dyn BatchStore>,
    /// Every rate limit, shared by the judges and targets of every run in the process
    /// (and, in the fleet, passing the quotas shared with the other workers).
    rate_limits: Arc<RateLimits>,
    /// With [`LiveParts::shared`]: the live judges built so far, by judge configuration.
    shared: Option<Mutex<HashMap<String, Arc<LiveJudge>>>>,
}

impl LiveParts {
    /// A live judge with `cache`, parking batch-mode examples in memory: `evalfleet run`'s.
    pub fn new(cache: Arc<dyn JudgeCache>) -> Self {
        LiveParts {
            cache,
            parking: Arc::new(InProcessBatchStore::new()),
            rate_limits: Arc::new(RateLimits::default()),
            shared: None,
        }
    }

    /// The cache verdicts (and targets' replies) are kept in.
    pub fn cache(&self) -> Arc<dyn JudgeCache> {
        self.cache.clone()
    }

    /// Where batch-mode questions (and a batch-mode chat target's generations) park their
    /// example.
    pub fn parking(&self) -> Arc<dyn BatchStore> {
        self.parking.clone()
    }

    /// Batch-mode questions park their example in `store` (see [`LiveJudge::with_parking`]).
    pub fn with_parking(mut self, store: Arc<dyn BatchStore>) -> Self {
        self.parking = store;
        self
    }

    /// Every call is also admitted through `limiter`, the fleet's quotas.
    pub fn with_limiter(mut self, limiter: Option<Arc<dyn SharedLimiter>>) -> Self {
        self.rate_limits = Arc::new(RateLimits::fleet_wide(limiter));
        self
    }

    /// The process's rate_limits: a chat target takes its provider's from here, the judges' own.
    pub fn rate_limits(&self) -> Arc<RateLimits> {
        self.rate_limits.clone()
    }

    /// Runs whose judge configuration is identical share one live judge: its rate limits, its
    /// adaptive in-flight cap and its budget tally.
    pub fn shared(mut self) -> Self {
        self.shared = Some(Mutex::new(HashMap::new()));
        self
    }

    /// The live judge for `judges`: the one already built for the same configuration when
    /// judges are shared, else a new one.
    fn live(&self, judges: &JudgeConfig) -> Result<Arc<LiveJudge>, String> {
        let Some(shared) = &self.shared else {
            return self.new_live(judges).map(Arc::new);
        };
        let key = serde_json::to_string(judges).unwrap_or_default();
        // A panic elsewhere leaves the map as it was: every entry in it is a whole judge.
        let mut built = shared.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(live) = built.get(&key) {
            return Ok(live.clone());
        }
        let live = Arc::new(self.new_live(judges)?);
        built.insert(key, live.clone());
        Ok(live)
    }

    fn new_live(&self, judges: &JudgeConfig) -> Result<LiveJudge, String> {
        let cache: Arc<dyn JudgeCache> = if judges.cache {
            self.cache.clone()
        } else {
            Arc::new(NoCache)
        };
        let mut live = LiveJudge::new(judges, cache, &self.rate_limits)?;
        if judges.batches() {
            live = live.with_parking(self.parking.clone());
        }
        Ok(live)
    }
}

/// The judge of `mode`: nobody, the offline heuristic, or a live judge for `judges` built with
/// `parts`. Err when a live judge cannot be built (a provider's API key is not set, a bad
/// configuration), with the reason.
pub fn build_judge(
    mode: JudgeMode,
    judges: &JudgeConfig,
    parts: &LiveParts,
) -> Result<Judge, String> {
    Ok(match mode {
        JudgeMode::None => Judge::None,
        JudgeMode::Heuristic => Judge::Heuristic,
        JudgeMode::Live => Judge::Live(parts.live(judges)?),
    })
}

#[cfg(test)]
mod tests {
    use evalfleet_contract::judge_cache::InMemoryCache;

    use super::*;

    fn parts() -> LiveParts {
        LiveParts::new(Arc::new(InMemoryCache::default()))
    }

    #[test]
    fn offline_modes_need_no_live_judge() {
        // The default configuration's keys are not set here: building a live judge would fail.
        let judges = JudgeConfig::default();
        assert!(matches!(
            build_judge(JudgeMode::None, &judges, &parts()),
            Ok(Judge::None)
        ));
        assert!(matches!(
            build_judge(JudgeMode::Heuristic, &judges, &parts()),
            Ok(Judge::Heuristic)
        ));
    }

    fn judges_with_key(var: &str) -> JudgeConfig {
        let mut judges = JudgeConfig::default();
        for p in judges.providers.values_mut() {
            p.api_key_env = var.into();
        }
        judges
    }

    #[test]
    fn identical_configurations_share_a_live_judge_only_when_judges_are_shared() {
        const VAR: &str = "EVALFLEET_TEST_BUILD_JUDGE_KEY";
        // Only this test reads this variable.
        std::env::set_var(VAR, "sk-test");
        let judges = judges_with_key(VAR);
        let live = |parts: &LiveParts| match build_judge(JudgeMode::Live, &judges, parts) {
            Ok(Judge::Live(live)) => live,
            Ok(_) => panic!("not a live judge"),
            Err(e) => panic!("{e}"),
        };
        let shared = parts().shared();
        assert!(Arc::ptr_eq(&live(&shared), &live(&shared)));
        let own = parts();
        assert!(!Arc::ptr_eq(&live(&own), &live(&own)));
    }

    #[test]
    fn a_target_is_charged_to_the_live_judges_accounting() {
        const VAR: &str = "EVALFLEET_TEST_ACCOUNTING_KEY";
        // Only this test reads this variable.
        std::env::set_var(VAR, "sk-test");
        let mut judges = judges_with_key(VAR);
        judges.budget_usd = Some(0.5);
        let judge = build_judge(JudgeMode::Live, &judges, &parts()).unwrap();
        let Judge::Live(live) = &judge else {
            panic!("not a live judge")
        };
        judge.accounting(&judges).charge(0.5);
        assert!(
            !live.accounting.within_budget(),
            "the target's spend counts against the judges' budget"
        );
        let offline = build_judge(JudgeMode::Heuristic, &judges, &parts()).unwrap();
        let own = offline.accounting(&judges);
        assert_eq!(own.budget_usd(), Some(0.5), "the configured budget");
        assert!(own.has_price("gpt-4o-mini"), "the configured prices");
    }

    #[test]
    fn a_live_judge_that_cannot_be_built_says_why() {
        let judges = judges_with_key("EVALFLEET_TEST_KEY_THAT_IS_NEVER_SET");
        match build_judge(JudgeMode::Live, &judges, &parts().shared()) {
            Err(reason) => assert!(reason.contains("is not set"), "{reason}"),
            Ok(_) => panic!("built a live judge without its API key"),
        }
    }
}
