//! Batch mode end to end: `evalfleet run --judge live --judge-mode batch` against the fake's
//! OpenAI Batch and Anthropic Message Batches APIs over real sockets. A batch run must score
//! exactly as a live run of the same dataset, at the batch price; runs larger than a batch are
//! split within the limits; requests that come back errored or expired are retried in later
//! batches, or answered live with `fallback: live`.

mod common;

use std::path::Path;

use common::fake::{examples, run_live, total, write_dataset, FakeServer, LiveConfig};
use common::{check_consistent, items, tempdir, u};
use evalfleet_fake_provider::FakeProviderArgs;
use serde_json::json;

const BUNDLED: &str = "examples/support-judge.jsonl";
const DIMS: [&str; 2] = ["relevance", "tone"];

/// A config whose batches are polled fast and sent after a short wait.
fn batch_config(extra_batch: &str) -> LiveConfig {
    LiveConfig {
        extra: format!("  batch: {{max_wait_s: 5, poll_s: 0.05, max_poll_s: 0.2{extra_batch}}}\n"),
        ..LiveConfig::default()
    }
}

/// `run --judge-mode batch` of `n` generated support-judge examples; its report.json.
fn batch_run(fake: &FakeServer, n: usize, config: &LiveConfig) -> serde_json::Value {
    let dir = tempdir();
    let data = write_dataset(dir.path(), &examples(n, &["gpt-4o", "claude-3-5-sonnet"]));
    let config = fake.config(dir.path(), config);
    let out = dir.path().join("out");
    let run = run_live(
        &data,
        &config,
        &out,
        &fake.key,
        &["--judge-mode", "batch"],
        &[],
    );
    check_consistent(&out, &run).json
}

fn fake(args: FakeProviderArgs) -> FakeServer {
    FakeServer::start(FakeProviderArgs {
        batch_processing_ms: 300,
        ..args
    })
}

/// Every batch the fake holds, both providers, as (provider, requests).
fn batches(fake: &FakeServer) -> Vec<(&'static str, u64)> {
    let mut out = Vec::new();
    let openai = fake.api_get("/v1/batches?limit=100");
    for b in openai["data"].as_array().expect("data") {
        out.push(("openai", u(&b["request_counts"], "total")));
    }
    let anthropic = fake.api_get("/v1/messages/batches?limit=100");
    for b in anthropic["data"].as_array().expect("data") {
        let c = &b["request_counts"];
        let n = ["processing", "succeeded", "errored", "canceled", "expired"]
            .iter()
            .map(|k| u(c, k))
            .sum();
        out.push(("anthropic", n));
    }
    out
}

#[test]
fn a_batch_run_scores_as_a_live_run_does_at_half_the_price() {
    let dir = tempdir();
    let live_fake = fake(FakeProviderArgs::default());
    let live_config = live_fake.config(dir.path(), &LiveConfig::default());
    let live_out = dir.path().join("live");
    let live = run_live(
        Path::new(BUNDLED),
        &live_config,
        &live_out,
        &live_fake.key,
        &["-j", "8"],
        &[],
    );
    let live = check_consistent(&live_out, &live).json;

    let batch_fake = fake(FakeProviderArgs::default());
    let batch_dir = tempdir();
    let batch_config = batch_fake.config(batch_dir.path(), &batch_config(""));
    let batch_out = dir.path().join("batch");
    let run = run_live(
        Path::new(BUNDLED),
        &batch_config,
        &batch_out,
        &batch_fake.key,
        &["--judge-mode", "batch"],
        &[],
    );
    let batch = check_consistent(&batch_out, &run).json;

    // The same scores, item by item, and the same aggregates.
    assert_eq!(batch["totals"], live["totals"]);
    for (b, l) in items(&batch).iter().zip(items(&live)) {
        assert_eq!(b["id"], l["id"]);
        for dim in DIMS {
            assert_eq!(b[dim]["score"], l[dim]["score"], "{} {dim}", b["id"]);
            assert_eq!(b[dim]["judge"], l[dim]["judge"], "{} {dim}", b["id"]);
        }
    }
    assert_eq!(batch["dimensions"], live["dimensions"]);

    // Nothing went live; every question went into a batch exactly once.
    let stats = batch_fake.stats();
    assert_eq!(total(&stats), 0, "live requests in a batch run: {stats}");
    let ledger = &stats["batches"];
    let requests = u(&ledger["openai"], "requests") + u(&ledger["anthropic"], "requests");
    assert_eq!(requests, u(&live["judge"], "calls"), "{ledger}");
    for p in ["openai", "anthropic"] {
        assert_eq!(ledger[p]["repeated_custom_ids"], json!([]), "{ledger}");
        assert_eq!(ledger[p]["requests"], ledger[p]["distinct_custom_ids"]);
    }
    // The same tokens at half the price.
    let (bu, lu) = (&batch["judge"]["usage"], &live["judge"]["usage"]);
    assert_eq!(bu["input_tokens"], lu["input_tokens"]);
    assert_eq!(bu["output_tokens"], lu["output_tokens"]);
    let (bc, lc) = (
        bu["cost_usd"].as_f64().unwrap(),
        lu["cost_usd"].as_f64().unwrap(),
    );
    assert!(
        lc > 0.0 && (bc - lc / 2.0).abs() < 1e-9,
        "batch {bc} vs live {lc}"
    );
}

#[test]
fn a_create_whose_reply_is_lost_is_found_not_made_again() {
    // Every create's reply comes after the client gave up: the batch exists, and the retried
    // create must adopt it (OpenAI by its tag, Anthropic by its shape), never pay twice.
    let fake = fake(FakeProviderArgs {
        batch_create_delay_ms: 1_500,
        ..FakeProviderArgs::default()
    });
    let config = LiveConfig {
        timeout_s: 1.0,
        ..batch_config("")
    };
    let report = batch_run(&fake, 12, &config);
    assert_eq!(report["totals"]["ok"], json!(12), "{}", report["totals"]);
    let stats = fake.stats();
    let ledger = &stats["batches"];
    for p in ["openai", "anthropic"] {
        assert!(u(&ledger[p], "batches") >= 1, "{ledger}");
        assert_eq!(ledger[p]["repeated_custom_ids"], json!([]), "{ledger}");
        assert_eq!(ledger[p]["requests"], ledger[p]["distinct_custom_ids"]);
    }
}

#[test]
fn a_run_larger_than_a_batch_is_split_and_failed_requests_are_retried() {
    let fake = fake(FakeProviderArgs {
        batch_error_rate: 0.15,
        batch_expiry_rate: 0.1,
        ..FakeProviderArgs::default()
    });
    // A quarter of the requests fail each time: with 8 attempts, a question runs out of them
    // once in 65,000 (with 5, a run of 60 questions would fail one in 16 times).
    let config = LiveConfig {
        max_attempts: 8,
        ..batch_config(", max_requests: 7")
    };
    let report = batch_run(&fake, 30, &config);
    assert_eq!(report["totals"]["ok"], json!(30), "{}", report["totals"]);
    for r in items(&report) {
        for dim in DIMS {
            assert!(r[dim]["score"].is_number(), "{} {dim}: {}", r["id"], r[dim]);
        }
    }
    let batches = batches(&fake);
    assert!(
        batches.len() >= 9,
        "60 questions in batches of at most 7: {batches:?}"
    );
    assert!(batches.iter().all(|(_, n)| *n <= 7), "{batches:?}");
    let stats = fake.stats();
    let ledger = &stats["batches"];
    let requests = u(&ledger["openai"], "requests") + u(&ledger["anthropic"], "requests");
    assert!(
        requests > 60,
        "errored and expired requests were retried: {ledger}"
    );
    assert_eq!(total(&stats), 0, "nothing went live: {stats}");
}

#[test]
fn fallback_live_answers_what_the_batches_did_not() {
    let fake = fake(FakeProviderArgs {
        batch_error_rate: 1.0,
        ..FakeProviderArgs::default()
    });
    let report = batch_run(&fake, 6, &batch_config(", fallback: live"));
    assert_eq!(report["totals"]["ok"], json!(6), "{}", report["totals"]);
    let stats = fake.stats();
    assert_eq!(total(&stats), 12, "every question answered live: {stats}");
    let ledger = &stats["batches"];
    assert_eq!(
        u(&ledger["openai"], "requests") + u(&ledger["anthropic"], "requests"),
        12
    );
}

/// A target run whose judges are in batch mode (`judges.mode: batch`) and whose target's
/// provider is live (its own `mode: live`): the target is asked live, once per example — its
/// reply is kept while the example is parked for its judges' batch replies, so the example's
/// second evaluation judges the same answer without asking again, even from a target that
/// samples (temperature 0.7: no reply cache by request).
#[test]
fn a_live_target_with_batch_judges_is_asked_once_per_example() {
    const N: usize = 6;
    let fake = fake(FakeProviderArgs::default());
    let dir = tempdir();
    let target = dir.path().join("bot.yaml");
    std::fs::write(
        &target,
        "name: bot\nkind: chat\nprovider: openai\nmodel: gpt-4o-mini\n\
         prompt: \"{{ ticket }}\"\nparams: {temperature: 0.7}\noutput: response\n\
         set: {model: gpt-4o, prompt_version: bot-v1}\n",
    )
    .unwrap();
    let tickets = common::tickets(N);
    let data = write_dataset(dir.path(), &tickets);
    let batched = batch_config("");
    let config = fake.config(
        dir.path(),
        &LiveConfig {
            extra: format!("  mode: batch\n{}", batched.extra),
            ..batched
        },
    );
    // Answers attributed to gpt-4o are judged by anthropic, in batches; the target's openai
    // is live.
    let env = [("EVALFLEET_PROVIDERS__OPENAI__MODE", "live")];
    let out = dir.path().join("out");
    let run = run_live(
        &data,
        &config,
        &out,
        &fake.key,
        &["--target", target.to_str().unwrap()],
        &env,
    );
    let report = check_consistent(&out, &run).json;
    assert_eq!(report["totals"]["ok"], json!(N), "{}", report["totals"]);
    for item in items(&report) {
        assert_eq!(item["target"]["attempts"], json!(1), "{item}");
        for dim in DIMS {
            assert!(item[dim]["score"].is_number(), "{item}");
        }
    }
    // The target live, once per example; every judge question in a batch, once.
    let stats = fake.stats();
    assert_eq!(total(&stats), N as u64, "live requests: {stats}");
    let ledger = &stats["batches"];
    let requests = u(&ledger["openai"], "requests") + u(&ledger["anthropic"], "requests");
    assert_eq!(requests, (N * DIMS.len()) as u64, "{ledger}");

    // Two epochs: each asks the target and puts its own judge questions into a batch, once.
    let out = dir.path().join("o2");
    let run = run_live(
        &data,
        &config,
        &out,
        &fake.key,
        &["--target", target.to_str().unwrap(), "--epochs", "2"],
        &env,
    );
    let report = check_consistent(&out, &run).json;
    assert_eq!(report["totals"]["ok"], json!(N), "{}", report["totals"]);
    for item in items(&report) {
        let epochs = item["epochs"].as_array().expect("epochs");
        assert_eq!(epochs.len(), 2, "{item}");
        for epoch in epochs {
            for dim in DIMS {
                assert!(epoch["scores"][dim].is_number(), "{epoch}");
            }
        }
    }
    let stats = fake.stats();
    assert_eq!(
        total(&stats),
        3 * N as u64,
        "live requests, both runs: {stats}"
    );
    let ledger = &stats["batches"];
    let more = u(&ledger["openai"], "requests") + u(&ledger["anthropic"], "requests") - requests;
    assert_eq!(more, (2 * N * DIMS.len()) as u64, "{ledger}");
}

/// A chat target whose provider is in batch mode generates through the provider's batches,
/// at the batch price, and the judges then run as configured: live, or in batches too. The
/// answers and scores are the live run's.
#[test]
fn a_chat_target_on_a_batch_mode_provider_generates_through_its_batches() {
    const N: usize = 5;
    let dir = tempdir();
    let target = dir.path().join("bot.yaml");
    // Answers attributed to gpt-4o: judged by anthropic.
    std::fs::write(
        &target,
        "name: bot\nkind: chat\nprovider: openai\nmodel: gpt-4o-mini\n\
         prompt: \"{{ ticket }}\"\nparams: {temperature: 0}\noutput: response\n\
         set: {model: gpt-4o, prompt_version: bot-v1}\n",
    )
    .unwrap();
    let tickets = common::tickets(N);
    let data = write_dataset(dir.path(), &tickets);
    let run = |name: &str, extra: &[&str], env: &[(&str, &str)]| {
        let fake = fake(FakeProviderArgs::default());
        std::fs::create_dir_all(dir.path().join(name)).unwrap();
        let config = fake.config(&dir.path().join(name), &batch_config(""));
        let out = dir.path().join(name).join("out");
        let mut args = vec!["--target", target.to_str().unwrap()];
        args.extend_from_slice(extra);
        let run = run_live(&data, &config, &out, &fake.key, &args, env);
        (check_consistent(&out, &run).json, fake.stats())
    };
    let (live, live_stats) = run("live", &[], &[]);
    assert_eq!(total(&live_stats), (N + N * DIMS.len()) as u64);
    let (all, all_stats) = run("all", &["--judge-mode", "batch"], &[]);
    let (target_only, target_stats) = run(
        "target",
        &[],
        &[("EVALFLEET_PROVIDERS__OPENAI__MODE", "batch")],
    );

    let requests =
        |stats: &serde_json::Value, provider: &str| u(&stats["batches"][provider], "requests");
    // Everything in batches: the generations (openai) and the questions (anthropic).
    assert_eq!(total(&all_stats), 0, "{all_stats}");
    assert_eq!(requests(&all_stats, "openai"), N as u64, "{all_stats}");
    assert_eq!(requests(&all_stats, "anthropic"), (N * DIMS.len()) as u64);
    // Only the target's provider in batch mode: its generations batched, the judges live.
    assert_eq!(
        requests(&target_stats, "openai"),
        N as u64,
        "{target_stats}"
    );
    assert_eq!(requests(&target_stats, "anthropic"), 0, "{target_stats}");
    assert_eq!(
        total(&target_stats),
        (N * DIMS.len()) as u64,
        "{target_stats}"
    );

    for report in [&all, &target_only] {
        assert_eq!(report["totals"]["ok"], json!(N), "{}", report["totals"]);
        for (b, l) in items(report).iter().zip(items(&live)) {
            assert_eq!(b["id"], l["id"]);
            assert_eq!(b["outputs"], l["outputs"], "the same answer");
            for dim in DIMS {
                assert_eq!(b[dim]["score"], l[dim]["score"], "{} {dim}", b["id"]);
            }
            assert_eq!(b["target"]["attempts"], json!(1), "{b}");
            assert_eq!(b["target"]["tokens_in"], l["target"]["tokens_in"]);
            let (batch_cost, live_cost) = (
                b["target"]["cost_usd"].as_f64().unwrap(),
                l["target"]["cost_usd"].as_f64().unwrap(),
            );
            assert!(live_cost > 0.0, "{l}");
            assert!(
                (batch_cost - live_cost * 0.5).abs() < 1e-12,
                "at the batch price: {batch_cost} vs {live_cost}"
            );
        }
    }
}
