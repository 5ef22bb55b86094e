//! Judge configuration: providers (where, with which key, how fast), cross-provider routing,
//! retry policy, prices and the run budget. API keys never appear here: only the *name* of the
//! environment variable that holds each one.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The wire protocol a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Api {
    /// OpenAI Chat Completions (`POST {base_url}/chat/completions`); any OpenAI-compatible
    /// server (vLLM, Ollama, LiteLLM, gateways) through `base_url`.
    Openai,
    /// Anthropic Messages (`POST {base_url}/v1/messages`, `anthropic-version` header).
    Anthropic,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    pub api: Api,
    /// OpenAI: up to and including `/v1` (`https://api.openai.com/v1`); Anthropic: the host
    /// (`https://api.anthropic.com`).
    pub base_url: String,
    /// The environment variable holding the API key; read at start, never logged.
    pub api_key_env: String,
    /// Requests per minute allowed; 0 = unlimited.
    #[serde(default)]
    pub rpm: u32,
    /// Tokens (input + output) per minute allowed; 0 = unlimited.
    #[serde(default)]
    pub tpm: u32,
    /// Requests in flight at once (the adaptive limit never exceeds it).
    #[serde(default = "default_in_flight")]
    pub max_in_flight: u32,
    /// Whole-request timeout, seconds.
    #[serde(default = "default_timeout")]
    pub timeout_s: f64,
    /// TCP + TLS connect timeout, seconds.
    #[serde(default = "default_connect_timeout")]
    pub connect_timeout_s: f64,
    /// The longest silence while reading a response, seconds (a non-streamed reply arrives
    /// only when generated, so this cannot be much shorter than `timeout_s`).
    #[serde(default = "default_timeout")]
    pub read_timeout_s: f64,
    /// Anthropic only: the `anthropic-version` header.
    #[serde(default = "default_anthropic_version")]
    pub anthropic_version: String,
    /// Output-token cap per judge call.
    #[serde(default = "default_max_tokens")]
    pub max_tokens: u32,
    /// This provider's judge calls go `live` or into provider `batch`es; unset = `judges.mode`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<CallMode>,
    /// The share of the live price a batch request costs (OpenAI and Anthropic: 0.5).
    #[serde(default = "default_batch_discount")]
    pub batch_discount: f64,
}

/// How judge calls reach a provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CallMode {
    /// One HTTP call per question, as the answer is needed.
    #[default]
    Live,
    /// Collected into the provider's Batch API: half the price, answers within 24 hours.
    Batch,
}

impl CallMode {
    pub fn name(self) -> &'static str {
        match self {
            CallMode::Live => "live",
            CallMode::Batch => "batch",
        }
    }
}

impl std::str::FromStr for CallMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "live" => Ok(CallMode::Live),
            "batch" => Ok(CallMode::Batch),
            _ => Err(format!("unknown judge mode '{s}': use live or batch")),
        }
    }
}

/// What a request that did not come back from a batch (errored, expired, cancelled) gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BatchFallback {
    /// Another batch, up to `judges.retry.max_attempts` in all.
    #[default]
    Retry,
    /// A live call, with the live retry policy.
    Live,
}

/// How judge requests are packed into provider batches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BatchConfig {
    /// Requests per batch; unset = the provider's limit (OpenAI 50,000; Anthropic 100,000).
    pub max_requests: Option<usize>,
    /// Bytes per batch input; unset = the provider's limit (OpenAI 200 MB; Anthropic 256 MB).
    pub max_bytes: Option<usize>,
    /// Submit a partial batch once its oldest request waited this long.
    pub max_wait_s: f64,
    /// The first wait between two status polls of a batch; it doubles up to `max_poll_s`.
    pub poll_s: f64,
    pub max_poll_s: f64,
    pub fallback: BatchFallback,
}

impl Default for BatchConfig {
    fn default() -> Self {
        BatchConfig {
            max_requests: None,
            max_bytes: None,
            max_wait_s: 60.0,
            poll_s: 5.0,
            max_poll_s: 300.0,
            fallback: BatchFallback::Retry,
        }
    }
}

impl BatchConfig {
    /// The most requests one batch of an `api` provider takes.
    pub fn requests_limit(&self, api: Api) -> usize {
        let provider = match api {
            Api::Openai => 50_000,
            Api::Anthropic => 100_000,
        };
        self.max_requests.map_or(provider, |n| n.min(provider))
    }

    /// The most bytes one batch of an `api` provider takes.
    pub fn bytes_limit(&self, api: Api) -> usize {
        let provider = match api {
            Api::Openai => 200_000_000,
            Api::Anthropic => 256_000_000,
        };
        self.max_bytes.map_or(provider, |n| n.min(provider))
    }
}

fn default_in_flight() -> u32 {
    64
}
fn default_timeout() -> f64 {
    60.0
}
fn default_connect_timeout() -> f64 {
    10.0
}
fn default_anthropic_version() -> String {
    "2023-06-01".into()
}
fn default_max_tokens() -> u32 {
    300
}
fn default_batch_discount() -> f64 {
    0.5
}

/// Exponential backoff with full jitter (docs/DESIGN.md §2.5); `Retry-After` wins when longer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetryConfig {
    /// Attempts per call, the first included.
    pub max_attempts: u32,
    pub base_delay_ms: u64,
    pub max_delay_ms: u64,
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig {
            max_attempts: 6,
            base_delay_ms: 500,
            max_delay_ms: 60_000,
        }
    }
}

/// USD per million tokens for one model.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JudgeConfig {
    pub providers: BTreeMap<String, ProviderConfig>,
    /// Response provider → judge provider (OpenAI answers judged by Anthropic, and the reverse).
    pub judge_mapping: BTreeMap<String, String>,
    /// Judge provider → judge model.
    pub judge_models: BTreeMap<String, String>,
    /// Judge providers for examples that name no model (rag-layers, log-analysis).
    pub default_judges: Vec<String>,
    /// Ask every one of these providers on every dimension (an ensemble with an agreement
    /// statistic) instead of the single cross-provider judge. Empty = cross-provider routing.
    pub panel: Vec<String>,
    pub retry: RetryConfig,
    /// Model → price; a model without a price costs 0 and is reported as unpriced.
    pub prices: BTreeMap<String, Price>,
    /// Stop judge calls once this much is spent (USD); remaining examples fail with
    /// `budget exhausted`. None = no budget.
    pub budget_usd: Option<f64>,
    /// Answer a repeated prompt to the same judge model from the cache.
    pub cache: bool,
    /// How judge calls reach the providers (`live` or `batch`); a provider's own `mode` wins.
    pub mode: CallMode,
    /// Packing, polling and fallback of batch mode.
    pub batch: BatchConfig,
}

impl Default for JudgeConfig {
    fn default() -> Self {
        let provider = |api, base_url: &str, key: &str| ProviderConfig {
            api,
            base_url: base_url.into(),
            api_key_env: key.into(),
            rpm: 500,
            tpm: 200_000,
            max_in_flight: default_in_flight(),
            timeout_s: default_timeout(),
            connect_timeout_s: default_connect_timeout(),
            read_timeout_s: default_timeout(),
            anthropic_version: default_anthropic_version(),
            max_tokens: default_max_tokens(),
            mode: None,
            batch_discount: default_batch_discount(),
        };
        let map = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
                .collect()
        };
        let price = |i, o| Price {
            input_per_mtok: i,
            output_per_mtok: o,
        };
        JudgeConfig {
            providers: [
                (
                    "openai".to_owned(),
                    provider(Api::Openai, "https://api.openai.com/v1", "OPENAI_API_KEY"),
                ),
                (
                    "anthropic".to_owned(),
                    provider(
                        Api::Anthropic,
                        "https://api.anthropic.com",
                        "ANTHROPIC_API_KEY",
                    ),
                ),
            ]
            .into(),
            judge_mapping: map(&[("openai", "anthropic"), ("anthropic", "openai")]),
            judge_models: map(&[
                ("openai", "gpt-4o-mini"),
                ("anthropic", "claude-sonnet-4-20250514"),
            ]),
            default_judges: vec!["openai".into()],
            panel: Vec::new(),
            retry: RetryConfig::default(),
            prices: [
                ("gpt-4o-mini".to_owned(), price(0.15, 0.60)),
                ("gpt-4o".to_owned(), price(2.50, 10.0)),
                ("claude-sonnet-4-20250514".to_owned(), price(3.0, 15.0)),
                ("claude-3-5-haiku-20241022".to_owned(), price(0.80, 4.0)),
            ]
            .into(),
            budget_usd: None,
            cache: true,
            mode: CallMode::Live,
            batch: BatchConfig::default(),
        }
    }
}

impl JudgeConfig {
    /// Checks that every route ends at a configured provider with a model, so a mapping gap is
    /// a clear error at start rather than a failure per example.
    pub fn validate(&self) -> Result<(), String> {
        let known = |p: &str| self.providers.contains_key(p);
        for (from, to) in &self.judge_mapping {
            if !known(to) {
                return Err(format!(
                    "judges.judge_mapping.{from}: judge provider '{to}' is not in providers"
                ));
            }
        }
        let routed: Vec<&String> = self
            .judge_mapping
            .values()
            .chain(&self.default_judges)
            .chain(&self.panel)
            .collect();
        for p in routed {
            if !known(p) {
                return Err(format!("judge provider '{p}' is not in providers"));
            }
            if !self.judge_models.contains_key(p) {
                return Err(format!(
                    "judges.judge_models has no model for judge provider '{p}'"
                ));
            }
        }
        for (name, p) in &self.providers {
            if p.timeout_s <= 0.0 || p.connect_timeout_s <= 0.0 || p.read_timeout_s <= 0.0 {
                return Err(format!("providers.{name}: timeouts must be positive"));
            }
            if p.max_in_flight == 0 {
                return Err(format!("providers.{name}.max_in_flight must be at least 1"));
            }
            if !(p.batch_discount.is_finite() && (0.0..=1.0).contains(&p.batch_discount)) {
                return Err(format!(
                    "providers.{name}.batch_discount must be in [0, 1], not {}",
                    p.batch_discount
                ));
            }
        }
        let b = &self.batch;
        for (key, value) in [
            ("max_wait_s", b.max_wait_s),
            ("poll_s", b.poll_s),
            ("max_poll_s", b.max_poll_s),
        ] {
            if !(value.is_finite() && value > 0.0) {
                return Err(format!(
                    "judges.batch.{key} must be a positive number of seconds, not {value}"
                ));
            }
        }
        if b.max_requests == Some(0) || b.max_bytes == Some(0) {
            return Err("judges.batch.max_requests and max_bytes must be at least 1".into());
        }
        if self.retry.max_attempts == 0 {
            return Err("judges.retry.max_attempts must be at least 1".into());
        }
        Ok(())
    }

    /// How calls to provider `name` go: its own `mode`, else `judges.mode`.
    pub fn mode_of(&self, name: &str) -> CallMode {
        self.providers
            .get(name)
            .and_then(|p| p.mode)
            .unwrap_or(self.mode)
    }

    /// Sends every provider's calls `mode`'s way (`--judge-mode`).
    pub fn set_mode(&mut self, mode: CallMode) {
        self.mode = mode;
        for provider in self.providers.values_mut() {
            provider.mode = None;
        }
    }

    /// Whether any provider takes batches.
    pub fn batches(&self) -> bool {
        self.providers
            .keys()
            .any(|name| self.mode_of(name) == CallMode::Batch)
    }

    /// The judge providers for an example whose response came from `response_provider`.
    pub fn judges_for(&self, response_provider: Option<&str>) -> Result<Vec<&str>, String> {
        if !self.panel.is_empty() {
            return Ok(self.panel.iter().map(String::as_str).collect());
        }
        match response_provider {
            None => Ok(self.default_judges.iter().map(String::as_str).collect()),
            Some(p) => self
                .judge_mapping
                .get(p)
                .map(|j| vec![j.as_str()])
                .ok_or_else(|| {
                    format!("judges.judge_mapping has no judge for response provider '{p}'")
                }),
        }
    }
}
