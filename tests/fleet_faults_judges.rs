//! Provider faults in fleet mode: live judges in `worker` processes against the project's fake
//! OpenAI + Anthropic server (in-process, ephemeral port), on the real RabbitMQ and Redis.
//! A provider answering 429 to everything for a while costs time, never an example; and three
//! workers sharing the fleet-wide rate limit (the GCRA in Redis) stay under it together.
//! Each run ends with exactly N results, none twice. Infrastructure faults are in
//! `fleet_faults.rs`.

mod common;

use std::time::{Duration, Instant};

use common::fake::{
    examples, other, provider_of, provider_status, status_count, total, write_dataset, FakeServer,
    LiveConfig, KEY_ENV,
};
use common::fleet::Fleet;
use evalfleet_fake_provider::{FakeProviderArgs, RateLimitMode};
use serde_json::json;

const MODELS: [&str; 2] = ["gpt-4o", "claude-3-5-haiku-20241022"];
const DIMS: [&str; 2] = ["relevance", "tone"];

/// A fleet whose judges point at `fake` (its key in every role's environment).
fn live_fleet(fake: &FakeServer, fleet_yaml: &str, cfg: &LiveConfig) -> Fleet {
    let mut fleet = Fleet::new(&format!("{fleet_yaml}{}", cfg.yaml(fake.addr)));
    fleet.env.push((KEY_ENV.to_owned(), fake.key.clone()));
    fleet
}

/// A fake enforcing `rpm` per provider over a sliding window, and a fleet configured with the
/// same limit, shared fleet-wide.
fn limited_fleet(rpm: u32) -> (FakeServer, Fleet) {
    let fake = FakeServer::start(FakeProviderArgs {
        rpm_openai: rpm,
        rpm_anthropic: rpm,
        rate_limit_mode: RateLimitMode::SlidingWindow,
        ..FakeProviderArgs::default()
    });
    let cfg = LiveConfig {
        rpm,
        ..LiveConfig::default()
    };
    let fleet = live_fleet(&fake, "  fleet_rate_limits: true\n", &cfg);
    (fake, fleet)
}

/// Publishes `n` support-judge examples for the live judges as run `run_id`.
fn submit_live(fleet: &Fleet, n: usize, run_id: &str) {
    let data = write_dataset(fleet.dir.path(), &examples(n, &MODELS));
    fleet
        .run(
            &[
                "submit",
                data.to_str().expect("utf-8 path"),
                "--judge",
                "live",
                "--run-id",
                run_id,
            ],
            Duration::from_secs(60),
        )
        .assert_code(0);
}

/// Every example ok, every dimension scored in 1..=5 by the other provider's judge.
fn assert_all_scored(report: &serde_json::Value, n: u64) {
    let t = &report["totals"];
    assert_eq!(
        (&t["ok"], &t["failed"], &t["unscored"]),
        (&json!(n), &json!(0), &json!(0)),
        "totals: {t}\nfailed: {}",
        report["failed"]
    );
    for r in common::items(report) {
        let judge = other(provider_of(r["model"].as_str().expect("model")));
        for dim in DIMS {
            let score = r[dim]["score"].as_i64().unwrap_or(0);
            assert!((1..=5).contains(&score), "{} {dim}: {}", r["id"], r[dim]);
            assert_eq!(r[dim]["judge"]["provider"], judge, "{}", r[dim]);
        }
    }
}

#[test]
fn a_provider_answering_429_for_a_while_costs_time_not_examples() {
    const N: u64 = 1500;
    let fake = FakeServer::start(FakeProviderArgs {
        latency_ms: 20,
        ..FakeProviderArgs::default()
    });
    let cfg = LiveConfig {
        base_delay_ms: 10,
        max_delay_ms: 200,
        ..LiveConfig::default()
    };
    let mut fleet = live_fleet(&fake, "", &cfg);
    fleet.worker("w1", 19701);
    fleet.worker("w2", 19702);
    fleet.aggregator("agg", 19710);
    let run_id = format!("{}-429", fleet.prefix);
    submit_live(&fleet, N as usize, &run_id);

    fleet.wait_done(&run_id, N / 5, Duration::from_secs(60));
    fake.admin(json!({"fault_429": 1.0}));
    std::thread::sleep(Duration::from_secs(2));
    fake.admin(json!({"fault_429": 0.0}));
    let after_storm = fleet.done(&run_id);
    assert!(
        after_storm < N,
        "the storm came mid-run ({after_storm}/{N})"
    );

    let report = fleet.wait_report(&run_id, Duration::from_secs(90));
    fleet.assert_exactly(&run_id, &report, N);
    assert_all_scored(&report, N);
    let stats = fake.stats();
    assert!(
        status_count(&stats, 429) > 0,
        "the fake answered 429s: {stats}"
    );
    assert_eq!(
        status_count(&stats, 200),
        N * DIMS.len() as u64,
        "one accepted call per judged dimension: {stats}"
    );
}

/// How much later than its grant in Redis a request may reach the fake (scheduling, sockets):
/// two arrivals can be this much closer together than their grants were.
const ARRIVAL_JITTER_MS: u64 = 50;

/// The most accepted requests in any window of the timeline (unix ms, ascending) beyond what a
/// GCRA of `burst` plus `per_s` per second allows, and where. Windows are widened by
/// [`ARRIVAL_JITTER_MS`]: three workers without a shared limit exceed it by a dozen and more.
fn worst_excess(times: &[u64], burst: f64, per_s: f64) -> (f64, String) {
    let mut worst = (f64::NEG_INFINITY, String::new());
    for i in 0..times.len() {
        for j in i..times.len() {
            let window_s = (times[j] - times[i] + ARRIVAL_JITTER_MS) as f64 / 1000.0;
            let count = (j - i + 1) as f64;
            let excess = count - (burst + per_s * window_s);
            if excess > worst.0 {
                worst = (
                    excess,
                    format!("{count} accepted in {window_s:.3} s from {}", times[i]),
                );
            }
        }
    }
    worst
}

#[test]
fn three_workers_sharing_a_fleet_limit_never_exceed_it_together() {
    const N: u64 = 75;
    const RPM: u32 = 600;
    let (fake, mut fleet) = limited_fleet(RPM);
    for (name, port) in [("w1", 19721), ("w2", 19722), ("w3", 19723)] {
        fleet.worker(name, port);
    }
    fleet.aggregator("agg", 19730);
    let run_id = format!("{}-limit", fleet.prefix);
    submit_live(&fleet, N as usize, &run_id);

    let report = fleet.wait_report(&run_id, Duration::from_secs(60));
    fleet.assert_exactly(&run_id, &report, N);
    assert_all_scored(&report, N);
    let stats = fake.stats();
    assert_eq!(status_count(&stats, 429), 0, "no 429 at all: {stats}");
    assert_eq!(total(&stats), N * DIMS.len() as u64, "{stats}");

    // The fleet's quota per provider: a burst of one second's worth, then RPM/60 per second.
    let (burst, per_s) = (f64::from(RPM / 60), f64::from(RPM) / 60.0);
    for provider in ["openai", "anthropic"] {
        let times = fake.timeline(provider);
        assert_eq!(
            times.len() as u64,
            provider_status(&stats, provider, 200),
            "{provider}"
        );
        let (excess, at) = worst_excess(&times, burst, per_s);
        assert!(
            excess <= 0.0,
            "{provider}: {at}, {excess:.2} over burst {burst} + {per_s}/s × window\n{times:?}"
        );
    }
}

/// A free port on 127.0.0.1.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// A worker's `evalfleet_worker_inflight` gauge, None while its metrics are not served.
fn inflight(port: u16) -> Option<u64> {
    let out = std::process::Command::new("curl")
        .args(["-sf", &format!("http://127.0.0.1:{port}/metrics")])
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("evalfleet_worker_inflight "))
        .and_then(|v| v.trim().parse().ok())
}

/// Polls `done` every 20 ms for up to `limit`; the time it took.
fn within(what: &str, limit: Duration, done: impl Fn() -> bool) -> Duration {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    started.elapsed()
}

/// Graceful shutdown hands work over: a worker holding a full prefetch (two examples in flight
/// at a slow provider, two waiting) is sent SIGTERM; it cancels its consumer first, so another
/// worker starts the two waiting examples within a second, while the first finishes its own.
#[test]
fn sigterm_gives_the_unstarted_prefetch_to_another_worker_at_once() {
    // Each judge call takes 5 s: w1's examples are mid-call throughout the hand-over.
    let fake = FakeServer::start(FakeProviderArgs {
        latency_ms: 5_000,
        ..FakeProviderArgs::default()
    });
    let mut fleet = live_fleet(&fake, "", &LiveConfig::default());
    let run_id = format!("{}-handover", fleet.prefix);
    let (p1, p2) = (free_port(), free_port());
    let metrics = |p: u16| format!("127.0.0.1:{p}");
    // Concurrency 2, so a prefetch of 4: the whole run.
    let first = fleet.spawn("w1", &["worker", "-j", "2", "--metrics-addr", &metrics(p1)]);
    submit_live(&fleet, 4, &run_id);
    within("w1 judging two examples", Duration::from_secs(30), || {
        inflight(p1) == Some(2)
    });
    // The second worker is up and idle: nothing is ready, w1 holds all four.
    fleet.spawn("w2", &["worker", "-j", "2", "--metrics-addr", &metrics(p2)]);
    within("w2 serving its metrics", Duration::from_secs(10), || {
        inflight(p2).is_some()
    });
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(inflight(p2), Some(0), "w2 found nothing to take");

    let _ = std::process::Command::new("kill")
        .args(["-15", &first.to_string()])
        .status();
    let took = within(
        "w2 starting the two examples w1 had not started",
        Duration::from_secs(1),
        || inflight(p2) == Some(2),
    );
    assert_eq!(
        inflight(p1),
        Some(2),
        "w1 is still finishing its own two ({took:?} after SIGTERM)"
    );
    fleet.wait_done(&run_id, 4, Duration::from_secs(60));
    let started = Instant::now();
    while fleet.alive("w1") {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "w1 exits after finishing its examples"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(fleet.counts(&run_id), (4, 0, 0));
    assert!(fleet.log("w1").contains("shutdown requested"));
    // Each example judged once per dimension: nothing was started twice.
    assert_eq!(total(&fake.stats()), 8, "{}", fake.stats());
}

/// A chat target and the judges on one provider share its quota: three workers, 3,000
/// requests/minute between target calls and judge calls, reach at least 95% of it in their
/// steady state, and fewer than 0.5% of the calls are answered 429.
#[test]
fn a_target_and_the_judges_share_one_provider_quota() {
    const N: u64 = 330;
    const RPM: u32 = 3000;
    let (fake, mut fleet) = limited_fleet(RPM);
    // The target asks OpenAI; its answers are recorded as a Claude model's, so the judges ask
    // OpenAI too: one quota for both.
    let target = fleet.dir.path().join("bot.yaml");
    std::fs::write(
        &target,
        "name: bot\nkind: chat\nprovider: openai\nmodel: gpt-4o-mini\n\
         prompt: \"{{ ticket }}\"\nparams: {temperature: 0.7}\noutput: response\n\
         set: {model: claude-3-5-haiku-20241022, prompt_version: bot-v1}\n",
    )
    .unwrap();
    for (name, port) in [("w1", 19741), ("w2", 19742), ("w3", 19743)] {
        fleet.worker(name, port);
    }
    fleet.aggregator("agg", 19750);
    let tickets: Vec<serde_json::Value> = (0..N)
        .map(|i| json!({"id": format!("t{i}"), "ticket": format!("Ticket {i}: the VPN drops every hour")}))
        .collect();
    let data = write_dataset(fleet.dir.path(), &tickets);
    let run_id = format!("{}-shared-quota", fleet.prefix);
    fleet
        .run(
            &[
                "submit",
                data.to_str().expect("utf-8 path"),
                "--judge",
                "live",
                "--target",
                target.to_str().unwrap(),
                "--run-id",
                &run_id,
            ],
            Duration::from_secs(60),
        )
        .assert_code(0);
    let report = fleet.wait_report(&run_id, Duration::from_secs(120));
    fleet.assert_exactly(&run_id, &report, N);
    assert_eq!(report["totals"]["ok"], N, "{}", report["totals"]);

    let stats = fake.stats();
    let calls = N * (1 + DIMS.len() as u64);
    assert_eq!(provider_status(&stats, "openai", 200), calls, "{stats}");
    assert_eq!(provider_status(&stats, "anthropic", 200), 0, "{stats}");
    let throttled = status_count(&stats, 429);
    assert!(
        (throttled as f64) < 0.005 * calls as f64,
        "{throttled} of {calls} answered 429: {stats}"
    );
    // The steady state (the middle 80% of the calls): at least 95% of the quota.
    let times = fake.timeline("openai");
    let (a, b) = (times.len() / 10, times.len() * 9 / 10);
    let per_s = (b - a) as f64 / ((times[b] - times[a]) as f64 / 1000.0);
    let quota = f64::from(RPM) / 60.0;
    assert!(
        per_s >= 0.95 * quota,
        "{per_s:.1} calls/s of a {quota:.0}/s quota"
    );
}
