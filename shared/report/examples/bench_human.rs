//! Issue 21's benchmark: what human-agreement and self-preference statistics add to the report
//! of an N-item run (default 10^6). The same N support-judge results — both dimensions judged by
//! a panel of an OpenAI and an Anthropic judge, ten groups by model × prompt version — are folded
//! twice in this process: once as a plain run (no human labels, no answer provider: the panel's
//! inter-judge agreement only), once with a person's score on both dimensions and the answer's
//! provider, into a suite with `human_labels`. Each fold is timed (record generation excluded),
//! then the aggregates of report.json, summary.md and report.html are rendered (items not
//! listed: they do not change). The difference is the cost of the statistics.
//!
//! ```text
//! cargo run --release -p evalfleet-report --example bench_human -- [N] [REPEAT]
//! ```
//! (`scripts/bench-human.sh` runs it and the end-to-end comparison.)

use std::time::{Duration, Instant};

use evalfleet_model::record::{Group, JudgeId, Outcome, PanelVerdict, ResultRecord, Score, Scores};
use evalfleet_report::aggregate::RunAggregator;
use evalfleet_report::{render, ReportFile, ReportInput, RunInfo};
use evalfleet_suites::suite::Suite;

/// SplitMix64: deterministic pseudo-random numbers.
struct Mix(u64);

impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn score(&mut self) -> i64 {
        1 + (self.next() % 5) as i64
    }
}

const MODELS: [&str; 5] = [
    "gpt-4o",
    "gpt-4o-mini",
    "o3-mini",
    "claude-sonnet-4",
    "claude-3-5-haiku",
];
const VERSIONS: [&str; 2] = ["v1.0", "v2.0"];

fn judge(provider: &str, model: &str) -> JudgeId {
    JudgeId {
        provider: provider.into(),
        model: model.into(),
    }
}

/// Result `i`; with `labelled`, a person's scores and the answer's provider.
fn record(i: u64, rng: &mut Mix, labelled: bool) -> ResultRecord {
    let model = MODELS[(i % 5) as usize];
    let mut rec = ResultRecord::skipped(
        "bench",
        "support-judge",
        i,
        None,
        format!("t{i}"),
        String::new(),
    );
    rec.outcome = Outcome::Ok;
    rec.reason = None;
    rec.passed = true;
    rec.group = Group {
        model: Some(model.into()),
        prompt_version: Some(VERSIONS[(i / 5 % 2) as usize].into()),
        ..Group::default()
    };
    let dim = |rng: &mut Mix| {
        let (o, a) = (rng.score(), rng.score());
        let mut s = Score::scored(
            (o + a) as f64 / 2.0,
            "mean of 2 of 2 judges".into(),
            judge("ensemble", "openai/gpt-4o-mini+anthropic/claude-sonnet-4"),
        );
        s.panel = vec![
            PanelVerdict {
                judge: judge("openai", "gpt-4o-mini"),
                score: Some(o),
                reasoning: String::new(),
            },
            PanelVerdict {
                judge: judge("anthropic", "claude-sonnet-4"),
                score: Some(a),
                reasoning: String::new(),
            },
        ];
        if labelled {
            s.human = Some(rng.score() as f64);
        }
        s
    };
    rec.scores = Scores(vec![
        ("relevance".into(), dim(rng)),
        ("tone".into(), dim(rng)),
    ]);
    rec.overall_score = Some(0.5);
    if labelled {
        let provider = if model.starts_with("claude") {
            "anthropic"
        } else {
            "openai"
        };
        rec.answer_provider = Some(provider.into());
    }
    rec
}

/// Folds `n` records (generated in chunks, off the clock) and renders the three aggregate
/// reports: (fold time, render time).
fn run(suite: &Suite, n: u64, labelled: bool) -> (Duration, Duration) {
    let mut agg = RunAggregator::new(suite);
    let mut rng = Mix(7);
    let mut fold = Duration::ZERO;
    let mut chunk = Vec::with_capacity(10_000);
    let mut i = 0;
    while i < n {
        chunk.clear();
        while chunk.len() < 10_000 && i < n {
            chunk.push(record(i, &mut rng, labelled));
            i += 1;
        }
        let start = Instant::now();
        for rec in &chunk {
            agg.observe(rec);
        }
        fold += start.elapsed();
    }
    let info = RunInfo {
        id: "bench".into(),
        suite: suite.name.clone(),
        dataset: "bench".into(),
        judge: evalfleet_suites::spec::JudgeMode::Live,
        started_at: String::new(),
        finished_at: String::new(),
        duration_seconds: 0.0,
    };
    let items: Vec<ResultRecord> = Vec::new();
    let input = ReportInput {
        info: &info,
        suite,
        agg: &agg,
        items: &items,
        inline_items: 0,
        items_ahead: None,
    };
    let start = Instant::now();
    let mut bytes = 0;
    for file in [ReportFile::Json, ReportFile::Summary, ReportFile::Html] {
        bytes += render(file, &input).expect("rendering").len();
    }
    let render_time = start.elapsed();
    assert!(bytes > 0);
    if labelled {
        assert_eq!(
            agg.human_agreement(&agg.all)[0].1.n,
            n,
            "every item was labelled"
        );
        assert!(!agg.self_preference.is_empty());
    }
    (fold, render_time)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().map_or(1_000_000, |a| a.parse().expect("N"));
    let repeat: usize = args.next().map_or(3, |a| a.parse().expect("REPEAT"));
    let plain = Suite::builtin(evalfleet_model::suite::SuiteKind::SupportJudge);
    let labelled = Suite::from_yaml(
        "extends: support-judge\nhuman_labels: {relevance: human_relevance, tone: human_tone}\n",
        "bench.yaml",
    )
    .expect("the bench suite");
    let secs = |d: Duration| d.as_secs_f64();
    let (mut best_plain, mut best_labelled) = ((f64::MAX, 0.0), (f64::MAX, 0.0));
    println!("{n} items, two panel-judged dimensions, 10 groups; {repeat} runs each, alternating");
    for r in 1..=repeat {
        for (name, suite, with) in [("plain", &plain, false), ("labelled", &labelled, true)] {
            let (fold, rendered) = run(suite, n, with);
            println!(
                "run {r} {name:<8} fold {:>7.3} s ({:>6.0} ns/item)  render aggregates {:>6.3} s",
                secs(fold),
                secs(fold) * 1e9 / n as f64,
                secs(rendered)
            );
            let best = if with {
                &mut best_labelled
            } else {
                &mut best_plain
            };
            if secs(fold) + secs(rendered) < best.0 + best.1 {
                *best = (secs(fold), secs(rendered));
            }
        }
    }
    let added = (best_labelled.0 + best_labelled.1) - (best_plain.0 + best_plain.1);
    println!(
        "best: plain {:.3} s fold + {:.3} s render; labelled {:.3} s + {:.3} s; human agreement and self-preference add {:.3} s (target <= 2 s)",
        best_plain.0, best_plain.1, best_labelled.0, best_labelled.1, added
    );
}
