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

/// Exponential backoff with full jitter (DESIGN §2.5); `Retry-After` wins when longer.
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
                    "judges.judge_mapping.{from}: judge provider '{to}' is not in judges.providers"
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
                return Err(format!("judge provider '{p}' is not in judges.providers"));
            }
            if !self.judge_models.contains_key(p) {
                return Err(format!(
                    "judges.judge_models has no model for judge provider '{p}'"
                ));
            }
        }
        for (name, p) in &self.providers {
            if p.timeout_s <= 0.0 || p.connect_timeout_s <= 0.0 || p.read_timeout_s <= 0.0 {
                return Err(format!(
                    "judges.providers.{name}: timeouts must be positive"
                ));
            }
            if p.max_in_flight == 0 {
                return Err(format!(
                    "judges.providers.{name}.max_in_flight must be at least 1"
                ));
            }
        }
        if self.retry.max_attempts == 0 {
            return Err("judges.retry.max_attempts must be at least 1".into());
        }
        Ok(())
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
