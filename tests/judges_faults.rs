//! Live judges under injected provider faults, over real sockets: the `evalfleet` binary judges
//! a small support-judge dataset (two answers per provider, so both judge clients are exercised)
//! against the fake provider with a fault switched on through `POST /admin/config`, and every
//! fault must end as designed (docs/DESIGN.md §2.5): transient ones are retried until scored, invalid
//! replies leave the dimension `unscored` with the reason, and non-retryable or exhausted
//! errors fail the example with the reason, the attempts and the last status.
//!
//! Runs use `-j 1`, so the fake's seeded per-request fault draws fall in the same order every
//! time and the counts below are exact, not probabilistic.

mod common;

use common::fake::{
    examples, other, provider_of, provider_status, run_live, status_count, total, write_dataset,
    FakeServer, LiveConfig,
};
use common::{check_consistent, items, tempdir, Reports};
use serde_json::{json, Value};

/// Examples in the dataset and judge dimensions of support-judge.
const EXAMPLES: u64 = 4;
const DIMS: [&str; 2] = ["relevance", "tone"];
/// Judge questions of one run: every dimension of every example.
const CALLS: u64 = EXAMPLES * DIMS.len() as u64;

/// Runs the 4-example dataset with `fault` applied to a fresh fake; returns the consistent
/// reports and the fake's stats.
fn run_with_fault(fault: Value, cfg: &LiveConfig, jobs: &str) -> (Reports, Value) {
    let fake = FakeServer::plain();
    fake.admin(fault);
    let dir = tempdir();
    let config = fake.config(dir.path(), cfg);
    // gpt-4o and claude answers alternate: judged by Anthropic and OpenAI in turn.
    let models = ["gpt-4o", "claude-3-5-haiku-20241022"];
    let dataset = write_dataset(dir.path(), &examples(EXAMPLES as usize, &models));
    let out = dir.path().join("out");
    let run = run_live(&dataset, &config, &out, &fake.key, &["-j", jobs], &[]);
    let reports = check_consistent(&out, &run);
    (reports, fake.stats())
}

/// Retries sized so that a 50% fault rate never exhausts them.
fn patient() -> LiveConfig {
    LiveConfig {
        max_attempts: 10,
        base_delay_ms: 5,
        max_delay_ms: 20,
        ..LiveConfig::default()
    }
}

/// Every example ok, every dimension scored in 1..=5 by the cross-provider judge.
fn assert_all_scored(reports: &Reports) {
    let json = &reports.json;
    assert_eq!(
        json["totals"],
        json!({"examples": EXAMPLES, "ok": EXAMPLES, "failed": 0, "skipped": 0, "unscored": 0})
    );
    for r in items(json) {
        let judge = other(provider_of(r["model"].as_str().expect("model")));
        for dim in DIMS {
            let s = &r[dim];
            let score = s["score"].as_i64().unwrap_or(0);
            assert!((1..=5).contains(&score), "{} {dim}: {s}", r["id"]);
            assert!(s.get("unscored").is_none(), "{s}");
            assert_eq!(s["judge"]["provider"], judge, "{s}");
        }
    }
}

/// A retryable fault at 50%: retried until every question is answered, and the report's
/// attempts agree with what the fake saw.
fn transient(fault: Value) -> (Reports, Value) {
    let (reports, stats) = run_with_fault(fault, &patient(), "1");
    assert_all_scored(&reports);
    let calls = reports.json["judge"]["calls"]
        .as_u64()
        .expect("judge.calls");
    assert_eq!(calls, total(&stats), "every request is an attempt: {stats}");
    assert!(total(&stats) > CALLS, "no fault was injected: {stats}");
    let attempts: u64 = items(&reports.json)
        .iter()
        .map(|r| r["attempts"].as_u64().expect("attempts"))
        .sum();
    assert_eq!(attempts, calls);
    (reports, stats)
}

#[test]
fn rate_limit_429_is_retried_and_scored() {
    let (_, stats) = transient(json!({"fault_429": 0.5, "fault_retry_after_ms": 0}));
    assert!(status_count(&stats, 429) > 0, "{stats}");
    assert_eq!(status_count(&stats, 200), CALLS, "{stats}");
    assert_eq!(
        status_count(&stats, 200) + status_count(&stats, 429),
        total(&stats)
    );
}

#[test]
fn rate_limit_429_with_a_short_retry_after_is_retried_and_scored() {
    // OpenAI: `retry-after-ms: 30`; Anthropic: `retry-after: 1` (whole seconds, rounded up).
    let (_, stats) = transient(json!({"fault_429": 0.3, "fault_retry_after_ms": 30}));
    assert!(status_count(&stats, 429) > 0, "{stats}");
    assert_eq!(status_count(&stats, 200), CALLS, "{stats}");
}

#[test]
fn server_error_500_is_retried_and_scored() {
    let (_, stats) = transient(json!({"fault_500": 0.5}));
    assert!(provider_status(&stats, "openai", 500) > 0, "{stats}");
    assert!(provider_status(&stats, "anthropic", 500) > 0, "{stats}");
    assert_eq!(status_count(&stats, 200), CALLS, "{stats}");
}

#[test]
fn overloaded_529_is_retried_and_scored() {
    // Anthropic says 529 overloaded_error; OpenAI says 503.
    let (_, stats) = transient(json!({"fault_529": 0.5}));
    assert!(provider_status(&stats, "anthropic", 529) > 0, "{stats}");
    assert_eq!(status_count(&stats, 200), CALLS, "{stats}");
    assert_eq!(
        status_count(&stats, 200) + status_count(&stats, 529) + status_count(&stats, 503),
        total(&stats)
    );
}

#[test]
fn malformed_body_is_retried_and_scored() {
    // A 200 whose body is cut in half: the fake counts it as a 200, so every request beyond
    // one per question was a malformed one.
    let (_, stats) = transient(json!({"fault_malformed": 0.5}));
    assert_eq!(status_count(&stats, 200), total(&stats), "{stats}");
}

/// A reply fault at 100%: the ask and its one re-ask are both invalid, so every dimension is
/// `unscored` with `reason_part` in its reason, and the examples are still `ok`.
fn unscored(fault: Value, reason_part: &str) {
    let (reports, stats) = run_with_fault(fault, &patient(), "1");
    let json = &reports.json;
    assert_eq!(
        json["totals"],
        json!({"examples": EXAMPLES, "ok": EXAMPLES, "failed": 0, "skipped": 0, "unscored": CALLS})
    );
    assert_eq!(json["judge"]["unscored"], json!(CALLS));
    for r in items(json) {
        for dim in DIMS {
            let s = &r[dim];
            assert_eq!(s["score"], Value::Null, "{s}");
            let reason = s["unscored"].as_str().unwrap_or_else(|| panic!("{s}"));
            assert!(reason.contains(reason_part), "{dim}: {reason}");
            assert!(reason.contains("re-ask"), "{dim}: {reason}");
        }
        assert_eq!(
            r["fail_tags"],
            json!([]),
            "an unscored judge is no model failure"
        );
        assert_eq!(r["attempts"], json!(4), "ask + re-ask per dimension: {r}");
    }
    assert_eq!(status_count(&stats, 200), 2 * CALLS, "{stats}");
    assert_eq!(total(&stats), 2 * CALLS, "{stats}");
}

#[test]
fn out_of_range_score_is_unscored_with_the_range() {
    unscored(json!({"fault_out_of_range": 1.0}), "outside 1..5");
}

#[test]
fn prose_without_json_is_unscored() {
    unscored(
        json!({"fault_non_json": 1.0}),
        "no JSON object with a 'score'",
    );
}

/// The `failed` entries, by example id, checking there is one per example.
fn failed(reports: &Reports) -> Vec<Value> {
    let json = &reports.json;
    assert_eq!(
        json["totals"],
        json!({"examples": EXAMPLES, "ok": 0, "failed": EXAMPLES, "skipped": 0, "unscored": 0})
    );
    let failed = json["failed"].as_array().expect("failed list").clone();
    assert_eq!(failed.len() as u64, EXAMPLES);
    failed
}

#[test]
fn quota_exhausted_fails_without_retrying() {
    let (reports, stats) = run_with_fault(json!({"fault_quota": 1.0}), &patient(), "1");
    // An example's questions are asked at once, and each fails without a retry: one request
    // per question.
    assert_eq!(total(&stats), CALLS, "a quota error was retried: {stats}");
    assert_eq!(provider_status(&stats, "openai", 429), CALLS / 2, "{stats}");
    assert_eq!(
        provider_status(&stats, "anthropic", 400),
        CALLS / 2,
        "{stats}"
    );
    for (i, f) in failed(&reports).iter().enumerate() {
        let reason = f["reason"].as_str().expect("reason");
        assert_eq!(f["attempts"], json!(DIMS.len()), "{f}");
        // Even indices are gpt-4o answers (judged by Anthropic), odd ones claude (OpenAI).
        if i % 2 == 1 {
            assert!(reason.contains("insufficient_quota"), "{f}");
            assert!(reason.contains("judge openai/gpt-4o-mini"), "{f}");
            assert_eq!(f["last_status"], json!(429), "{f}");
        } else {
            assert!(reason.contains("credit balance is too low"), "{f}");
            assert!(reason.contains("judge anthropic/"), "{f}");
            assert_eq!(f["last_status"], json!(400), "{f}");
        }
    }
}

#[test]
fn persistent_500_fails_after_max_attempts() {
    let cfg = LiveConfig {
        max_attempts: 3,
        base_delay_ms: 5,
        max_delay_ms: 20,
        ..LiveConfig::default()
    };
    let (reports, stats) = run_with_fault(json!({"fault_500": 1.0}), &cfg, "1");
    assert_eq!(status_count(&stats, 500), 3 * CALLS, "{stats}");
    assert_eq!(total(&stats), 3 * CALLS, "{stats}");
    for f in failed(&reports) {
        let reason = f["reason"].as_str().expect("reason");
        assert!(reason.starts_with("HTTP 500"), "{f}");
        // Both questions of the example, three attempts each.
        assert_eq!(f["attempts"], json!(3 * DIMS.len()), "{f}");
        assert_eq!(f["last_status"], json!(500), "{f}");
    }
}

#[test]
fn hanging_provider_times_out_and_fails() {
    let cfg = LiveConfig {
        timeout_s: 0.5,
        max_attempts: 2,
        base_delay_ms: 5,
        max_delay_ms: 20,
        ..LiveConfig::default()
    };
    let started = std::time::Instant::now();
    let (reports, stats) = run_with_fault(
        json!({"fault_hang": 1.0, "hang_ms": 5000}),
        &cfg,
        &EXAMPLES.to_string(),
    );
    let took = started.elapsed();
    for f in failed(&reports) {
        let reason = f["reason"].as_str().expect("reason");
        assert!(reason.contains("timeout"), "{f}");
        assert_eq!(f["attempts"], json!(2 * DIMS.len()), "{f}");
        assert!(
            f.get("last_status").is_none(),
            "no response, no status: {f}"
        );
    }
    // Two attempts of 0.5 s each, examples in parallel: well before a single hang would end.
    assert!(
        took < std::time::Duration::from_millis(4_500),
        "took {took:?}"
    );
    assert_eq!(
        status_count(&stats, 200),
        0,
        "a hung request was answered in time: {stats}"
    );
}
