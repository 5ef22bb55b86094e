//! A finished fleet run served by an aggregator that requires an API token: the item API's
//! integration test and the viewer's browser test read it. The run is a generated
//! support-judge dataset with records that are skipped (bad JSON, a missing field, a repeated
//! id), evaluated by a real `submit --wait` through RabbitMQ, a worker, Redis and the
//! aggregator; `rows` are the same items as `evalfleet export --format jsonl` writes them.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::fleet::Fleet;

pub const TOKEN: &str = "items-api-test-token-7c1e20";
pub const TOKEN_VAR: &str = "ITEMS_API_TEST_TOKEN";

pub struct Served {
    pub fleet: Fleet,
    /// The aggregator's HTTP port.
    pub port: u16,
    pub run: String,
    /// `evalfleet export RUN --format jsonl`, parsed.
    pub rows: Vec<Value>,
}

/// A port nothing listens on right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// `records` generated support-judge examples and three that are skipped, run to completion.
pub fn served(records: u64) -> Served {
    let mut fleet = Fleet::new("");
    fleet.env.push((TOKEN_VAR.into(), TOKEN.into()));
    let port = free_port();
    fleet.worker("w1", free_port());
    let addr = format!("127.0.0.1:{port}");
    fleet.spawn(
        "agg",
        &[
            "aggregator",
            "--http-addr",
            &addr,
            "--api-token-env",
            TOKEN_VAR,
        ],
    );
    let data = fleet.generate("support-judge", records, 7);
    let first = std::fs::read_to_string(&data)
        .expect("generated")
        .lines()
        .next()
        .expect("a record")
        .to_owned();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&data)
        .expect("dataset");
    writeln!(file, "{{\"id\": \"broken\", ").expect("append");
    writeln!(
        file,
        "{{\"id\": \"no-response\", \"ticket\": \"Where is my refund?\"}}"
    )
    .expect("append");
    writeln!(file, "{first}").expect("append");
    let run = format!("{}-items", fleet.prefix);
    let data = data.to_str().expect("utf-8 path").to_owned();
    let submit = fleet.run(
        &["submit", &data, "--run-id", &run, "--wait"],
        Duration::from_secs(300),
    );
    submit.assert_no_panic();
    assert!(
        matches!(submit.code, Some(0 | 1)),
        "submit --wait: {submit:?}\n{}",
        fleet.log("agg")
    );
    let export = fleet.run(
        &["export", &run, "--format", "jsonl"],
        Duration::from_secs(60),
    );
    export.assert_code(0);
    let rows: Vec<Value> = (export.stdout.lines())
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(rows.len() as u64, records + 3, "every result is a row");
    let started = Instant::now();
    while !get(port, "/healthz", None).is_ok_and(|a| a.0 == 200) {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "aggregator down"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    Served {
        fleet,
        port,
        run,
        rows,
    }
}

/// `GET path` on 127.0.0.1:`port`, with `Authorization: <authorization>` when given: the status
/// and the body.
pub fn get(port: u16, path: &str, authorization: Option<&str>) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let auth = authorization
        .map(|a| format!("Authorization: {a}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{auth}Connection: close\r\n\r\n"
    )?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = (head.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    Ok((status, body.to_owned()))
}

/// `s` percent-encoded for a query string.
pub fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
