//! The typed example survives the queue: every valid record of the bundled datasets (the three
//! built-in suites and a custom suite on CSV), sent as a message and read back, is the same
//! example and finishes into the same result record.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::queue::Message;
use evalfleet_dataset::DatasetReader;
use evalfleet_model::record::Scores;
use evalfleet_model::routing::ProviderRules;
use evalfleet_model::suite::SuiteKind;
use evalfleet_suites::evaluate::*;
use evalfleet_suites::suite::Suite;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn round_trip(dataset: &str, suite: Suite) {
    let path = root().join(dataset);
    let suite = Arc::new(suite);
    let mut validator = Validator::new(Evaluator::new(
        suite.clone(),
        ProviderRules::default(),
        path.parent().map(Path::to_path_buf),
    ));
    let mut valid = 0;
    for raw in DatasetReader::open_with(&path, &suite.read_options(None)).unwrap() {
        let Checked::Valid { ordinal, work, .. } = validator.check(raw.unwrap()) else {
            continue;
        };
        valid += 1;
        let sent = Message {
            v: Message::VERSION,
            run_id: "r".into(),
            index: ordinal,
            line: None,
            suite: suite.name.clone(),
            work,
        };
        let wire = serde_json::to_vec(&sent).unwrap();
        let received: Message = serde_json::from_slice(&wire).unwrap();
        assert_eq!(received, sent, "{dataset} record {ordinal}");
        let (Work::Evaluate(got), Work::Evaluate(orig)) = (&received.work, &sent.work) else {
            panic!("{dataset} record {ordinal}: not an example to evaluate");
        };
        if let (Example::Log(got), Example::Log(orig)) = (got, orig) {
            assert!(
                got.scenario.get().is_none(),
                "the wire carries the digest only"
            );
            got.scenario.attach(orig.scenario.get().unwrap().clone());
        }
        let finished = |e: &Example| {
            finish(
                &suite,
                "r",
                ordinal,
                None,
                e,
                Scores::default(),
                &Default::default(),
                Effort::default(),
            )
        };
        assert_eq!(
            finished(got),
            finished(orig),
            "{dataset} record {ordinal} finishes the same"
        );
    }
    assert!(valid > 10, "{dataset}: only {valid} valid records");
}

#[test]
fn examples_of_every_suite_cross_the_queue_unchanged() {
    round_trip(
        "examples/support-judge.jsonl",
        Suite::builtin(SuiteKind::SupportJudge),
    );
    round_trip(
        "examples/rag-layers.jsonl",
        Suite::builtin(SuiteKind::RagLayers),
    );
    round_trip(
        "examples/log-analysis.jsonl",
        Suite::builtin(SuiteKind::LogAnalysis),
    );
    let custom = Suite::from_file(&root().join("config/suites/qa-faithfulness.yaml")).unwrap();
    round_trip("examples/qa-faithfulness.csv", custom);
}
