//! Every knob of the fake provider, in one struct the `evalfleet` CLI flattens into its
//! `fake-provider` subcommand, plus the partial update `POST /admin/config` applies at runtime
//! (so a test can make the provider answer 429 to everything for a while, then heal it).

use std::net::{IpAddr, Ipv4Addr};

use serde::{Deserialize, Serialize};

use crate::error::ConfigError;

/// How the per-provider requests/minute and tokens/minute limits are enforced.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RateLimitMode {
    /// A token bucket (GCRA) holding one minute's worth, refilled continuously: the algorithm
    /// OpenAI and Anthropic document. A client limiter such as `governor` matches it exactly.
    #[default]
    #[serde(alias = "token-bucket")]
    TokenBucket,
    /// A strict sliding 60 s window: no 60 s interval ever holds more than the limit.
    #[serde(alias = "sliding-window")]
    SlidingWindow,
}

/// All options of `evalfleet fake-provider`.
#[derive(clap::Args, Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FakeProviderArgs {
    /// Address to bind. Keep the default, 127.0.0.1, everywhere but inside a container on a
    /// private network (e.g. `--host 0.0.0.0` in docker-compose): the admin endpoints have no
    /// auth, so the server must never face a shared network.
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    pub host: IpAddr,
    /// Port to bind (0 = an ephemeral port).
    #[arg(long, default_value_t = 8089)]
    pub port: u16,
    /// API key both APIs require when set (401 otherwise). Never echoed back in full.
    #[arg(long, env = "EVALFLEET_FAKE_PROVIDER_API_KEY", hide_env_values = true)]
    #[serde(skip_serializing)]
    pub api_key: Option<String>,
    /// Base latency added to every admitted request, in milliseconds.
    #[arg(long, default_value_t = 0)]
    pub latency_ms: u64,
    /// Extra latency drawn uniformly from [0, jitter] per request, in milliseconds.
    #[arg(long, default_value_t = 0)]
    pub jitter_ms: u64,
    /// OpenAI requests per minute (0 = unlimited).
    #[arg(long, default_value_t = 0)]
    pub rpm_openai: u32,
    /// OpenAI tokens per minute (0 = unlimited).
    #[arg(long, default_value_t = 0)]
    pub tpm_openai: u32,
    /// Anthropic requests per minute (0 = unlimited).
    #[arg(long, default_value_t = 0)]
    pub rpm_anthropic: u32,
    /// Anthropic tokens per minute (0 = unlimited).
    #[arg(long, default_value_t = 0)]
    pub tpm_anthropic: u32,
    /// How the limits are enforced.
    #[arg(long, value_enum, default_value_t = RateLimitMode::TokenBucket)]
    pub rate_limit_mode: RateLimitMode,
    /// Share of requests answered with an injected, retryable 429 rate-limit error.
    #[arg(long, default_value_t = 0.0, value_parser = parse_rate)]
    pub fault_429: f64,
    /// Share answered with a non-retryable quota error (OpenAI 429 `insufficient_quota`;
    /// Anthropic 400 "credit balance is too low").
    #[arg(long, default_value_t = 0.0, value_parser = parse_rate)]
    pub fault_quota: f64,
    /// Share answered with a 500 server error.
    #[arg(long, default_value_t = 0.0, value_parser = parse_rate)]
    pub fault_500: f64,
    /// Share answered "overloaded" (Anthropic 529 `overloaded_error`; OpenAI 503).
    #[arg(long, default_value_t = 0.0, value_parser = parse_rate)]
    pub fault_529: f64,
    /// Share that hang for `--hang-ms` before answering normally.
    #[arg(long, default_value_t = 0.0, value_parser = parse_rate)]
    pub fault_hang: f64,
    /// Share answered 200 with a truncated, invalid JSON body.
    #[arg(long, default_value_t = 0.0, value_parser = parse_rate)]
    pub fault_malformed: f64,
    /// Share whose (otherwise valid) judge reply carries score = max + 3.
    #[arg(long, default_value_t = 0.0, value_parser = parse_rate)]
    pub fault_out_of_range: f64,
    /// Share whose (otherwise valid) API reply has prose content with no JSON in it.
    #[arg(long, default_value_t = 0.0, value_parser = parse_rate)]
    pub fault_non_json: f64,
    /// How long a hanging request sleeps before answering, in milliseconds.
    #[arg(long, default_value_t = 120_000)]
    pub hang_ms: u64,
    /// `retry-after` of injected 429s, in milliseconds (sent as whole seconds, rounded up;
    /// OpenAI replies also carry the exact `retry-after-ms`).
    #[arg(long, default_value_t = 1_000)]
    pub fault_retry_after_ms: u64,
    /// Share of replies wrapped in prose and/or a ```json fence. OpenAI requests with
    /// `response_format` `json_object`/`json_schema` always get bare JSON.
    #[arg(long, default_value_t = 0.2, value_parser = parse_rate)]
    pub wrap_rate: f64,
    /// Share of pairwise questions ("is answer A or B better?") answered `A` whatever the
    /// answers: a judge that follows the position (its verdict flips when the answers swap).
    #[arg(long, default_value_t = 0.0, value_parser = parse_rate)]
    pub position_bias: f64,
    /// Seed of the score hash and of the per-request fault/latency/wrapping draws.
    #[arg(long, default_value_t = 7)]
    pub seed: u64,
    /// How long a provider batch takes from creation until its results are ready, in
    /// milliseconds (the real APIs take minutes to 24 hours). A tenth of it is spent
    /// `validating`, a tenth `finalizing` (OpenAI) or cancelling.
    #[arg(long, default_value_t = 1_000)]
    pub batch_processing_ms: u64,
    /// Share of batch requests that end in a per-request server error (OpenAI: a line of the
    /// error file with status 500; Anthropic: an `errored` result).
    #[arg(long, default_value_t = 0.0, value_parser = parse_rate)]
    pub batch_error_rate: f64,
    /// Share of batch requests the provider does not get to within the completion window
    /// (OpenAI: the batch ends `expired`, those lines carry `batch_expired`; Anthropic: an
    /// `expired` result).
    #[arg(long, default_value_t = 0.0, value_parser = parse_rate)]
    pub batch_expiry_rate: f64,
    /// How long a batch create holds its reply after the batch exists, in milliseconds: a
    /// client whose timeout is shorter sees the network lose the response of a create that
    /// happened, and must not create the batch again.
    #[arg(long, default_value_t = 0)]
    pub batch_create_delay_ms: u64,
    /// The most requests one OpenAI batch input file may hold (the real limit: 50,000).
    #[arg(long, default_value_t = 50_000)]
    pub batch_max_requests_openai: usize,
    /// The largest OpenAI batch input file, in bytes (the real limit: 200 MB).
    #[arg(long, default_value_t = 200_000_000)]
    pub batch_max_bytes_openai: usize,
    /// The most requests one Anthropic Message Batch may hold (the real limit: 100,000).
    #[arg(long, default_value_t = 100_000)]
    pub batch_max_requests_anthropic: usize,
    /// The largest Anthropic Message Batch create body, in bytes (the real limit: 256 MB).
    #[arg(long, default_value_t = 256_000_000)]
    pub batch_max_bytes_anthropic: usize,
}

impl Default for FakeProviderArgs {
    fn default() -> Self {
        Self {
            host: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: 8089,
            api_key: None,
            latency_ms: 0,
            jitter_ms: 0,
            rpm_openai: 0,
            tpm_openai: 0,
            rpm_anthropic: 0,
            tpm_anthropic: 0,
            rate_limit_mode: RateLimitMode::TokenBucket,
            fault_429: 0.0,
            fault_quota: 0.0,
            fault_500: 0.0,
            fault_529: 0.0,
            fault_hang: 0.0,
            fault_malformed: 0.0,
            fault_out_of_range: 0.0,
            fault_non_json: 0.0,
            hang_ms: 120_000,
            fault_retry_after_ms: 1_000,
            wrap_rate: 0.2,
            position_bias: 0.0,
            seed: 7,
            batch_processing_ms: 1_000,
            batch_error_rate: 0.0,
            batch_expiry_rate: 0.0,
            batch_create_delay_ms: 0,
            batch_max_requests_openai: 50_000,
            batch_max_bytes_openai: 200_000_000,
            batch_max_requests_anthropic: 100_000,
            batch_max_bytes_anthropic: 256_000_000,
        }
    }
}

impl FakeProviderArgs {
    /// Checks what clap's parsers cannot see when the struct comes from serde.
    pub fn validate(&self) -> Result<(), ConfigError> {
        for (name, value) in self.rates() {
            check_rate(name, value)?;
        }
        Ok(())
    }

    fn rates(&self) -> [(&'static str, f64); 12] {
        [
            ("fault_429", self.fault_429),
            ("fault_quota", self.fault_quota),
            ("fault_500", self.fault_500),
            ("fault_529", self.fault_529),
            ("fault_hang", self.fault_hang),
            ("fault_malformed", self.fault_malformed),
            ("fault_out_of_range", self.fault_out_of_range),
            ("fault_non_json", self.fault_non_json),
            ("wrap_rate", self.wrap_rate),
            ("position_bias", self.position_bias),
            ("batch_error_rate", self.batch_error_rate),
            ("batch_expiry_rate", self.batch_expiry_rate),
        ]
    }
}

/// The body of `POST /admin/config`: every field optional, unknown fields rejected so a typo
/// cannot silently leave the provider in its old behaviour. Host, port and API key are fixed.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigPatch {
    pub latency_ms: Option<u64>,
    pub jitter_ms: Option<u64>,
    pub rpm_openai: Option<u32>,
    pub tpm_openai: Option<u32>,
    pub rpm_anthropic: Option<u32>,
    pub tpm_anthropic: Option<u32>,
    pub rate_limit_mode: Option<RateLimitMode>,
    pub fault_429: Option<f64>,
    pub fault_quota: Option<f64>,
    pub fault_500: Option<f64>,
    pub fault_529: Option<f64>,
    pub fault_hang: Option<f64>,
    pub fault_malformed: Option<f64>,
    pub fault_out_of_range: Option<f64>,
    pub fault_non_json: Option<f64>,
    pub hang_ms: Option<u64>,
    pub fault_retry_after_ms: Option<u64>,
    pub wrap_rate: Option<f64>,
    pub position_bias: Option<f64>,
    /// A new seed also restarts the per-request random stream.
    pub seed: Option<u64>,
    pub batch_processing_ms: Option<u64>,
    pub batch_error_rate: Option<f64>,
    pub batch_expiry_rate: Option<f64>,
    pub batch_create_delay_ms: Option<u64>,
    pub batch_max_requests_openai: Option<usize>,
    pub batch_max_bytes_openai: Option<usize>,
    pub batch_max_requests_anthropic: Option<usize>,
    pub batch_max_bytes_anthropic: Option<usize>,
}

impl ConfigPatch {
    /// The options after this patch, validated; `args` itself is left alone on error.
    pub fn apply_to(&self, args: &FakeProviderArgs) -> Result<FakeProviderArgs, ConfigError> {
        let mut next = args.clone();
        macro_rules! set {
            ($($field:ident),*) => { $( if let Some(v) = self.$field { next.$field = v; } )* };
        }
        set!(
            latency_ms,
            jitter_ms,
            rpm_openai,
            tpm_openai,
            rpm_anthropic,
            tpm_anthropic,
            rate_limit_mode,
            fault_429,
            fault_quota,
            fault_500,
            fault_529,
            fault_hang,
            fault_malformed,
            fault_out_of_range,
            fault_non_json,
            hang_ms,
            fault_retry_after_ms,
            wrap_rate,
            position_bias,
            seed,
            batch_processing_ms,
            batch_error_rate,
            batch_expiry_rate,
            batch_create_delay_ms,
            batch_max_requests_openai,
            batch_max_bytes_openai,
            batch_max_requests_anthropic,
            batch_max_bytes_anthropic
        );
        next.validate()?;
        Ok(next)
    }
}

fn check_rate(name: &'static str, value: f64) -> Result<(), ConfigError> {
    if value.is_finite() && (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        Err(ConfigError::RateOutOfRange { name, value })
    }
}

fn parse_rate(text: &str) -> Result<f64, String> {
    let value: f64 = text
        .parse()
        .map_err(|_| format!("'{text}' is not a number"))?;
    check_rate("rate", value)
        .map(|()| value)
        .map_err(|_| format!("{value} is not a rate in [0, 1]"))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: FakeProviderArgs,
    }

    #[test]
    fn binds_loopback_unless_told_otherwise() {
        let default = Cli::try_parse_from(["fake"]).unwrap().args;
        assert_eq!(default.host, IpAddr::V4(Ipv4Addr::LOCALHOST));
        assert_eq!(
            FakeProviderArgs {
                api_key: None,
                ..default
            },
            FakeProviderArgs::default(),
            "clap and Default agree"
        );
        let any = Cli::try_parse_from(["fake", "--host", "0.0.0.0"])
            .unwrap()
            .args;
        assert_eq!(any.host, IpAddr::V4(Ipv4Addr::UNSPECIFIED));
        let v6 = Cli::try_parse_from(["fake", "--host", "::"]).unwrap().args;
        assert!(v6.host.is_ipv6());
        assert!(Cli::try_parse_from(["fake", "--host", "fake-provider"]).is_err());
    }

    #[test]
    fn the_host_is_not_reconfigurable_at_runtime() {
        let err = serde_json::from_str::<ConfigPatch>(r#"{"host": "0.0.0.0"}"#).unwrap_err();
        assert!(err.to_string().contains("host"), "{err}");
    }
}
