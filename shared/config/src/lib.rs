//! # evalfleet-config
//! Owns: the configuration file and its typed settings. Depends only on `evalfleet-model` (for
//! the provider routing rules); must not depend on suites, contracts or any role.
//!
//! `evalfleet.yaml`: typed configuration, layered as defaults ← file ← `EVALFLEET_*` environment
//! (nested keys joined with `__`, e.g. `EVALFLEET_CONCURRENCY=8`). A bad key or value fails at
//! start with the key and the reason, never halfway through a run.

use std::path::{Path, PathBuf};

use figment::providers::{Env, Serialized};
use figment::Figment;
use serde::{Deserialize, Serialize};

use evalfleet_model::routing::ProviderRules;

mod judges;

pub use judges::{
    Api, BatchConfig, BatchFallback, CallMode, JudgeConfig, Price, ProviderConfig, RetryConfig,
};

/// The file `run` and `validate` read when no `--config` is given and it exists.
pub const DEFAULT_PATH: &str = "config/evalfleet.yaml";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Where `--suite NAME` looks for `NAME.yaml` before the built-in suites.
    pub suites_dir: PathBuf,
    /// Model-name prefix → provider rules (first match wins; case-insensitive).
    pub model_prefixes: ProviderRules,
    /// Examples evaluated at once by `run`; 0 = one per CPU core.
    pub concurrency: usize,
    /// Where `run` writes `<run_id>/` report directories when `--out` is not given.
    pub reports_dir: PathBuf,
    /// Live judges: providers, routing, retry, prices, budget, cache.
    pub judges: JudgeConfig,
    /// The fleet: broker, store, worker settings.
    pub fleet: FleetConfig,
}

/// Where the fleet's RabbitMQ and Redis are and how its roles behave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FleetConfig {
    /// `amqp://` or `amqps://` (TLS).
    pub amqp_url: String,
    /// `redis://` or `rediss://` (TLS).
    pub redis_url: String,
    /// Exchange and queue names start with it (`evalfleet`, `evalfleet.examples`, ...), and
    /// Redis keys with `<prefix>:`.
    pub prefix: String,
    /// Redeliveries before a message is dead-lettered (the quorum queue's `x-delivery-limit`).
    pub delivery_limit: u32,
    /// Finished runs' keys expire after this many hours.
    pub retention_hours: u64,
    /// Examples a worker processes at once.
    pub worker_concurrency: usize,
    /// Seconds a stopping worker gives in-flight examples.
    pub shutdown_deadline_s: u64,
    /// Enforce each judge provider's rpm/tpm across all workers (GCRA in Redis), and let one
    /// 429 slow the whole fleet.
    pub fleet_rate_limits: bool,
    /// Seconds a judge verdict stays in the Redis judge cache.
    pub judge_cache_ttl_s: u64,
    /// The RabbitMQ management API (`http(s)://user:password@host:15672/`, the path naming the
    /// vhost as KEDA's trigger does: `/` or empty = the default vhost). When set, the aggregator
    /// reads ready *and* unacked message counts from it; otherwise it reads ready counts with
    /// an AMQP passive declare. Empty = not set.
    pub management_url: Option<String>,
    /// Seconds a worker's lease as a provider's batch coordinator lasts unrenewed (renewed
    /// every third of it): after a coordinator dies, another worker takes over within this.
    pub batch_lease_s: f64,
}

impl Default for FleetConfig {
    fn default() -> Self {
        FleetConfig {
            amqp_url: "amqp://guest:guest@127.0.0.1:5672/%2f".into(),
            redis_url: "redis://127.0.0.1:6379/".into(),
            prefix: "evalfleet".into(),
            delivery_limit: 5,
            retention_hours: 168,
            worker_concurrency: 64,
            shutdown_deadline_s: 30,
            fleet_rate_limits: true,
            judge_cache_ttl_s: 7 * 24 * 3600,
            management_url: None,
            batch_lease_s: 10.0,
        }
    }
}

impl FleetConfig {
    /// `management_url` when it is set and not empty (an empty override switches it off).
    pub fn management_url(&self) -> Option<&str> {
        self.management_url
            .as_deref()
            .map(str::trim)
            .filter(|u| !u.is_empty())
    }

    fn validate(&self) -> Result<(), String> {
        if let Some(url) = self.management_url() {
            let scheme = url.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
            if !matches!(scheme.as_deref(), Some("http" | "https")) {
                return Err(format!(
                    "fleet.management_url: must be an http:// or https:// URL, got '{}'",
                    url.split_once('@').map_or(url, |(_, host)| host)
                ));
            }
        }
        Ok(())
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            suites_dir: PathBuf::from("config/suites"),
            model_prefixes: ProviderRules::default(),
            concurrency: 0,
            reports_dir: PathBuf::from("reports"),
            judges: JudgeConfig::default(),
            fleet: FleetConfig::default(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file '{path}': {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config file '{path}' is not valid YAML: {message}")]
    Yaml { path: PathBuf, message: String },
    #[error("bad configuration: {0}")]
    Invalid(String),
}

const KEYS: [&str; 6] = [
    "suites_dir",
    "model_prefixes",
    "concurrency",
    "reports_dir",
    "judges",
    "fleet",
];

impl Config {
    /// Loads `path`, or [`DEFAULT_PATH`] when it exists, then applies the environment.
    pub fn load(path: Option<&Path>) -> Result<Config, ConfigError> {
        let default = Path::new(DEFAULT_PATH);
        let path = path.or_else(|| default.is_file().then_some(default));
        let file: serde_json::Value = match path {
            None => serde_json::Value::Object(Default::default()),
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
                    path: path.to_owned(),
                    source,
                })?;
                let yaml: Option<serde_json::Value> =
                    serde_norway::from_str(&text).map_err(|e| ConfigError::Yaml {
                        path: path.to_owned(),
                        message: e.to_string(),
                    })?;
                yaml.unwrap_or(serde_json::Value::Object(Default::default()))
            }
        };
        // Only variables whose first segment is a config key are config (EVALFLEET_CONFIG,
        // EVALFLEET_AMQP_URL, ... are flags). The filter runs on the raw name: after `split`
        // a nested key like `judges.providers.openai.base_url` would no longer match "judges".
        let env = Env::prefixed("EVALFLEET_")
            .filter(|k| {
                let head = k.as_str().split("__").next().unwrap_or("");
                KEYS.iter().any(|key| head.eq_ignore_ascii_case(key))
            })
            .split("__");
        Self::from_layers(file, env)
    }

    fn from_layers(file: serde_json::Value, env: Env) -> Result<Config, ConfigError> {
        let config: Config = Figment::from(Serialized::defaults(Config::default()))
            .merge(Serialized::defaults(file))
            .merge(env)
            .extract()
            .map_err(|e| ConfigError::Invalid(e.to_string()))?;
        config.judges.validate().map_err(ConfigError::Invalid)?;
        config.fleet.validate().map_err(ConfigError::Invalid)?;
        Ok(config)
    }
}

#[cfg(test)]
// figment's Jail (which serialises environment changes between tests) fixes its closure's error
// type, figment::Error, which is large.
#[allow(clippy::result_large_err)]
mod tests {
    use super::*;

    #[test]
    fn defaults_file_and_env_layer_in_order() {
        figment::Jail::expect_with(|jail| {
            jail.create_file("c.yaml", "concurrency: 4\nsuites_dir: mine\nmodel_prefixes: [{prefix: 'llama-', provider: openai}]\n")?;
            let c = Config::load(Some(Path::new("c.yaml"))).unwrap();
            assert_eq!(c.concurrency, 4);
            assert_eq!(c.suites_dir, PathBuf::from("mine"));
            assert_eq!(c.model_prefixes.provider_of("Llama-3"), Some("openai"));
            jail.set_env("EVALFLEET_CONCURRENCY", "9");
            jail.set_env("EVALFLEET_UNRELATED", "ignored");
            assert_eq!(
                Config::load(Some(Path::new("c.yaml"))).unwrap().concurrency,
                9
            );
            Ok(())
        });
    }

    #[test]
    fn bad_keys_and_values_are_named() {
        figment::Jail::expect_with(|jail| {
            jail.create_file("bad.yaml", "concurency: 4\n")?;
            let err = Config::load(Some(Path::new("bad.yaml")))
                .unwrap_err()
                .to_string();
            assert!(err.contains("concurency"), "{err}");
            jail.create_file("bad2.yaml", "concurrency: lots\n")?;
            let err = Config::load(Some(Path::new("bad2.yaml")))
                .unwrap_err()
                .to_string();
            assert!(err.contains("concurrency"), "{err}");
            let err = Config::load(Some(Path::new("missing.yaml")))
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("cannot read config file 'missing.yaml'"),
                "{err}"
            );
            Ok(())
        });
    }

    #[test]
    fn management_url_is_set_by_file_or_nested_env_and_checked() {
        figment::Jail::expect_with(|jail| {
            jail.create_file("c.yaml", "fleet: {prefix: p}\n")?;
            let path = Path::new("c.yaml");
            assert_eq!(
                Config::load(Some(path)).unwrap().fleet.management_url(),
                None
            );
            jail.set_env(
                "EVALFLEET_FLEET__MANAGEMENT_URL",
                "http://guest:guest@127.0.0.1:15672/",
            );
            let c = Config::load(Some(path)).unwrap();
            assert_eq!(
                c.fleet.management_url(),
                Some("http://guest:guest@127.0.0.1:15672/")
            );
            assert_eq!(c.fleet.prefix, "p", "the rest of the section is kept");
            jail.set_env("EVALFLEET_FLEET__MANAGEMENT_URL", "");
            assert_eq!(
                Config::load(Some(path)).unwrap().fleet.management_url(),
                None
            );
            jail.set_env(
                "EVALFLEET_FLEET__MANAGEMENT_URL",
                "amqp://guest:secret@127.0.0.1:5672/",
            );
            let err = Config::load(Some(path)).unwrap_err().to_string();
            assert!(err.contains("fleet.management_url"), "{err}");
            assert!(!err.contains("secret"), "no password in the message: {err}");
            Ok(())
        });
    }

    #[test]
    fn shipped_config_file_loads() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/evalfleet.yaml");
        // In a jail: the other tests' jails set EVALFLEET_* variables, which would leak in.
        figment::Jail::expect_with(|_| {
            Config::load(Some(&path)).map_err(|e| e.to_string())?;
            Ok(())
        });
    }
}
