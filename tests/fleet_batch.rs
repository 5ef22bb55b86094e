//! Batch mode in the fleet: `submit --judge live --judge-mode batch` to `worker` processes on the
//! real RabbitMQ and Redis, against the fake's OpenAI Batch and Anthropic Message Batches APIs
//! over real sockets. Examples wait for their batches parked in Redis; one worker per provider
//! coordinates the batches under a lease. Whatever dies on the way — the coordinator at any
//! step, a worker, the aggregator — the run ends with exactly N results, none twice, and no
//! request went into a batch twice (the fake's ledger counts batch requests per custom_id).

mod common;

use std::time::{Duration, Instant};

use common::fake::{examples, total, write_dataset, FakeServer, LiveConfig, KEY_ENV};
use common::fleet::Fleet;
use common::u;
use evalfleet_fake_provider::FakeProviderArgs;
use serde_json::{json, Value};

const MODELS: [&str; 2] = ["gpt-4o", "claude-3-5-haiku-20241022"];
const DIMS: [&str; 2] = ["relevance", "tone"];

/// Judges at `fake` in batch mode, batches polled fast, sent after a short wait, with more
/// `judges.batch` settings `batch` (e.g. `max_requests: 7`); leases of 2 s so that a takeover
/// is quick. Eight attempts a question: with a fifth of the batch requests failing, a run of
/// 80 questions would exhaust five attempts on one of them in one run out of 40.
fn batch_fleet(fake: &FakeServer, batch: &str) -> Fleet {
    let cfg = LiveConfig {
        max_attempts: 8,
        extra: format!(
            "  mode: batch\n  batch: {{max_wait_s: 3, poll_s: 0.1, max_poll_s: 0.3, {batch}}}\n"
        ),
        ..LiveConfig::default()
    };
    let mut fleet = Fleet::new(&cfg.yaml(fake.addr));
    fleet.env.push((KEY_ENV.to_owned(), fake.key.clone()));
    fleet
        .env
        .push(("EVALFLEET_FLEET__BATCH_LEASE_S".into(), "2".into()));
    fleet
}

fn fake(args: FakeProviderArgs) -> FakeServer {
    FakeServer::start(FakeProviderArgs {
        batch_processing_ms: 400,
        ..args
    })
}

/// Writes `n` support-judge examples (half answered by each provider) and submits them.
fn submit(fleet: &Fleet, n: usize, run_id: &str) -> std::path::PathBuf {
    let data = write_dataset(fleet.dir.path(), &examples(n, &MODELS));
    fleet.submit(&data, run_id, &["--judge", "live"]);
    data
}

/// Every batch request went in once: per provider, as many requests as distinct custom_ids.
fn assert_paid_once(fake: &FakeServer) -> u64 {
    let stats = fake.stats();
    let ledger = &stats["batches"];
    let mut requests = 0;
    for p in ["openai", "anthropic"] {
        assert_eq!(ledger[p]["repeated_custom_ids"], json!([]), "{ledger}");
        assert_eq!(
            ledger[p]["requests"], ledger[p]["distinct_custom_ids"],
            "{ledger}"
        );
        requests += u(&ledger[p], "requests");
    }
    requests
}

fn status(fleet: &Fleet, run: &str) -> String {
    let out = fleet.run(&["status", run], Duration::from_secs(30));
    out.assert_code(0);
    out.stdout
}

#[test]
fn a_fleet_batch_run_scores_as_a_live_run_and_pays_each_request_once() {
    const N: usize = 60;
    let fake = fake(FakeProviderArgs::default());
    // At most 7 requests a batch: the run's 120 questions take many batches.
    let mut fleet = batch_fleet(&fake, "max_requests: 7");
    fleet.worker("w1", 19701);
    fleet.worker("w2", 19702);
    fleet.aggregator("agg", 19710);
    let run_id = format!("{}-batch", fleet.prefix);
    let data = fleet.dir.path().join("dataset.jsonl");
    submit(&fleet, N, &run_id);
    // Batch mode shows in status while the run goes.
    let started = Instant::now();
    while !status(&fleet, &run_id).contains("batches of anthropic:") {
        assert!(started.elapsed() < Duration::from_secs(30));
        std::thread::sleep(Duration::from_millis(200));
    }
    let report = fleet.wait_report(&run_id, Duration::from_secs(120));
    fleet.assert_exactly(&run_id, &report, N as u64);
    assert_eq!(report["totals"]["failed"], 0, "{}", report["failed"]);
    let seen = status(&fleet, &run_id);
    assert!(
        seen.contains("done ") && seen.contains("requests pending 0"),
        "{seen}"
    );
    assert!(
        seen.contains("examples waiting for batch results: 0"),
        "{seen}"
    );

    // No live call, every question in exactly one batch, and no batch over the limit.
    let stats = fake.stats();
    assert_eq!(total(&stats), 0, "live calls in a batch run: {stats}");
    let requests = assert_paid_once(&fake);
    assert_eq!(requests, 2 * N as u64);
    let openai = fake.api_get("/v1/batches?limit=100");
    for b in openai["data"].as_array().expect("data") {
        assert!(u(&b["request_counts"], "total") <= 7, "{b}");
    }

    // The same scores as a live run of the same data, at half the price.
    let live = fleet.embedded_report(&data, &["--judge", "live", "--judge-mode", "live"]);
    for (b, l) in common::items(&report).iter().zip(common::items(&live)) {
        assert_eq!(b["id"], l["id"]);
        for dim in DIMS {
            assert_eq!(b[dim]["score"], l[dim]["score"], "{} {dim}", b["id"]);
        }
    }
    assert_eq!(report["dimensions"], live["dimensions"]);
    let cost = |r: &Value| r["judge"]["usage"]["cost_usd"].as_f64().expect("cost");
    assert!(
        (cost(&report) - cost(&live) / 2.0).abs() < 1e-9,
        "batch {} vs live {}",
        cost(&report),
        cost(&live)
    );
}

/// The coordinator dies (as by `kill -9`) at `step`; a worker started afterwards takes its
/// lease over and finishes the run.
fn crash_at(step: &str, port: u16, n: usize, fake_args: FakeProviderArgs) {
    let fake = fake(fake_args);
    let mut fleet = batch_fleet(&fake, "max_requests: 25");
    let run_id = format!("{}-crash", fleet.prefix);
    fleet.env.push(("EVALFLEET_CRASH_AT".into(), step.into()));
    fleet.worker("doomed", port);
    fleet.env.pop();
    fleet.aggregator("agg", port + 1);
    submit(&fleet, n, &run_id);
    let started = Instant::now();
    while fleet.alive("doomed") {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the coordinator never reached {step}\n{}",
            fleet.log("doomed")
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        fleet.log("doomed").contains("EVALFLEET_CRASH_AT"),
        "{}",
        fleet.log("doomed")
    );
    fleet.worker("heir", port + 2);
    let report = fleet.wait_report(&run_id, Duration::from_secs(120));
    fleet.assert_exactly(&run_id, &report, n as u64);
    assert_eq!(
        report["totals"]["failed"], 0,
        "{step}: {}",
        report["failed"]
    );
    assert_paid_once(&fake);
    assert_eq!(total(&fake.stats()), 0, "{step}: no live calls");
    if step == "batch-created" {
        // The batch the dead coordinator created was adopted, not created again.
        assert!(
            fleet
                .log("heir")
                .contains("found a batch created before a crash"),
            "{}",
            fleet.log("heir")
        );
    }
}

#[test]
fn a_coordinator_killed_after_collecting_loses_and_repeats_nothing() {
    crash_at("batch-collected", 19721, 40, FakeProviderArgs::default());
}

#[test]
fn a_coordinator_killed_between_create_and_record_never_creates_twice() {
    crash_at("batch-created", 19724, 40, FakeProviderArgs::default());
}

#[test]
fn a_coordinator_killed_mid_poll_loses_and_repeats_nothing() {
    crash_at("batch-polled", 19727, 40, FakeProviderArgs::default());
}

#[test]
fn a_coordinator_killed_mid_download_loses_and_repeats_nothing() {
    // Errored and expired requests on the way: retried in later batches.
    crash_at(
        "batch-downloading",
        19780,
        40,
        FakeProviderArgs {
            batch_error_rate: 0.1,
            batch_expiry_rate: 0.1,
            ..FakeProviderArgs::default()
        },
    );
}

#[test]
fn fallback_live_answers_failed_batch_requests_once_each() {
    const N: usize = 30;
    // Every batch request comes back errored: each question is then asked live, once, though
    // its example is evaluated twice (the live reply is kept with the batch results).
    let fake = fake(FakeProviderArgs {
        batch_error_rate: 1.0,
        ..FakeProviderArgs::default()
    });
    let mut fleet = batch_fleet(&fake, "max_requests: 1000, fallback: live");
    fleet.worker("w1", 19771);
    fleet.worker("w2", 19772);
    fleet.aggregator("agg", 19775);
    let run_id = format!("{}-fallback", fleet.prefix);
    submit(&fleet, N, &run_id);
    let report = fleet.wait_report(&run_id, Duration::from_secs(120));
    fleet.assert_exactly(&run_id, &report, N as u64);
    assert_eq!(report["totals"]["failed"], 0, "{}", report["failed"]);
    assert_eq!(
        assert_paid_once(&fake),
        2 * N as u64,
        "each question in a batch once"
    );
    let stats = fake.stats();
    assert_eq!(
        total(&stats),
        2 * N as u64,
        "each question live once: {stats}"
    );
}

#[test]
fn killing_a_worker_and_restarting_the_aggregator_mid_run_count_every_example_once() {
    const N: usize = 150;
    let fake = fake(FakeProviderArgs::default());
    let mut fleet = batch_fleet(&fake, "max_requests: 20");
    fleet.worker("w1", 19741);
    fleet.worker("w2", 19742);
    fleet.aggregator("agg", 19750);
    let run_id = format!("{}-kill", fleet.prefix);
    submit(&fleet, N, &run_id);
    fleet.wait_done(&run_id, 20, Duration::from_secs(90));
    // Whichever holds the leases: one of them dies, the other takes over.
    fleet.signal("w1", 9);
    fleet.signal("agg", 9);
    fleet.aggregator("agg2", 19751);
    fleet.worker("w3", 19743);
    let report = fleet.wait_report(&run_id, Duration::from_secs(120));
    fleet.assert_exactly(&run_id, &report, N as u64);
    assert_eq!(report["totals"]["failed"], 0, "{}", report["failed"]);
    assert_paid_once(&fake);
}

#[test]
fn cancel_cancels_the_runs_provider_batches() {
    // Batches that take a minute: they are running when the run is cancelled.
    let fake = FakeServer::start(FakeProviderArgs {
        batch_processing_ms: 60_000,
        ..FakeProviderArgs::default()
    });
    let mut fleet = batch_fleet(&fake, "max_requests: 1000");
    fleet.worker("w1", 19761);
    let run_id = format!("{}-cancel", fleet.prefix);
    submit(&fleet, 20, &run_id);
    let running = |fleet: &Fleet| status(fleet, &run_id).matches("running ").count();
    let started = Instant::now();
    while running(&fleet) < 2 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{}\n{}",
            status(&fleet, &run_id),
            fleet.log("w1")
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let out = fleet.run(&["cancel", &run_id], Duration::from_secs(30));
    out.assert_code(0);
    assert!(
        out.stdout.contains("open provider batches"),
        "{}",
        out.stdout
    );
    let cancelled_at_fake = |fake: &FakeServer| {
        let openai = fake.api_get("/v1/batches?limit=100");
        let anthropic = fake.api_get("/v1/messages/batches?limit=100");
        let o = openai["data"]
            .as_array()
            .expect("data")
            .iter()
            .all(|b| ["cancelling", "cancelled"].contains(&b["status"].as_str().unwrap_or("")));
        let a = anthropic["data"].as_array().expect("data").iter().all(|b| {
            ["canceling", "ended"].contains(&b["processing_status"].as_str().unwrap_or(""))
                && !b["cancel_initiated_at"].is_null()
        });
        o && a
    };
    let started = Instant::now();
    while !cancelled_at_fake(&fake) {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{}\n{}",
            status(&fleet, &run_id),
            fleet.log("w1")
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let seen = status(&fleet, &run_id);
    assert!(seen.contains("cancelled "), "{seen}");
}

/// A target run whose judges are in batch mode, through the fleet, and whose target's provider
/// is live (its own `mode: live`): the workers ask the target live, once per example (its reply is kept in Redis beside the example's batch results while
/// the example is parked), even from a target that samples, and every judge question goes into
/// a batch once.
#[test]
fn a_fleet_target_run_with_batch_judges_asks_the_target_once_per_example() {
    const N: usize = 12;
    let fake = fake(FakeProviderArgs::default());
    let mut fleet = batch_fleet(&fake, "max_requests: 50");
    fleet
        .env
        .push(("EVALFLEET_PROVIDERS__OPENAI__MODE".into(), "live".into()));
    let target = fleet.dir.path().join("bot.yaml");
    std::fs::write(
        &target,
        "name: bot\nkind: chat\nprovider: openai\nmodel: gpt-4o-mini\n\
         prompt: \"{{ ticket }}\"\nparams: {temperature: 0.7}\noutput: response\n\
         set: {model: gpt-4o, prompt_version: bot-v1}\n",
    )
    .unwrap();
    fleet.worker("w1", 19781);
    fleet.worker("w2", 19782);
    fleet.aggregator("agg", 19790);
    let tickets = common::tickets(N);
    let data = write_dataset(fleet.dir.path(), &tickets);
    let run_id = format!("{}-target", fleet.prefix);
    fleet.submit(
        &data,
        &run_id,
        &["--judge", "live", "--target", target.to_str().unwrap()],
    );
    let report = fleet.wait_report(&run_id, Duration::from_secs(120));
    fleet.assert_exactly(&run_id, &report, N as u64);
    assert_eq!(report["totals"]["ok"], json!(N), "{}", report["totals"]);
    for item in common::items(&report) {
        assert_eq!(item["target"]["attempts"], json!(1), "{item}");
    }
    let stats = fake.stats();
    assert_eq!(
        total(&stats),
        N as u64,
        "live requests are the target's: {stats}"
    );
    assert_eq!(assert_paid_once(&fake), (N * DIMS.len()) as u64);
}

/// A chat target on a batch-mode provider, through the fleet: its generations go into the
/// provider's batches beside the judges' questions, each once, nothing goes live, and the
/// report is the embedded run's.
#[test]
fn a_fleet_target_run_generates_through_the_batches_as_the_embedded_run_does() {
    const N: usize = 10;
    let fake = fake(FakeProviderArgs::default());
    let mut fleet = batch_fleet(&fake, "max_requests: 50");
    let target = fleet.dir.path().join("bot.yaml");
    std::fs::write(
        &target,
        "name: bot\nkind: chat\nprovider: openai\nmodel: gpt-4o-mini\n\
         prompt: \"{{ ticket }}\"\nparams: {temperature: 0}\noutput: response\n\
         set: {model: gpt-4o, prompt_version: bot-v1}\n",
    )
    .unwrap();
    fleet.worker("w1", 19783);
    fleet.worker("w2", 19784);
    fleet.aggregator("agg", 19791);
    let tickets = common::tickets(N);
    let data = write_dataset(fleet.dir.path(), &tickets);
    let run_id = format!("{}-gen", fleet.prefix);
    let args = ["--judge", "live", "--target", target.to_str().unwrap()];
    fleet.submit(&data, &run_id, &args);
    let report = fleet.wait_report(&run_id, Duration::from_secs(120));
    fleet.assert_exactly(&run_id, &report, N as u64);
    assert_eq!(report["totals"]["ok"], json!(N), "{}", report["totals"]);
    let stats = fake.stats();
    assert_eq!(total(&stats), 0, "nothing live: {stats}");
    // N generations (openai) and N × 2 questions (anthropic), each once.
    assert_eq!(assert_paid_once(&fake), (N + N * DIMS.len()) as u64);
    assert_eq!(u(&stats["batches"]["openai"], "requests"), N as u64);

    let embedded = fleet.embedded_report(&data, &args);
    for (f, e) in common::items(&report).iter().zip(common::items(&embedded)) {
        assert_eq!(f["id"], e["id"]);
        assert_eq!(f["outputs"], e["outputs"], "the same answer");
        assert_eq!(f["target"]["cost_usd"], e["target"]["cost_usd"]);
        for dim in DIMS {
            assert_eq!(f[dim]["score"], e[dim]["score"], "{} {dim}", f["id"]);
        }
    }
    assert_eq!(report["aggregates"], embedded["aggregates"]);
}
