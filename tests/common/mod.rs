//! Helpers shared by the CLI integration tests: running the `evalfleet` binary (with a time
//! limit, a clean environment and captured output), reading the four report files, and checking
//! that their numbers agree with each other.
#![allow(dead_code)]

pub mod fake;
pub mod fleet;
pub mod served;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The crate root: `evalfleet` runs from here so `examples/` and `config/` resolve.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `n` support tickets without answers (`{id: t<i>, ticket}`): records a chat target answers.
#[allow(dead_code)] // not every test binary has a target
pub fn tickets(n: usize) -> Vec<serde_json::Value> {
    (0..n)
        .map(|i| serde_json::json!({"id": format!("t{i}"), "ticket": format!("Ticket {i}: the VPN drops")}))
        .collect()
}

/// The first `n` bundled rag-layers items without their traces: questions for a target (the
/// fake's demo agent) to answer.
#[allow(dead_code)] // not every test binary has a target
pub fn questions(n: usize) -> Vec<serde_json::Value> {
    std::fs::read_to_string(root().join("examples/rag-layers.jsonl"))
        .expect("the bundled rag-layers items")
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .take(n)
        .map(|l| {
            let mut r: serde_json::Value = serde_json::from_str(l).expect("a bundled item");
            r.as_object_mut().map(|r| r.remove("trace"));
            r
        })
        .collect()
}

/// Records as JSONL.
#[allow(dead_code)]
pub fn jsonl(records: &[serde_json::Value]) -> String {
    records.iter().map(|r| format!("{r}\n")).collect()
}

/// Exit code (None when killed by a signal or the time limit) and captured output.
#[derive(Debug)]
pub struct Output {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub timed_out: bool,
}

impl Output {
    /// Fails unless the process exited by itself, without a panic message.
    pub fn assert_no_panic(&self) {
        assert!(
            !self.timed_out,
            "the process hit the time limit\nstderr: {}",
            self.stderr
        );
        assert!(
            self.code.is_some(),
            "the process was killed by a signal\nstderr: {}",
            self.stderr
        );
        assert!(
            !self.stderr.contains("panicked"),
            "the process panicked:\n{}",
            self.stderr
        );
    }

    /// Fails unless the exit code is `code`, showing the output otherwise.
    pub fn assert_code(&self, code: i32) {
        self.assert_no_panic();
        assert_eq!(
            self.code,
            Some(code),
            "unexpected exit code\nstdout: {}\nstderr: {}",
            self.stdout,
            self.stderr
        );
    }
}

/// Runs `cmd` to completion, killing its whole process group after `limit`.
pub fn run_with_timeout(mut cmd: Command, limit: Duration) -> Output {
    use std::os::unix::process::CommandExt;
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = pipe.read_to_end(&mut buf);
            String::from_utf8_lossy(&buf).into_owned()
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("stdout is piped")));
    let err = drain(Box::new(child.stderr.take().expect("stderr is piped")));
    let start = Instant::now();
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for the child") {
            break status;
        }
        if start.elapsed() > limit {
            timed_out = true;
            // The child leads its own process group: end it and anything it started.
            let _ = Command::new("kill")
                .arg("-KILL")
                .arg("--")
                .arg(format!("-{}", child.id()))
                .status();
            let _ = child.kill();
            break child.wait().expect("waiting for the killed child");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        code: status.code(),
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
        timed_out,
    }
}

/// Runs `evalfleet ARGS` from the crate root with no `EVALFLEET_*` overrides from the caller's
/// environment, within two minutes.
pub fn evalfleet(args: &[&str]) -> Output {
    evalfleet_with_env(args, &[])
}

/// [`evalfleet`] with these environment variables set.
pub fn evalfleet_with_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_evalfleet"));
    cmd.args(args).current_dir(root()).env_remove("RUST_LOG");
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("EVALFLEET_") {
            cmd.env_remove(key);
        }
    }
    cmd.envs(env.iter().copied());
    run_with_timeout(cmd, Duration::from_secs(120))
}

/// `evalfleet run DATASET --suite SUITE --out OUT EXTRA...`.
pub fn run_suite(dataset: &Path, suite: &str, out: &Path, extra: &[&str]) -> Output {
    let (dataset, out) = (
        dataset.to_str().expect("utf-8 path"),
        out.to_str().expect("utf-8 path"),
    );
    let mut args = vec!["run", dataset, "--suite", suite, "--out", out];
    args.extend_from_slice(extra);
    evalfleet(&args)
}

/// The RabbitMQ management API the queue-depth and observability tests read.
pub const MANAGEMENT_ADDR: &str = "127.0.0.1:15672";

/// Whether something listens on `addr` (within a second).
pub fn listening(addr: &str) -> bool {
    addr.parse()
        .is_ok_and(|a| std::net::TcpStream::connect_timeout(&a, Duration::from_secs(1)).is_ok())
}

/// Whether `test` can run: true when what it needs is `present`. Otherwise it prints why the
/// test is skipped and how to get `what` (`fix`), and returns false — except under `CI=true`,
/// where a missing dependency fails the test (`.ci/run` provides every one).
pub fn available(test: &str, what: &str, present: bool, fix: &str) -> bool {
    if present {
        return true;
    }
    let why = format!("{test}: SKIPPED — {what} is not available ({fix})");
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{why}; CI must run this test (.ci/run provides it)"
    );
    eprintln!("{why}");
    false
}

/// A Python that imports `modules` (e.g. `"scipy, numpy"`): EVALFLEET_SCIPY_PYTHON (`.ci/run`
/// makes a venv with scipy, numpy and pyarrow and sets it), else target/scipy-venv's.
pub fn python_with(modules: &str) -> Option<PathBuf> {
    let candidate = std::env::var_os("EVALFLEET_SCIPY_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/scipy-venv/bin/python"));
    let ok = Command::new(&candidate)
        .args(["-c", &format!("import {modules}")])
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then_some(candidate)
}

/// [`available`] for the RabbitMQ management API.
pub fn management_available(test: &str) -> bool {
    available(
        test,
        "the RabbitMQ management API on 127.0.0.1:15672",
        listening(MANAGEMENT_ADDR),
        "rabbitmq-plugins enable rabbitmq_management",
    )
}

pub fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("evalfleet-it-")
        .tempdir()
        .expect("creating a temporary directory")
}

pub fn read_json(path: &Path) -> Value {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// Records of a JSONL file as the product counts them: lines that are neither blank nor `#`
/// comments (after leading whitespace).
pub fn count_jsonl_records(path: &Path) -> u64 {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    String::from_utf8_lossy(&bytes)
        .lines()
        .filter(|l| {
            let t = l.trim();
            !t.is_empty() && !t.starts_with('#')
        })
        .count() as u64
}

pub fn u(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("'{key}' is not an unsigned integer in {v}"))
}

/// The report's per-example list: `results` for support-judge (and suites extending it under
/// another name), `items` otherwise.
pub fn items(report: &Value) -> &Vec<Value> {
    let suite = report["run"]["suite"].as_str().expect("run.suite");
    let key = if suite == "support-judge" || report.get("results").is_some() {
        "results"
    } else {
        "items"
    };
    report[key]
        .as_array()
        .unwrap_or_else(|| panic!("report.json has no '{key}' array"))
}

/// An attribute of the first `<tag ...>` element in an XML text.
pub fn xml_attr(xml: &str, tag: &str, attr: &str) -> String {
    let open = format!("<{tag} ");
    let start = xml
        .find(&open)
        .unwrap_or_else(|| panic!("no <{tag}> in the XML"));
    let end = start + xml[start..].find('>').expect("unterminated tag");
    let head = &xml[start..end];
    let key = format!(" {attr}=\"");
    let at = head
        .find(&key)
        .unwrap_or_else(|| panic!("<{tag}> has no {attr}=: {head}"))
        + key.len();
    head[at..at + head[at..].find('"').expect("unterminated attribute")].to_owned()
}

fn xml_num(xml: &str, tag: &str, attr: &str) -> u64 {
    xml_attr(xml, tag, attr)
        .parse()
        .unwrap_or_else(|e| panic!("<{tag} {attr}> is not a count: {e}"))
}

/// The line of `text` that starts with `prefix`.
pub fn line_starting<'a>(text: &'a str, prefix: &str) -> &'a str {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starting with {prefix:?} in:\n{text}"))
}

/// The four report files of one run, parsed.
pub struct Reports {
    pub json: Value,
    pub summary: String,
    pub html: String,
    pub junit: String,
}

pub fn read_reports(dir: &Path) -> Reports {
    for name in ["report.json", "summary.md", "report.html", "junit.xml"] {
        assert!(
            dir.join(name).is_file(),
            "{name} is missing from {}",
            dir.display()
        );
    }
    let text = |name: &str| {
        std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("reading {name}: {e}"))
    };
    Reports {
        json: read_json(&dir.join("report.json")),
        summary: text("summary.md"),
        html: text("report.html"),
        junit: text("junit.xml"),
    }
}

/// Reads the reports in `dir` and checks that report.json, summary.md and junit.xml tell the
/// same story (counts, passes, dataset order) and that the exit code matches the run gates.
pub fn check_consistent(dir: &Path, exit: &Output) -> Reports {
    let r = read_reports(dir);
    let t = &r.json["totals"];
    let (examples, ok, failed, skipped) = (
        u(t, "examples"),
        u(t, "ok"),
        u(t, "failed"),
        u(t, "skipped"),
    );
    assert_eq!(examples, ok + failed + skipped, "totals do not add up: {t}");

    let list = items(&r.json);
    assert_eq!(list.len() as u64, ok, "one report.json item per ok example");
    let indices: Vec<u64> = list.iter().map(|i| u(i, "index")).collect();
    assert!(
        indices.windows(2).all(|w| w[0] < w[1]),
        "items are not in dataset order: {indices:?}"
    );
    let passed = list
        .iter()
        .filter(|i| i["passed"] == Value::Bool(true))
        .count() as u64;
    assert_eq!(
        r.json["skipped"].as_array().expect("skipped list").len() as u64,
        skipped
    );
    assert_eq!(
        r.json["failed"].as_array().expect("failed list").len() as u64,
        failed
    );

    let line = line_starting(&r.summary, "| Examples |");
    assert_eq!(
        line,
        format!("| Examples | {examples} (ok {ok}, failed {failed}, skipped {skipped}) |")
    );
    let line = line_starting(&r.summary, "| Passed |");
    let want = format!("| Passed | {passed} of {} (", ok + failed);
    assert!(
        line.starts_with(&want),
        "summary.md says {line:?}, report.json items say {want:?}"
    );

    // The first test suite is the items' (then the run gates' and the groups'); a run this
    // size lists every item.
    let tag = "testsuite";
    assert_eq!(xml_num(&r.junit, tag, "tests"), examples, "<{tag} tests>");
    assert_eq!(xml_num(&r.junit, tag, "errors"), failed, "<{tag} errors>");
    assert_eq!(
        xml_num(&r.junit, tag, "skipped"),
        skipped,
        "<{tag} skipped>"
    );
    assert_eq!(
        xml_num(&r.junit, tag, "failures"),
        ok - passed,
        "<{tag} failures> = ok − passed"
    );
    let items_suite = &r.junit[..r.junit.find("</testsuite>").expect("a test suite")];
    assert_eq!(
        items_suite.matches("<testcase ").count() as u64,
        examples,
        "one <testcase> per example"
    );
    assert_eq!(
        items_suite.matches("<failure ").count() as u64,
        ok - passed,
        "<failure> elements"
    );
    assert_eq!(
        r.junit.matches("<skipped ").count() as u64,
        skipped,
        "<skipped> elements"
    );
    assert_eq!(
        r.junit.matches("<error ").count() as u64,
        failed,
        "<error> elements"
    );

    let gates_passed = r.json["gates"]["passed"]
        .as_bool()
        .expect("gates.passed is a bool");
    assert_eq!(
        exit.code,
        Some(if gates_passed { 0 } else { 1 }),
        "exit code vs gates.passed = {gates_passed}\n{}",
        exit.stderr
    );
    r
}

/// `(position, reason)` of each `skipped` entry, where position is the `line` (JSONL) or
/// `index` (JSON array) value, checking that each entry has exactly the expected kind.
pub fn skipped_entries(report: &Value, position_key: &str) -> Vec<(u64, String)> {
    let other = if position_key == "line" {
        "index"
    } else {
        "line"
    };
    report["skipped"]
        .as_array()
        .expect("skipped list")
        .iter()
        .map(|s| {
            assert!(
                s.get(other).is_none(),
                "skipped entry has '{other}' instead of '{position_key}': {s}"
            );
            (
                u(s, position_key),
                s["reason"]
                    .as_str()
                    .unwrap_or_else(|| panic!("no reason in {s}"))
                    .to_owned(),
            )
        })
        .collect()
}
