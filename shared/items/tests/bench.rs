//! The item API's benchmark, in two `#[ignore]`d steps that `scripts/bench-items-api.sh` runs:
//! `write_synthetic_items` writes an `items.parquet` of `EVALFLEET_BENCH_ROWS` (default 10^7)
//! synthetic support-judge results to `EVALFLEET_BENCH_ITEMS` with the items writer (no run:
//! only the file's size matters here), and `time_queries` times the benchmark's queries on it
//! in this process (the script then times them again through the aggregator's HTTP API).
//!
//! ```text
//! EVALFLEET_BENCH_ITEMS=/tmp/items.parquet cargo test --release -p evalfleet-items \
//!   --test bench -- --ignored --nocapture --test-threads=1
//! ```

use std::path::PathBuf;
use std::time::Instant;

use evalfleet_items::{ItemQuery, ItemsCache, ItemsLayout, ItemsWriter};
use evalfleet_model::record::{JudgeId, Outcome, ResultRecord, Score, Scores};
use serde_json::json;

fn path() -> Option<PathBuf> {
    std::env::var_os("EVALFLEET_BENCH_ITEMS").map(PathBuf::from)
}

/// A deterministic stream of pseudo-random numbers (SplitMix64).
struct Mix(u64);

impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

const MODELS: [&str; 4] = [
    "gpt-4o",
    "gpt-4o-mini",
    "claude-sonnet-4",
    "claude-3-5-haiku",
];
const WORDS: [&str; 12] = [
    "refund", "shipping", "invoice", "password", "delivery", "warranty", "upgrade", "billing",
    "login", "cancel", "discount", "account",
];

/// Result `i`: 90% ok (a fifth of them failing a gate), 7% failed, 3% skipped; two judged
/// dimensions with a reasoning of 60–200 characters, two groupings, metadata on some.
fn record(i: u64, mix: &mut Mix) -> ResultRecord {
    let roll = mix.next() % 100;
    let id = format!("ticket-{i:08}");
    if roll >= 97 {
        return ResultRecord::skipped(
            "bench",
            "support-judge",
            i,
            Some(i + 1),
            id,
            "missing field 'response'".into(),
        );
    }
    if roll >= 90 {
        return ResultRecord::failed(
            "bench",
            "support-judge",
            i,
            Some(i + 1),
            id,
            "judge call failed: HTTP 500 after 5 attempts".into(),
        );
    }
    let mut r = ResultRecord::failed("bench", "support-judge", i, Some(i + 1), id, String::new());
    r.outcome = Outcome::Ok;
    r.reason = None;
    let judge = JudgeId {
        provider: "openai".into(),
        model: "gpt-4o-mini".into(),
    };
    let relevance = 1 + mix.next() % 5;
    let tone = 1 + mix.next() % 5;
    let mut why = |score: u64| {
        let n = 3 + mix.next() % 10;
        let words: Vec<&str> = (0..n).map(|_| WORDS[(mix.next() % 12) as usize]).collect();
        format!(
            "score {score}: the response addresses {} of the customer's points ({}) and stays on topic",
            n,
            words.join(", ")
        )
    };
    let (rw, tw) = (why(relevance), why(tone));
    r.scores = Scores(vec![
        (
            "relevance".into(),
            Score::scored(relevance as f64, rw, judge.clone()),
        ),
        ("tone".into(), Score::scored(tone as f64, tw, judge)),
    ]);
    r.fail_tags = [("low_relevance", relevance < 3), ("rude", tone < 2)]
        .iter()
        .filter(|(_, on)| *on)
        .map(|(t, _)| (*t).to_owned())
        .collect();
    r.passed = r.fail_tags.is_empty();
    r.overall_score = Some((relevance + tone) as f64 / 10.0);
    r.group.model = Some(MODELS[(mix.next() % 4) as usize].into());
    r.group.prompt_version = Some(format!("v1.{}", mix.next() % 3));
    if i.is_multiple_of(10) {
        r.details
            .insert("metadata".into(), json!({"channel": "email", "lang": "en"}));
    }
    r.latency_ms = (mix.next() % 4_000_000) as f64 / 1000.0;
    r.attempts = 2;
    r.usage.input_tokens = 400 + mix.next() % 400;
    r.usage.output_tokens = 60 + mix.next() % 60;
    r.usage.cost_usd =
        (r.usage.input_tokens as f64 * 0.15 + r.usage.output_tokens as f64 * 0.6) / 1e6;
    r
}

#[test]
#[ignore = "benchmark: writes EVALFLEET_BENCH_ITEMS (scripts/bench-items-api.sh)"]
fn write_synthetic_items() {
    let Some(path) = path() else {
        panic!("set EVALFLEET_BENCH_ITEMS to the file to write");
    };
    let rows: u64 = std::env::var("EVALFLEET_BENCH_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000_000);
    let layout = ItemsLayout {
        dimensions: vec!["relevance".into(), "tone".into()],
        metrics: vec![],
        group_keys: vec!["model".into(), "prompt_version".into()],
        human: vec![],
    };
    let started = Instant::now();
    let file = std::io::BufWriter::new(std::fs::File::create(&path).expect("create"));
    let mut writer = ItemsWriter::new(file, &layout).expect("writer");
    let mut mix = Mix(20);
    for i in 0..rows {
        writer.push(&record(i, &mut mix)).expect("push");
    }
    writer.finish().expect("finish");
    let size = std::fs::metadata(&path).expect("written").len();
    println!(
        "wrote {rows} rows, {:.0} MiB, in {:.1} s",
        size as f64 / (1 << 20) as f64,
        started.elapsed().as_secs_f64()
    );
}

/// The benchmark's queries, as query strings.
pub const QUERIES: &[(&str, &str)] = &[
    ("first page, unfiltered", ""),
    ("deep page, unfiltered", "offset=9000000"),
    ("status filter", "status=failed"),
    ("status filter, next page", "status=failed&offset=100"),
    ("status filter, page 500", "status=failed&offset=50000"),
    ("tag + group filter", "tag=rude&group=model=gpt-4o"),
    ("sorted (ties: the scan alone)", "sort=attempts"),
    ("sorted", "sort=-latency_ms"),
    ("sorted, next page", "sort=-latency_ms&offset=100"),
    ("sorted + filtered", "status=ok&sort=relevance.score"),
    ("text search", "q=warranty, billing"),
    ("text search, next page", "q=warranty, billing&offset=100"),
];

#[test]
#[ignore = "benchmark: reads EVALFLEET_BENCH_ITEMS (scripts/bench-items-api.sh)"]
fn time_queries() {
    let Some(path) = path() else {
        panic!("set EVALFLEET_BENCH_ITEMS to the file written by write_synthetic_items");
    };
    let cache = ItemsCache::default();
    let started = Instant::now();
    let facets = cache.facets(&path).expect("facets");
    println!(
        "{:>8.1} ms  facets ({} tags)",
        started.elapsed().as_secs_f64() * 1e3,
        facets.tags.len()
    );
    for (what, query) in QUERIES {
        let pairs: Vec<(&str, &str)> = (query.split('&'))
            .filter(|p| !p.is_empty())
            .map(|p| p.split_once('=').unwrap_or((p, "")))
            .collect();
        let q = ItemQuery::from_params(pairs).expect("query");
        let started = Instant::now();
        let page = cache.query(&path, &q).expect("page");
        println!(
            "{:>8.1} ms  {what} ({query}): {} of {}",
            started.elapsed().as_secs_f64() * 1e3,
            page.items.len(),
            page.total
        );
    }
}
