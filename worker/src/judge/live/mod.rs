//! Live judges: real provider calls, with everything that makes them safe at fleet scale.
//!
//! One judge question goes: cache → budget → adaptive in-flight slot → requests/tokens quota →
//! HTTP call, retried (backon: exponential schedule, full jitter, never sooner than the
//! provider's `Retry-After`) on 408/409/429/5xx/529 and transport errors. A reply that does not
//! parse gets one re-ask with a reminder, then the dimension is `unscored`: a judge failure is
//! never a model failure. A 401/403 stops the whole run at once, so a bad key cannot burn the
//! dataset one failed example at a time. Questions to a provider in batch mode go through its
//! batches instead (`batched.rs`).
//!
//! Here: a live judge and its providers, built from the configuration. Judging an example and
//! re-asking is `ask.rs`; one live call with its admission, retries and labels `call.rs`; a
//! panel's combined score `panel.rs`.

mod ask;
mod batched;
mod call;
mod pairwise;
mod panel;

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU32;
use std::sync::{Arc, Mutex, OnceLock};

use evalfleet_config::{JudgeConfig, ProviderConfig};
use evalfleet_contract::batch_store::BatchStore;
use evalfleet_model::record::Usage;

use super::accounting::Accounting;
use super::batch::BatchOptions;
use super::cache::JudgeCache;
use super::prompt::Prompt;
use super::provider::{ChatRequest, ProviderClient, TokenUsage};
use crate::rate_limit::{RateLimit, RateLimits};

/// One judge provider as the run uses it: its client, its model and its admission control.
pub struct ProviderRuntime {
    pub name: String,
    pub model: String,
    client: Arc<ProviderClient>,
    /// The provider's rate limit, shared with a chat target of the same provider.
    pub rate_limit: Arc<RateLimit>,
    max_tokens: u32,
    /// Batch mode: how the coordinator makes this provider's batches.
    batch: Option<BatchOptions>,
    batch_discount: f64,
}

impl ProviderRuntime {
    /// A question to this provider's judge model.
    fn request<'a>(&'a self, prompt: &'a Prompt) -> ChatRequest<'a> {
        ChatRequest {
            model: &self.model,
            prompt,
            max_tokens: self.max_tokens,
        }
    }
}

pub struct LiveJudge {
    config: JudgeConfig,
    providers: BTreeMap<String, ProviderRuntime>,
    cache: Arc<dyn JudgeCache>,
    /// Shared with the run's target ([`crate::Judge::accounting`]): one budget for both.
    pub accounting: Arc<Accounting>,
    /// Set on the first 401/403: every later call fails at once with this reason.
    stop: OnceLock<String>,
    /// Batch-mode questions park their example here until the batch coordinator has their
    /// replies (see `batched.rs`).
    parking: Option<Arc<dyn BatchStore>>,
}

/// A judge's reply text and its tokens.
struct Reply {
    text: String,
    usage: TokenUsage,
}

/// What the calls of one example cost, accumulated across its questions.
#[derive(Default)]
struct Tally {
    /// The example's run, for its batch replies.
    run: String,
    /// The example's key, for batch custom_ids.
    key: String,
    attempts: AtomicU32,
    usage: Mutex<Usage>,
    last_status: Mutex<Option<u16>>,
    /// Batch replies, charged to the run and the metrics once the example is complete
    /// (an example parked again would otherwise be charged at each evaluation).
    deferred: Mutex<Vec<(String, TokenUsage, f64)>>,
}

impl Tally {
    /// A tally for one question of the same example, added back with [`Tally::absorb`].
    fn child(&self) -> Tally {
        Tally {
            run: self.run.clone(),
            key: self.key.clone(),
            ..Tally::default()
        }
    }

    /// Adds what one question's tally counted: its attempts, tokens, cost, last status and
    /// deferred batch charges.
    fn absorb(&self, child: Tally) {
        self.attempts.fetch_add(
            child.attempts.into_inner(),
            std::sync::atomic::Ordering::Relaxed,
        );
        if let (Ok(mut usage), Ok(theirs)) = (self.usage.lock(), child.usage.into_inner()) {
            usage.add(&theirs);
        }
        if let (Ok(mut status), Ok(theirs)) =
            (self.last_status.lock(), child.last_status.into_inner())
        {
            *status = theirs.or(*status);
        }
        if let (Ok(mut deferred), Ok(theirs)) = (self.deferred.lock(), child.deferred.into_inner())
        {
            deferred.extend(theirs);
        }
    }

    fn add(&self, usage: TokenUsage, cost: f64) {
        if let Ok(mut u) = self.usage.lock() {
            u.add(&Usage {
                input_tokens: usage.input,
                output_tokens: usage.output,
                cost_usd: cost,
            });
        }
    }
}

impl LiveJudge {
    /// Builds the clients of every provider the routing can reach, reading each API key from
    /// its environment variable; each provider's calls are under its rate limit from `rate_limits`.
    pub fn new(
        config: &JudgeConfig,
        cache: Arc<dyn JudgeCache>,
        rate_limits: &RateLimits,
    ) -> Result<Self, String> {
        config.validate()?;
        let mut used: Vec<&String> = config
            .judge_mapping
            .values()
            .chain(&config.default_judges)
            .chain(&config.panel)
            .collect();
        used.sort();
        used.dedup();
        let mut providers = BTreeMap::new();
        for name in used {
            let pc: &ProviderConfig = &config.providers[name];
            let key = std::env::var(&pc.api_key_env).map_err(|_| {
                format!("the API key of judge provider '{name}' is not set: export {} (providers.{name}.api_key_env)", pc.api_key_env)
            })?;
            let client = ProviderClient::new(pc, key)
                .map_err(|e| format!("judge provider '{name}': {e}"))?;
            let batch = BatchOptions::of(config, name);
            let runtime = ProviderRuntime {
                name: name.clone(),
                model: config.judge_models[name].clone(),
                client: Arc::new(client),
                rate_limit: rate_limits.provider(name, pc),
                max_tokens: pc.max_tokens,
                batch,
                batch_discount: pc.batch_discount,
            };
            providers.insert(name.clone(), runtime);
        }
        Ok(LiveJudge {
            config: config.clone(),
            providers,
            cache,
            accounting: Arc::new(Accounting::new(config.prices.clone(), config.budget_usd)),
            stop: OnceLock::new(),
            parking: None,
        })
    }

    /// Batch mode: questions of batch-mode providers park their example in `store` until the
    /// batch coordinator has their replies.
    pub fn with_parking(mut self, store: Arc<dyn BatchStore>) -> Self {
        self.parking = Some(store);
        self
    }

    /// The providers in batch mode, for a coordinator: name, client and options.
    pub fn batch_providers(&self) -> Vec<(Arc<ProviderClient>, BatchOptions)> {
        self.providers
            .values()
            .filter_map(|rt| Some((rt.client.clone(), rt.batch.clone()?)))
            .collect()
    }

    /// Where batch-mode questions park their example.
    pub fn parking(&self) -> Option<Arc<dyn BatchStore>> {
        self.parking.clone()
    }

    /// Why the run must stop (a rejected API key), once that happened.
    pub fn stopped(&self) -> Option<&str> {
        self.stop.get().map(String::as_str)
    }

    pub fn provider(&self, name: &str) -> Option<&ProviderRuntime> {
        self.providers.get(name)
    }
}
