//! Infrastructure faults in fleet mode (docs/DESIGN.md §3, §4, §8) on the real RabbitMQ and Redis:
//! a broker restart, a Redis restart, an aggregator killed mid-run, poison messages and two
//! aggregators at once. Each run ends with exactly N results, none twice (the report's totals,
//! its items in strictly increasing index order, and the Redis counts).
//!
//! Restarting RabbitMQ affects the broker every test here shares: that test takes [`BROKER`]
//! for itself (the others hold it shared), and a guard brings the broker back even when the
//! test fails. Redis is never restarted: the Redis test runs its own `redis-server`.
//! Provider faults (429 storms, fleet-wide rate limits) are in `fleet_faults_judges.rs`.

mod common;

use std::process::Command;
use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant};

use common::fake::{FakeServer, LiveConfig, KEY_ENV};
use common::fleet::{example, first_difference, Fleet, PrivateRedis};
use evalfleet_fake_provider::FakeProviderArgs;

/// Held exclusively by tests that take the shared broker away, shared by every other test.
static BROKER: RwLock<()> = RwLock::new(());

fn broker_shared() -> RwLockReadGuard<'static, ()> {
    BROKER.read().unwrap_or_else(PoisonError::into_inner)
}

fn broker_exclusive() -> RwLockWriteGuard<'static, ()> {
    BROKER.write().unwrap_or_else(PoisonError::into_inner)
}

/// Runs `rabbitmqctl ARGS`, retrying a few times (the CLI itself can time out on a busy
/// machine); the last failure's output otherwise.
fn rabbitmqctl(args: &[&str]) -> Result<(), String> {
    let mut last = String::new();
    for _ in 0..3 {
        match Command::new("rabbitmqctl").args(args).output() {
            Ok(out) if out.status.success() => return Ok(()),
            Ok(out) => {
                last = format!(
                    "rabbitmqctl {args:?}: {}\n{}{}",
                    out.status,
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                )
            }
            Err(e) => last = format!("rabbitmqctl {args:?}: {e}"),
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    Err(last)
}

/// Starts the RabbitMQ application again when dropped — also when the test panics.
struct BrokerUp;

impl Drop for BrokerUp {
    fn drop(&mut self) {
        if let Err(e) = rabbitmqctl(&["start_app"]).and(rabbitmqctl(&["await_startup"])) {
            eprintln!("bringing RabbitMQ back failed: {e}");
        }
    }
}

#[test]
fn restarting_rabbitmq_mid_run_loses_and_duplicates_nothing() {
    const N: u64 = 2000;
    let _broker = broker_exclusive();
    // Live judges answering in 20 ms and 8 examples at a time per worker: the run lasts
    // several seconds whatever the machine's speed, so the restart lands mid-run.
    let fake = FakeServer::start(FakeProviderArgs {
        latency_ms: 20,
        ..FakeProviderArgs::default()
    });
    let mut fleet = Fleet::new(&LiveConfig::default().yaml(fake.addr));
    fleet.env.push((KEY_ENV.to_owned(), fake.key.clone()));
    // Dropped before the fleet, so the fleet's cleanup finds the broker up.
    let _up = BrokerUp;
    for (name, addr) in [("w1", "127.0.0.1:19601"), ("w2", "127.0.0.1:19602")] {
        fleet.spawn(name, &["worker", "--metrics-addr", addr, "-j", "8"]);
    }
    fleet.aggregator("agg", 19610);
    let data = fleet.generate("support-judge", N, 11);
    let run_id = format!("{}-rmq", fleet.prefix);
    fleet.submit(&data, &run_id, &["--judge", "live"]);

    fleet.wait_done(&run_id, N / 10, Duration::from_secs(60));
    rabbitmqctl(&["stop_app"]).expect("stopping RabbitMQ");
    let at_stop = fleet.done(&run_id);
    assert!(at_stop < N, "the broker went away mid-run ({at_stop}/{N})");
    std::thread::sleep(Duration::from_secs(2));
    rabbitmqctl(&["start_app"]).expect("starting RabbitMQ");

    let report = fleet.wait_report(&run_id, Duration::from_secs(90));
    fleet.assert_exactly(&run_id, &report, N);
    assert_eq!(report["totals"]["failed"], 0, "{}", report["failed"]);
    for role in ["w1", "w2", "agg"] {
        assert!(
            fleet.alive(role),
            "{role} must ride out the restart\n{}",
            fleet.log(role)
        );
    }
    // The other worker may have finished the run while this one's backoff (up to 5 s) was
    // still sleeping: give it that long to come back.
    for worker in ["w1", "w2"] {
        assert!(
            fleet.wait_log(worker, "reconnected to RabbitMQ", Duration::from_secs(15)),
            "{worker} reconnected by itself\n{}",
            fleet.log(worker)
        );
    }
}

#[test]
fn restarting_redis_mid_run_loses_and_duplicates_nothing() {
    const N: u64 = 6000;
    let _broker = broker_shared();
    let mut redis = PrivateRedis::start();
    let url = redis.url();
    let mut fleet = Fleet::new("");
    fleet.redis_port = redis.port;
    for (name, port) in [("w1", "19621"), ("w2", "19622")] {
        let addr = format!("127.0.0.1:{port}");
        fleet.spawn(
            name,
            &["worker", "--metrics-addr", &addr, "--redis-url", &url],
        );
    }
    fleet.spawn(
        "agg",
        &[
            "aggregator",
            "--http-addr",
            "127.0.0.1:19630",
            "--redis-url",
            &url,
        ],
    );
    let data = fleet.generate("support-judge", N, 12);
    let run_id = format!("{}-redis", fleet.prefix);
    fleet.submit(&data, &run_id, &["--redis-url", &url]);

    fleet.wait_done(&run_id, N / 10, Duration::from_secs(60));
    redis.shutdown();
    std::thread::sleep(Duration::from_secs(2));
    redis.spawn();
    let after_restart = fleet.done(&run_id);
    assert!(
        after_restart < N,
        "Redis went away mid-run ({after_restart}/{N})"
    );

    let report = fleet.wait_report(&run_id, Duration::from_secs(90));
    fleet.assert_exactly(&run_id, &report, N);
    let status = fleet.run(
        &["status", &run_id, "--redis-url", &url],
        Duration::from_secs(60),
    );
    assert!(
        status.stdout.contains(&format!("progress {N}/{N}")),
        "{}\n{}",
        status.stdout,
        status.stderr
    );
    for role in ["w1", "w2", "agg"] {
        assert!(
            fleet.alive(role),
            "{role} must ride out the Redis restart\n{}",
            fleet.log(role)
        );
    }
}

#[test]
fn restarting_the_aggregator_mid_run_gives_the_embedded_aggregates() {
    const N: u64 = 5000;
    let _broker = broker_shared();
    let mut fleet = Fleet::new("");
    fleet.worker("w1", 19641);
    fleet.worker("w2", 19642);
    fleet.aggregator("agg1", 19650);
    let data = fleet.generate("support-judge", N, 13);
    let run_id = format!("{}-agg", fleet.prefix);
    fleet.submit(&data, &run_id, &[]);

    fleet.wait_done(&run_id, N / 5, Duration::from_secs(60));
    fleet.signal("agg1", 9);
    let at_kill = fleet.done(&run_id);
    assert!(at_kill < N, "the aggregator died mid-run ({at_kill}/{N})");
    fleet.aggregator("agg2", 19651);

    let report = fleet.wait_report(&run_id, Duration::from_secs(90));
    fleet.assert_exactly(&run_id, &report, N);
    let embedded = fleet.embedded_aggregates(&data);
    assert_eq!(
        first_difference(&report["aggregates"], &embedded, "aggregates"),
        None,
        "the restarted aggregator's aggregates equal the embedded run's"
    );
}

/// Publishes raw bodies to the fleet's work exchange, as a foreign or broken producer would.
fn publish_raw(prefix: &str, bodies: &[(&str, &[u8])]) {
    use evalfleet_fleet::amqp::{declare_topology, testing};
    use lapin::options::{BasicPublishOptions, ConfirmSelectOptions};
    use lapin::BasicProperties;

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let mut cfg = testing::unique_config("poison");
        cfg.prefix = prefix.to_owned();
        let (conn, channel) = testing::raw_channel(&cfg).await.expect("a raw channel");
        declare_topology(&channel, &cfg).await.expect("topology");
        channel
            .confirm_select(ConfirmSelectOptions::default())
            .await
            .expect("confirms");
        for (id, body) in bodies {
            let confirm = channel
                .basic_publish(
                    cfg.exchange().into(),
                    cfg.routing_key().into(),
                    BasicPublishOptions {
                        mandatory: true,
                        ..BasicPublishOptions::default()
                    },
                    body,
                    BasicProperties::default()
                        .with_message_id((*id).into())
                        .with_delivery_mode(2),
                )
                .await
                .expect("publish")
                .await
                .expect("confirm");
            assert!(confirm.is_ack(), "{id} confirmed: {confirm:?}");
            assert!(confirm.take_message().is_none(), "{id} was routed");
        }
        let _ = conn.close(200, "done".into()).await;
    });
}

#[test]
fn poison_messages_go_to_the_dead_letter_queue_and_the_run_completes() {
    let _broker = broker_shared();
    let mut fleet = Fleet::new("");
    fleet.worker("w1", 19661);
    fleet.worker("w2", 19662);
    fleet.aggregator("agg", 19670);
    let (garbage, shapeless, orphan) = (
        b"this is not json {{{".as_slice(),
        br#"{"v":1,"hello":"world"}"#.as_slice(),
        concat!(
            r#"{"v":2,"run_id":"no-such-run","index":0,"suite":"support-judge","example":"#,
            r#"{"support":{"id":"a","ticket":"t","response":"r","model":"gpt-4o","#,
            r#""prompt_version":"v1","provider":"openai"}}}"#
        )
        .as_bytes(),
    );
    publish_raw(
        &fleet.prefix,
        &[
            ("poison-garbage", garbage),
            ("poison-shapeless", shapeless),
            ("poison-orphan", orphan),
        ],
    );

    let run_id = format!("{}-poison", fleet.prefix);
    let data = example("support-judge.jsonl");
    let submitted = fleet.run(
        &[
            "submit",
            data.to_str().expect("utf-8 path"),
            "--run-id",
            &run_id,
            "--wait",
        ],
        Duration::from_secs(60),
    );
    submitted.assert_no_panic();
    let report = fleet.wait_report(&run_id, Duration::from_secs(30));
    fleet.assert_exactly(&run_id, &report, 120);

    // Dead-lettering is asynchronous: look until all three are there.
    let started = Instant::now();
    let listing = loop {
        let dlq = fleet.run(&["dlq", "list"], Duration::from_secs(60));
        dlq.assert_code(0);
        if dlq.stdout.contains("3 dead-lettered messages shown")
            || started.elapsed() > Duration::from_secs(15)
        {
            break dlq.stdout;
        }
        std::thread::sleep(Duration::from_millis(300));
    };
    assert!(
        listing.contains("3 dead-lettered messages shown"),
        "{listing}"
    );
    for body in [garbage, shapeless, orphan] {
        // The listing shortens long bodies.
        let text = String::from_utf8_lossy(&body[..body.len().min(80)]);
        assert!(listing.contains(text.as_ref()), "{text} in\n{listing}");
    }
    assert!(
        listing.contains("reason rejected"),
        "rejected by the workers\n{listing}"
    );

    let status = fleet.run(&["status", &run_id], Duration::from_secs(60));
    status.assert_code(0);
    assert!(
        status.stdout.contains("status Complete") && status.stdout.contains("progress 120/120"),
        "{}",
        status.stdout
    );
    assert!(
        status
            .stdout
            .contains("dead-lettered messages of this run: 0"),
        "{}",
        status.stdout
    );
    for role in ["w1", "w2"] {
        assert!(fleet.alive(role), "{role}\n{}", fleet.log(role));
    }
}

#[test]
fn two_aggregators_write_the_report_exactly_once() {
    const N: u64 = 2000;
    let _broker = broker_shared();
    let mut fleet = Fleet::new("");
    fleet.aggregator("agg1", 19690);
    fleet.aggregator("agg2", 19691);
    fleet.worker("w1", 19681);
    fleet.worker("w2", 19682);
    let data = fleet.generate("support-judge", N, 14);
    let run_id = format!("{}-two", fleet.prefix);
    fleet.submit(&data, &run_id, &[]);

    let report = fleet.wait_report(&run_id, Duration::from_secs(90));
    fleet.assert_exactly(&run_id, &report, N);
    // Both sweep for complete runs every second: give the other one time to (wrongly) finish
    // the run a second time.
    std::thread::sleep(Duration::from_secs(3));
    let finished: Vec<usize> = ["agg1", "agg2"]
        .iter()
        .map(|agg| {
            fleet
                .log(agg)
                .lines()
                .filter(|l| l.contains("run complete") && l.contains(&run_id))
                .count()
        })
        .collect();
    let mut sorted = finished.clone();
    sorted.sort_unstable();
    assert_eq!(
        sorted,
        [0, 1],
        "exactly one aggregator finished the run, once (agg1, agg2): {finished:?}"
    );
    for agg in ["agg1", "agg2"] {
        assert!(fleet.alive(agg), "{agg} is still up\n{}", fleet.log(agg));
    }
    let embedded = fleet.embedded_aggregates(&data);
    assert_eq!(
        first_difference(&report["aggregates"], &embedded, "aggregates"),
        None
    );
}

/// Everything at once, bounded: a live-judged run through three workers while the fake
/// provider answers 5% 429s, 5% 500s and 5% malformed bodies, workers are killed with SIGKILL
/// and restarted, the broker closes every connection, Redis kills its clients and pauses, and
/// the aggregator is killed and replaced. The run ends with exactly N examples, none twice,
/// each scored as an embedded run of the same data scores it.
#[test]
fn chaos_loses_and_duplicates_nothing_and_scores_as_embedded() {
    const N: u64 = 400;
    let _broker = broker_exclusive();
    let fake = FakeServer::start(FakeProviderArgs {
        latency_ms: 60,
        fault_429: 0.05,
        fault_500: 0.05,
        fault_malformed: 0.05,
        fault_retry_after_ms: 50,
        ..FakeProviderArgs::default()
    });
    let cfg = LiveConfig {
        max_attempts: 12,
        base_delay_ms: 5,
        max_delay_ms: 100,
        ..LiveConfig::default()
    };
    let redis = PrivateRedis::start();
    let url = redis.url();
    let mut fleet = Fleet::new(&cfg.yaml(fake.addr));
    fleet.env.push((KEY_ENV.to_owned(), fake.key.clone()));
    fleet.redis_port = redis.port;
    let worker = |fleet: &mut Fleet, name: &str, port: u16| {
        let addr = format!("127.0.0.1:{port}");
        fleet.spawn(
            name,
            &[
                "worker",
                "-j",
                "4",
                "--metrics-addr",
                &addr,
                "--redis-url",
                &url,
            ],
        );
    };
    let aggregator = |fleet: &mut Fleet, name: &str, port: u16| {
        let addr = format!("127.0.0.1:{port}");
        fleet.spawn(
            name,
            &["aggregator", "--http-addr", &addr, "--redis-url", &url],
        );
    };
    for (name, port) in [("w1", 19661), ("w2", 19662), ("w3", 19663)] {
        worker(&mut fleet, name, port);
    }
    aggregator(&mut fleet, "agg1", 19670);
    let data = fleet.generate("support-judge", N, 21);
    let run_id = format!("{}-chaos", fleet.prefix);
    fleet.submit(&data, &run_id, &["--judge", "live", "--redis-url", &url]);

    let redis_port = redis.port.to_string();
    let redis_cli = |args: &[&str]| {
        let port = &redis_port;
        let out = Command::new("redis-cli")
            .args(["-p", port])
            .args(args)
            .output()
            .expect("redis-cli");
        assert!(out.status.success(), "redis-cli {args:?}: {out:?}");
    };
    let step =
        |fleet: &Fleet, k: u64| fleet.wait_done(&run_id, N * k / 10, Duration::from_secs(120));
    step(&fleet, 1);
    fleet.signal("w1", 9);
    worker(&mut fleet, "w1", 19664);
    step(&fleet, 2);
    rabbitmqctl(&["close_all_connections", "evalfleet chaos test"]).expect("closing connections");
    step(&fleet, 3);
    redis_cli(&["CLIENT", "KILL", "TYPE", "normal"]);
    step(&fleet, 4);
    redis_cli(&["CLIENT", "PAUSE", "1500", "ALL"]);
    step(&fleet, 5);
    fleet.signal("agg1", 9);
    aggregator(&mut fleet, "agg2", 19671);
    step(&fleet, 6);
    fleet.signal("w2", 9);
    worker(&mut fleet, "w2", 19665);
    step(&fleet, 7);
    fleet.signal("w3", 9);
    let at_last_kill = fleet.done(&run_id);
    assert!(
        at_last_kill < N,
        "the chaos ended before the run ({at_last_kill}/{N})"
    );
    worker(&mut fleet, "w3", 19666);

    let report = fleet.wait_report(&run_id, Duration::from_secs(180));
    fleet.assert_exactly(&run_id, &report, N);
    assert_eq!(
        report["totals"]["ok"], N,
        "every fault was retried to an answer: {}",
        report["failed"]
    );
    for role in ["w1", "w2", "w3", "agg2"] {
        assert!(
            fleet.alive(role),
            "{role} rides out the broker and Redis faults\n{}",
            fleet.log(role)
        );
    }
    let stats = fake.stats();
    for status in ["429", "500"] {
        assert!(
            stats["by_status"][status].as_u64().unwrap_or(0) > 0,
            "the fake injected {status}s: {stats}"
        );
    }

    // The same data, embedded, against the same fake: the same verdict for every example.
    let embedded = fleet.embedded_report(&data, &["--judge", "live"]);
    let scores =
        |report: &serde_json::Value| -> Vec<(String, serde_json::Value, serde_json::Value)> {
            common::items(report)
                .iter()
                .map(|r| {
                    (
                        r["id"].as_str().unwrap_or("").to_owned(),
                        r["relevance"]["score"].clone(),
                        r["tone"]["score"].clone(),
                    )
                })
                .collect()
        };
    assert_eq!(scores(&report).len() as u64, N);
    assert_eq!(scores(&report), scores(&embedded));
}

/// A target run whose worker is killed with SIGKILL mid-run: the replacement generates the
/// redelivered examples from the replies the cache kept as they arrived, so the target is asked
/// again at most for the calls that were in flight at the kill (here 8, the worker's
/// concurrency), and the run ends with every example exactly once.
#[test]
fn a_worker_killed_mid_target_run_repeats_at_most_its_calls_in_flight() {
    const N: u64 = 240;
    const CONCURRENCY: u64 = 8;
    let _broker = broker_shared();
    let fake = FakeServer::start(FakeProviderArgs {
        latency_ms: 40,
        ..FakeProviderArgs::default()
    });
    let mut fleet = Fleet::new(&LiveConfig::default().yaml(fake.addr));
    fleet.env.push((KEY_ENV.to_owned(), fake.key.clone()));
    let target = fleet.dir.path().join("bot.yaml");
    std::fs::write(
        &target,
        "name: bot\nkind: chat\nprovider: openai\nmodel: gpt-bot-1\n\
         prompt: \"{{ ticket }}\"\nparams: {temperature: 0}\noutput: response\n\
         model_field: model\nset: {prompt_version: \"bot-v1\"}\n",
    )
    .unwrap();
    let j = CONCURRENCY.to_string();
    fleet.spawn(
        "w1",
        &["worker", "-j", &j, "--metrics-addr", "127.0.0.1:19681"],
    );
    fleet.aggregator("agg", 19690);
    let data = fleet.generate("support-judge", N, 17);
    let run_id = format!("{}-target-kill", fleet.prefix);
    fleet.submit(
        &data,
        &run_id,
        &["--target", target.to_str().unwrap(), "--judge", "live"],
    );
    fleet.wait_done(&run_id, N / 4, Duration::from_secs(60));
    fleet.signal("w1", 9);
    let at_kill = fleet.done(&run_id);
    assert!(at_kill < N, "the worker died mid-run ({at_kill}/{N})");
    fleet.spawn(
        "w2",
        &["worker", "-j", &j, "--metrics-addr", "127.0.0.1:19682"],
    );
    let report = fleet.wait_report(&run_id, Duration::from_secs(120));
    assert_eq!(report["totals"]["ok"], N, "{}", report["totals"]);
    // Generated tickets repeat: one request per distinct ticket, plus the calls in flight.
    let distinct: std::collections::HashSet<String> = std::fs::read_to_string(&data)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|r| r["ticket"].to_string())
        .collect();
    let distinct = distinct.len() as u64;
    let asked = fake.stats()["by_model"]["openai/gpt-bot-1"]
        .as_u64()
        .unwrap_or(0);
    assert!(
        (distinct..=distinct + CONCURRENCY).contains(&asked),
        "the target was asked {asked} times for {distinct} distinct tickets"
    );
    let from_cache = common::items(&report)
        .iter()
        .filter(|i| i["target"]["attempts"] == 0)
        .count() as u64;
    assert!(
        from_cache >= N - distinct,
        "repeated tickets came from the cache ({from_cache})"
    );
}
