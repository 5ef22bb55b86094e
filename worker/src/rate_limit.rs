//! One rate limit, as every caller in this process meets it: the adaptive in-flight cap, the
//! requests/tokens quotas and the fleet-wide limiter, behind one door.
//!
//! One API key has one rate limit, whoever spends it: a run's judges and a chat target that use
//! the same provider pass through the same [`RateLimit`], so the quota they share is neither
//! exceeded nor split in two. An http target has a rate limit of its own (`target:<name>`, its `rpm`
//! and `max_in_flight`). [`RateLimits`] hands out one `RateLimit` per limit for the whole process: every
//! run, judge and target a worker serves.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use evalfleet_config::ProviderConfig;
use evalfleet_contract::shared_limit::SharedLimiter;

use crate::judge::limit::{Adaptive, Permit, Quotas, Signal, Verdict};
use crate::judge::provider::{CallError, Completion};
use crate::metrics::metrics;

/// The limits of one rate limit, as its configuration states them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Requests per minute; 0 = none.
    pub rpm: u32,
    /// Tokens per minute; 0 = none.
    pub tpm: u32,
    /// The most calls in flight (the adaptive cap's ceiling).
    pub max_in_flight: u32,
}

impl Limits {
    pub fn of_provider(p: &ProviderConfig) -> Self {
        Limits {
            rpm: p.rpm,
            tpm: p.tpm,
            max_in_flight: p.max_in_flight,
        }
    }
}

/// One rate limit's admission.
pub struct RateLimit {
    /// The quota's name: the provider's (`openai`), or `target:<name>`. Fleet-wide quotas and
    /// the `evalfleet_rate_limit_wait_seconds_total` label use it.
    name: String,
    quotas: Quotas,
    adaptive: Adaptive,
    shared: Option<Arc<dyn SharedLimiter>>,
}

impl RateLimit {
    fn new(name: &str, limits: Limits, shared: Option<Arc<dyn SharedLimiter>>) -> Self {
        RateLimit {
            name: name.to_owned(),
            quotas: Quotas::new(limits.rpm, limits.tpm),
            adaptive: Adaptive::new(limits.max_in_flight),
            shared,
        }
    }

    /// Waits for a slot under the cap, then for this process's quotas, then for the fleet's;
    /// the slot is freed when the permit drops. `tokens` is the request's estimated size.
    pub async fn admit(&self, tokens: u32) -> Permit<'_> {
        let waiting = Instant::now();
        let slot = self.adaptive.acquire().await;
        self.quotas.admit(tokens).await;
        if let Some(shared) = &self.shared {
            shared.acquire(&self.name, tokens).await;
        }
        metrics()
            .rate_limit_wait
            .with_label_values(&[&self.name])
            .inc_by(waiting.elapsed().as_secs_f64());
        slot
    }

    /// What the other side said about a call. A quota that is used up pauses the whole fleet's
    /// calls under this limit, not only this process's.
    pub fn signal(&self, signal: Signal) {
        let verdict = self.adaptive.signal(signal);
        if let (Verdict::PauseAll(wait), Some(shared)) = (verdict, &self.shared) {
            // Fire and forget: the fleet-wide pause must not delay this caller's retry.
            let (shared, name) = (shared.clone(), self.name.clone());
            tokio::spawn(async move { shared.throttled(&name, Some(wait)).await });
        }
    }

    /// What a provider call's outcome tells this rate_limit: a success (and a quota its headers say
    /// is used up), a 429, an overload.
    pub fn observe(&self, result: Result<&Completion, &CallError>) {
        match result {
            Ok(c) => {
                self.signal(Signal::Success);
                if let Some(reset) = c.limits.exhausted_reset() {
                    self.signal(Signal::Exhausted { reset });
                }
            }
            Err(CallError::RateLimited {
                retry_after,
                limits,
                ..
            }) => self.signal(Signal::RateLimited {
                retry_after: *retry_after,
                exhausted: limits.exhausted_reset(),
            }),
            Err(CallError::Overloaded { .. }) => self.signal(Signal::Overloaded),
            Err(_) => {}
        }
    }

    /// The current in-flight cap (for tests and metrics).
    pub fn limit(&self) -> f64 {
        self.adaptive.limit()
    }
}

/// The rate_limits of a process, one per rate limit.
#[derive(Default)]
pub struct RateLimits {
    by_limit: Mutex<HashMap<String, Arc<RateLimit>>>,
    /// The fleet-wide quotas every rate limit also passes (workers only).
    shared: Option<Arc<dyn SharedLimiter>>,
}

impl RateLimits {
    /// RateLimits that also admit every call through `shared`, the fleet's limiter.
    pub fn fleet_wide(shared: Option<Arc<dyn SharedLimiter>>) -> Self {
        RateLimits {
            by_limit: Mutex::default(),
            shared,
        }
    }

    /// The rate limit of provider `name`: one per provider endpoint and key, whoever calls it.
    pub fn provider(&self, name: &str, provider: &ProviderConfig) -> Arc<RateLimit> {
        let identity = format!("{name}\n{}\n{}", provider.base_url, provider.api_key_env);
        self.get(identity, name, Limits::of_provider(provider))
    }

    /// The rate limit of http target `target`: its own quota (`target:<name>`), fleet-wide too.
    pub fn target(&self, target: &str, limits: Limits) -> Arc<RateLimit> {
        let name = format!("target:{target}");
        if let Some(shared) = &self.shared {
            shared.declare(&name, limits.rpm, limits.tpm);
        }
        self.get(name.clone(), &name, limits)
    }

    /// The rate limit known as `identity`, made with `limits` the first time: the first
    /// configuration to meet a limit sets it for the process.
    fn get(&self, identity: String, name: &str, limits: Limits) -> Arc<RateLimit> {
        // A panic elsewhere leaves the map as it was: every entry in it is a whole rate limit.
        let mut rate_limits = self.by_limit.lock().unwrap_or_else(PoisonError::into_inner);
        rate_limits
            .entry(identity)
            .or_insert_with(|| Arc::new(RateLimit::new(name, limits, self.shared.clone())))
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callers_of_one_limit_share_one_rate_limit() {
        let rate_limits = RateLimits::default();
        let openai = ProviderConfig {
            max_in_flight: 4,
            ..evalfleet_config::JudgeConfig::default().providers["openai"].clone()
        };
        let a = rate_limits.provider("openai", &openai);
        let b = rate_limits.provider("openai", &openai);
        assert!(Arc::ptr_eq(&a, &b), "a judge and a chat target of one key");
        let elsewhere = ProviderConfig {
            base_url: "http://127.0.0.1:9/v1".into(),
            ..openai.clone()
        };
        assert!(!Arc::ptr_eq(
            &a,
            &rate_limits.provider("openai", &elsewhere)
        ));
        let limits = Limits {
            rpm: 60,
            tpm: 0,
            max_in_flight: 2,
        };
        let agent = rate_limits.target("agent", limits);
        assert!(Arc::ptr_eq(&agent, &rate_limits.target("agent", limits)));
        assert_eq!(agent.limit(), 2.0);
        assert_eq!(agent.name, "target:agent");
    }

    #[tokio::test]
    async fn a_rate_limit_holds_at_most_its_cap_in_flight() {
        let rate_limits = RateLimits::default();
        let rate_limit = rate_limits.target(
            "t",
            Limits {
                rpm: 0,
                tpm: 0,
                max_in_flight: 2,
            },
        );
        let first = rate_limit.admit(1).await;
        let _second = rate_limit.admit(1).await;
        let third = tokio::time::timeout(std::time::Duration::from_millis(50), rate_limit.admit(1));
        assert!(third.await.is_err(), "a third call waits");
        drop(first);
        let fourth =
            tokio::time::timeout(std::time::Duration::from_millis(50), rate_limit.admit(1));
        assert!(fourth.await.is_ok(), "a freed slot admits the next");
    }
}
