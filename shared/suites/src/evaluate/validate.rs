//! The loader's verdict on each raw record: valid, or skipped with its position and reason, and
//! the one read-and-validate loop ([`Validator::checks`]) that `run`, `submit`, `validate` and
//! `--estimate` all go through, so that a record means the same to each of them.
//!
//! Duplicate ids are detected here, among valid records only, after trimming (docs/DESIGN.md §9). Only a
//! 128-bit hash of each id is kept (16 bytes an example), so a 10^7-example dataset costs
//! ~160 MB less than keeping the ids themselves.

use std::collections::HashSet;
use std::hash::{Hash, Hasher};

use evalfleet_dataset::{DatasetError, Position, RawRecord};

use serde_json::Value;

use std::sync::Arc;

use super::{Evaluator, Work};
use crate::custom::BaselineSource;
use crate::target::TargetPlan;

/// A record after validation.
#[derive(Debug)]
pub enum Checked {
    /// A valid record in its typed form (or, in a target run, the record the target will
    /// complete), which the queue carries to the workers.
    Valid {
        ordinal: u64,
        position: Position,
        work: Work,
    },
    Skipped {
        ordinal: u64,
        position: Position,
        id: String,
        reason: String,
    },
}

pub struct Validator {
    pub evaluator: Evaluator,
    /// A target run: records are checked for what the target needs (and a log-analysis
    /// record's scenario is loaded, which only this process can read), and the suite checks
    /// the record the target completes, in the worker.
    target: Option<Arc<TargetPlan>>,
    /// A pairwise suite comparing with a baseline run: each valid example gets its item's
    /// baseline answers, found by id.
    baseline: Option<Arc<dyn BaselineSource>>,
    seen: HashSet<u128>,
}

impl Validator {
    pub fn new(evaluator: Evaluator) -> Self {
        Validator {
            evaluator,
            target: None,
            baseline: None,
            seen: HashSet::new(),
        }
    }

    /// Records are the input of `target`.
    pub fn with_target(mut self, target: Arc<TargetPlan>) -> Self {
        self.target = Some(target);
        self
    }

    /// Each valid example carries its item's answers from `baseline`.
    pub fn with_baseline(mut self, baseline: Arc<dyn BaselineSource>) -> Self {
        self.baseline = Some(baseline);
        self
    }

    pub fn check(&mut self, raw: RawRecord) -> Checked {
        let RawRecord {
            ordinal,
            position,
            value,
        } = raw;
        let skipped = |id: String, reason: String| Checked::Skipped {
            ordinal,
            position,
            id,
            reason,
        };
        let value = match value {
            Ok(v) => v,
            Err(reason) => return skipped(String::new(), reason),
        };
        let work = match &self.target {
            Some(target) => target
                .check(&value)
                .and_then(|pending| self.evaluator.resolve_shared(pending, &value))
                .map(Work::Generate),
            None => self.evaluator.parse(&value).map(Work::Evaluate),
        };
        match work {
            Err(reason) => {
                let id = value
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned();
                skipped(id, reason)
            }
            Ok(mut work) => {
                if self.seen.insert(id_hash(work.id().trim())) {
                    if let Some(baseline) = &self.baseline {
                        if let Some(answers) = baseline.answers(work.id().trim()) {
                            work.set_baseline(answers);
                        }
                    }
                    Checked::Valid {
                        ordinal,
                        position,
                        work,
                    }
                } else {
                    let id = work.id().to_owned();
                    skipped(id.clone(), format!("Duplicate id '{id}'"))
                }
            }
        }
    }
}

/// Why the element a JSON array was cut off in is skipped.
fn truncated_reason(index: u64) -> String {
    format!("the JSON array ends before element {index} is closed")
}

impl Validator {
    /// Checks every record `records` yields, in order: the one read-and-validate loop.
    ///
    /// A bad record is skipped with its position, never fatal (docs/DESIGN.md §9), and that
    /// includes a file cut off inside its last record: a JSON array that ends before its last
    /// element is closed yields that element as [`Checked::Skipped`] with its index and
    /// the reason "the JSON array ends before element N is closed" (a cut JSONL line or CSV row is already a bad record of its own).
    /// Only what makes the file unreadable as a whole (an I/O error, text after an array's
    /// closing `]`) comes out as an error, and then nothing follows it.
    pub fn checks<I>(self, records: I) -> Checks<I>
    where
        I: Iterator<Item = Result<RawRecord, DatasetError>>,
    {
        Checks {
            validator: self,
            records,
        }
    }
}

/// The records of a dataset, each checked; see [`Validator::checks`].
pub struct Checks<I> {
    validator: Validator,
    records: I,
}

impl<I> Iterator for Checks<I>
where
    I: Iterator<Item = Result<RawRecord, DatasetError>>,
{
    type Item = Result<Checked, DatasetError>;

    fn next(&mut self) -> Option<Self::Item> {
        Some(match self.records.next()? {
            Ok(raw) => Ok(self.validator.check(raw)),
            Err(DatasetError::Truncated { index, .. }) => Ok(Checked::Skipped {
                ordinal: index,
                position: Position::Index(index),
                id: String::new(),
                reason: truncated_reason(index),
            }),
            Err(e) => Err(e),
        })
    }
}

fn id_hash(id: &str) -> u128 {
    let half = |salt: u8| {
        let mut h = std::hash::DefaultHasher::new();
        salt.hash(&mut h);
        id.hash(&mut h);
        h.finish() as u128
    };
    (half(1) << 64) | half(2)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::suite::Suite;
    use evalfleet_model::routing::ProviderRules;
    use evalfleet_model::suite::SuiteKind;

    fn validator() -> Validator {
        let suite = Arc::new(Suite::builtin(SuiteKind::SupportJudge));
        Validator::new(Evaluator::new(suite, ProviderRules::default(), None))
    }

    fn raw(ordinal: u64, value: Value) -> RawRecord {
        RawRecord {
            ordinal,
            position: Position::Index(ordinal),
            value: Ok(value),
        }
    }

    fn ex(id: &str) -> Value {
        json!({"id": id, "ticket": "t", "response": "r", "model": "gpt-4o", "prompt_version": "v1"})
    }

    fn reason(c: Checked) -> Option<String> {
        match c {
            Checked::Skipped { reason, .. } => Some(reason),
            Checked::Valid { .. } => None,
        }
    }

    #[test]
    fn duplicates_are_compared_trimmed_among_valid_records_only() {
        let mut v = validator();
        let mut bad = ex("a");
        bad["ticket"] = json!(1);
        assert_eq!(
            reason(v.check(raw(0, bad))).unwrap(),
            "'ticket' must be a string"
        );
        assert_eq!(
            reason(v.check(raw(1, ex("a")))),
            None,
            "an invalid first occurrence does not count"
        );
        assert_eq!(
            reason(v.check(raw(2, ex(" a ")))).unwrap(),
            "Duplicate id ' a '"
        );
        assert_eq!(reason(v.check(raw(3, ex("b")))), None);
    }

    #[test]
    fn unparseable_records_are_skipped_with_their_reason_and_position() {
        let mut v = validator();
        let rec = RawRecord {
            ordinal: 4,
            position: Position::Line(7),
            value: Err("invalid JSON: x".into()),
        };
        match v.check(rec) {
            Checked::Skipped {
                position, reason, ..
            } => {
                assert_eq!(position, Position::Line(7));
                assert_eq!(reason, "invalid JSON: x");
            }
            other => panic!("{other:?}"),
        }
    }

    /// A log-analysis target run over a dataset in `dir`, with a chat target whose prompt
    /// reads the record's `logs`.
    fn log_target_run(dir: &std::path::Path) -> Validator {
        let suite = Arc::new(Suite::builtin(SuiteKind::LogAnalysis));
        let evaluator = Evaluator::new(suite, ProviderRules::default(), Some(dir.to_owned()));
        let target = evalfleet_config::Target::parse(
            "name: analyst\nkind: chat\nprovider: openai\nmodel: m\n\
             prompt: \"Explain: {{ logs }}\"\noutput: output\n",
        )
        .unwrap();
        let plan = crate::target::TargetPlan::compile(target, crate::target::Secrets::Keep);
        Validator::new(evaluator).with_target(Arc::new(plan.unwrap()))
    }

    #[test]
    fn a_log_analysis_target_run_loads_each_records_scenario_before_any_call() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("s.json"), r#"{"metrics": {"errors": 3}}"#).unwrap();
        let mut v = log_target_run(dir.path());
        let record = json!({"id": "a", "scenario": "s.json", "logs": "ERROR x"});
        let pending = match v.check(raw(0, record.clone())) {
            Checked::Valid {
                work: Work::Generate(p),
                ..
            } => p,
            other => panic!("{other:?}"),
        };
        let loaded: crate::loganalysis::Scenario =
            serde_json::from_value(json!({"metrics": {"errors": 3}})).unwrap();
        let expected = crate::loganalysis::ScenarioRef::new(Arc::new(loaded));
        let scenario = pending.scenario.as_ref().expect("the scenario is resolved");
        assert_eq!(scenario.digest(), expected.digest());
        assert_eq!(scenario.get(), expected.get(), "loaded in this process");
        assert_eq!(
            pending.record["scenario"], "s.json",
            "the record as written"
        );
        // The message carries the digest, and only when there is a scenario.
        let wire = serde_json::to_value(&pending).unwrap();
        assert_eq!(wire["scenario"], expected.digest());
        let mut support = pending.clone();
        support.scenario = None;
        assert!(serde_json::to_value(&support)
            .unwrap()
            .get("scenario")
            .is_none());
    }

    #[test]
    fn a_log_analysis_target_run_skips_a_bad_scenario_as_a_recorded_run_does() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("broken.json"), "{not json").unwrap();
        let suite = Arc::new(Suite::builtin(SuiteKind::LogAnalysis));
        let mut recorded = Validator::new(Evaluator::new(
            suite,
            ProviderRules::default(),
            Some(dir.path().to_owned()),
        ));
        let mut target_run = log_target_run(dir.path());
        for (i, scenario) in [
            json!("missing.json"),
            json!("broken.json"),
            json!(4),
            Value::Null,
        ]
        .into_iter()
        .enumerate()
        {
            let mut record = json!({"id": format!("r{i}"), "logs": "x", "output": ""});
            if !scenario.is_null() {
                record["scenario"] = scenario;
            }
            let want = reason(recorded.check(raw(i as u64, record.clone()))).unwrap();
            assert_eq!(
                reason(target_run.check(raw(i as u64, record.clone()))),
                Some(want),
                "{record}"
            );
        }
        let missing = json!({"id": "m", "scenario": "missing.json", "logs": "x"});
        let why = reason(target_run.check(raw(9, missing))).unwrap();
        assert!(
            why.starts_with("Cannot read scenario 'missing.json': "),
            "{why}"
        );
    }

    fn checks_of(text: &str) -> Vec<Result<Checked, DatasetError>> {
        let input = Box::new(std::io::Cursor::new(text.as_bytes().to_vec()));
        let path = std::path::Path::new("d.json");
        let reader = evalfleet_dataset::DatasetReader::from_reader(path, input, 1 << 20).unwrap();
        validator().checks(reader).collect()
    }

    #[test]
    fn a_cut_off_array_skips_its_last_element_with_its_index() {
        let text = format!("[{}, {}, {{\"id\": \"c\", \"tick", ex("a"), ex("b"));
        let checked = checks_of(&text);
        assert_eq!(checked.len(), 3, "{checked:?}");
        assert!(matches!(checked[0], Ok(Checked::Valid { ordinal: 0, .. })));
        assert!(matches!(checked[1], Ok(Checked::Valid { ordinal: 1, .. })));
        match &checked[2] {
            Ok(Checked::Skipped {
                ordinal,
                position,
                id,
                reason,
            }) => {
                assert_eq!((*ordinal, *position), (2, Position::Index(2)));
                assert_eq!(id, "");
                assert_eq!(reason, "the JSON array ends before element 2 is closed");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn text_after_an_array_is_an_error_and_ends_the_records() {
        let checked = checks_of(&format!("[{}, {}] junk", ex("a"), ex("b")));
        let (last, before) = checked.split_last().unwrap();
        assert!(
            matches!(last, Err(DatasetError::TrailingData { .. })),
            "{checked:?}"
        );
        assert!(
            before
                .iter()
                .all(|c| matches!(c, Ok(Checked::Valid { .. }))),
            "{checked:?}"
        );
    }
}
