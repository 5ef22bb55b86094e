//! A custom suite's pairwise dimensions (`pairwise: {against: FIELD}`): checked when the suite
//! loads, so a typo or a shape that cannot work is an error naming the key, never a run of
//! unscored items. A pairwise dimension judges exactly one field (the answer) against another
//! answer; its template shows that one field, and the prompt puts the two answers in its
//! place, each in its own tag (`<answer_a>`, `<answer_b>`), in one order and then the other.
//!
//! The other answer is another field of the record, or — when `against` names the judged field
//! itself — the same field in a baseline run's outputs (`run --baseline RUN`): the producer
//! finds each item's baseline answer by id and the example carries it
//! ([`CustomExample::baseline`](super::CustomExample::baseline)).

use super::record::RecordPlan;
use super::spec::JudgeSpec;
use super::template::Templates;
use crate::delimit;

/// Where a pairwise dimension's two answers are: declared-field indices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Pair {
    /// The judged answer.
    pub(crate) judged: usize,
    /// The other answer.
    pub(crate) against: Against,
}

/// Where a pairwise dimension's other answer comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Against {
    /// Another declared field of the same record.
    Field(usize),
    /// The judged field as the baseline run answered it (`against` names the judged field).
    Baseline,
}

/// Checks every pairwise dimension, gives each the tags of its two positions, and returns the
/// pairs per dimension (None for a dimension scored on a scale).
pub(crate) fn compile(
    judge: &JudgeSpec,
    plan: &RecordPlan,
    templates: &mut Templates,
) -> Result<Vec<Option<Pair>>, String> {
    let declared: Vec<&str> = plan.names().collect();
    let mut pairs = Vec::with_capacity(judge.dimensions.len());
    for (d, t) in judge.dimensions.iter().zip(templates.dims.iter_mut()) {
        let Some(spec) = &d.pairwise else {
            pairs.push(None);
            continue;
        };
        let at = format!("judge dimension '{}': pairwise", d.name);
        let against = plan.index_of(&spec.against).ok_or_else(|| {
            format!(
                "{at}.against: '{}' is not a field in record.fields (declared: {})",
                spec.against,
                declared.join(", ")
            )
        })?;
        if d.human.is_some() {
            return Err(format!(
                "{at}: 'human' scores one answer on a scale and does not apply to a pairwise dimension"
            ));
        }
        let judged = match t.judged.as_slice() {
            [one] => *one,
            [] => {
                return Err(format!(
                    "{at}: the template shows no field: it must show the judged answer (e.g. '{{{{ answer }}}}')"
                ))
            }
            many => {
                let names: Vec<&str> = many.iter().map(|&i| declared[i]).collect();
                return Err(format!(
                    "{at}: compares one answer, but the template judges {}; name it with 'judged: [FIELD]'",
                    names.join(", ")
                ));
            }
        };
        let against = if against == judged {
            Against::Baseline
        } else if t.used.contains(&against) {
            return Err(format!(
                "{at}.against: '{}' is in the dimension's template; the prompt shows it in the judged answer's place, in both positions",
                spec.against
            ));
        } else {
            Against::Field(against)
        };
        let tag = delimit::tag_name(declared[judged]);
        t.tags = vec![format!("{tag}_a"), format!("{tag}_b")];
        pairs.push(Some(Pair { judged, against }));
    }
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use crate::suite::Suite;

    fn load(dimension: &str) -> Result<Suite, String> {
        let text = format!(
            r#"
kind: custom
name: duel
record:
  fields:
    question: {{type: string, required: true}}
    answer: {{type: string, required: true}}
    other: {{type: string}}
    rating: {{type: number}}
judge:
  dimensions:
{dimension}
"#
        );
        Suite::from_yaml(&text, "duel").map_err(|e| e.to_string())
    }

    #[test]
    fn a_pairwise_dimension_loads() {
        let suite = load(
            "    - name: better\n      pairwise: {against: other}\n      judged: [answer]\n      rubric: the more helpful answer\n      template: \"Q: {{ question }}\\n{{ answer }}\"\n",
        )
        .expect("loads");
        let d = &suite.dimensions[0];
        assert_eq!((d.min, d.max, d.unit), (0, 1, true));
        let custom = suite.custom.as_deref().unwrap();
        assert_eq!(custom.pairwise_dimensions().collect::<Vec<_>>(), ["better"]);
        assert_eq!(custom.tags(0), ["answer_a", "answer_b"]);
    }

    #[test]
    fn against_the_judged_field_itself_compares_with_the_baseline_run() {
        let suite = load(
            "    - name: better\n      pairwise: {against: answer}\n      judged: [answer]\n      rubric: r\n      template: \"Q: {{ question }}\\n{{ answer }}\"\n",
        )
        .expect("loads");
        let custom = suite.custom.as_deref().unwrap();
        assert_eq!(custom.baseline_fields().collect::<Vec<_>>(), ["answer"]);
        assert_eq!(custom.tags(0), ["answer_a", "answer_b"]);
        // A suite comparing with a field of the record needs no baseline run.
        let field = load(
            "    - name: better\n      pairwise: {against: other}\n      judged: [answer]\n      rubric: r\n      template: \"{{ answer }}\"\n",
        )
        .expect("loads");
        assert_eq!(
            field.custom.as_deref().unwrap().baseline_fields().count(),
            0
        );
    }

    #[test]
    fn bad_pairwise_dimensions_name_the_key() {
        let cases = [
            (
                "    - name: better\n      pairwise: {against: nope}\n      rubric: r\n      template: \"{{ answer }}\"\n",
                "judge dimension 'better': pairwise.against: 'nope' is not a field in record.fields",
            ),
            (
                "    - name: better\n      pairwise: {against: other}\n      scale: {min: 1, max: 5}\n      rubric: r\n      template: \"{{ answer }}\"\n",
                "'pairwise' compares two answers and takes no 'scale' or 'binary'",
            ),
            (
                "    - name: better\n      pairwise: {against: other}\n      binary: true\n      rubric: r\n      template: \"{{ answer }}\"\n",
                "takes no 'scale' or 'binary'",
            ),
            (
                "    - name: better\n      pairwise: {against: other}\n      rubric: r\n      template: \"{{ question }} {{ answer }}\"\n",
                "compares one answer, but the template judges question, answer; name it with 'judged: [FIELD]'",
            ),
            (
                "    - name: better\n      pairwise: {against: other}\n      judged: [answer]\n      rubric: r\n      template: \"{{ other }} {{ answer }}\"\n",
                "pairwise.against: 'other' is in the dimension's template",
            ),
            (
                "    - name: better\n      pairwise: {against: other}\n      human: rating\n      rubric: r\n      template: \"{{ answer }}\"\n",
                "'human' scores one answer on a scale and does not apply to a pairwise dimension",
            ),
            (
                "    - name: better\n      pairwise: {against: other, versus: x}\n      rubric: r\n      template: \"{{ answer }}\"\n",
                "unknown field `versus`",
            ),
        ];
        for (dimension, want) in cases {
            let err = load(dimension).expect_err(dimension);
            assert!(err.contains(want), "{err}\n  wants: {want}");
        }
    }

    #[test]
    fn min_win_rate_needs_a_pairwise_dimension() {
        let scaled = "    - name: ok\n      binary: true\n      rubric: r\n      template: \"{{ answer }}\"\nrun_gates: {min_win_rate: 0.5}\n";
        let err = load(scaled).unwrap_err();
        assert!(
            err.contains("run_gates.min_win_rate needs a pairwise dimension"),
            "{err}"
        );
        let out_of_range = "    - name: better\n      pairwise: {against: other}\n      rubric: r\n      template: \"{{ answer }}\"\nrun_gates: {min_win_rate: 1.5}\n";
        let err = load(out_of_range).unwrap_err();
        assert!(
            err.contains("run_gates.min_win_rate 1.5 is not in [0, 1]"),
            "{err}"
        );
    }
}
