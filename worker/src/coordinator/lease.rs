//! The providers' coordinator leases this worker tries for: one small task per provider takes or
//! renews the lease every third of its length, apart from the coordinator's steps, so that a
//! long upload does not let the lease lapse. The flag it keeps is a hint for which providers to
//! work on; the store checks the lease again in every write a coordinator makes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use evalfleet_contract::batch_store::BatchStore;
use tokio::task::JoinHandle;

use super::CoordinatorOptions;

pub(super) struct Leases {
    store: Arc<dyn BatchStore>,
    options: CoordinatorOptions,
    keepers: HashMap<String, (Arc<AtomicBool>, JoinHandle<()>)>,
}

impl Leases {
    pub fn new(store: Arc<dyn BatchStore>, options: CoordinatorOptions) -> Self {
        Leases {
            store,
            options,
            keepers: HashMap::new(),
        }
    }

    /// Whether this worker holds `provider`'s lease; the first call starts trying for it.
    pub fn held(&mut self, provider: &str) -> bool {
        let (held, _) = self.keepers.entry(provider.to_owned()).or_insert_with(|| {
            let held = Arc::new(AtomicBool::new(false));
            let keeper = tokio::spawn(keep(
                self.store.clone(),
                self.options.clone(),
                provider.to_owned(),
                held.clone(),
            ));
            (held, keeper)
        });
        held.load(Ordering::Relaxed)
    }

    /// The providers whose lease this worker holds.
    pub fn held_providers(&self) -> Vec<String> {
        self.keepers
            .iter()
            .filter(|(_, (held, _))| held.load(Ordering::Relaxed))
            .map(|(p, _)| p.clone())
            .collect()
    }

    /// Stops renewing: the leases run out, and other workers take over.
    pub fn stop(self) {
        for (_, (_, keeper)) in self.keepers {
            keeper.abort();
        }
    }
}

async fn keep(
    store: Arc<dyn BatchStore>,
    options: CoordinatorOptions,
    provider: String,
    held: Arc<AtomicBool>,
) {
    let ttl = options.lease.as_millis().max(1) as u64;
    loop {
        let now = match store.lease(&provider, &options.holder, ttl).await {
            Ok(now) => now,
            Err(e) => {
                tracing::warn!(provider, error = %e, "cannot renew the batch coordinator's lease");
                false
            }
        };
        if now != held.swap(now, Ordering::Relaxed) {
            if now {
                tracing::info!(
                    provider,
                    "this worker now coordinates the provider's batches"
                );
            } else {
                tracing::warn!(
                    provider,
                    "this worker no longer coordinates the provider's batches"
                );
            }
        }
        tokio::time::sleep(options.lease / 3).await;
    }
}
