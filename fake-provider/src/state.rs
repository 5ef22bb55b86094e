//! The provider's shared state: the live options (swapped whole by `POST /admin/config`), the
//! per-provider limiters, the stats, the seeded per-request random stream and the id counter.
//! Every lock here is held for a few instructions and never across an `.await`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::sync::watch;

use crate::args::{ConfigPatch, FakeProviderArgs};
use crate::batch::Batches;
use crate::error::ConfigError;
use crate::judge::splitmix64;
use crate::limiter::ProviderLimiter;
use crate::stats::{Provider, Stats};

/// The random choices made for one request, drawn together so every request takes the same
/// number of draws and a given request order always sees the same faults.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Draws {
    pub fault: f64,
    pub wrap: f64,
    pub wrap_style: u32,
    pub jitter: u64,
}

/// Shared state behind every handler.
#[derive(Debug)]
pub struct FakeProvider {
    config: RwLock<Arc<FakeProviderArgs>>,
    rng: Mutex<ChaCha8Rng>,
    limiters: [ProviderLimiter; 2],
    stats: Stats,
    batches: Batches,
    ids: AtomicU64,
    shutdown: watch::Sender<bool>,
}

impl FakeProvider {
    pub fn new(args: FakeProviderArgs) -> Result<Self, ConfigError> {
        args.validate()?;
        let limiters = [
            ProviderLimiter::new(args.rpm_openai, args.tpm_openai, args.rate_limit_mode),
            ProviderLimiter::new(args.rpm_anthropic, args.tpm_anthropic, args.rate_limit_mode),
        ];
        Ok(Self {
            rng: Mutex::new(ChaCha8Rng::seed_from_u64(args.seed)),
            config: RwLock::new(Arc::new(args)),
            limiters,
            stats: Stats::default(),
            batches: Batches::default(),
            ids: AtomicU64::new(0),
            shutdown: watch::Sender::new(false),
        })
    }

    /// The options in force now.
    pub fn config(&self) -> Arc<FakeProviderArgs> {
        Arc::clone(&self.config.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// Applies a partial update atomically; limits that changed start over with full buckets,
    /// a new seed restarts the random stream.
    pub fn apply(&self, patch: &ConfigPatch) -> Result<Arc<FakeProviderArgs>, ConfigError> {
        let mut slot = self.config.write().unwrap_or_else(|e| e.into_inner());
        let old = Arc::clone(&slot);
        let new = Arc::new(patch.apply_to(&old)?);
        let mode_changed = new.rate_limit_mode != old.rate_limit_mode;
        if mode_changed || (new.rpm_openai, new.tpm_openai) != (old.rpm_openai, old.tpm_openai) {
            self.limiters[0].set_limits(new.rpm_openai, new.tpm_openai, new.rate_limit_mode);
        }
        if mode_changed
            || (new.rpm_anthropic, new.tpm_anthropic) != (old.rpm_anthropic, old.tpm_anthropic)
        {
            self.limiters[1].set_limits(new.rpm_anthropic, new.tpm_anthropic, new.rate_limit_mode);
        }
        if patch.seed.is_some() {
            *self.rng.lock().unwrap_or_else(|e| e.into_inner()) =
                ChaCha8Rng::seed_from_u64(new.seed);
        }
        *slot = Arc::clone(&new);
        Ok(new)
    }

    pub(crate) fn stats(&self) -> &Stats {
        &self.stats
    }

    /// The `GET /stats` document: the live requests' counters, and under `batches` the
    /// requests accepted into provider batches, counted by `custom_id`.
    pub fn stats_json(&self) -> serde_json::Value {
        let mut stats = self.stats.to_json();
        stats["batches"] = self.batches.ledger().to_json();
        stats
    }

    /// Both providers' batches and OpenAI's files.
    pub(crate) fn batches(&self) -> &Batches {
        &self.batches
    }

    pub(crate) fn limiter(&self, provider: Provider) -> &ProviderLimiter {
        &self.limiters[provider as usize]
    }

    /// This request's random choices.
    pub(crate) fn draws(&self) -> Draws {
        let mut rng = self.rng.lock().unwrap_or_else(|e| e.into_inner());
        Draws {
            fault: rng.random(),
            wrap: rng.random(),
            wrap_style: rng.random(),
            jitter: rng.random(),
        }
    }

    /// A fresh, seed-dependent 64-bit id source for response and request ids.
    pub(crate) fn next_id(&self, seed: u64) -> u64 {
        splitmix64(seed ^ self.ids.fetch_add(1, Ordering::Relaxed).rotate_left(17))
    }

    /// Ends every hang and latency sleep now (graceful shutdown must not wait two minutes).
    pub fn shutdown(&self) {
        self.shutdown.send_replace(true);
    }

    /// A receiver that sees `true` once shutdown began.
    pub(crate) fn shutdown_signal(&self) -> watch::Receiver<bool> {
        self.shutdown.subscribe()
    }
}

/// `len` base-62 characters derived from `x`, for ids shaped like the real ones.
pub fn base62(mut x: u64, len: usize) -> String {
    const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut out = String::with_capacity(len);
    for i in 0..len {
        if i % 10 == 0 {
            x = splitmix64(x);
        }
        out.push(ALPHABET[(x % 62) as usize] as char);
        x /= 62;
    }
    out
}
