//! A baseline run's answers, for pairwise dimensions that compare with one
//! (`pairwise: {against: answer}` where `answer` is the judged field, and `run --baseline RUN`).
//!
//! The suite says which fields it needs ([`CustomSuite::baseline_fields`]) and how to read them
//! from one of the baseline's completed records ([`CustomSuite::read_baseline`]: a line of its
//! `outputs.jsonl`, in the dataset's own shape, so the suite's own paths find the id and the
//! answer). Where the records come from and how they are found again by id is the producer's
//! business, behind [`BaselineSource`]: this crate reads no run directory.

use std::collections::BTreeMap;

use serde_json::Value;

use super::pairwise::Against;
use super::{text_of, CustomSuite};

/// One item's baseline answers, by judged field name.
pub type BaselineAnswers = BTreeMap<String, String>;

/// Finds an item's baseline answers by its id (the validator attaches them to each example).
pub trait BaselineSource: Send + Sync {
    /// The answers of the baseline's item `id`; None when the baseline has no such item.
    fn answers(&self, id: &str) -> Option<BaselineAnswers>;
}

impl CustomSuite {
    /// The judged fields whose other answer is the baseline run's, in suite order, each once.
    /// Empty: the suite needs no baseline run.
    pub fn baseline_fields(&self) -> impl Iterator<Item = &str> {
        let names: Vec<&str> = self.plan.names().collect();
        let mut fields: Vec<&str> = Vec::new();
        for pair in self.pairs.iter().flatten() {
            if pair.against == Against::Baseline && !fields.contains(&names[pair.judged]) {
                fields.push(names[pair.judged]);
            }
        }
        fields.into_iter()
    }

    /// The id and the baseline answers in one of the baseline run's completed records. A
    /// field the record does not have is left out (that item's comparison is unscored, with
    /// the reason); a record without a valid id is an error.
    pub fn read_baseline(&self, record: &Value) -> Result<(String, BaselineAnswers), String> {
        let id = self.plan.id_of(record)?;
        let mut answers = BaselineAnswers::new();
        for name in self.baseline_fields() {
            let i = self.plan.index_of(name).expect("a declared field");
            // A field the baseline did not fill is absent, not an error of the record.
            if let Ok(Some(value)) = self.plan.field_of(record, i) {
                answers.insert(name.to_owned(), text_of(&value).into_owned());
            }
        }
        Ok((id.trim().to_owned(), answers))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::suite::Suite;

    fn suite() -> Suite {
        let text = r#"
kind: custom
name: duel
record:
  id: meta.key
  fields:
    question: {type: string, required: true}
    answer: {type: string, required: true, path: out.text}
judge:
  dimensions:
    - name: better
      pairwise: {against: answer}
      judged: [answer]
      rubric: the more helpful answer
      template: "Q: {{ question }}\n{{ answer }}"
"#;
        Suite::from_yaml(text, "duel").expect("loads")
    }

    #[test]
    fn a_baseline_record_is_read_with_the_suites_own_paths() {
        let suite = suite();
        let custom = suite.custom.as_deref().unwrap();
        let record =
            json!({"meta": {"key": " q-1 "}, "question": "why?", "out": {"text": "because"}});
        let (id, answers) = custom.read_baseline(&record).expect("reads");
        assert_eq!(id, "q-1");
        assert_eq!(answers.get("answer").map(String::as_str), Some("because"));
        // The baseline did not answer: no answer, and no error.
        let (_, none) = custom
            .read_baseline(&json!({"meta": {"key": "q-2"}, "question": "why?"}))
            .expect("reads");
        assert!(none.is_empty());
        let err = custom
            .read_baseline(&json!({"question": "why?"}))
            .unwrap_err();
        assert!(
            err.contains("Missing 'key' field (path 'meta.key')"),
            "{err}"
        );
    }

    #[test]
    fn the_pair_takes_the_baseline_answer_the_example_carries() {
        let suite = suite();
        let custom = suite.custom.as_deref().unwrap();
        let record = json!({"meta": {"key": "q-1"}, "question": "why?", "out": {"text": "new"}});
        let mut example = custom
            .parse(&record, &Default::default(), &[])
            .expect("valid");
        let (judged, against) = custom.pair(0, &example).expect("pairwise");
        assert_eq!(judged, "new");
        assert_eq!(
            against.unwrap_err(),
            "the baseline run has no 'answer' for this item"
        );
        example.baseline.insert("answer".into(), "old".into());
        let (_, against) = custom.pair(0, &example).expect("pairwise");
        assert_eq!(against.unwrap(), "old");
    }
}
