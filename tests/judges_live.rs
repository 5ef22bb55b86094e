//! Live judges end to end over real sockets: the `evalfleet` binary judging support-judge
//! datasets against the project's fake OpenAI + Anthropic server (in-process, ephemeral port),
//! checked from both sides — the reports the run wrote and what the fake says it saw.
//!
//! Covered here: cross-provider routing, the judge cache, the budget, `--estimate`, a rejected
//! key stopping the run, the client's requests/minute limit, `Retry-After`, the API key never
//! leaking, and a panel of both providers with its agreement statistic. Injected faults are in
//! `judges_faults.rs`.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use common::fake::{
    example, examples, other, provider_of, provider_status, random_key, run_live, status_count,
    total, write_dataset, FakeServer, LiveConfig, KEY_ENV,
};
use common::{check_consistent, items, root, tempdir, u};
use evalfleet_fake_provider::{FakeProviderArgs, RateLimitMode};
use serde_json::{json, Value};

const BUNDLED: &str = "examples/support-judge.jsonl";
const SEED: &str = "tests/fixtures/seed-data/eval-harness/examples.json";
const DIMS: [&str; 2] = ["relevance", "tone"];

/// The records of a JSONL or JSON-array dataset under the crate root.
fn records(dataset: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(root().join(dataset)).expect("reading the dataset");
    if dataset.ends_with(".json") {
        serde_json::from_str::<Vec<Value>>(&text).expect("a JSON array")
    } else {
        text.lines()
            .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect()
    }
}

fn model_counts(records: &[Value]) -> BTreeMap<&'static str, u64> {
    let mut by = BTreeMap::new();
    for r in records {
        *by.entry(provider_of(r["model"].as_str().expect("model")))
            .or_default() += 1;
    }
    by
}

#[test]
fn cross_provider_routing_sends_each_answer_to_the_other_provider() {
    let fake = FakeServer::plain();
    let dir = tempdir();
    let config = fake.config(dir.path(), &LiveConfig::default());
    let out = dir.path().join("out");
    let run = run_live(
        Path::new(BUNDLED),
        &config,
        &out,
        &fake.key,
        &["-j", "8"],
        &[],
    );
    let reports = check_consistent(&out, &run);
    let by_provider = model_counts(&records(BUNDLED));
    let (openai_answers, claude_answers) = (by_provider["openai"], by_provider["anthropic"]);
    assert!(openai_answers > 0 && claude_answers > 0, "{by_provider:?}");

    // The fake saw each judge model exactly #dimensions × #answers of the other provider.
    let stats = fake.stats();
    let by_model = stats["by_model"].as_object().expect("by_model");
    let expected = json!({
        "openai/gpt-4o-mini": 2 * claude_answers,
        "anthropic/claude-sonnet-4-20250514": 2 * openai_answers,
    });
    assert_eq!(Value::Object(by_model.clone()), expected, "stats: {stats}");
    assert_eq!(status_count(&stats, 200), total(&stats), "{stats}");

    // Every dimension of every result was judged by the other provider's judge model.
    let json = &reports.json;
    assert_eq!(json["totals"]["ok"], json!(120));
    for r in items(json) {
        let model = r["model"].as_str().expect("model");
        let judge = other(provider_of(model));
        for dim in DIMS {
            assert_eq!(
                r[dim]["judge"]["provider"], judge,
                "{} {dim}: {}",
                r["id"], r[dim]
            );
            let score = r[dim]["score"].as_i64().unwrap_or(0);
            assert!((1..=5).contains(&score), "{} {dim}: {}", r["id"], r[dim]);
        }
        assert_eq!(r["attempts"], json!(2), "{r}");
    }
    assert_eq!(u(&json["judge"], "calls"), total(&stats));
    assert_eq!(json["judge"]["cache_hits"], json!(0));
}

#[test]
fn cache_answers_a_repeated_prompt_without_calling() {
    let fake = FakeServer::plain();
    let dir = tempdir();
    let (ticket, response) = (
        "Pods of billing-api restart every hour with OOMKilled.",
        "Raise the memory limit of billing-api and look for the leak in its heap profile.",
    );
    let dataset = write_dataset(
        dir.path(),
        &[
            example("first", "gpt-4o", ticket, response),
            example("again", "gpt-4o", ticket, response),
        ],
    );
    let cfg = LiveConfig {
        cache: true,
        ..LiveConfig::default()
    };
    let config = fake.config(dir.path(), &cfg);
    let out = dir.path().join("out");
    let run = run_live(&dataset, &config, &out, &fake.key, &["-j", "1"], &[]);
    let reports = check_consistent(&out, &run);

    let stats = fake.stats();
    assert_eq!(total(&stats), 2, "half the 4 judge questions: {stats}");
    let json = &reports.json;
    assert_eq!(json["judge"]["cache_hits"], json!(2), "{}", json["judge"]);
    assert_eq!(json["judge"]["calls"], json!(2), "{}", json["judge"]);
    let results = items(json);
    assert_eq!(results.len(), 2);
    for dim in DIMS {
        let (first, again) = (&results[0][dim], &results[1][dim]);
        assert!(first.get("cached").is_none(), "first {dim}: {first}");
        assert_eq!(again["cached"], json!(true), "again {dim}: {again}");
        assert_eq!(first["score"], again["score"], "{dim}");
        assert_eq!(first["reasoning"], again["reasoning"], "{dim}");
    }
    assert_eq!(results[1]["attempts"], json!(0), "{}", results[1]);
    assert_eq!(
        results[1]["usage"]["cost_usd"],
        json!(0.0),
        "{}",
        results[1]
    );
}

#[test]
fn budget_stops_judge_calls_once_spent() {
    let fake = FakeServer::plain();
    let dir = tempdir();
    // One call costs far more than the budget: about 400 tokens at $1000 per million.
    let cfg = LiveConfig {
        prices: vec![
            ("gpt-4o-mini", 1000.0, 1000.0),
            ("claude-sonnet-4-20250514", 1000.0, 1000.0),
        ],
        ..LiveConfig::default()
    };
    let config = fake.config(dir.path(), &cfg);
    let out = dir.path().join("out");
    let run = run_live(
        Path::new(SEED),
        &config,
        &out,
        &fake.key,
        &["-j", "1", "--budget", "0.000001"],
        &[],
    );
    let reports = check_consistent(&out, &run);

    let stats = fake.stats();
    // The first example's two questions go out at once; then the budget is spent.
    assert_eq!(
        total(&stats),
        2,
        "the first example's calls, then the budget is spent: {stats}"
    );
    let json = &reports.json;
    // Both calls were admitted before either was charged: the first example is scored.
    assert_eq!(json["totals"]["ok"], json!(1), "{}", json["totals"]);
    assert_eq!(
        items(json)[0]["attempts"],
        json!(2),
        "its calls are accounted for"
    );
    let failed = json["failed"].as_array().expect("failed list");
    assert_eq!(failed.len(), 2, "{failed:?}");
    for f in failed {
        assert_eq!(f["reason"], json!("budget exhausted"), "{f}");
        assert_eq!(f["attempts"], json!(0), "no call once it is spent: {f}");
    }
    assert!(
        json["judge"]["usage"]["cost_usd"].as_f64().unwrap_or(0.0) > 0.000001,
        "{}",
        json["judge"]
    );
}

#[test]
fn estimate_prints_the_projection_and_sends_nothing() {
    let fake = FakeServer::plain();
    let dir = tempdir();
    let config = fake.config(dir.path(), &LiveConfig::default());
    let out = dir.path().join("out");
    let run = run_live(
        Path::new(BUNDLED),
        &config,
        &out,
        &fake.key,
        &["--estimate"],
        &[],
    );
    run.assert_code(0);
    let stdout = &run.stdout;
    assert!(stdout.contains("nothing was sent"), "{stdout}");
    assert!(stdout.contains("120 examples to judge"), "{stdout}");
    let calls = |judge: &str| -> u64 {
        let line = stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(judge))
            .unwrap_or_else(|| panic!("no '{judge}' row in:\n{stdout}"));
        line.split_whitespace()
            .nth(1)
            .expect("calls")
            .parse()
            .expect("a count")
    };
    let by_provider = model_counts(&records(BUNDLED));
    assert_eq!(calls("total"), 120 * 2, "{stdout}");
    assert_eq!(
        calls("anthropic/claude-sonnet-4-20250514"),
        2 * by_provider["openai"]
    );
    assert_eq!(calls("openai/gpt-4o-mini"), 2 * by_provider["anthropic"]);
    assert_eq!(total(&fake.stats()), 0, "the fake saw a request");
    assert!(!out.exists(), "an estimate writes no report");
}

#[test]
fn rejected_key_stops_the_run_quickly() {
    let fake = FakeServer::plain();
    let dir = tempdir();
    let config = fake.config(dir.path(), &LiveConfig::default());
    let out = dir.path().join("out");
    let wrong = random_key();
    let started = Instant::now();
    let run = run_live(Path::new(BUNDLED), &config, &out, &wrong, &["-j", "4"], &[]);
    let took = started.elapsed();
    run.assert_code(2);
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert!(
        run.stderr.contains(KEY_ENV) && run.stderr.contains("rejected"),
        "stderr: {}",
        run.stderr
    );
    let stats = fake.stats();
    assert_eq!(status_count(&stats, 401), total(&stats), "{stats}");
    // At most one call per question of each concurrent example (4 × 2), plus a little slack:
    // not 240.
    assert!(
        (1..=10).contains(&total(&stats)),
        "the bad key burned {} requests: {stats}",
        total(&stats)
    );
}

#[test]
fn api_key_never_leaks_into_output_logs_or_reports() {
    let fake = FakeServer::plain();
    let dir = tempdir();
    let config = fake.config(dir.path(), &LiveConfig::default());
    let secret = |key: &str| key.trim_start_matches("sk-test-").to_owned();
    let debug = [("RUST_LOG", "debug")];

    // A good run: debug logs on, every report file written.
    let out = dir.path().join("ok");
    let run = run_live(Path::new(SEED), &config, &out, &fake.key, &[], &debug);
    check_consistent(&out, &run);
    assert!(run.stderr.contains("DEBUG"), "debug logging is on");
    let mut texts = vec![
        ("stdout".to_owned(), run.stdout.clone()),
        ("stderr".to_owned(), run.stderr.clone()),
    ];
    for entry in std::fs::read_dir(&out).expect("report dir") {
        let path = entry.expect("entry").path();
        let text = String::from_utf8_lossy(&std::fs::read(&path).expect("read")).into_owned();
        texts.push((path.display().to_string(), text));
    }
    for (name, text) in &texts {
        assert!(
            !text.contains(&secret(&fake.key)),
            "the API key appears in {name}"
        );
    }

    // A rejected key: the OpenAI 401 echoes a masked key; only claude answers, so the OpenAI
    // judge's error is the one that stops the run.
    let claude_only = dir.path().join("claude");
    std::fs::create_dir(&claude_only).expect("mkdir");
    let dataset = write_dataset(&claude_only, &examples(4, &["claude-3-5-haiku-20241022"]));
    let wrong = random_key();
    let out = dir.path().join("bad");
    let run = run_live(&dataset, &config, &out, &wrong, &[], &debug);
    run.assert_code(2);
    assert!(run.stderr.contains("HTTP 401"), "stderr: {}", run.stderr);
    assert!(
        run.stderr.contains("judge openai/gpt-4o-mini"),
        "stderr: {}",
        run.stderr
    );
    for (name, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
        assert!(
            !text.contains(&secret(&wrong)),
            "the rejected key appears in {name}: {text}"
        );
        assert!(
            !text.contains(&secret(&fake.key)),
            "the server key in {name}"
        );
    }
    if out.exists() {
        for entry in std::fs::read_dir(&out).expect("report dir") {
            let path = entry.expect("entry").path();
            let text = String::from_utf8_lossy(&std::fs::read(&path).expect("read")).into_owned();
            assert!(!text.contains(&secret(&wrong)), "key in {}", path.display());
        }
    }
}

#[test]
fn panel_of_both_providers_reports_agreement() {
    // Two fakes with different seeds, so the two judges disagree now and then (one fake would
    // give both the same score: its verdict is a function of the prompt alone).
    let fake = FakeServer::start(FakeProviderArgs {
        seed: 7,
        ..FakeProviderArgs::default()
    });
    let anthropic = FakeServer::start_keyed(
        FakeProviderArgs {
            seed: 8,
            wrap_rate: 0.0,
            ..FakeProviderArgs::default()
        },
        fake.key.clone(),
    );
    let dir = tempdir();
    let cfg = LiveConfig {
        panel: vec!["openai", "anthropic"],
        anthropic_at: Some(anthropic.addr),
        ..LiveConfig::default()
    };
    let config = fake.config(dir.path(), &cfg);
    let out = dir.path().join("out");
    let run = run_live(
        Path::new(BUNDLED),
        &config,
        &out,
        &fake.key,
        &["-j", "8"],
        &[],
    );
    let reports = check_consistent(&out, &run);
    assert_eq!(
        fake.stats()["by_model"],
        json!({"openai/gpt-4o-mini": 240}),
        "every dimension of every example asked OpenAI"
    );
    assert_eq!(
        anthropic.stats()["by_model"],
        json!({"anthropic/claude-sonnet-4-20250514": 240}),
        "every dimension of every example asked Anthropic"
    );
    let json = &reports.json;
    for dim in DIMS {
        // Cohen's kappa recomputed from the panel verdicts in the report.
        let mut confusion = [[0u64; 5]; 5];
        let mut disagreements = 0;
        for r in items(json) {
            let score = &r[dim];
            assert_eq!(score["judge"]["provider"], json!("ensemble"), "{score}");
            let panel = score["panel"].as_array().expect("panel verdicts");
            let providers: Vec<&str> = panel
                .iter()
                .map(|p| p["judge"]["provider"].as_str().expect("provider"))
                .collect();
            assert_eq!(providers, ["openai", "anthropic"], "{score}");
            let raw: Vec<i64> = panel
                .iter()
                .map(|p| p["score"].as_i64().expect("a panel score"))
                .collect();
            let mean = score["score"].as_f64().expect("ensemble score");
            assert!(
                (mean - (raw[0] + raw[1]) as f64 / 2.0).abs() < 1e-9,
                "{score}"
            );
            confusion[(raw[0] - 1) as usize][(raw[1] - 1) as usize] += 1;
            disagreements += u64::from(raw[0] != raw[1]);
        }
        assert!(disagreements > 0, "{dim}: the two judges always agreed");
        let n = 120.0;
        let observed = (0..5).map(|i| confusion[i][i]).sum::<u64>() as f64 / n;
        let expected: f64 = (0..5)
            .map(|i| {
                let row: u64 = confusion[i].iter().sum();
                let col: u64 = (0..5).map(|j| confusion[j][i]).sum();
                (row as f64 / n) * (col as f64 / n)
            })
            .sum();
        let want = (observed - expected) / (1.0 - expected);

        let a = &json["judge"]["agreement"][dim];
        assert_eq!(a["judges"], json!(2), "{dim}: {a}");
        assert_eq!(a["units"], json!(120), "{dim}: {a}");
        let kappa = a["kappa"]
            .as_f64()
            .unwrap_or_else(|| panic!("no kappa for {dim}: {a}"));
        assert!(
            (kappa - want).abs() < 1e-9,
            "{dim}: kappa {kappa}, recomputed {want}"
        );
        assert!(a["alpha"].is_f64(), "{dim}: {a}");
    }
}

#[test]
fn client_rate_limit_is_never_exceeded() {
    // The fake enforces 600 requests/minute per provider in a strict sliding window; the client
    // is configured with the same limit and 8 examples at once pushing on it.
    const RPM: u32 = 600;
    let fake = FakeServer::start(FakeProviderArgs {
        rpm_openai: RPM,
        rpm_anthropic: RPM,
        rate_limit_mode: RateLimitMode::SlidingWindow,
        ..FakeProviderArgs::default()
    });
    let dir = tempdir();
    let cfg = LiveConfig {
        rpm: RPM,
        max_attempts: 1,
        ..LiveConfig::default()
    };
    let config = fake.config(dir.path(), &cfg);
    // 20 answers from claude: 40 calls, all to the OpenAI judge.
    let dataset = write_dataset(dir.path(), &examples(20, &["claude-sonnet-4-20250514"]));
    let out = dir.path().join("out");
    let run = run_live(&dataset, &config, &out, &fake.key, &["-j", "8"], &[]);
    let reports = check_consistent(&out, &run);
    assert_eq!(reports.json["totals"]["ok"], json!(20));

    let stats = fake.stats();
    assert_eq!(status_count(&stats, 429), 0, "{stats}");
    assert_eq!(provider_status(&stats, "openai", 200), 40, "{stats}");

    // In every window [t_i, t_j] of accepted arrivals: count ≤ burst + rate × width, with one
    // request of slack for timestamp granularity. Bursting the 40 calls would break it at once.
    let times = fake.timeline("openai");
    assert_eq!(times.len(), 40);
    let burst = f64::from(RPM / 60);
    let per_ms = f64::from(RPM) / 60_000.0;
    for i in 0..times.len() {
        for j in i..times.len() {
            let count = (j - i + 1) as f64;
            let width = (times[j] - times[i]) as f64;
            assert!(
                count <= burst + 1.0 + per_ms * width,
                "{count} requests within {width} ms (limit {RPM}/min, burst {burst}): {times:?}"
            );
        }
    }
    // And the limiter did not crawl: 30 steady calls at ~10/s take about 3 s.
    let span = times[times.len() - 1] - times[0];
    assert!(span < 6_000, "{span} ms for 40 calls");
}

/// One example judged at `-j 1`: the fake answers 429 with a retry-after of `wait_ms` until
/// the test sees the first 429 and heals it. No request may arrive before the wait elapsed.
fn retry_after_is_honoured(model: &str, judge: &str, wait_ms: u64) {
    let fake = FakeServer::start(FakeProviderArgs {
        fault_429: 1.0,
        fault_retry_after_ms: wait_ms,
        ..FakeProviderArgs::default()
    });
    let dir = tempdir();
    let cfg = LiveConfig {
        max_attempts: 5,
        base_delay_ms: 5,
        max_delay_ms: 20,
        ..LiveConfig::default()
    };
    let config = fake.config(dir.path(), &cfg);
    let dataset = write_dataset(dir.path(), &examples(1, &[model]));
    let out = dir.path().join("out");

    let addr = fake.addr;
    let healer = std::thread::spawn(move || {
        let started = Instant::now();
        while status_count(&common::fake::get(addr, "/stats"), 429) == 0 {
            assert!(started.elapsed() < Duration::from_secs(30), "no 429 seen");
            std::thread::sleep(Duration::from_millis(5));
        }
        common::fake::admin(addr, json!({"fault_429": 0.0}));
    });
    let run = run_live(&dataset, &config, &out, &fake.key, &["-j", "1"], &[]);
    healer.join().expect("the healer thread");
    let reports = check_consistent(&out, &run);
    assert_eq!(reports.json["totals"]["ok"], json!(1));

    let stats = fake.stats();
    // The example's two questions go out at once: one or both are answered 429 before the
    // fault is lifted.
    let throttled = provider_status(&stats, judge, 429);
    assert!((1..=2).contains(&throttled), "{stats}");
    assert_eq!(provider_status(&stats, judge, 200), 2, "{stats}");
    // `first_request_unix_ms` is when the fake answered the 429; every later request was a 200
    // and is on the timeline with its arrival time.
    let first_429 = u(&stats, "first_request_unix_ms");
    let accepted = fake.timeline(judge);
    assert_eq!(accepted.len(), 2);
    let gap = accepted[0] - first_429;
    assert!(
        gap >= wait_ms,
        "the retry came {gap} ms after the 429, before its retry-after of {wait_ms} ms"
    );
    assert!(gap < wait_ms + 2_000, "the retry waited {gap} ms");
    assert_eq!(items(&reports.json)[0]["attempts"], json!(2 + throttled));
}

#[test]
fn retry_after_ms_is_honoured_by_the_openai_client() {
    // OpenAI 429s carry `retry-after-ms: 1500` (and `retry-after: 2`).
    retry_after_is_honoured("claude-3-5-haiku-20241022", "openai", 1_500);
}

#[test]
fn retry_after_is_honoured_by_the_anthropic_client() {
    // Anthropic 429s carry only `retry-after: 1` (whole seconds).
    retry_after_is_honoured("gpt-4o", "anthropic", 1_000);
}
