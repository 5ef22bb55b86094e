//! A dimension's score from its judges' verdicts: one judge's verdict as it is, or a panel's
//! mean over the judges that scored, each judge's own verdict kept for the agreement
//! statistics.

use evalfleet_model::record::{JudgeId, PanelVerdict, Score};
use evalfleet_model::suite::Dimension;

/// A judge's answer to one question.
pub(super) enum Asked {
    Scored {
        score: i64,
        reasoning: String,
        cached: bool,
    },
    Unscored(String),
    /// A pairwise dimension's two verdicts: the judged answer in position A, then in B.
    Pairwise {
        first: evalfleet_model::pairwise::Pick,
        swapped: evalfleet_model::pairwise::Pick,
        reasoning: String,
        cached: bool,
    },
}

/// The dimension's score from its judges' verdicts: the single verdict, or with a panel the
/// mean of the scored ones (each judge's raw verdict kept for the agreement statistics).
pub(super) fn combine(dim: &Dimension, verdicts: Vec<(JudgeId, Asked)>) -> Score {
    let reported = |raw: i64| {
        if dim.unit {
            dim.to_unit(raw as f64)
        } else {
            raw as f64
        }
    };
    if verdicts.len() == 1 {
        let (judge, asked) = verdicts.into_iter().next().expect("one verdict");
        return match asked {
            Asked::Scored {
                score,
                reasoning,
                cached,
            } => Score {
                cached,
                ..Score::scored(reported(score), reasoning, judge)
            },
            Asked::Unscored(reason) => Score::unscored(judge, reason),
            Asked::Pairwise { .. } => {
                Score::unscored(judge, "a pairwise reply to a scored question".into())
            }
        };
    }
    let panel: Vec<PanelVerdict> = verdicts
        .iter()
        .map(|(judge, asked)| match asked {
            Asked::Scored {
                score, reasoning, ..
            } => PanelVerdict {
                judge: judge.clone(),
                score: Some(*score),
                reasoning: reasoning.clone(),
            },
            Asked::Unscored(reason) => PanelVerdict {
                judge: judge.clone(),
                score: None,
                reasoning: reason.clone(),
            },
            Asked::Pairwise { .. } => PanelVerdict {
                judge: judge.clone(),
                score: None,
                reasoning: "a pairwise reply to a scored question".into(),
            },
        })
        .collect();
    let scored: Vec<f64> = panel.iter().filter_map(|p| p.score).map(reported).collect();
    let ensemble = JudgeId {
        provider: "ensemble".into(),
        model: verdicts
            .iter()
            .map(|(j, _)| format!("{}/{}", j.provider, j.model))
            .collect::<Vec<_>>()
            .join("+"),
    };
    let all_cached = verdicts
        .iter()
        .all(|(_, a)| matches!(a, Asked::Scored { cached: true, .. }));
    let mut score = if scored.is_empty() {
        Score::unscored(ensemble, "every judge of the panel stayed unscored".into())
    } else {
        let reasoning = format!("mean of {} of {} judges", scored.len(), panel.len());
        Score::scored(
            scored.iter().sum::<f64>() / scored.len() as f64,
            reasoning,
            ensemble,
        )
    };
    score.cached = all_cached;
    score.panel = panel;
    score
}
