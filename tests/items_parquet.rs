//! `items.parquet`: `run` writes every result as a row beside the report, read back here with
//! pyarrow (scripts/check_items.py) and compared with report.json figure by figure, for each
//! built-in suite, a custom suite with broken rows, and a target run; `evalfleet export` turns
//! it into JSON lines and CSV, by report directory or run id.

mod common;

use std::path::Path;

use common::fake::{run_live, write_dataset, FakeServer, LiveConfig};
use common::{evalfleet, tempdir};
use evalfleet_fake_provider::FakeProviderArgs;
use serde_json::Value;

/// pyarrow reads `dir`'s items.parquet and finds every figure of its report.json in it.
fn check_with_pyarrow(dir: &Path) {
    let Some(python) = common::python_with("pyarrow") else {
        common::available(
            "items_parquet",
            "a Python with pyarrow",
            false,
            "python3 -m venv target/scipy-venv && target/scipy-venv/bin/pip install pyarrow, or set EVALFLEET_SCIPY_PYTHON",
        );
        return;
    };
    let out = std::process::Command::new(python)
        .arg(common::root().join("scripts/check_items.py"))
        .arg(dir)
        .output()
        .expect("running python");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}: {stdout}{}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("rows match the report"), "{stdout}");
}

fn run(dir: &Path, data: &str, suite: &str) -> std::path::PathBuf {
    let out = dir.join(suite.replace('/', "-"));
    let run = evalfleet(&[
        "run",
        data,
        "--suite",
        suite,
        "--out",
        out.to_str().unwrap(),
    ]);
    run.assert_no_panic();
    assert!(out.join("items.parquet").is_file(), "{}", run.stderr);
    out
}

#[test]
fn pyarrow_reads_every_suites_items_as_the_report_has_them() {
    let dir = tempdir();
    for (data, suite) in [
        ("examples/support-judge.jsonl", "support-judge"),
        ("examples/rag-layers.jsonl", "rag-layers"),
        ("examples/log-analysis.jsonl", "log-analysis"),
        (
            "examples/qa-faithfulness.csv",
            "config/suites/qa-faithfulness.yaml",
        ),
        (
            "examples/support-judge-labelled.jsonl",
            "config/suites/support-judge-human.yaml",
        ),
    ] {
        check_with_pyarrow(&run(dir.path(), data, suite));
    }
}

#[test]
fn a_target_runs_outputs_are_in_the_items() {
    let fake = FakeServer::start(FakeProviderArgs::default());
    let dir = tempdir();
    let target = dir.path().join("bot.yaml");
    std::fs::write(
        &target,
        "name: bot\nkind: chat\nprovider: openai\nmodel: gpt-4o-mini\n\
         prompt: \"{{ ticket }}\"\noutput: response\n\
         set: {model: gpt-4o, prompt_version: bot-v1}\n",
    )
    .unwrap();
    let tickets = common::tickets(4);
    let data = write_dataset(dir.path(), &tickets);
    let config = fake.config(dir.path(), &LiveConfig::default());
    let out = dir.path().join("out");
    let run = run_live(
        &data,
        &config,
        &out,
        &fake.key,
        &["--target", target.to_str().unwrap()],
        &[],
    );
    // The fake's short answers fail the gates (exit 1): what matters is the file.
    run.assert_no_panic();
    assert_eq!(
        common::read_json(&out.join("report.json"))["totals"]["ok"],
        4
    );
    check_with_pyarrow(&out);
}

#[test]
fn export_streams_the_items_as_json_lines_csv_or_parquet() {
    let dir = tempdir();
    // A run id in reports_dir, as a fleet's aggregator writes it.
    let reports = dir.path().join("reports");
    let config = dir.path().join("evalfleet.yaml");
    std::fs::write(&config, format!("reports_dir: {}\n", reports.display())).unwrap();
    let report = reports.join("qa-1");
    let run = evalfleet(&[
        "run",
        "examples/qa-faithfulness.csv",
        "--suite",
        "config/suites/qa-faithfulness.yaml",
        "--out",
        report.to_str().unwrap(),
    ]);
    run.assert_no_panic();
    let totals = common::read_json(&report.join("report.json"))["totals"].clone();
    let rows = totals["ok"].as_u64().unwrap()
        + totals["failed"].as_u64().unwrap()
        + totals["skipped"].as_u64().unwrap();

    let jsonl = dir.path().join("items.jsonl");
    let export = |args: &[&str]| {
        let mut all = vec!["--config", config.to_str().unwrap(), "export"];
        all.extend_from_slice(args);
        evalfleet(&all)
    };
    export(&[
        "qa-1",
        "--format",
        "jsonl",
        "--out",
        jsonl.to_str().unwrap(),
    ])
    .assert_code(0);
    let lines: Vec<Value> = std::fs::read_to_string(&jsonl)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(lines.len() as u64, rows);
    let skipped = lines.iter().filter(|l| l["status"] == "skipped").count() as u64;
    assert_eq!(skipped, totals["skipped"].as_u64().unwrap());
    assert!(lines
        .windows(2)
        .all(|w| w[0]["index"].as_u64() < w[1]["index"].as_u64()));

    // To stdout, by report directory.
    let csv = export(&[report.to_str().unwrap(), "--format", "csv"]);
    csv.assert_code(0);
    assert_eq!(
        csv.stdout.lines().count() as u64,
        rows + 1,
        "a header and one line per row"
    );
    assert!(csv.stdout.starts_with("index,id,line,status,passed"));

    let parquet = dir.path().join("copy.parquet");
    export(&[
        report.join("report.json").to_str().unwrap(),
        "--format",
        "parquet",
        "--out",
        parquet.to_str().unwrap(),
    ])
    .assert_code(0);
    assert_eq!(
        std::fs::read(&parquet).unwrap(),
        std::fs::read(report.join("items.parquet")).unwrap()
    );

    let missing = export(&["no-such-run"]);
    missing.assert_code(2);
    assert!(missing.stderr.contains("no-such-run"), "{}", missing.stderr);
}

/// `compare.json` without what names the files compared.
fn comparable_comparison(dir: &Path) -> Value {
    let mut c = common::read_json(&dir.join("compare.json"));
    for side in ["base", "new"] {
        c[side].as_object_mut().map(|s| s.remove("path"));
    }
    c
}

/// Above `reports.inline_items`, report.json names items.parquet instead of listing the items,
/// and `compare` (flips with their reasonings included) reads it to the same comparison.
#[test]
fn a_report_too_large_to_list_names_its_parquet_and_compares_the_same() {
    let dir = tempdir();
    let run = |seed: &str, inline: &str| {
        let data = dir.path().join(format!("data-{seed}.jsonl"));
        if !data.exists() {
            let generated = evalfleet(&[
                "generate",
                "support-judge",
                "-n",
                "300",
                "--seed",
                seed,
                "--out",
                data.to_str().unwrap(),
            ]);
            generated.assert_code(0);
        }
        let out = dir.path().join(format!("run-{seed}-{inline}"));
        let run = common::evalfleet_with_env(
            &[
                "run",
                data.to_str().unwrap(),
                "--run-id",
                &format!("r{seed}"),
                "--out",
                out.to_str().unwrap(),
            ],
            &[("EVALFLEET_REPORTS__INLINE_ITEMS", inline)],
        );
        run.assert_no_panic();
        out
    };
    let (base_listed, new_listed) = (run("1", "100000"), run("2", "100000"));
    let (base_named, new_named) = (run("1", "100"), run("2", "100"));

    let named = common::read_json(&base_named.join("report.json"));
    assert_eq!(named["items_file"], "items.parquet");
    for list in ["results", "items", "skipped", "failed"] {
        assert!(named.get(list).is_none(), "{list} is not listed");
    }
    let listed = common::read_json(&base_listed.join("report.json"));
    assert_eq!(named["aggregates"], listed["aggregates"]);
    assert_eq!(named["totals"], listed["totals"]);
    assert_eq!(listed["results"].as_array().unwrap().len(), 300);

    let compare = |base: &Path, new: &Path, out: &str| {
        let out = dir.path().join(out);
        let c = evalfleet(&[
            "compare",
            base.to_str().unwrap(),
            new.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        c.assert_no_panic();
        (c.code, comparable_comparison(&out))
    };
    let (code, from_lists) = compare(&base_listed, &new_listed, "c-listed");
    let (named_code, from_parquet) = compare(&base_named, &new_named, "c-named");
    assert_eq!(code, named_code);
    assert!(
        !from_lists["flips"]["pass_to_fail"]
            .as_array()
            .unwrap()
            .is_empty(),
        "different seeds flip items: {from_lists}"
    );
    assert_eq!(from_parquet, from_lists);
    // Either form against the other.
    let (_, mixed) = compare(&base_listed, &new_named, "c-mixed");
    assert_eq!(mixed, from_lists);
}
