//! Fleet-wide judge quotas: each provider's requests/minute and tokens/minute enforced across
//! every worker through the Redis GCRA, and a 429 anywhere pausing every worker's calls to that
//! provider. Each worker keeps its own local limits too; these bound the fleet's sum.

use std::collections::HashMap;
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
    providers: HashMap<String, ProviderLimits>,
}

impl FleetLimits {
    pub fn new(store: &RedisStore, judges: &JudgeConfig) -> Self {
        let providers = judges
            .providers
            .iter()
            .map(|(name, p)| {
                // Leases of a tenth of a second's quota: few Redis round trips, little hoarding.
                let lease = |per_minute: u32| (per_minute / 600).max(1);
                let rpm = if p.rpm > 0 { p.rpm } else { UNLIMITED };
                let limits = ProviderLimits {
                    requests: FleetLimiter::new(store, &format!("{name}:rpm"), rpm, lease(rpm)),
                    tokens: (p.tpm > 0).then(|| {
                        FleetLimiter::new(store, &format!("{name}:tpm"), p.tpm, lease(p.tpm))
                    }),
                };
                (name.clone(), limits)
            })
            .collect();
        FleetLimits { providers }
    }
}

#[async_trait]
impl SharedLimiter for FleetLimits {
    async fn acquire(&self, provider: &str, tokens: u32) {
        let Some(p) = self.providers.get(provider) else {
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
        if let Some(p) = self.providers.get(provider) {
            if let Err(e) = p
                .requests
                .pause_fleet(retry_after.unwrap_or(DEFAULT_PAUSE))
                .await
            {
                tracing::warn!(provider, error = %e, "cannot pause the fleet after a 429");
            }
        }
    }
}
