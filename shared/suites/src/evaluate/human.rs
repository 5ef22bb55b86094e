//! Human labels: a column of people's scores on a judge dimension's rubric scale (`human:` on a
//! custom suite's dimension, `human_labels: {dimension: field}` on a suite that extends a
//! built-in one). They are read once, when a record is validated, travel on the typed example
//! to the worker, and land on the dimension's result (`Score.human`), where the report measures
//! the judge against them. Why a bad label skips the record: docs/DECISIONS.md, "Issue 21".

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::suite::Suite;

/// Dimension name → the person's score on its rubric scale, for the dimensions whose label the
/// record carries (a missing, null or blank cell is no label).
pub type HumanLabels = BTreeMap<String, f64>;

/// Every labelled dimension's human score in `value` (a record that already passed the suite's
/// own validation), in the suite's dimension order; Err is the skip reason of the first bad one.
pub(crate) fn read(suite: &Suite, value: &Value) -> Result<HumanLabels, String> {
    let mut labels = HumanLabels::new();
    if suite.human_labels.is_empty() {
        return Ok(labels);
    }
    let Value::Object(obj) = value else {
        return Ok(labels);
    };
    for d in &suite.dimensions {
        let Some(path) = suite.human_labels.get(&d.name) else {
            continue;
        };
        if let Some(score) = label(obj, path, &d.name, d.min, d.max)? {
            labels.insert(d.name.clone(), score);
        }
    }
    Ok(labels)
}

/// The label at `path`: None when absent, null or blank; a whole number from `min` to `max`
/// (a JSON number or a numeric string, as a CSV cell is) otherwise, or Err naming the field.
fn label(
    obj: &Map<String, Value>,
    path: &str,
    dimension: &str,
    min: i64,
    max: i64,
) -> Result<Option<f64>, String> {
    let bad = || {
        format!("'{path}' must be a whole number from {min} to {max} (the human score of '{dimension}')")
    };
    let number = match lookup(obj, path) {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Number(n)) => n.as_f64().ok_or_else(bad)?,
        Some(Value::String(s)) if s.trim().is_empty() => return Ok(None),
        Some(Value::String(s)) => s.trim().parse::<f64>().map_err(|_| bad())?,
        Some(_) => return Err(bad()),
    };
    let on_scale =
        number.is_finite() && number.fract() == 0.0 && number >= min as f64 && number <= max as f64;
    if on_scale {
        Ok(Some(number))
    } else {
        Err(bad())
    }
}

/// The value at `path`: the literal key first (a CSV column may be named `labels.tone`), then
/// the dotted path through nested objects — as a custom suite's fields are found.
fn lookup<'a>(obj: &'a Map<String, Value>, path: &str) -> Option<&'a Value> {
    if let Some(v) = obj.get(path) {
        return Some(v);
    }
    let mut segments = path.split('.');
    let mut cur = obj.get(segments.next()?)?;
    for s in segments {
        cur = cur.as_object()?.get(s)?;
    }
    Some(cur)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use evalfleet_model::suite::SuiteKind;

    fn support(labels: &[(&str, &str)]) -> Suite {
        let mut suite = Suite::builtin(SuiteKind::SupportJudge);
        suite.human_labels = labels
            .iter()
            .map(|(d, f)| ((*d).to_owned(), (*f).to_owned()))
            .collect();
        suite
    }

    #[test]
    fn numbers_and_numeric_strings_on_the_scale_are_labels() {
        let suite = support(&[("relevance", "human_relevance"), ("tone", "labels.tone")]);
        let read = |v: Value| read(&suite, &v);
        assert_eq!(
            read(json!({"human_relevance": 4, "labels": {"tone": " 2 "}})).unwrap(),
            HumanLabels::from([("relevance".into(), 4.0), ("tone".into(), 2.0)])
        );
        assert_eq!(
            read(json!({"human_relevance": 5.0, "labels.tone": "1"})).unwrap(),
            HumanLabels::from([("relevance".into(), 5.0), ("tone".into(), 1.0)]),
            "a literal dotted column wins, a whole float is a whole number"
        );
    }

    #[test]
    fn a_missing_null_or_blank_cell_is_no_label() {
        let suite = support(&[("relevance", "h")]);
        for v in [json!({}), json!({"h": null}), json!({"h": "  "})] {
            assert_eq!(read(&suite, &v).unwrap(), HumanLabels::new(), "{v}");
        }
    }

    #[test]
    fn anything_else_is_a_skip_reason_naming_field_scale_and_dimension() {
        let suite = support(&[("relevance", "h"), ("tone", "t")]);
        let want = "'h' must be a whole number from 1 to 5 (the human score of 'relevance')";
        for v in [
            json!({"h": 6}),
            json!({"h": 0}),
            json!({"h": 3.5}),
            json!({"h": "good"}),
            json!({"h": true}),
            json!({"h": [3]}),
            json!({"h": "NaN"}),
        ] {
            assert_eq!(read(&suite, &v).unwrap_err(), want, "{v}");
        }
        assert_eq!(
            read(&suite, &json!({"h": 3, "t": "x"})).unwrap_err(),
            "'t' must be a whole number from 1 to 5 (the human score of 'tone')"
        );
    }

    #[test]
    fn labels_reach_the_result_and_a_mixed_panel_records_the_answers_provider() {
        use crate::evaluate::{finish, Effort, Evaluator};
        use evalfleet_model::record::{JudgeId, PanelVerdict, Score, Scores};
        let suite = std::sync::Arc::new(support(&[("tone", "human_tone")]));
        let mut ev = Evaluator::new(suite.clone(), Default::default(), None);
        let example = ev
            .parse(
                &json!({"id": "a", "ticket": "t", "response": "r", "model": "claude-3",
                           "prompt_version": "v1", "human_tone": 2}),
            )
            .unwrap();
        let judge = |provider: &str| JudgeId {
            provider: provider.into(),
            model: "m".into(),
        };
        let verdict = |provider: &str, score| PanelVerdict {
            judge: judge(provider),
            score: Some(score),
            reasoning: String::new(),
        };
        let scores = |panel: Vec<PanelVerdict>| {
            let mut tone = Score::scored(3.0, String::new(), judge("ensemble"));
            tone.panel = panel;
            Scores(vec![
                (
                    "relevance".into(),
                    Score::scored(4.0, String::new(), judge("openai")),
                ),
                ("tone".into(), tone),
            ])
        };
        let done = |s: Scores| {
            finish(
                &suite,
                "r",
                0,
                None,
                &example,
                s,
                &Default::default(),
                Effort::default(),
            )
        };
        let rec = done(scores(vec![verdict("openai", 3), verdict("anthropic", 3)]));
        assert_eq!(rec.scores.get("tone").unwrap().human, Some(2.0));
        assert_eq!(
            rec.scores.get("relevance").unwrap().human,
            None,
            "not labelled"
        );
        assert_eq!(rec.answer_provider.as_deref(), Some("anthropic"));
        let text = serde_json::to_string(&rec).unwrap();
        assert!(
            text.contains(r#""human":2"#) || text.contains(r#""human":2.0"#),
            "{text}"
        );
        let one_provider = done(scores(vec![verdict("openai", 3), verdict("openai", 4)]));
        assert_eq!(
            one_provider.answer_provider, None,
            "no self-preference to measure"
        );
    }
}
