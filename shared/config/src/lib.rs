//! # evalfleet-config
//! Owns: the configuration file and its typed settings. Depends only on `evalfleet-model` (for
//! the provider routing rules); must not depend on suites, contracts or any role.
//!
//! `evalfleet.yaml`: typed configuration, layered as defaults ← file ← `EVALFLEET_*` environment
//! (nested keys joined with `__`, e.g. `EVALFLEET_CONCURRENCY=8`). A bad key or value fails at
//! start with the key and the reason, never halfway through a run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use figment::providers::{Env, Serialized};
use figment::Figment;
use serde::{Deserialize, Serialize};

use evalfleet_model::routing::ProviderRules;

mod judges;
mod target_policy;
mod targets;

pub use judges::{
    Api, BatchConfig, BatchFallback, CallMode, JudgeConfig, Price, ProviderConfig, RetryConfig,
};
pub use target_policy::{HostPolicy, TargetPolicy};
pub use targets::{ChatTarget, HttpTarget, Target, TargetError};

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
    /// Where `--target NAME` looks for `NAME.yaml`.
    pub targets_dir: PathBuf,
    /// The LLM providers, shared by the judges and the chat targets: one API key, one rate
    /// limit. (Read from `judges.providers` too, their old place, with a notice.)
    pub providers: BTreeMap<String, ProviderConfig>,
    /// Live judges: providers, routing, retry, prices, budget, cache.
    pub judges: JudgeConfig,
    /// The fleet: broker, store, worker settings.
    pub fleet: FleetConfig,
    /// How reports are written.
    pub reports: ReportsConfig,
    /// A dataset record (a JSONL line, a JSON array element, a CSV record) longer than this
    /// many bytes is skipped with its position and size, never held whole in memory.
    pub max_record_bytes: usize,
    /// What suite and target templates may cost when they render on a worker.
    pub templates: TemplateLimits,
    /// What the configuration's reader has to say once (a key read from its old place).
    #[serde(skip)]
    pub notices: Vec<String>,
}

/// How reports are written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReportsConfig {
    /// Above this many results, `report.json` carries the aggregates and
    /// `"items_file": "items.parquet"` instead of its item lists (the items are all in
    /// `items.parquet`): a report every reader can open at any run size.
    pub inline_items: u64,
}

impl Default for ReportsConfig {
    fn default() -> Self {
        ReportsConfig {
            inline_items: 100_000,
        }
    }
}

/// The default [`Config::max_record_bytes`]: 16 MiB.
pub const DEFAULT_MAX_RECORD_BYTES: usize = 16 * 1024 * 1024;

/// What one template rendering may cost (`templates:`): a suite's judge prompts and a target's
/// requests are written by whoever submits a run, and render on shared workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TemplateLimits {
    /// Template instructions one rendering may execute (minijinja's fuel).
    pub fuel: u64,
    /// Bytes one rendering may write.
    pub max_output_bytes: usize,
}

impl Default for TemplateLimits {
    fn default() -> Self {
        TemplateLimits {
            fuel: 100_000,
            max_output_bytes: 1024 * 1024,
        }
    }
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
    /// `submit` keeps at most this many of a run's messages waiting in the work queue, and
    /// waits for the workers when it is full (0: no window).
    pub max_queued: u64,
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
    /// What a run's target may read and call on a worker.
    pub targets: TargetPolicy,
}

impl Default for FleetConfig {
    fn default() -> Self {
        FleetConfig {
            amqp_url: "amqp://guest:guest@127.0.0.1:5672/%2f".into(),
            redis_url: "redis://127.0.0.1:6379/".into(),
            prefix: "evalfleet".into(),
            delivery_limit: 5,
            retention_hours: 168,
            max_queued: 200_000,
            worker_concurrency: 64,
            shutdown_deadline_s: 30,
            fleet_rate_limits: true,
            judge_cache_ttl_s: 7 * 24 * 3600,
            management_url: None,
            batch_lease_s: 10.0,
            targets: TargetPolicy::default(),
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
        self.targets.hosts()?;
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
            targets_dir: PathBuf::from("config/targets"),
            providers: JudgeConfig::default().providers,
            judges: JudgeConfig::default(),
            fleet: FleetConfig::default(),
            reports: ReportsConfig::default(),
            max_record_bytes: DEFAULT_MAX_RECORD_BYTES,
            templates: TemplateLimits::default(),
            notices: Vec::new(),
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

const KEYS: [&str; 11] = [
    "suites_dir",
    "model_prefixes",
    "concurrency",
    "reports_dir",
    "targets_dir",
    "providers",
    "judges",
    "fleet",
    "reports",
    "max_record_bytes",
    "templates",
];

/// The notice for providers configured in their old place.
const OLD_PROVIDERS: &str = "judges.providers is now the top-level `providers:` (the judges and \
    the targets share them); it is still read from judges.providers, but move it";

impl Config {
    /// Loads `path`, or [`DEFAULT_PATH`] when it exists, then applies the environment.
    pub fn load(path: Option<&Path>) -> Result<Config, ConfigError> {
        let default = Path::new(DEFAULT_PATH);
        let path = path.or_else(|| default.is_file().then_some(default));
        let mut file: serde_json::Value = match path {
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
        let mut notices = Vec::new();
        if move_old_providers(&mut file) {
            notices.push(OLD_PROVIDERS.to_owned());
        }
        // Only variables whose first segment is a config key are config (EVALFLEET_CONFIG,
        // EVALFLEET_AMQP_URL, ... are flags). The filter runs on the raw name: after `split`
        // a nested key like `judges.providers.openai.base_url` would no longer match "judges".
        let old_env = std::env::vars().any(|(k, _)| {
            k.to_ascii_uppercase()
                .starts_with("EVALFLEET_JUDGES__PROVIDERS__")
        });
        if old_env && notices.is_empty() {
            notices.push(OLD_PROVIDERS.to_owned());
        }
        let env = Env::prefixed("EVALFLEET_")
            .filter(|k| {
                let head = k.as_str().split("__").next().unwrap_or("");
                KEYS.iter().any(|key| head.eq_ignore_ascii_case(key))
            })
            .split("__")
            .map(|k| {
                let key = k.as_str().to_ascii_lowercase();
                match key.strip_prefix("judges.providers.") {
                    Some(rest) => format!("providers.{rest}").into(),
                    None => key.into(),
                }
            });
        let mut config = Self::from_layers(file, env)?;
        config.notices = notices;
        Ok(config)
    }

    fn from_layers(file: serde_json::Value, env: Env) -> Result<Config, ConfigError> {
        let mut config: Config = Figment::from(Serialized::defaults(Config::default()))
            .merge(Serialized::defaults(file))
            .merge(env)
            .extract()
            .map_err(|e| ConfigError::Invalid(e.to_string()))?;
        // The judges read their providers from their own section: it travels in a run's spec.
        config.judges.providers = config.providers.clone();
        config.judges.validate().map_err(ConfigError::Invalid)?;
        config.fleet.validate().map_err(ConfigError::Invalid)?;
        config.validate_limits().map_err(ConfigError::Invalid)?;
        Ok(config)
    }

    /// The bounds must leave something to work with: 0 would skip every record or fail every
    /// template.
    fn validate_limits(&self) -> Result<(), String> {
        let zero = [
            ("max_record_bytes", self.max_record_bytes == 0),
            ("templates.fuel", self.templates.fuel == 0),
            (
                "templates.max_output_bytes",
                self.templates.max_output_bytes == 0,
            ),
        ];
        match zero.iter().find(|(_, is_zero)| *is_zero) {
            Some((key, _)) => Err(format!("{key}: must be at least 1")),
            None => Ok(()),
        }
    }
}

/// Moves `judges.providers` of a configuration file to the top-level `providers` (whose own
/// entries win, key by key); true when there was something to move.
fn move_old_providers(file: &mut serde_json::Value) -> bool {
    let Some(old) = file
        .get_mut("judges")
        .and_then(|j| j.as_object_mut())
        .and_then(|j| j.remove("providers"))
    else {
        return false;
    };
    let Some(root) = file.as_object_mut() else {
        return false;
    };
    let mut merged = old;
    if let Some(new) = root.remove("providers") {
        merge(&mut merged, new);
    }
    root.insert("providers".into(), merged);
    true
}

/// `over` laid over `base`, objects key by key.
fn merge(base: &mut serde_json::Value, over: serde_json::Value) {
    match (base, over) {
        (serde_json::Value::Object(b), serde_json::Value::Object(o)) => {
            for (k, v) in o {
                match b.get_mut(&k) {
                    Some(slot) => merge(slot, v),
                    None => {
                        b.insert(k, v);
                    }
                }
            }
        }
        (slot, v) => *slot = v,
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
    fn providers_are_read_at_the_top_level_and_from_their_old_place() {
        figment::Jail::expect_with(|jail| {
            jail.create_file(
                "new.yaml",
                "providers: {openai: {base_url: 'http://127.0.0.1:1/v1'}}\n",
            )?;
            let c = Config::load(Some(Path::new("new.yaml"))).unwrap();
            assert_eq!(c.providers["openai"].base_url, "http://127.0.0.1:1/v1");
            assert_eq!(c.judges.providers, c.providers, "the judges use them");
            assert_eq!(
                c.providers["openai"].api_key_env, "OPENAI_API_KEY",
                "merged with the defaults"
            );
            assert!(c.notices.is_empty());

            jail.create_file(
                "old.yaml",
                "judges: {providers: {openai: {base_url: 'http://127.0.0.1:2/v1', rpm: 7}}}\n\
                 providers: {openai: {rpm: 9}}\n",
            )?;
            let c = Config::load(Some(Path::new("old.yaml"))).unwrap();
            assert_eq!(c.providers["openai"].base_url, "http://127.0.0.1:2/v1");
            assert_eq!(c.providers["openai"].rpm, 9, "the top level wins");
            assert_eq!(c.judges.providers["openai"].rpm, 9);
            assert_eq!(c.notices.len(), 1, "{:?}", c.notices);
            assert!(c.notices[0].contains("judges.providers"));

            jail.set_env(
                "EVALFLEET_JUDGES__PROVIDERS__ANTHROPIC__BASE_URL",
                "http://127.0.0.1:3",
            );
            let c = Config::load(Some(Path::new("new.yaml"))).unwrap();
            assert_eq!(
                c.judges.providers["anthropic"].base_url,
                "http://127.0.0.1:3"
            );
            assert_eq!(
                c.notices.len(),
                1,
                "the old variable is read, with a notice"
            );
            Ok(())
        });
    }

    #[test]
    fn record_and_template_limits_have_defaults_are_set_and_checked() {
        figment::Jail::expect_with(|jail| {
            let c = Config::load(None).unwrap();
            assert_eq!(c.max_record_bytes, 16 * 1024 * 1024);
            assert_eq!(c.templates, TemplateLimits::default());
            assert_eq!(c.templates.max_output_bytes, 1 << 20);
            for (file, key) in [
                (
                    "max_record_bytes: 0\n",
                    "max_record_bytes: must be at least 1",
                ),
                (
                    "templates: {fuel: 0}\n",
                    "templates.fuel: must be at least 1",
                ),
                (
                    "templates: {max_output_bytes: 0}\n",
                    "templates.max_output_bytes: must be at least 1",
                ),
                ("templates: {fule: 5}\n", "fule"),
                ("max_record_bytes: lots\n", "max_record_bytes"),
            ] {
                jail.create_file("bad.yaml", file)?;
                let err = Config::load(Some(Path::new("bad.yaml")))
                    .unwrap_err()
                    .to_string();
                assert!(err.contains(key), "{file}: {err}");
            }
            jail.create_file("c.yaml", "max_record_bytes: 1024\ntemplates: {fuel: 50}\n")?;
            let c = Config::load(Some(Path::new("c.yaml"))).unwrap();
            assert_eq!((c.max_record_bytes, c.templates.fuel), (1024, 50));
            assert_eq!(c.templates.max_output_bytes, 1 << 20, "the rest defaults");
            jail.set_env("EVALFLEET_TEMPLATES__MAX_OUTPUT_BYTES", "10");
            jail.set_env("EVALFLEET_MAX_RECORD_BYTES", "2048");
            let c = Config::load(Some(Path::new("c.yaml"))).unwrap();
            assert_eq!(
                (c.max_record_bytes, c.templates.max_output_bytes),
                (2048, 10)
            );
            Ok(())
        });
    }

    #[test]
    fn shipped_targets_load() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/targets");
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let target = Target::load(&entry.unwrap().path()).unwrap();
            names.push(target.name().to_owned());
        }
        names.sort();
        assert_eq!(names, ["demo-agent", "log-analyst", "support-bot"]);
    }

    #[test]
    fn shipped_config_file_loads() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/evalfleet.yaml");
        // In a jail: the other tests' jails set EVALFLEET_* variables, which would leak in.
        figment::Jail::expect_with(|_| {
            let config = Config::load(Some(&path)).map_err(|e| e.to_string())?;
            assert!(config.notices.is_empty(), "{:?}", config.notices);
            Ok(())
        });
    }
}
