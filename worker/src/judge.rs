//! Judge backends. `none` asks nobody, `heuristic` scores offline and deterministically; live
//! provider clients plug in here as further variants.

use evalfleet_shared::evaluate::{heuristic_verdict, Example, JudgeTask};
use evalfleet_shared::record::{Score, Scores, Usage};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum JudgeMode {
    /// No judge: judge dimensions are null and never gate.
    None,
    /// Offline text-overlap scores, labelled `heuristic` everywhere.
    #[default]
    Heuristic,
}

impl JudgeMode {
    pub fn name(self) -> &'static str {
        match self {
            JudgeMode::None => "none",
            JudgeMode::Heuristic => "heuristic",
        }
    }
}

/// What judging one example cost.
#[derive(Debug, Clone, Default)]
pub struct JudgeOutcome {
    pub scores: Scores,
    pub usage: Usage,
    pub attempts: u32,
}

#[derive(Debug, Clone)]
pub enum Judge {
    None,
    Heuristic,
}

impl Judge {
    pub fn new(mode: JudgeMode) -> Self {
        match mode {
            JudgeMode::None => Judge::None,
            JudgeMode::Heuristic => Judge::Heuristic,
        }
    }

    /// Scores every task of one example.
    pub async fn judge(&self, example: &Example, tasks: &[JudgeTask<'_>]) -> JudgeOutcome {
        match self {
            Judge::None => JudgeOutcome::default(),
            Judge::Heuristic => {
                let scores: Vec<(String, Score)> = tasks
                    .iter()
                    .map(|t| {
                        (
                            t.dimension.name.clone(),
                            heuristic_verdict(t.dimension, example),
                        )
                    })
                    .collect();
                JudgeOutcome {
                    scores: Scores(scores),
                    usage: Usage::default(),
                    attempts: 1,
                }
            }
        }
    }
}
