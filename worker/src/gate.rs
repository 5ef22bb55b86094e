//! One rate limit, as every caller in this process meets it: the adaptive in-flight cap, the
//! requests/tokens quotas and the fleet-wide limiter, behind one door.
//!
//! One API key has one rate limit, whoever spends it: a run's judges and a chat target that use
//! the same provider pass through the same [`Gate`], so the quota they share is neither
//! exceeded nor split in two. An http target has a gate of its own (`target:<name>`, its `rpm`
//! and `max_in_flight`). [`Gates`] hands out one gate per limit for the whole process: every
//! run, judge and target a worker serves.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use evalfleet_config::ProviderConfig;
use evalfleet_contract::shared_limit::SharedLimiter;

use crate::judge::limit::{Adaptive, Permit, Quotas, Signal, Verdict};
use crate::judge::provider::{CallError, Completion};
use crate::metrics::metrics;

/// The limits of one gate, as its configuration states them.
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
pub struct Gate {
    /// The quota's name: the provider's (`openai`), or `target:<name>`. Fleet-wide quotas and
    /// the `evalfleet_rate_limit_wait_seconds_total` label use it.
    name: String,
    quotas: Quotas,
    adaptive: Adaptive,
    shared: Option<Arc<dyn SharedLimiter>>,
}

impl Gate {
    fn new(name: &str, limits: Limits, shared: Option<Arc<dyn SharedLimiter>>) -> Self {
        Gate {
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
    /// calls through this gate, not only this process's.
    pub fn signal(&self, signal: Signal) {
        let verdict = self.adaptive.signal(signal);
        if let (Verdict::PauseAll(wait), Some(shared)) = (verdict, &self.shared) {
            // Fire and forget: the fleet-wide pause must not delay this caller's retry.
            let (shared, name) = (shared.clone(), self.name.clone());
            tokio::spawn(async move { shared.throttled(&name, Some(wait)).await });
        }
    }

    /// What a provider call's outcome tells this gate: a success (and a quota its headers say
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

/// The gates of a process, one per rate limit.
#[derive(Default)]
pub struct Gates {
    by_limit: Mutex<HashMap<String, Arc<Gate>>>,
    /// The fleet-wide quotas every gate also passes (workers only).
    shared: Option<Arc<dyn SharedLimiter>>,
}

impl Gates {
    /// Gates that also admit every call through `shared`, the fleet's limiter.
    pub fn fleet_wide(shared: Option<Arc<dyn SharedLimiter>>) -> Self {
        Gates {
            by_limit: Mutex::default(),
            shared,
        }
    }

    /// The gate of provider `name`: one per provider endpoint and key, whoever calls it.
    pub fn provider(&self, name: &str, provider: &ProviderConfig) -> Arc<Gate> {
        let identity = format!("{name}\n{}\n{}", provider.base_url, provider.api_key_env);
        self.gate(identity, name, Limits::of_provider(provider))
    }

    /// The gate of http target `target`: its own quota (`target:<name>`), fleet-wide too.
    pub fn target(&self, target: &str, limits: Limits) -> Arc<Gate> {
        let name = format!("target:{target}");
        if let Some(shared) = &self.shared {
            shared.declare(&name, limits.rpm, limits.tpm);
        }
        self.gate(name.clone(), &name, limits)
    }

    /// The gate known as `identity`, made with `limits` the first time: the first
    /// configuration to meet a limit sets it for the process.
    fn gate(&self, identity: String, name: &str, limits: Limits) -> Arc<Gate> {
        // A panic elsewhere leaves the map as it was: every entry in it is a whole gate.
        let mut gates = self.by_limit.lock().unwrap_or_else(PoisonError::into_inner);
        gates
            .entry(identity)
            .or_insert_with(|| Arc::new(Gate::new(name, limits, self.shared.clone())))
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callers_of_one_limit_share_one_gate() {
        let gates = Gates::default();
        let openai = ProviderConfig {
            max_in_flight: 4,
            ..evalfleet_config::JudgeConfig::default().providers["openai"].clone()
        };
        let a = gates.provider("openai", &openai);
        let b = gates.provider("openai", &openai);
        assert!(Arc::ptr_eq(&a, &b), "a judge and a chat target of one key");
        let elsewhere = ProviderConfig {
            base_url: "http://127.0.0.1:9/v1".into(),
            ..openai.clone()
        };
        assert!(!Arc::ptr_eq(&a, &gates.provider("openai", &elsewhere)));
        let limits = Limits {
            rpm: 60,
            tpm: 0,
            max_in_flight: 2,
        };
        let agent = gates.target("agent", limits);
        assert!(Arc::ptr_eq(&agent, &gates.target("agent", limits)));
        assert_eq!(agent.limit(), 2.0);
        assert_eq!(agent.name, "target:agent");
    }

    #[tokio::test]
    async fn a_gate_holds_at_most_its_cap_in_flight() {
        let gates = Gates::default();
        let gate = gates.target(
            "t",
            Limits {
                rpm: 0,
                tpm: 0,
                max_in_flight: 2,
            },
        );
        let first = gate.admit(1).await;
        let _second = gate.admit(1).await;
        let third = tokio::time::timeout(std::time::Duration::from_millis(50), gate.admit(1));
        assert!(third.await.is_err(), "a third call waits");
        drop(first);
        let fourth = tokio::time::timeout(std::time::Duration::from_millis(50), gate.admit(1));
        assert!(fourth.await.is_ok(), "a freed slot admits the next");
    }
}
