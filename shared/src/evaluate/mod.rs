//! From a dataset record to a result record, for every suite.
//!
//! Processing one example is split in three so judges — the only part that waits on the network
//! — stay outside this pure crate: [`Evaluator::parse`] types the record, [`judge_tasks`] says
//! which judge dimensions to ask, and [`Evaluator::finish`] computes metrics, overall score and
//! gates from the verdicts. Embedded `run` and fleet workers call exactly these three.

mod finish;
mod heuristic;
mod validate;

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use crate::loganalysis::{self, LogExample, ScenarioCache};
use crate::rag::{self, RagExample};
use crate::record::Group;
use crate::routing::ProviderRules;
use crate::suite::{Dimension, Suite, SuiteKind};
use crate::support::{self, SupportExample};

pub use finish::{Effort, Verdicts};
pub use heuristic::heuristic_verdict;
pub use validate::{Checked, Validator};

/// A validated example of one of the three suites.
#[derive(Debug, Clone)]
pub enum Example {
    Support(SupportExample),
    Rag(Box<RagExample>),
    Log(LogExample),
}

impl Example {
    pub fn id(&self) -> &str {
        match self {
            Example::Support(e) => &e.id,
            Example::Rag(e) => &e.id,
            Example::Log(e) => &e.id,
        }
    }

    /// The grouping keys this example carries.
    pub fn group(&self) -> Group {
        match self {
            Example::Support(e) => Group {
                model: Some(e.model.clone()),
                prompt_version: Some(e.prompt_version.clone()),
                ..Group::default()
            },
            Example::Rag(e) => Group {
                domain: e.metadata.domain.clone(),
                difficulty: e.metadata.difficulty.clone(),
                model: e
                    .metadata
                    .extra
                    .get("model")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                ..Group::default()
            },
            Example::Log(e) => Group {
                model: e.model.clone(),
                config: e.config.clone(),
                ..Group::default()
            },
        }
    }

    /// The provider that produced the judged response, when the example names a model.
    pub fn response_provider(&self) -> Option<&str> {
        match self {
            Example::Support(e) => Some(&e.provider),
            _ => None,
        }
    }
}

/// One judge question: a dimension of one example, with the texts the judge reads.
#[derive(Debug, Clone)]
pub struct JudgeTask<'a> {
    pub dimension: &'a Dimension,
    /// (name, text) pairs the prompt template delimits as data.
    pub fields: Vec<(&'static str, &'a str)>,
}

/// The judge questions of `example`, one per suite dimension, in suite order.
pub fn judge_tasks<'a>(suite: &'a Suite, example: &'a Example) -> Vec<JudgeTask<'a>> {
    let fields: Vec<(&'static str, &'a str)> = match example {
        Example::Support(e) => vec![("ticket", &e.ticket), ("response", &e.response)],
        Example::Rag(e) => {
            let trace = e.trace.as_ref();
            vec![
                ("question", &e.question),
                (
                    "answer",
                    trace.and_then(|t| t.answer.as_deref()).unwrap_or(""),
                ),
                (
                    "context",
                    trace.and_then(|t| t.context.as_deref()).unwrap_or(""),
                ),
            ]
        }
        Example::Log(e) => vec![("output", &e.output)],
    };
    suite
        .dimensions
        .iter()
        .map(|d| JudgeTask {
            dimension: d,
            fields: fields.clone(),
        })
        .collect()
}

/// Types records of one suite. Holds the provider rules and, for log-analysis, the scenario
/// files already read.
pub struct Evaluator {
    pub suite: Arc<Suite>,
    rules: ProviderRules,
    scenarios: ScenarioCache,
}

impl Evaluator {
    /// `dataset_dir` resolves log-analysis scenario paths.
    pub fn new(suite: Arc<Suite>, rules: ProviderRules, dataset_dir: Option<PathBuf>) -> Self {
        Evaluator {
            suite,
            rules,
            scenarios: ScenarioCache::new(dataset_dir),
        }
    }

    /// Validates one record; Err is the skip reason.
    pub fn parse(&mut self, value: &Value) -> Result<Example, String> {
        match self.suite.kind {
            SuiteKind::SupportJudge => {
                support::parse_example(value, &self.rules).map(Example::Support)
            }
            SuiteKind::RagLayers => rag::parse_example(value).map(|e| Example::Rag(Box::new(e))),
            SuiteKind::LogAnalysis => {
                loganalysis::parse_example(value, &mut self.scenarios).map(Example::Log)
            }
        }
    }
}
