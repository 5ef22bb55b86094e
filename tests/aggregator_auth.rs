//! Who may read the aggregator's HTTP API, against the real binary (and the Redis of this
//! machine): with `--api-token-env VAR` (or `EVALFLEET_API_TOKEN_ENV`) every route but
//! `/healthz`, `/readyz` and `/metrics` requires `Authorization: Bearer <token>`; without a token
//! it binds loopback only, unless `--insecure-no-auth`, which it logs as a warning.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::fleet::Fleet;
use serde_json::Value;

const TOKEN: &str = "aggregator-test-token-5f2c9d";
const TOKEN_VAR: &str = "AGGREGATOR_TEST_API_TOKEN";

/// A port nothing listens on right now.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// One HTTP answer: status, headers (names lower-cased) and body.
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

/// `GET path` on localhost:`port` (each address it resolves to in turn: the aggregator may
/// listen on 127.0.0.1, ::1 or every address), with `Authorization: <authorization>` when given.
fn get(port: u16, path: &str, authorization: Option<&str>) -> std::io::Result<Answer> {
    let mut stream = TcpStream::connect(("localhost", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let auth = authorization
        .map(|a| format!("Authorization: {a}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: localhost:{port}\r\n{auth}Connection: close\r\n\r\n"
    )?;
    let mut raw = String::new();
    stream.read_to_string(&mut raw)?;
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {raw}"));
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Ok(Answer {
        status,
        headers,
        body: body.to_owned(),
    })
}

/// Waits until the aggregator `name` answers `/healthz` on `port`; panics with its log if it
/// exits or does not within 30 s.
fn wait_up(fleet: &mut Fleet, name: &str, port: u16) {
    let started = Instant::now();
    loop {
        if get(port, "/healthz", None).is_ok_and(|a| a.status == 200) {
            return;
        }
        assert!(fleet.alive(name), "{name} exited\n{}", fleet.log(name));
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{name} does not answer /healthz on {port}\n{}",
            fleet.log(name)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The run routes refuse a request without the token or with a wrong one, and serve it with
/// the right one; the probes and /metrics are open.
fn assert_token_required(port: u16, prefix: &str) {
    let bearer = format!("Bearer {TOKEN}");
    let protected = [
        "/runs".to_owned(),
        format!("/runs/{prefix}-none"),
        format!("/runs/{prefix}-none/report"),
        format!("/runs/{prefix}-a/compare/{prefix}-b"),
    ];
    for path in &protected {
        for auth in [
            None,
            Some("Bearer wrong-token"),
            Some(&format!("Bearer {TOKEN}x")[..]),
            Some(&format!("Basic {TOKEN}")[..]),
            Some(TOKEN),
        ] {
            let a = get(port, path, auth).expect("GET");
            assert_eq!(a.status, 401, "{path} with {auth:?}: {}", a.body);
            assert_eq!(a.header("www-authenticate"), Some("Bearer"), "{path}");
            assert_eq!(a.header("content-type"), Some("application/json"), "{path}");
            assert!(a.json()["error"].is_string(), "{path}: {}", a.body);
        }
    }
    let runs = get(port, "/runs", Some(&bearer)).expect("GET /runs");
    assert_eq!(runs.status, 200, "{}", runs.body);
    assert!(runs.json()["runs"].is_array(), "{}", runs.body);
    // Past the token, the route answers as ever: an unknown run is a 404.
    let unknown = get(port, &protected[1], Some(&bearer)).expect("GET /runs/{id}");
    assert_eq!(unknown.status, 404, "{}", unknown.body);
    for path in ["/healthz", "/readyz", "/metrics"] {
        let a = get(port, path, None).expect("GET");
        assert_eq!(a.status, 200, "{path} without a token: {}", a.body);
    }
    let metrics = get(port, "/metrics", None).expect("GET /metrics").body;
    assert!(metrics.contains("evalfleet_"), "{metrics}");
}

#[test]
fn with_api_token_env_the_api_requires_the_bearer_token_but_probes_and_metrics_do_not() {
    let mut fleet = Fleet::new("");
    fleet.env.push((TOKEN_VAR.into(), TOKEN.into()));
    let port = free_port();
    fleet.spawn(
        "agg",
        &[
            "aggregator",
            "--http-addr",
            &format!("127.0.0.1:{port}"),
            "--api-token-env",
            TOKEN_VAR,
        ],
    );
    wait_up(&mut fleet, "agg", port);
    assert_token_required(port, &fleet.prefix);
    assert!(
        !fleet.log("agg").contains(TOKEN),
        "the token is never logged\n{}",
        fleet.log("agg")
    );
}

#[test]
fn the_env_form_requires_the_token_and_a_token_allows_any_address() {
    let mut fleet = Fleet::new("");
    fleet.env.push((TOKEN_VAR.into(), TOKEN.into()));
    fleet
        .env
        .push(("EVALFLEET_API_TOKEN_ENV".into(), TOKEN_VAR.into()));
    let port = free_port();
    fleet.spawn(
        "agg",
        &["aggregator", "--http-addr", &format!("0.0.0.0:{port}")],
    );
    wait_up(&mut fleet, "agg", port);
    assert_token_required(port, &fleet.prefix);
    assert!(
        !fleet.log("agg").contains("insecure"),
        "{}",
        fleet.log("agg")
    );
}

#[test]
fn without_a_token_an_address_that_is_not_loopback_is_refused() {
    let fleet = Fleet::new("");
    let port = free_port();
    for addr in [format!("0.0.0.0:{port}"), format!("[::]:{port}")] {
        let out = fleet.run(
            &["aggregator", "--http-addr", &addr],
            Duration::from_secs(30),
        );
        out.assert_code(2);
        for needle in ["--api-token-env", "--insecure-no-auth", "not loopback"] {
            assert!(
                out.stderr.contains(needle),
                "{addr}: the refusal names {needle}\n{}",
                out.stderr
            );
        }
    }
    // EVALFLEET_INSECURE_NO_AUTH=false is no permission.
    let mut fleet = fleet;
    fleet
        .env
        .push(("EVALFLEET_INSECURE_NO_AUTH".into(), "false".into()));
    let out = fleet.run(
        &["aggregator", "--http-addr", &format!("0.0.0.0:{port}")],
        Duration::from_secs(30),
    );
    out.assert_code(2);
    assert!(out.stderr.contains("not loopback"), "{}", out.stderr);
}

#[test]
fn a_missing_or_empty_token_variable_is_bad_input_naming_it() {
    let mut fleet = Fleet::new("");
    let port = free_port();
    let args = [
        "aggregator",
        "--http-addr",
        &format!("127.0.0.1:{port}"),
        "--api-token-env",
        TOKEN_VAR,
    ];
    let missing = fleet.run(&args, Duration::from_secs(30));
    missing.assert_code(2);
    assert!(
        missing.stderr.contains(TOKEN_VAR) && missing.stderr.contains("not set"),
        "{}",
        missing.stderr
    );
    fleet.env.push((TOKEN_VAR.into(), String::new()));
    let empty = fleet.run(&args, Duration::from_secs(30));
    empty.assert_code(2);
    assert!(
        empty.stderr.contains(TOKEN_VAR) && empty.stderr.contains("empty"),
        "{}",
        empty.stderr
    );
    // A token and --insecure-no-auth together: one of them is a mistake.
    fleet.env.pop();
    fleet.env.push((TOKEN_VAR.into(), TOKEN.into()));
    let mut both = args.to_vec();
    both.push("--insecure-no-auth");
    let both = fleet.run(&both, Duration::from_secs(30));
    both.assert_code(2);
    assert!(
        both.stderr.contains("--insecure-no-auth"),
        "{}",
        both.stderr
    );
}

#[test]
fn insecure_no_auth_serves_a_non_loopback_address_open_and_warns_once() {
    let mut fleet = Fleet::new("");
    let port = free_port();
    fleet.spawn(
        "agg",
        &[
            "aggregator",
            "--http-addr",
            &format!("0.0.0.0:{port}"),
            "--insecure-no-auth",
        ],
    );
    wait_up(&mut fleet, "agg", port);
    let runs = get(port, "/runs", None).expect("GET /runs");
    assert_eq!(runs.status, 200, "{}", runs.body);
    let log = fleet.log("agg");
    let warnings: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("WARN") && l.contains("--insecure-no-auth"))
        .collect();
    assert_eq!(warnings.len(), 1, "one warning at start\n{log}");
    assert!(
        warnings[0].contains("without authentication"),
        "{}",
        warnings[0]
    );
}

#[test]
fn without_a_token_loopback_needs_none_and_a_host_name_is_resolved() {
    let mut fleet = Fleet::new("");
    let port = free_port();
    fleet.spawn(
        "agg",
        &["aggregator", "--http-addr", &format!("localhost:{port}")],
    );
    wait_up(&mut fleet, "agg", port);
    let runs = get(port, "/runs", None).expect("GET /runs");
    assert_eq!(runs.status, 200, "{}", runs.body);
    assert!(
        !fleet.log("agg").contains("insecure"),
        "{}",
        fleet.log("agg")
    );
}
