//! A fleet on the real RabbitMQ and Redis of this machine, isolated by a unique prefix (its own
//! exchange, queues and Redis keys), with `worker` and `aggregator` as child processes of the
//! real binary. Everything it creates is removed when it is dropped.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

pub mod embedded;

pub struct Fleet {
    pub prefix: String,
    pub dir: tempfile::TempDir,
    pub config: PathBuf,
    /// Extra environment for every command and role (e.g. a judge API key).
    pub env: Vec<(String, String)>,
    /// The Redis the harness inspects and cleans up (`redis-cli -p`).
    pub redis_port: u16,
    children: Vec<(String, Child)>,
}

impl Fleet {
    /// A fleet whose config adds `extra_yaml` (e.g. a `judges:` block) to the fleet settings.
    pub fn new(extra_yaml: &str) -> Fleet {
        let prefix = format!(
            "evalfleet-test-{}",
            super::fake::random_key().trim_start_matches("sk-test-")
        );
        let dir = tempfile::tempdir().expect("tempdir");
        let config = dir.path().join("evalfleet.yaml");
        let yaml = format!(
            "reports_dir: {reports}\nfleet:\n  prefix: {prefix}\n  retention_hours: 1\n  worker_concurrency: 16\n  shutdown_deadline_s: 10\n{extra_yaml}\n",
            reports = dir.path().join("reports").display()
        );
        std::fs::write(&config, yaml).expect("write config");
        Fleet {
            prefix,
            dir,
            config,
            env: Vec::new(),
            redis_port: 6379,
            children: Vec::new(),
        }
    }

    pub fn reports_dir(&self) -> PathBuf {
        self.dir.path().join("reports")
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_evalfleet"));
        cmd.current_dir(super::root())
            .arg("--config")
            .arg(&self.config)
            .args(args);
        for (k, _) in std::env::vars() {
            if k.starts_with("EVALFLEET_") || k == "RUST_LOG" {
                cmd.env_remove(k);
            }
        }
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd
    }

    /// Runs a one-shot command (submit, status, ...) to completion.
    pub fn run(&self, args: &[&str], limit: Duration) -> super::Output {
        super::run_with_timeout(self.command(args), limit)
    }

    /// Starts a long-running role (`worker`, `aggregator`) as a child process.
    pub fn spawn(&mut self, name: &str, args: &[&str]) -> u32 {
        let log =
            std::fs::File::create(self.dir.path().join(format!("{name}.log"))).expect("log file");
        let child = self
            .command(args)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("spawn evalfleet");
        let pid = child.id();
        self.children.push((name.to_owned(), child));
        pid
    }

    pub fn worker(&mut self, name: &str, port: u16) -> u32 {
        self.spawn(
            name,
            &["worker", "--metrics-addr", &format!("127.0.0.1:{port}")],
        )
    }

    pub fn aggregator(&mut self, name: &str, port: u16) -> u32 {
        self.spawn(
            name,
            &["aggregator", "--http-addr", &format!("127.0.0.1:{port}")],
        )
    }

    /// Sends a signal to a child (9 = kill, 15 = terminate) and reaps it.
    pub fn signal(&mut self, name: &str, signal: i32) {
        if let Some(pos) = self.children.iter().position(|(n, _)| n == name) {
            let (_, mut child) = self.children.remove(pos);
            let _ = Command::new("kill")
                .arg(format!("-{signal}"))
                .arg(child.id().to_string())
                .status();
            let _ = child.wait();
        }
    }

    /// Sends SIGTERM to the child `name` and waits for it to exit, up to `limit`; how long it
    /// took. Panics (after killing it) when it does not exit in time.
    pub fn terminate(&mut self, name: &str, limit: Duration) -> Duration {
        let pos = self
            .children
            .iter()
            .position(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("no child {name}"));
        let (_, mut child) = self.children.remove(pos);
        let _ = Command::new("kill")
            .arg("-15")
            .arg(child.id().to_string())
            .status();
        let started = Instant::now();
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                assert!(
                    status.success(),
                    "{name} exited with {status} after SIGTERM"
                );
                return started.elapsed();
            }
            if started.elapsed() > limit {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "{name} did not stop within {limit:?} of SIGTERM\n{}",
                    self.log(name)
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Whether the child `name` is still running (it has not exited by itself).
    pub fn alive(&mut self, name: &str) -> bool {
        self.children
            .iter_mut()
            .find(|(n, _)| n == name)
            .is_some_and(|(_, c)| matches!(c.try_wait(), Ok(None)))
    }

    /// Writes `evalfleet generate SUITE -n N --seed SEED` into the fleet's directory.
    pub fn generate(&self, suite: &str, n: u64, seed: u64) -> PathBuf {
        let path = self.dir.path().join(format!("{suite}-{n}-{seed}.jsonl"));
        let (n, seed) = (n.to_string(), seed.to_string());
        self.run(
            &[
                "generate",
                suite,
                "-n",
                &n,
                "--seed",
                &seed,
                "--out",
                path.to_str().expect("utf-8 path"),
            ],
            Duration::from_secs(60),
        )
        .assert_code(0);
        path
    }

    /// The run's stored outcome counts in Redis (`run:{id}:counts`): (ok, failed, skipped).
    pub fn counts(&self, run: &str) -> (u64, u64, u64) {
        let key = format!("{}:run:{run}:counts", self.prefix);
        let values = self.redis(&["hmget", &key, "ok", "failed", "skipped"]);
        let mut n = values.lines().map(|l| l.trim().parse::<u64>().unwrap_or(0));
        let mut next = || n.next().unwrap_or(0);
        (next(), next(), next())
    }

    /// Stored results of the run so far (ok + failed + skipped).
    pub fn done(&self, run: &str) -> u64 {
        let (ok, failed, skipped) = self.counts(run);
        ok + failed + skipped
    }

    /// Waits until at least `n` results of the run are stored.
    pub fn wait_done(&self, run: &str, n: u64, limit: Duration) {
        let started = Instant::now();
        while self.done(run) < n {
            assert!(
                started.elapsed() < limit,
                "fewer than {n} results of {run} after {limit:?} (have {})",
                self.done(run)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The run's report accounts for exactly `n` examples, none twice: totals, one item per ok
    /// example in strictly increasing index order, failed/skipped lists, Redis counts.
    pub fn assert_exactly(&self, run: &str, report: &Value, n: u64) {
        let t = &report["totals"];
        let total = |k: &str| t[k].as_u64().unwrap_or_else(|| panic!("totals.{k}: {t}"));
        assert_eq!(total("examples"), n, "totals: {t}");
        assert_eq!(
            total("ok") + total("failed") + total("skipped"),
            n,
            "totals: {t}"
        );
        let items = super::items(report);
        assert_eq!(items.len() as u64, total("ok"), "one item per ok example");
        let indices: Vec<u64> = items
            .iter()
            .map(|i| i["index"].as_u64().expect("index"))
            .collect();
        let twice = indices.windows(2).find(|w| w[0] >= w[1]);
        assert!(
            twice.is_none(),
            "indices not strictly increasing: {twice:?}"
        );
        for list in ["failed", "skipped"] {
            let len = report[list].as_array().map_or(0, Vec::len) as u64;
            assert_eq!(len, total(list), "{list} list vs totals");
        }
        let (ok, failed, skipped) = self.counts(run);
        assert_eq!(
            (ok, failed, skipped),
            (total("ok"), total("failed"), total("skipped")),
            "Redis counts vs the report"
        );
        assert_eq!(ok + failed + skipped, n, "Redis counts");
    }

    /// `submit DATASET --run-id RUN EXTRA...`, which must succeed (it does not wait).
    pub fn submit(&self, data: &Path, run_id: &str, extra: &[&str]) {
        let mut args = vec![
            "submit",
            data.to_str().expect("utf-8 path"),
            "--run-id",
            run_id,
        ];
        args.extend_from_slice(extra);
        self.run(&args, Duration::from_secs(60)).assert_code(0);
    }

    /// The `aggregates` of an embedded `evalfleet run` of the same support-judge dataset.
    pub fn embedded_aggregates(&self, data: &Path) -> Value {
        self.embedded_report(data, &["--suite", "support-judge"])["aggregates"].clone()
    }

    /// The `report.json` of an embedded `evalfleet run DATA EXTRA...` (in the fleet's
    /// directory, with the fleet's config and environment).
    pub fn embedded_report(&self, data: &Path, extra: &[&str]) -> Value {
        let out = self.dir.path().join("embedded");
        let (data, out_arg) = (
            data.to_str().expect("utf-8 path"),
            out.to_str().expect("utf-8 path"),
        );
        let mut args = vec!["run", data, "--out", out_arg];
        args.extend_from_slice(extra);
        let run = self.run(&args, Duration::from_secs(120));
        run.assert_no_panic();
        super::read_json(&out.join("report.json"))
    }

    /// A process's log, without its terminal colours (fields read `key=value`).
    pub fn log(&self, name: &str) -> String {
        let log = std::fs::read_to_string(self.dir.path().join(format!("{name}.log")))
            .unwrap_or_default();
        let colours = regex::Regex::new("\x1b\\[[0-9;]*m").expect("regex");
        colours.replace_all(&log, "").into_owned()
    }

    /// Waits until a process's log contains `text`; false after `limit`.
    pub fn wait_log(&self, name: &str, text: &str, limit: Duration) -> bool {
        let started = Instant::now();
        while !self.log(name).contains(text) {
            if started.elapsed() > limit {
                return false;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        true
    }

    /// Waits until `reports/<run>/report.json` exists.
    pub fn wait_report(&self, run: &str, limit: Duration) -> Value {
        let path = self.reports_dir().join(run).join("report.json");
        let started = Instant::now();
        while started.elapsed() < limit {
            if let Ok(text) = std::fs::read_to_string(&path) {
                if let Ok(v) = serde_json::from_str(&text) {
                    return v;
                }
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let logs: Vec<String> = self
            .children
            .iter()
            .map(|(n, _)| format!("--- {n}\n{}", self.log(n)))
            .collect();
        panic!(
            "no report for run {run} after {limit:?}\n{}",
            logs.join("\n")
        );
    }

    pub fn redis(&self, args: &[&str]) -> String {
        let out = Command::new("redis-cli")
            .args(["-h", "127.0.0.1", "-p", &self.redis_port.to_string()])
            .args(args)
            .output()
            .expect("redis-cli");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for (_, child) in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
        let keys = self.redis(&["--scan", "--pattern", &format!("{}:*", self.prefix)]);
        let keys: Vec<&str> = keys.lines().filter(|k| !k.is_empty()).collect();
        for chunk in keys.chunks(500) {
            let mut args = vec!["del"];
            args.extend_from_slice(chunk);
            self.redis(&args);
        }
        // Exchanges and queues both: the adapter's own clean-up deletes the whole topology.
        let cfg = evalfleet_fleet::amqp::AmqpConfig {
            prefix: self.prefix.clone(),
            ..Default::default()
        };
        if let Ok(rt) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            let _ = rt.block_on(evalfleet_fleet::amqp::testing::cleanup(&cfg));
        }
    }
}

/// Path helper for datasets in the repository.
pub fn example(name: &str) -> PathBuf {
    super::root().join("examples").join(name)
}

pub fn is_file(p: &Path) -> bool {
    p.is_file()
}

/// The path and values of the first place two JSON documents differ.
pub fn first_difference(a: &Value, b: &Value, path: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter().find_map(|k| {
                first_difference(
                    x.get(k).unwrap_or(&Value::Null),
                    y.get(k).unwrap_or(&Value::Null),
                    &format!("{path}.{k}"),
                )
            })
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (x, y))| first_difference(x, y, &format!("{path}[{i}]"))),
        _ if a == b => None,
        _ => Some(format!("{path}: fleet {a} vs embedded {b}")),
    }
}

/// A `redis-server` of the test's own on a free port, persisting every write to its
/// append-only file in a temporary directory, so a test can restart it without losing data —
/// and without touching the Redis other tests share. Killed when dropped.
pub struct PrivateRedis {
    pub port: u16,
    dir: tempfile::TempDir,
    child: Option<Child>,
}

impl PrivateRedis {
    pub fn start() -> PrivateRedis {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let mut redis = PrivateRedis {
            port,
            dir: tempfile::tempdir().expect("tempdir"),
            child: None,
        };
        redis.spawn();
        redis
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    fn cli(&self, args: &[&str]) -> String {
        let out = Command::new("redis-cli")
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(args)
            .output()
            .expect("redis-cli");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// Starts the server (always the same command) and waits until it answers PING.
    pub fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("redis.log"))
            .expect("redis log");
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--appendonly", "yes", "--appendfsync", "always"])
            .arg("--dir")
            .arg(self.dir.path())
            .args(["--save", ""])
            .stdout(log)
            .stderr(Stdio::null())
            .spawn()
            .expect("starting redis-server");
        self.child = Some(child);
        let started = Instant::now();
        while self.cli(&["ping"]) != "PONG" {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "redis-server on port {} did not come up",
                self.port
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `SHUTDOWN` (flushing the append-only file), then waits for the process to end.
    pub fn shutdown(&mut self) {
        self.cli(&["shutdown"]);
        if let Some(mut child) = self.child.take() {
            let _ = child.wait();
        }
    }
}

impl Drop for PrivateRedis {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
