//! `evalfleet suite init`: the starter suite it writes loads, runs as is on the dataset it came
//! from (every row an item), is never overwritten, and goes to `<suites_dir>/NAME.yaml` by
//! default.

mod common;

use std::path::{Path, PathBuf};

use common::{check_consistent, evalfleet, items, run_suite, tempdir};
use evalfleet_model::suite::SuiteKind;
use evalfleet_suites::custom::FieldType;
use evalfleet_suites::suite::Suite;

/// Four rows: a quoted comma, models of both providers, a numeric latency, a reference.
const CSV: &str = "\
item_id,question,answer,reference,model,prompt_version,latency_ms
q1,\"Paris, Texas or France?\",\"France, the country\",France,gpt-4o,v1,120
q2,What is 2+2?,4,4,claude-3-5-haiku-20241022,v2,98.5
q3,Largest ocean?,The Pacific Ocean,Pacific,gpt-4o-mini,v1,77
q4,Boiling point of water?,100 degrees Celsius at sea level,100 C,claude-sonnet-4-20250514,v2,310
";

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("writing a test file");
    path
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

#[test]
fn init_writes_a_suite_that_runs_as_is_and_is_never_overwritten() {
    let dir = tempdir();
    let dataset = write(dir.path(), "qa.csv", CSV);
    let file = dir.path().join("suites/new/qa.yaml");
    let out = evalfleet(&[
        "suite",
        "init",
        s(&dataset),
        "--name",
        "qa",
        "--out",
        s(&file),
    ]);
    out.assert_code(0);
    assert_eq!(
        out.stdout.trim_end(),
        s(&file),
        "stdout is the path written"
    );
    let text = std::fs::read_to_string(&file).expect("the suite file exists");
    assert!(text.starts_with("# Starter custom suite 'qa'"), "{text}");

    let suite = Suite::from_file(&file).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(suite.name, "qa");
    assert_eq!(suite.kind, SuiteKind::Custom);
    let custom = suite.custom.as_ref().expect("a custom suite");
    let record = &custom.spec().record;
    assert_eq!(record.id, "item_id");
    assert_eq!(record.provider_field.as_deref(), Some("model"));
    assert_eq!(record.fields["latency_ms"].kind, FieldType::Number);
    assert_eq!(record.fields["question"].kind, FieldType::String);
    assert!(
        !record.fields.contains_key("item_id"),
        "the id is not a field"
    );
    let checks: Vec<&str> = custom
        .spec()
        .checks
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(checks, ["answer_f1", "not_empty"]);
    let groups: Vec<&str> = suite.group_by.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(groups, ["by_model", "by_prompt_version"]);

    let reports = dir.path().join("out");
    let run = run_suite(&dataset, s(&file), &reports, &[]);
    run.assert_no_panic();
    assert!(
        matches!(run.code, Some(0 | 1)),
        "the starter suite runs on its dataset: {run:?}"
    );
    let report = check_consistent(&reports, &run).json;
    assert_eq!(items(&report).len(), 4, "every row is an item");
    let first = &items(&report)[0];
    assert_eq!(first["id"], "q1");
    assert!(first["metrics"]["answer_f1"].is_number(), "{first}");
    assert!(first["scores"]["quality"]["score"].is_number(), "{first}");

    // A second init to the same path fails as bad input and leaves the file as it was.
    let again = evalfleet(&[
        "suite",
        "init",
        s(&dataset),
        "--name",
        "other",
        "--out",
        s(&file),
    ]);
    again.assert_code(2);
    assert!(again.stderr.contains("already exists"), "{}", again.stderr);
    assert!(again.stdout.is_empty(), "{}", again.stdout);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
}

/// The support export a new user tried: the answer column is `bot_answer`, and one latency cell
/// is not a number.
const TICKETS: &str = "\
ticket_id,customer_question,bot_answer,expected,lang,latency
T-1,My order never arrived. Can you check where it is?,I am sorry: order 118 is on its way and arrives Friday.,It arrives Friday,en,812
T-2,How do I reset my password?,Use the Forgot password link on the sign-in page.,Use Forgot password,en,640.5
T-3,Puis-je changer mon adresse de livraison ?,Oui : dans Mon compte puis Adresses.,Mon compte puis Adresses,fr,abc
T-4,Do you ship to Canada?,Yes: shipping to Canada takes 5 to 8 days.,Yes in 5 to 8 days,en,1020
T-5,Why was I charged twice?,The second charge is a hold that disappears within 3 days.,A hold released in 3 days,en,733
T-6,Can I return a worn item?,Worn items cannot be returned unless faulty.,Only if faulty,en,598
";

#[test]
fn init_reads_the_data_as_a_person_would() {
    let dir = tempdir();
    let dataset = write(dir.path(), "tickets.csv", TICKETS);
    let file = dir.path().join("tickets.yaml");
    let out = evalfleet(&[
        "suite",
        "init",
        s(&dataset),
        "--name",
        "tickets",
        "--out",
        s(&file),
    ]);
    out.assert_code(0);
    // The one bad cell is named with its line; the column stays a number column.
    assert!(
        out.stderr.contains("column 'latency'") && out.stderr.contains("line 4 (\"abc\")"),
        "{}",
        out.stderr
    );
    let text = std::fs::read_to_string(&file).expect("the suite file exists");
    let suite = Suite::from_file(&file).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let custom = suite.custom.as_ref().expect("a custom suite");
    let spec = custom.spec();
    assert_eq!(
        spec.record.fields["latency"].kind,
        FieldType::Number,
        "{text}"
    );
    let judged = spec.judge.dimensions[0].judged.clone();
    assert_eq!(judged, Some(vec!["bot_answer".to_owned()]), "{text}");
    let checks: Vec<&str> = spec.checks.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(checks, ["bot_answer_f1", "not_empty"], "{text}");
    assert!(!text.contains("latency_f1"), "{text}");
}

#[test]
fn init_defaults_to_the_suites_dir_of_the_config() {
    let dir = tempdir();
    let dataset = write(dir.path(), "qa.csv", CSV);
    let suites = dir.path().join("my-suites");
    let config = write(
        dir.path(),
        "evalfleet.yaml",
        &format!(
            "suites_dir: {}\n",
            serde_json::to_string(s(&suites)).unwrap()
        ),
    );
    let out = evalfleet(&[
        "--config",
        s(&config),
        "suite",
        "init",
        s(&dataset),
        "--name",
        "starter",
    ]);
    out.assert_code(0);
    let file = suites.join("starter.yaml");
    assert_eq!(out.stdout.trim_end(), s(&file));
    assert!(Suite::from_file(&file).is_ok());

    // `--suite NAME` finds it in suites_dir.
    let reports = dir.path().join("out");
    let run = evalfleet(&[
        "--config",
        s(&config),
        "run",
        s(&dataset),
        "--suite",
        "starter",
        "--out",
        s(&reports),
    ]);
    assert!(matches!(run.code, Some(0 | 1)), "{run:?}");
    assert_eq!(
        check_consistent(&reports, &run).json["run"]["suite"],
        "starter"
    );

    let again = evalfleet(&[
        "--config",
        s(&config),
        "suite",
        "init",
        s(&dataset),
        "--name",
        "starter",
    ]);
    again.assert_code(2);
}

#[test]
fn init_refuses_unusable_input() {
    let dir = tempdir();
    let empty = write(dir.path(), "empty.csv", "id,answer\n");
    let out = evalfleet(&[
        "suite",
        "init",
        s(&empty),
        "--name",
        "x",
        "--out",
        s(&dir.path().join("x.yaml")),
    ]);
    out.assert_code(2);
    assert!(out.stderr.contains("contains no records"), "{}", out.stderr);
    assert!(!dir.path().join("x.yaml").exists());

    let garbage = write(dir.path(), "bad.jsonl", "{nope\n[1, 2\n");
    let out = evalfleet(&[
        "suite",
        "init",
        s(&garbage),
        "--name",
        "x",
        "--out",
        s(&dir.path().join("x.yaml")),
    ]);
    out.assert_code(2);
    assert!(
        out.stderr
            .contains("none of the first 2 records could be read"),
        "{}",
        out.stderr
    );

    let out = evalfleet(&[
        "suite",
        "init",
        s(&dir.path().join("missing.csv")),
        "--name",
        "x",
        "--out",
        s(&dir.path().join("x.yaml")),
    ]);
    out.assert_code(2);

    let ok = write(dir.path(), "ok.csv", CSV);
    let out = evalfleet(&["suite", "init", s(&ok), "--name", "../escape"]);
    out.assert_code(2);
    assert!(
        out.stderr.contains("cannot be a file name"),
        "{}",
        out.stderr
    );
}
