//! One stop mechanism, seen from outside: SIGTERM cancels the process's shutdown token, and
//! every loop under it (consumers, batch coordinator, the aggregator's fold and sweep, the HTTP
//! servers) stops within the deadline. Real worker and aggregator processes on the real
//! RabbitMQ and Redis, judges at the fake provider over sockets; whoever is stopped mid-run, the
//! run ends with every example exactly once.

mod common;

use std::time::{Duration, Instant};

use common::fake::{examples, write_dataset, FakeServer, LiveConfig, KEY_ENV};
use common::fleet::Fleet;
use common::u;
use evalfleet_fake_provider::FakeProviderArgs;
use serde_json::json;

const MODELS: [&str; 2] = ["gpt-4o", "claude-3-5-haiku-20241022"];
/// The fleet's `shutdown_deadline_s` (the harness's config), plus time to start and exit.
const STOP_WITHIN: Duration = Duration::from_secs(15);

fn fleet_at(fake: &FakeServer, judges: &LiveConfig) -> Fleet {
    let mut fleet = Fleet::new(&judges.yaml(fake.addr));
    fleet.env.push((KEY_ENV.to_owned(), fake.key.clone()));
    fleet
}

fn status(fleet: &Fleet, run: &str) -> String {
    let out = fleet.run(&["status", run], Duration::from_secs(30));
    out.assert_code(0);
    out.stdout
}

/// The only worker, which coordinates the run's batches, is sent SIGTERM while batches are
/// at the provider. It stops within the deadline; a second worker takes the lease over and
/// the run ends with every example once, and every question in exactly one batch.
#[test]
fn sigterm_stops_a_worker_coordinating_batches_and_nothing_is_lost_or_paid_twice() {
    const N: usize = 30;
    let fake = FakeServer::start(FakeProviderArgs {
        batch_processing_ms: 1_500,
        ..FakeProviderArgs::default()
    });
    let judges = LiveConfig {
        max_attempts: 8,
        extra: "  mode: batch\n  batch: {max_wait_s: 1, poll_s: 0.1, max_poll_s: 0.3, max_requests: 10}\n"
            .into(),
        ..LiveConfig::default()
    };
    let mut fleet = fleet_at(&fake, &judges);
    fleet
        .env
        .push(("EVALFLEET_FLEET__BATCH_LEASE_S".into(), "2".into()));
    fleet.worker("w1", 19751);
    fleet.aggregator("agg", 19760);
    let run_id = format!("{}-stop-coordinator", fleet.prefix);
    let data = write_dataset(fleet.dir.path(), &examples(N, &MODELS));
    fleet.submit(&data, &run_id, &["--judge", "live"]);

    let started = Instant::now();
    while !status(&fleet, &run_id).contains("batches of ") {
        assert!(started.elapsed() < Duration::from_secs(30), "no batch sent");
        std::thread::sleep(Duration::from_millis(100));
    }
    let took = fleet.terminate("w1", STOP_WITHIN);
    let log = fleet.log("w1");
    assert!(log.contains("worker stopped"), "{took:?}\n{log}");

    fleet.worker("w2", 19752);
    let report = fleet.wait_report(&run_id, Duration::from_secs(120));
    fleet.assert_exactly(&run_id, &report, N as u64);
    assert_eq!(report["totals"]["failed"], 0, "{}", report["failed"]);
    let ledger = &fake.stats()["batches"];
    for p in ["openai", "anthropic"] {
        assert_eq!(ledger[p]["repeated_custom_ids"], json!([]), "{ledger}");
    }
    let requests: u64 = ["openai", "anthropic"]
        .iter()
        .map(|p| u(&ledger[*p], "requests"))
        .sum();
    assert_eq!(
        requests,
        2 * N as u64,
        "each question in one batch: {ledger}"
    );
}

/// The aggregator is sent SIGTERM while results stream in: it stops at once (its fold and
/// sweep, its queue-depth poller and its HTTP API under one token), and the next aggregator
/// picks up where it left, writing a report with every example once.
#[test]
fn sigterm_stops_the_aggregator_mid_run_and_the_next_one_finishes_it() {
    const N: usize = 120;
    let fake = FakeServer::start(FakeProviderArgs {
        latency_ms: 40,
        ..FakeProviderArgs::default()
    });
    let mut fleet = fleet_at(&fake, &LiveConfig::default());
    fleet.aggregator("agg1", 19770);
    let run_id = format!("{}-stop-aggregator", fleet.prefix);
    let data = write_dataset(fleet.dir.path(), &examples(N, &MODELS));
    fleet.submit(&data, &run_id, &["--judge", "live"]);
    fleet.spawn(
        "w1",
        &["worker", "-j", "2", "--metrics-addr", "127.0.0.1:19771"],
    );
    fleet.wait_done(&run_id, 10, Duration::from_secs(60));
    assert!(fleet.done(&run_id) < N as u64, "the run is still going");

    let took = fleet.terminate("agg1", Duration::from_secs(5));
    let log = fleet.log("agg1");
    assert!(log.contains("aggregator stopped"), "{took:?}\n{log}");
    assert!(
        !common::listening("127.0.0.1:19770"),
        "the HTTP API stopped with it"
    );

    fleet.aggregator("agg2", 19772);
    let report = fleet.wait_report(&run_id, Duration::from_secs(120));
    fleet.assert_exactly(&run_id, &report, N as u64);
    assert_eq!(report["totals"]["failed"], 0, "{}", report["failed"]);
}
