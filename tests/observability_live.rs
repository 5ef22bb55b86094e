//! Observability against a live fleet on 127.0.0.1 (docs/DESIGN.md §6: "every panel's query must return
//! data against a live fleet"): `fake-provider`, two `worker`s and an `aggregator` (real
//! binaries, real RabbitMQ and Redis, queue depths from the management API) run a live-judged
//! support-judge run while a real Prometheus server scrapes all four every second. Then:
//! - every PromQL query of the Grafana dashboards, with its template variables filled in as
//!   Grafana would, returns data at a moment of the run, and every alert expression evaluates
//!   (and the alert rules load and evaluate inside that Prometheus without error);
//! - `promtool check metrics` accepts the live `/metrics` of a worker, the aggregator and the
//!   fake provider;
//! - the labelled counters whose label values are known up front are exported at 0 before the
//!   first example, so `rate()` sees the first increment.
//!
//! Needs Debian's `prometheus` package (the server and promtool). Without it the test prints
//! why it is skipped — except under `CI=true`, where it fails.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::fake::{random_key, LiveConfig, KEY_ENV};
use common::fleet::Fleet;
use serde_json::Value;

/// Examples in the run, and the fake provider's latency: with 2 workers × 16 in flight, two
/// judge calls per example at 200–300 ms, the run lasts 15–25 s: as many scrapes.
const EXAMPLES: u64 = 700;
const LATENCY_MS: &str = "200";
const JITTER_MS: &str = "100";
/// `$__rate_interval` as Grafana computes it for a 2.5 s scrape interval (4 × interval); the
/// test scrapes every second, so every window holds several samples even on a busy machine.
const RATE_INTERVAL: &str = "10s";

/// The Prometheus tools, or why the test cannot run.
struct Tools {
    prometheus: PathBuf,
    promtool: PathBuf,
}

fn find(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .chain([PathBuf::from("/usr/bin"), PathBuf::from("/usr/local/bin")])
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// The tools, or None after printing why the test is skipped (a failure under `CI=true`).
fn tools(test: &str) -> Option<Tools> {
    match (find("prometheus"), find("promtool")) {
        (Some(prometheus), Some(promtool)) => Some(Tools {
            prometheus,
            promtool,
        }),
        (server, tool) => {
            let missing: Vec<&str> = [("prometheus", server), ("promtool", tool)]
                .into_iter()
                .filter(|(_, p)| p.is_none())
                .map(|(n, _)| n)
                .collect();
            common::available(
                test,
                &missing.join(" and "),
                false,
                "Debian: apt-get install prometheus",
            );
            None
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// `GET url` (127.0.0.1 only): the body of a 2xx answer, or None.
fn get(url: &str) -> Option<String> {
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let out = Command::new("curl")
        .args(["-sf", "--max-time", "10", url])
        .output()
        .expect("curl");
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Waits until `url` answers 2xx.
fn wait_up(url: &str, limit: Duration) -> String {
    let started = Instant::now();
    loop {
        if let Some(body) = get(url) {
            return body;
        }
        assert!(started.elapsed() < limit, "{url} not up after {limit:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn now_s() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs_f64()
}

/// A Prometheus server of the test's own, on 127.0.0.1 with a temporary TSDB; killed when
/// dropped.
struct Prometheus {
    port: u16,
    child: Child,
    dir: tempfile::TempDir,
}

impl Prometheus {
    fn start(binary: &Path, jobs: &[(&str, Vec<u16>)], rules: &Path) -> Prometheus {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut yaml = format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n\
             rule_files:\n  - \"{}\"\nscrape_configs:\n",
            rules.display()
        );
        for (job, ports) in jobs {
            let targets: Vec<String> = ports.iter().map(|p| format!("\"127.0.0.1:{p}\"")).collect();
            yaml += &format!(
                "  - job_name: {job}\n    static_configs:\n      - targets: [{}]\n",
                targets.join(", ")
            );
        }
        let config = dir.path().join("prometheus.yml");
        std::fs::write(&config, yaml).expect("prometheus.yml");
        let port = free_port();
        let log = std::fs::File::create(dir.path().join("prometheus.log")).expect("log");
        let child = Command::new(binary)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg("--log.level=warn")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("starting prometheus");
        let prom = Prometheus { port, child, dir };
        let started = Instant::now();
        while get(&prom.url("/-/ready")).is_none() {
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "prometheus not ready after 60 s:\n{}",
                prom.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        prom
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("prometheus.log")).unwrap_or_default()
    }

    /// `/api/v1/query` at `time`: the whole JSON answer (`status` is `success` or `error`).
    fn query(&self, expr: &str, time: f64) -> Value {
        let out = Command::new("curl")
            .args(["-s", "--max-time", "20", "-G"])
            .arg("--data-urlencode")
            .arg(format!("query={expr}"))
            .arg("--data-urlencode")
            .arg(format!("time={time:.3}"))
            .arg(self.url("/api/v1/query"))
            .output()
            .expect("curl");
        let body = String::from_utf8_lossy(&out.stdout);
        serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("query {expr}: not JSON ({e}): {body}"))
    }

    /// The query's result, which must have evaluated without error.
    fn eval(&self, expr: &str, time: f64) -> Value {
        let answer = self.query(expr, time);
        assert_eq!(
            answer["status"], "success",
            "`{expr}` does not evaluate: {answer}"
        );
        answer["data"].clone()
    }

    /// The instant vector's single value (None when the result is empty).
    fn value(&self, expr: &str, time: f64) -> Option<f64> {
        let data = self.eval(expr, time);
        let result = data["result"].as_array()?;
        let v = result.first()?["value"][1].as_str()?;
        v.parse().ok()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether a query's data holds anything (a scalar or string always does).
fn has_data(data: &Value) -> bool {
    match data["resultType"].as_str() {
        Some("vector") | Some("matrix") => data["result"].as_array().is_some_and(|r| !r.is_empty()),
        Some(_) => true,
        None => false,
    }
}

/// Every PromQL query of a dashboard: (panel title, expression), rows' nested panels included.
fn dashboard_queries(dashboard: &Value) -> Vec<(String, String)> {
    fn walk(panels: &Value, out: &mut Vec<(String, String)>) {
        for p in panels.as_array().into_iter().flatten() {
            let title = p["title"].as_str().unwrap_or("?").to_owned();
            for t in p["targets"].as_array().into_iter().flatten() {
                if let Some(expr) = t["expr"].as_str().filter(|e| !e.trim().is_empty()) {
                    out.push((title.clone(), expr.to_owned()));
                }
            }
            walk(&p["panels"], out);
        }
    }
    let mut out = Vec::new();
    walk(&dashboard["panels"], &mut out);
    out
}

/// A value as it goes into a regex matcher (`=~"$var"`), as Grafana escapes a single value.
fn regex_escape(value: &str) -> String {
    value
        .chars()
        .flat_map(|c| {
            let special = "\\.+*?()|[]{}^$".contains(c);
            special.then_some('\\').into_iter().chain([c])
        })
        .collect()
}

/// `expr` with Grafana's template variables replaced: `$__rate_interval`, `$__interval`,
/// `$__range` (and their `${...}` forms) and the dashboard's own variables from `vars`.
fn substitute(expr: &str, vars: &[(String, String)], range_s: u64) -> String {
    let mut builtins = vec![
        ("__rate_interval".to_owned(), RATE_INTERVAL.to_owned()),
        ("__interval_ms".to_owned(), "1000".to_owned()),
        ("__interval".to_owned(), "1s".to_owned()),
        ("__range_s".to_owned(), range_s.to_string()),
        ("__range_ms".to_owned(), (range_s * 1000).to_string()),
        ("__range".to_owned(), format!("{range_s}s")),
    ];
    builtins.extend(vars.iter().cloned());
    // Longest names first, so `$__interval` never eats the start of `$__interval_ms`.
    builtins.sort_by_key(|(name, _)| std::cmp::Reverse(name.len()));
    let mut e = expr.to_owned();
    for (name, value) in &builtins {
        e = e.replace(&format!("${{{name}}}"), value);
        e = e.replace(&format!("[[{name}]]"), value);
        e = e.replace(&format!("${name}"), value);
    }
    let leftover = regex::Regex::new(r"\$\{?[A-Za-z_]").expect("regex");
    assert!(
        !leftover.is_match(&e),
        "unknown template variable left in `{e}` (from `{expr}`)"
    );
    e
}

/// The alert expressions of a Prometheus rules file.
fn alert_exprs(rules: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(rules).expect("reading the alert rules");
    let yaml: Value = serde_norway::from_str(&text).expect("the alert rules are YAML");
    yaml["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|g| g["rules"].as_array().cloned().unwrap_or_default())
        .filter_map(|r| {
            let name = r["alert"].as_str().or(r["record"].as_str())?.to_owned();
            Some((name, r["expr"].as_str()?.to_owned()))
        })
        .collect()
}

/// `promtool check metrics` on an exposition: its complaints, if any.
fn promtool_check_metrics(promtool: &Path, exposition: &str) -> Result<(), String> {
    use std::io::Write;
    let mut child = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(exposition.as_bytes())
        .expect("writing to promtool");
    let out = child.wait_with_output().expect("promtool");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() && said.trim().is_empty() {
        Ok(())
    } else {
        Err(format!("exit {:?}: {said}", out.status.code()))
    }
}

/// The value of the sample of `family` whose labels include every `labels` pair, in a text
/// exposition.
fn sample(exposition: &str, family: &str, labels: &[(&str, &str)]) -> Option<f64> {
    exposition.lines().find_map(|line| {
        let rest = line.strip_prefix(family)?;
        let (set, value) = rest.strip_prefix('{')?.split_once("} ")?;
        labels
            .iter()
            .all(|(k, v)| set.split(',').any(|kv| kv == format!("{k}=\"{v}\"")))
            .then(|| value.trim().parse().ok())?
    })
}

#[test]
fn prometheus_scrapes_a_live_fleet_and_every_dashboard_and_alert_query_answers() {
    let test = "prometheus_scrapes_a_live_fleet";
    let Some(tools) = tools(test) else {
        return;
    };
    if !common::management_available(test) {
        return;
    }
    let root = common::root();
    let alerts = root.join("deploy/prometheus/alerts.yml");
    let (fake_port, w1, w2, agg) = (free_port(), free_port(), free_port(), free_port());

    // The fleet: judges at the fake provider, queue depths from the management API (set the
    // way a deployment would, through the nested-key environment override).
    let key = random_key();
    let judges = LiveConfig::default().yaml(format!("127.0.0.1:{fake_port}").parse().unwrap());
    let mut fleet = Fleet::new(&judges);
    fleet.env.push((KEY_ENV.to_owned(), key.clone()));
    fleet.env.push((
        "EVALFLEET_FLEET__MANAGEMENT_URL".to_owned(),
        "http://guest:guest@127.0.0.1:15672/".to_owned(),
    ));
    let fake_port_s = fake_port.to_string();
    fleet.spawn(
        "fake",
        &[
            "fake-provider",
            "--host",
            "127.0.0.1",
            "--port",
            &fake_port_s,
            "--api-key",
            &key,
            "--latency-ms",
            LATENCY_MS,
            "--jitter-ms",
            JITTER_MS,
            // A few retried 429s, so the rate-limit panels show real traffic.
            "--fault-429",
            "0.02",
            "--fault-retry-after-ms",
            "100",
            "--wrap-rate",
            "0",
        ],
    );
    wait_up(
        &format!("http://127.0.0.1:{fake_port}/healthz"),
        Duration::from_secs(30),
    );
    fleet.worker("w1", w1);
    fleet.worker("w2", w2);
    fleet.aggregator("agg", agg);
    let worker_metrics = format!("http://127.0.0.1:{w1}/metrics");
    let before = wait_up(&worker_metrics, Duration::from_secs(60));
    wait_up(
        &format!("http://127.0.0.1:{w2}/metrics"),
        Duration::from_secs(60),
    );
    wait_up(
        &format!("http://127.0.0.1:{agg}/metrics"),
        Duration::from_secs(60),
    );

    // Before the first example, the series whose labels are known are there, at 0.
    for (family, labels) in [
        (
            "evalfleet_examples_processed_total",
            vec![("suite", "support-judge"), ("outcome", "ok")],
        ),
        (
            "evalfleet_examples_processed_total",
            vec![("suite", "rag-layers"), ("outcome", "failed")],
        ),
        (
            "evalfleet_judge_requests_total",
            vec![
                ("provider", "openai"),
                ("model", "gpt-4o-mini"),
                ("status", "200"),
            ],
        ),
        (
            "evalfleet_judge_requests_total",
            vec![
                ("provider", "anthropic"),
                ("model", "claude-sonnet-4-20250514"),
                ("status", "429"),
            ],
        ),
        (
            "evalfleet_judge_retries_total",
            vec![("provider", "openai"), ("reason", "rate_limited")],
        ),
        (
            "evalfleet_judge_tokens_total",
            vec![("provider", "anthropic"), ("kind", "output")],
        ),
        (
            "evalfleet_judge_cost_usd_total",
            vec![("provider", "openai"), ("model", "gpt-4o-mini")],
        ),
        (
            "evalfleet_rate_limit_wait_seconds_total",
            vec![("provider", "anthropic")],
        ),
        (
            "evalfleet_judge_request_duration_seconds_count",
            vec![("provider", "openai"), ("model", "gpt-4o-mini")],
        ),
    ] {
        assert_eq!(
            sample(&before, family, &labels),
            Some(0.0),
            "{family}{labels:?} is not exported at 0 before the first example:\n{before}"
        );
    }

    let prom = Prometheus::start(
        &tools.prometheus,
        &[
            ("evalfleet-worker", vec![w1, w2]),
            ("evalfleet-aggregator", vec![agg]),
            ("fake-provider", vec![fake_port]),
        ],
        &alerts,
    );
    let prom_started = now_s();
    // Every target scraped once before the run starts, so counters are seen at 0 first.
    let started = Instant::now();
    while prom.value("count(up == 1)", now_s()) != Some(4.0) {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "not every target is up: {}\n{}",
            prom.eval("up", now_s()),
            prom.log()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    std::thread::sleep(Duration::from_secs(2));

    let data = fleet.generate("support-judge", EXAMPLES, 11);
    let run_id = format!("{}-prom", fleet.prefix);
    // The run has a target too, so the targets' row has traffic: a chat prompt to the fake's
    // OpenAI API answers each ticket, then the judges score the answer.
    let target = fleet.dir.path().join("bot.yaml");
    std::fs::write(
        &target,
        "name: bot\nkind: chat\nprovider: openai\nmodel: gpt-4o-mini\n\
         prompt: \"{{ ticket }}\"\nparams: {temperature: 0.5}\noutput: response\n",
    )
    .expect("write the target");
    fleet.submit(
        &data,
        &run_id,
        &[
            "--suite",
            "support-judge",
            "--judge",
            "live",
            "--target",
            target.to_str().expect("a UTF-8 path"),
        ],
    );
    let submitted = Instant::now();
    // The moment the dashboards are evaluated at: the run half done, rate windows full.
    fleet.wait_done(&run_id, EXAMPLES / 2, Duration::from_secs(180));
    while submitted.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let mid_run = now_s();
    let mid_done = fleet.done(&run_id);
    // The expositions mid-run, when the aggregator also exports the run's gauges.
    let mid_expositions: Vec<(String, String)> = [("worker", w1), ("aggregator", agg)]
        .into_iter()
        .map(|(role, port)| {
            let text = get(&format!("http://127.0.0.1:{port}/metrics"))
                .unwrap_or_else(|| panic!("GET /metrics of the {role}"));
            (format!("{role} (mid-run)"), text)
        })
        .collect();
    assert!(
        mid_done < EXAMPLES,
        "the run ended before the moment to look at it ({mid_done}/{EXAMPLES} done): \
         raise EXAMPLES or LATENCY_MS"
    );
    let report = fleet.wait_report(&run_id, Duration::from_secs(180));
    fleet.assert_exactly(&run_id, &report, EXAMPLES);
    let run_lasted = submitted.elapsed();
    // Two more scrapes, so the instants around mid_run are all in the TSDB.
    std::thread::sleep(Duration::from_secs(3));
    eprintln!(
        "run of {EXAMPLES} examples lasted {run_lasted:.1?}; dashboards evaluated at {:.1} s, \
         {mid_done}/{EXAMPLES} done",
        mid_run - prom_started
    );

    // The scrapes: every target was up all along, and counters started at 0.
    assert_eq!(
        prom.value("count(up == 1)", mid_run),
        Some(4.0),
        "{}",
        prom.eval("up", mid_run)
    );
    let first = prom.eval(
        r#"evalfleet_examples_processed_total{suite="support-judge",outcome="ok"}[5m]"#,
        now_s(),
    );
    let series = first["result"].as_array().expect("a matrix");
    assert_eq!(series.len(), 2, "one series per worker: {first}");
    for s in series {
        assert_eq!(
            s["values"][0][1], "0",
            "the counter's first sample is 0, so increase() counts the first example: {s}"
        );
    }
    let all_ok = prom
        .value(
            r#"sum(evalfleet_examples_processed_total{suite="support-judge"})"#,
            now_s(),
        )
        .expect("processed total");
    assert!(
        all_ok >= EXAMPLES as f64,
        "the workers processed every example at least once: {all_ok}"
    );
    // Queue depths from the management API: the workers' prefetch shows as unacked messages.
    let unacked = prom
        .value(
            r#"max(max_over_time(evalfleet_queue_messages{state="unacked",queue=~".+[.]examples"}[5m]))"#,
            now_s(),
        )
        .expect("an unacked series (queue depth from the management API)");
    assert!(
        unacked > 0.0,
        "workers held messages during the run: {unacked}"
    );
    let fake_ok = prom
        .value(
            r#"sum(evalfleet_fake_provider_requests_total{status="200"})"#,
            now_s(),
        )
        .expect("the fake provider's counters");
    assert!(
        fake_ok >= 2.0 * EXAMPLES as f64,
        "two judge calls per example reached the fake provider: {fake_ok}"
    );

    // Every dashboard query, with the variables at "All" and at each value seen in the run.
    let range_s = (mid_run - prom_started).ceil() as u64;
    let checked = check_dashboards(
        &prom,
        &root.join("deploy/grafana/dashboards"),
        mid_run,
        range_s,
    );
    assert!(checked > 0);

    // Every alert expression evaluates, mid-run and now; and the rules loaded into this
    // Prometheus evaluate without error.
    let rules = alert_exprs(&alerts);
    assert!(rules.len() >= 5, "{rules:?}");
    for (name, expr) in &rules {
        prom.eval(expr, mid_run);
        prom.eval(expr, now_s());
        eprintln!("alert {name}: evaluates");
    }
    let loaded: Value =
        serde_json::from_str(&get(&prom.url("/api/v1/rules")).expect("GET /api/v1/rules"))
            .expect("rules JSON");
    let loaded: Vec<&Value> = loaded["data"]["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|g| g["rules"].as_array().into_iter().flatten())
        .collect();
    assert_eq!(loaded.len(), rules.len(), "every alert rule loaded");
    for r in loaded {
        assert_eq!(r["health"], "ok", "rule {} in Prometheus: {r}", r["name"]);
    }

    // promtool on the live expositions of a worker, the aggregator and the fake provider, mid-run
    // and after the run. (It does complain: a counter without _total or HELP fails.)
    assert!(
        promtool_check_metrics(&tools.promtool, "# TYPE broken counter\nbroken 1\n").is_err(),
        "promtool check metrics accepts anything"
    );
    let mut expositions = mid_expositions;
    for (role, port) in [
        ("worker", w1),
        ("aggregator", agg),
        ("fake-provider", fake_port),
    ] {
        let text = get(&format!("http://127.0.0.1:{port}/metrics"))
            .unwrap_or_else(|| panic!("GET /metrics of the {role}"));
        expositions.push((format!("{role} (after the run)"), text));
    }
    assert!(
        expositions[1]
            .1
            .contains(&format!("evalfleet_run_progress_ratio{{run=\"{run_id}\"}}")),
        "the aggregator's mid-run exposition has the run's gauges"
    );
    for (role, text) in &expositions {
        assert!(text.contains("# TYPE"), "{role}: {text}");
        if let Err(problems) = promtool_check_metrics(&tools.promtool, text) {
            panic!("promtool check metrics on the {role}'s /metrics: {problems}\n{text}");
        }
    }
    eprintln!(
        "{checked} dashboard queries returned data; {} alert expressions evaluated",
        rules.len()
    );
}

/// Evaluates every query of every dashboard in `dir` at time `at` (`range_s` seconds into the
/// data): with each template variable at "All", then at each value that saw traffic, the
/// others at "All". Every query must return data. Returns how many evaluations were checked.
fn check_dashboards(prom: &Prometheus, dir: &Path, at: f64, range_s: u64) -> usize {
    let label_values = regex::Regex::new(r"^label_values\((\w+),\s*(\w+)\)$").expect("regex");
    let mut checked = 0;
    for entry in std::fs::read_dir(dir).expect("the dashboards directory") {
        let path = entry.expect("dir entry").path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let dashboard: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("dashboard"))
                .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
        let queries = dashboard_queries(&dashboard);
        assert!(!queries.is_empty(), "{} has no query", path.display());
        let variables: Vec<Value> = dashboard["templating"]["list"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        // Each variable's values, as its `label_values(metric, label)` query finds them.
        let mut choices: Vec<(String, Vec<String>)> = Vec::new();
        for v in &variables {
            let name = v["name"].as_str().expect("variable name").to_owned();
            let query = v["query"]
                .as_str()
                .or(v["query"]["query"].as_str())
                .unwrap_or_default();
            let caps = label_values
                .captures(query.trim())
                .unwrap_or_else(|| panic!("variable {name}: unsupported query {query}"));
            let (metric, label) = (&caps[1], &caps[2]);
            let values = |expr: String| -> Vec<String> {
                let data = prom.eval(&expr, at);
                let mut found: Vec<String> = data["result"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|r| r["metric"][label].as_str().map(str::to_owned))
                    .collect();
                found.sort();
                found
            };
            let offered = values(format!("group by ({label}) ({metric})"));
            assert!(
                !offered.is_empty(),
                "variable {name} ({query}) has no values in a live fleet"
            );
            // Single values are checked where the run had traffic: a suite nobody ran has no
            // scores to show, legitimately.
            let active = values(format!("sum by ({label}) ({metric}) > 0"));
            assert!(
                !active.is_empty(),
                "variable {name}: no value of {label} saw traffic (offered {offered:?})"
            );
            let all = v["allValue"].as_str().unwrap_or(".*").to_owned();
            let mut picks = vec![all];
            picks.extend(active.iter().map(|f| regex_escape(f)));
            choices.push((name, picks));
        }
        // "All" everywhere, then each variable at each of its values (the others at All).
        let mut settings: Vec<Vec<(String, String)>> = vec![choices
            .iter()
            .map(|(n, picks)| (n.clone(), picks[0].clone()))
            .collect()];
        for (i, (_, picks)) in choices.iter().enumerate() {
            for pick in &picks[1..] {
                let mut s = settings[0].clone();
                s[i].1 = pick.clone();
                settings.push(s);
            }
        }
        for vars in &settings {
            for (title, expr) in &queries {
                let e = substitute(expr, vars, range_s);
                let data = prom.eval(&e, at);
                assert!(
                    has_data(&data),
                    "{}: panel {title:?} returns no data with {vars:?} at {} s into the \
                     run\n  query: {e}",
                    path.file_name().unwrap_or_default().to_string_lossy(),
                    range_s
                );
                checked += 1;
            }
        }
    }
    checked
}
