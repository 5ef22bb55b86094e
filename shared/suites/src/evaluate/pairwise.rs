//! A pairwise dimension's result (see [`evalfleet_model::pairwise`]): the two verdicts made
//! into the item's score, and the offline heuristic's verdicts, so `evalfleet run` compares two
//! systems' answers with no network as it scores one.

use std::collections::HashSet;

use evalfleet_model::pairwise::{PairwiseResult, Pick};
use evalfleet_model::record::{JudgeId, Score};
use evalfleet_model::text::answer_tokens;

use super::CustomTask;

/// The dimension's score from the verdict with the judged answer in position A (`first`) and
/// the one with it in position B (`swapped`): 1 / 0.5 / 0 for win / tie / loss, with the
/// verdicts and whether they followed the position.
pub fn pairwise_score(first: Pick, swapped: Pick, reasoning: String, judge: JudgeId) -> Score {
    let result = PairwiseResult::combine(first, swapped);
    Score {
        pairwise: Some(result),
        ..Score::scored(result.preference.score(), reasoning, judge)
    }
}

/// The heuristic's verdicts: the answer more of whose distinct words occur in the other fields
/// the template shows (the question it should answer) is better; equal shares, or no such
/// field, are a tie. It has no position, so both orders agree.
pub(crate) fn heuristic(custom: &CustomTask<'_>) -> Score {
    let judge = JudgeId::heuristic();
    let Some((judged, against)) = custom.pair() else {
        return Score::unscored(judge, "not a pairwise dimension".into());
    };
    let against = match against {
        Ok(text) => text,
        Err(reason) => return Score::unscored(judge, reason),
    };
    let context: HashSet<String> = custom
        .suite
        .context(custom.dimension, custom.example)
        .iter()
        .flat_map(|(_, t)| answer_tokens(t))
        .collect();
    let share = |text: &str| {
        let tokens: HashSet<String> = answer_tokens(text).into_iter().collect();
        if tokens.is_empty() {
            0.0
        } else {
            tokens.iter().filter(|t| context.contains(*t)).count() as f64 / tokens.len() as f64
        }
    };
    let (ours, theirs) = (share(&judged), share(&against));
    let pick = |a: f64, b: f64| {
        if context.is_empty() || (a - b).abs() < 1e-12 {
            Pick::Tie
        } else if a > b {
            Pick::A
        } else {
            Pick::B
        }
    };
    let reasoning = format!(
        "heuristic: {:.0}% of the answer's words appear in its context, {:.0}% of the other answer's",
        ours * 100.0,
        theirs * 100.0
    );
    pairwise_score(pick(ours, theirs), pick(theirs, ours), reasoning, judge)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use evalfleet_model::pairwise::Preference;
    use evalfleet_model::routing::ProviderRules;
    use serde_json::json;

    use crate::evaluate::{heuristic_verdict, judge_tasks, Evaluator};
    use crate::suite::Suite;

    const SUITE: &str = r#"
kind: custom
name: duel
record:
  fields:
    question: {type: string, required: true}
    answer: {type: string, required: true}
    other: {type: string}
judge:
  dimensions:
    - name: better
      pairwise: {against: other}
      judged: [answer]
      rubric: the answer that addresses the question
      template: "Q: {{ question }}\n{{ answer }}"
"#;

    fn verdict(record: serde_json::Value) -> evalfleet_model::record::Score {
        let suite = Arc::new(Suite::from_yaml(SUITE, "duel").expect("loads"));
        let mut evaluator = Evaluator::new(suite.clone(), ProviderRules::default(), None);
        let example = evaluator.parse(&record).expect("valid");
        let tasks = judge_tasks(&suite, &example);
        assert!(tasks[0].is_pairwise());
        heuristic_verdict(&tasks[0], &example)
    }

    #[test]
    fn the_answer_closer_to_the_question_wins() {
        let q = "How do I reset my VPN password?";
        let win = verdict(json!({"id": "1", "question": q,
            "answer": "Reset the VPN password from the portal.", "other": "Try again later."}));
        assert_eq!(win.score, Some(1.0));
        let p = win.pairwise.expect("pairwise");
        assert_eq!(p.preference, Preference::Win);
        assert!(!p.followed_position);
        let loss = verdict(json!({"id": "2", "question": q,
            "answer": "Try again later.", "other": "Reset the VPN password from the portal."}));
        assert_eq!(loss.score, Some(0.0));
        let tie = verdict(json!({"id": "3", "question": q, "answer": "VPN", "other": "password"}));
        assert_eq!(tie.score, Some(0.5));
        let missing = verdict(json!({"id": "4", "question": q, "answer": "VPN"}));
        assert_eq!(missing.score, None);
        assert_eq!(
            missing.unscored.as_deref(),
            Some("the record has no 'other'")
        );
    }
}
