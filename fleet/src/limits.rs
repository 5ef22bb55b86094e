//! Fleet-wide judge quotas: each provider's requests/minute and tokens/minute enforced across
//! every worker through the Redis GCRA, and a 429 anywhere pausing every worker's calls to that
//! provider. Each worker keeps its own local limits too; these bound the fleet's sum.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::{PoisonError, RwLock};
use std::time::Duration;

use async_trait::async_trait;
use evalfleet_config::JudgeConfig;
use evalfleet_contract::shared_limit::SharedLimiter;

use crate::redis::{FleetLimiter, RedisStore};

/// The pause after a 429 that gave no `Retry-After`.
const DEFAULT_PAUSE: Duration = Duration::from_secs(1);

struct ProviderLimits {
    /// Always present: without a request quota it admits everything but still carries the
    /// fleet-wide pause after a 429.
    requests: FleetLimiter,
    tokens: Option<FleetLimiter>,
}

/// A request quota so large it never binds, for providers without one.
const UNLIMITED: u32 = 60_000_000;

pub struct FleetLimits {
    store: RedisStore,
    /// By quota name: the configured providers, then the targets runs declare.
    providers: RwLock<HashMap<String, Arc<ProviderLimits>>>,
}

impl FleetLimits {
    pub fn new(store: &RedisStore, judges: &JudgeConfig) -> Self {
        let providers = judges
            .providers
            .iter()
            .map(|(name, p)| (name.clone(), Arc::new(limits(store, name, p.rpm, p.tpm))))
            .collect();
        FleetLimits {
            store: store.clone(),
            providers: RwLock::new(providers),
        }
    }

    fn get(&self, name: &str) -> Option<Arc<ProviderLimits>> {
        let providers = self
            .providers
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        providers.get(name).cloned()
    }
}

/// The fleet-wide limiters of quota `name`.
fn limits(store: &RedisStore, name: &str, rpm: u32, tpm: u32) -> ProviderLimits {
    // Leases of a tenth of a second's quota: few Redis round trips, little hoarding.
    let lease = |per_minute: u32| (per_minute / 600).max(1);
    let rpm = if rpm > 0 { rpm } else { UNLIMITED };
    ProviderLimits {
        requests: FleetLimiter::new(store, &format!("{name}:rpm"), rpm, lease(rpm)),
        tokens: (tpm > 0)
            .then(|| FleetLimiter::new(store, &format!("{name}:tpm"), tpm, lease(tpm))),
    }
}

#[async_trait]
impl SharedLimiter for FleetLimits {
    async fn acquire(&self, provider: &str, tokens: u32) {
        let Some(p) = self.get(provider) else {
            return;
        };
        if let Err(e) = p.requests.acquire(1).await {
            tracing::warn!(provider, error = %e, "fleet request quota unreachable; relying on local limits");
        }
        if let Some(t) = &p.tokens {
            if let Err(e) = t.acquire(tokens).await {
                tracing::warn!(provider, error = %e, "fleet token quota unreachable; relying on local limits");
            }
        }
    }

    async fn throttled(&self, provider: &str, retry_after: Option<Duration>) {
        if let Some(p) = self.get(provider) {
            if let Err(e) = p
                .requests
                .pause_fleet(retry_after.unwrap_or(DEFAULT_PAUSE))
                .await
            {
                tracing::warn!(provider, error = %e, "cannot pause the fleet after a 429");
            }
        }
    }

    fn declare(&self, name: &str, rpm: u32, tpm: u32) {
        let mut providers = self
            .providers
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        providers
            .entry(name.to_owned())
            .or_insert_with(|| Arc::new(limits(&self.store, name, rpm, tpm)));
    }
}
