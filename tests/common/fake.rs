//! Live-judge test helpers: the project's fake OpenAI + Anthropic server running in-process on
//! an ephemeral port (in a tokio runtime the test owns), a tiny blocking HTTP client for its
//! `/stats` and `/admin` endpoints, a generated `judges:` config whose providers point at it,
//! small support-judge datasets, and `evalfleet run --judge live` with the API key in the
//! child's environment only.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use evalfleet_fake_provider::{spawn, FakeProviderArgs};
use serde_json::{json, Value};

use super::{root, run_with_timeout, Output};

pub mod targets;

/// The environment variable the generated configs name as every provider's `api_key_env`.
pub const KEY_ENV: &str = "EVALFLEET_TEST_KEY";

/// A fresh `sk-test-<16 hex>` key; the random part is what the leak checks look for.
pub fn random_key() -> String {
    format!("sk-test-{:016x}", rand::random::<u64>())
}

/// The fake provider, running until dropped.
pub struct FakeServer {
    pub addr: SocketAddr,
    /// The key the fake requires (401 for anything else).
    pub key: String,
    runtime: Option<tokio::runtime::Runtime>,
    handle: tokio::task::JoinHandle<()>,
}

impl FakeServer {
    /// Starts the fake with `args` on 127.0.0.1:0, requiring a fresh random key. Replies are
    /// never wrapped in prose unless `args` asks for it via [`FakeServer::start_with`].
    pub fn start(args: FakeProviderArgs) -> FakeServer {
        Self::start_with(FakeProviderArgs {
            wrap_rate: 0.0,
            ..args
        })
    }

    /// Starts the fake with `args` exactly as given (port forced to 0, a fresh key required).
    pub fn start_with(args: FakeProviderArgs) -> FakeServer {
        Self::start_keyed(args, random_key())
    }

    /// Starts the fake with `args` exactly as given (port forced to 0), requiring `key`.
    pub fn start_keyed(args: FakeProviderArgs, key: String) -> FakeServer {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a tokio runtime for the fake provider");
        let args = FakeProviderArgs {
            port: 0,
            api_key: Some(key.clone()),
            ..args
        };
        let (addr, handle) = runtime
            .block_on(spawn(args))
            .expect("starting the fake provider");
        FakeServer {
            addr,
            key,
            runtime: Some(runtime),
            handle,
        }
    }

    /// Defaults: no faults, no limits, no latency, seed 7.
    pub fn plain() -> FakeServer {
        Self::start(FakeProviderArgs::default())
    }

    /// `GET /stats`.
    pub fn stats(&self) -> Value {
        get(self.addr, "/stats")
    }

    /// Arrival times (unix ms, ascending) of the requests `provider` answered 200.
    pub fn timeline(&self, provider: &str) -> Vec<u64> {
        let v = get(self.addr, &format!("/stats/timeline?provider={provider}"));
        assert_eq!(v["truncated"], json!(false), "timeline truncated: {v}");
        v["accepted_unix_ms"]
            .as_array()
            .unwrap_or_else(|| panic!("no accepted_unix_ms in {v}"))
            .iter()
            .map(|t| t.as_u64().expect("a unix-ms time"))
            .collect()
    }

    /// `GET path` of either provider's API, with the key both ways and `anthropic-version`.
    pub fn api_get(&self, path: &str) -> Value {
        let key = &self.key;
        let headers = format!(
            "Authorization: Bearer {key}\r\nx-api-key: {key}\r\nanthropic-version: 2023-06-01\r\n"
        );
        http(self.addr, "GET", path, None, &headers)
    }

    /// `POST /admin/config` with a partial update; returns the options now in force.
    pub fn admin(&self, patch: Value) -> Value {
        admin(self.addr, patch)
    }

    /// A config file in `dir` whose providers point at this server.
    pub fn config(&self, dir: &Path, cfg: &LiveConfig) -> PathBuf {
        let path = dir.join("evalfleet-live.yaml");
        std::fs::write(&path, cfg.yaml(self.addr)).expect("writing the config");
        path
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.handle.abort();
        // Hanging requests may still sleep inside the server: do not wait for them.
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// Total requests the fake answered with `status`, all providers together.
pub fn status_count(stats: &Value, status: u16) -> u64 {
    stats["by_status"][status.to_string()].as_u64().unwrap_or(0)
}

/// Requests `provider` answered with `status`.
pub fn provider_status(stats: &Value, provider: &str, status: u16) -> u64 {
    stats["by_provider_status"][provider][status.to_string()]
        .as_u64()
        .unwrap_or(0)
}

pub fn total(stats: &Value) -> u64 {
    stats["total"].as_u64().expect("stats.total")
}

/// `GET path` on the fake, as JSON (status 200 required).
pub fn get(addr: SocketAddr, path: &str) -> Value {
    http(addr, "GET", path, None, "")
}

/// `POST /admin/config`.
pub fn admin(addr: SocketAddr, patch: Value) -> Value {
    http(addr, "POST", "/admin/config", Some(&patch), "")
}

/// One HTTP/1.1 exchange over a plain socket (`Connection: close`, so the body runs to EOF).
fn http(addr: SocketAddr, method: &str, path: &str, body: Option<&Value>, headers: &str) -> Value {
    let body = body.map(Value::to_string).unwrap_or_default();
    let mut stream = TcpStream::connect(addr).expect("connecting to the fake provider");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("socket timeout");
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         {headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).expect("sending");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("reading the response");
    let text = String::from_utf8_lossy(&raw);
    let (head, payload) = text
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("not an HTTP response: {text}"));
    assert!(
        head.starts_with("HTTP/1.1 200"),
        "{method} {path} answered {head}\n{payload}"
    );
    serde_json::from_str(payload).unwrap_or_else(|e| panic!("{method} {path}: {e}: {payload}"))
}

/// The knobs of the generated `judges:` section (both providers get the same limits).
#[derive(Debug, Clone)]
pub struct LiveConfig {
    pub rpm: u32,
    pub tpm: u32,
    pub max_in_flight: u32,
    pub timeout_s: f64,
    pub max_attempts: u32,
    pub base_delay_ms: u64,
    pub max_delay_ms: u64,
    pub cache: bool,
    pub panel: Vec<&'static str>,
    /// Extra `prices:` entries, `model: [input_per_mtok, output_per_mtok]`.
    pub prices: Vec<(&'static str, f64, f64)>,
    /// Point the Anthropic provider at another server than the OpenAI one.
    pub anthropic_at: Option<SocketAddr>,
    /// More of the `judges:` section, verbatim (two-space indented keys).
    pub extra: String,
}

impl Default for LiveConfig {
    fn default() -> Self {
        LiveConfig {
            rpm: 0,
            tpm: 0,
            max_in_flight: 16,
            timeout_s: 10.0,
            max_attempts: 5,
            base_delay_ms: 10,
            max_delay_ms: 100,
            cache: false,
            panel: Vec::new(),
            prices: Vec::new(),
            anthropic_at: None,
            extra: String::new(),
        }
    }
}

impl LiveConfig {
    pub fn yaml(&self, addr: SocketAddr) -> String {
        let provider = |api: &str, base_url: String| {
            format!(
                "  {api}:\n    api: {api}\n    base_url: \"{base_url}\"\n    \
                 api_key_env: {KEY_ENV}\n    rpm: {}\n    tpm: {}\n    \
                 max_in_flight: {}\n    timeout_s: {}\n    connect_timeout_s: 2\n    \
                 max_tokens: 300\n",
                self.rpm, self.tpm, self.max_in_flight, self.timeout_s
            )
        };
        let mut y = String::from("providers:\n");
        y += &provider("openai", format!("http://{addr}/v1"));
        y += &provider(
            "anthropic",
            format!("http://{}", self.anthropic_at.unwrap_or(addr)),
        );
        y += "judges:\n";
        y += "  judge_mapping: {openai: anthropic, anthropic: openai}\n";
        y += "  judge_models: {openai: gpt-4o-mini, anthropic: claude-sonnet-4-20250514}\n";
        y += &format!("  panel: [{}]\n", self.panel.join(", "));
        y += &format!(
            "  retry: {{max_attempts: {}, base_delay_ms: {}, max_delay_ms: {}}}\n",
            self.max_attempts, self.base_delay_ms, self.max_delay_ms
        );
        y += &format!("  cache: {}\n", self.cache);
        if !self.prices.is_empty() {
            y += "  prices:\n";
            for (model, input, output) in &self.prices {
                y += &format!(
                    "    {model}: {{input_per_mtok: {input}, output_per_mtok: {output}}}\n"
                );
            }
        }
        y += &self.extra;
        y
    }
}

/// One support-judge record.
pub fn example(id: &str, model: &str, ticket: &str, response: &str) -> Value {
    json!({"id": id, "ticket": ticket, "response": response, "model": model, "prompt_version": "v1"})
}

/// `n` distinct support-judge records with models cycling through `models`.
pub fn examples(n: usize, models: &[&str]) -> Vec<Value> {
    (0..n)
        .map(|i| {
            example(
                &format!("ex-{i:03}"),
                models[i % models.len()],
                &format!("Ticket {i}: the deploy of service-{i} fails with exit code {i}."),
                &format!("Check the logs of service-{i} and roll back release {i} if needed."),
            )
        })
        .collect()
}

/// Writes `records` as JSONL into `dir`.
pub fn write_dataset(dir: &Path, records: &[Value]) -> PathBuf {
    let path = dir.join("dataset.jsonl");
    let text: String = records.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(&path, text).expect("writing the dataset");
    path
}

/// The provider that produced a response, by the default model-prefix rules.
pub fn provider_of(model: &str) -> &'static str {
    if model.starts_with("claude-") {
        "anthropic"
    } else {
        "openai"
    }
}

/// The judge provider the default cross-provider mapping picks for a response provider.
pub fn other(provider: &str) -> &'static str {
    match provider {
        "openai" => "anthropic",
        "anthropic" => "openai",
        p => panic!("unknown provider {p}"),
    }
}

/// A live run: `evalfleet run DATASET --suite support-judge --judge live --config CONFIG
/// --out OUT EXTRA...` with `KEY_ENV=key` (and `env`) in the child's environment only.
pub fn run_live(
    dataset: &Path,
    config: &Path,
    out: &Path,
    key: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Output {
    run_live_suite("support-judge", dataset, config, out, key, extra, env)
}

/// [`run_live`] with another suite.
pub fn run_live_suite(
    suite: &str,
    dataset: &Path,
    config: &Path,
    out: &Path,
    key: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_evalfleet"));
    cmd.current_dir(root()).env_remove("RUST_LOG");
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("EVALFLEET_") {
            cmd.env_remove(k);
        }
    }
    cmd.arg("run")
        .arg(dataset)
        .args(["--suite", suite, "--judge", "live", "--config"])
        .arg(config)
        .arg("--out")
        .arg(out)
        .args(extra)
        .env(KEY_ENV, key);
    for (k, v) in env {
        cmd.env(k, v);
    }
    run_with_timeout(cmd, Duration::from_secs(60))
}

/// The fake judge's pairwise verdict, its rule written out again to check it by: the answer
/// with more distinct words of ≥ 3 characters is the better one, equal counts a tie. The
/// judged answer's `win`, `tie` or `loss` against `other`.
#[allow(dead_code)] // only the pairwise tests compare answers
pub fn fake_preference(judged: &str, other: &str) -> &'static str {
    let thorough = |text: &str| {
        text.split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.chars().count() >= 3)
            .map(str::to_lowercase)
            .collect::<std::collections::HashSet<_>>()
            .len()
    };
    match thorough(judged).cmp(&thorough(other)) {
        std::cmp::Ordering::Greater => "win",
        std::cmp::Ordering::Less => "loss",
        std::cmp::Ordering::Equal => "tie",
    }
}
