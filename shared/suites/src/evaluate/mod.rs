//! From a dataset record to a result record, for every suite.
//!
//! Processing one example is split in three so judges and code scorers — the parts that wait on
//! the network or on other processes — stay outside this pure crate: [`Evaluator::parse`] types
//! the record, [`judge_tasks`] says which judge dimensions to ask and [`scorer_tasks`] which
//! code scorers, and [`finish`] computes metrics, overall score and gates from the verdicts and
//! the scores. Embedded `run` and fleet workers call exactly these.

mod finish;
mod heuristic;
mod human;
mod pairwise;
mod validate;

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::custom::{text_of, CustomExample, CustomSuite, ExternalCheck, ScorerRequest};
use crate::loganalysis::{self, LogExample, ScenarioCache, ScenarioRef};
use crate::rag::{self, RagExample};
use crate::suite::Suite;
use crate::support::{self, SupportExample};
use crate::target::PendingRecord;
use evalfleet_model::record::Group;
use evalfleet_model::routing::ProviderRules;
use evalfleet_model::suite::{Dimension, SuiteKind};

pub use finish::{finish, Effort, Verdicts};
pub use heuristic::heuristic_verdict;
pub use human::HumanLabels;
pub use pairwise::pairwise_score;
pub use validate::{Checked, Checks, Validator};

/// A validated example of one of the three built-in suites or of a custom suite.
///
/// The producer validates each record once and the message carries this typed form
/// (`{"support": {...}}`, `{"rag": ...}`, `{"log": ...}`, `{"custom": ...}`): a worker
/// deserialises it and never validates raw JSON again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Example {
    Support(SupportExample),
    Rag(Box<RagExample>),
    Log(LogExample),
    Custom(Box<CustomExample>),
}

/// What a message asks of a worker: evaluate a recorded example, or first have the run's
/// target generate the record's outputs and then evaluate the completed record.
#[derive(Debug, Clone, PartialEq)]
pub enum Work {
    Evaluate(Example),
    Generate(PendingRecord),
}

impl Work {
    pub fn id(&self) -> &str {
        match self {
            Work::Evaluate(e) => e.id(),
            Work::Generate(p) => &p.id,
        }
    }

    /// Gives the example (or the record its target completes) the baseline's answers.
    fn set_baseline(&mut self, answers: crate::custom::BaselineAnswers) {
        match self {
            Work::Evaluate(Example::Custom(e)) => e.baseline = answers,
            Work::Evaluate(_) => {}
            Work::Generate(p) => p.baseline = answers,
        }
    }

    /// The log-analysis scenario this work names: the producer stores it once per run before
    /// the first message that names it, and a worker attaches it by digest.
    pub fn scenario(&self) -> Option<&ScenarioRef> {
        match self {
            Work::Evaluate(Example::Log(e)) => Some(&e.scenario),
            Work::Evaluate(_) => None,
            Work::Generate(p) => p.scenario.as_ref(),
        }
    }
}

impl Example {
    pub fn id(&self) -> &str {
        match self {
            Example::Support(e) => &e.id,
            Example::Rag(e) => &e.id,
            Example::Log(e) => &e.id,
            Example::Custom(e) => &e.id,
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
            Example::Custom(e) => e.group.clone(),
        }
    }

    /// The texts a person looks at first when reading this example's result (what the judges
    /// read), each cut to [`INPUT_CHARS`] characters: the report viewer shows them beside the
    /// verdicts; the dataset keeps the full texts.
    pub fn inputs(&self, suite: &Suite) -> Map<String, Value> {
        let texts: Vec<(&str, Cow<'_, str>)> = match self {
            Example::Support(e) => vec![
                ("ticket", e.ticket.as_str().into()),
                ("response", e.response.as_str().into()),
            ],
            Example::Rag(e) => {
                let trace = e.trace.as_ref();
                let answer = trace.and_then(|t| t.answer.as_deref()).unwrap_or("");
                let context = trace.and_then(|t| t.context.as_deref()).unwrap_or("");
                vec![
                    ("question", e.question.as_str().into()),
                    ("answer", answer.into()),
                    ("context", context.into()),
                ]
            }
            Example::Log(e) => vec![("output", e.output.as_str().into())],
            Example::Custom(e) => match suite.custom.as_deref() {
                Some(custom) => custom
                    .columns()
                    .zip(&e.values)
                    .filter_map(|((name, _), v)| Some((name, text_of(v.as_ref()?))))
                    .collect(),
                None => Vec::new(),
            },
        };
        texts
            .into_iter()
            .map(|(name, text)| (name.to_owned(), Value::String(cut(&text, INPUT_CHARS))))
            .collect()
    }

    /// People's scores of the judge dimensions this example carries.
    pub fn human(&self) -> &HumanLabels {
        match self {
            Example::Support(e) => &e.human,
            Example::Rag(e) => &e.human,
            Example::Log(e) => &e.human,
            Example::Custom(e) => &e.human,
        }
    }

    fn set_human(&mut self, labels: HumanLabels) {
        match self {
            Example::Support(e) => e.human = labels,
            Example::Rag(e) => e.human = labels,
            Example::Log(e) => e.human = labels,
            Example::Custom(e) => e.human = labels,
        }
    }

    /// The provider that produced the judged response, when the example names a model.
    pub fn response_provider(&self) -> Option<&str> {
        match self {
            Example::Support(e) => Some(&e.provider),
            Example::Custom(e) => e.provider.as_deref(),
            _ => None,
        }
    }
}

/// How much of each input text a result record keeps (see [`Example::inputs`]).
pub const INPUT_CHARS: usize = 2000;

/// `text`, or its first `max` characters and an ellipsis.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// One judge question: a dimension of one example, with the texts the judge reads.
#[derive(Debug, Clone)]
pub struct JudgeTask<'a> {
    pub dimension: &'a Dimension,
    /// The judged texts (name, text), each delimited as untrusted data in the prompt.
    pub fields: Vec<(&'a str, Cow<'a, str>)>,
    /// A custom suite's dimension: its template writes the prompt's body.
    pub custom: Option<CustomTask<'a>>,
}

/// The custom part of a judge question: the suite, the dimension's index and the example.
#[derive(Debug, Clone, Copy)]
pub struct CustomTask<'a> {
    pub suite: &'a CustomSuite,
    pub dimension: usize,
    pub example: &'a CustomExample,
}

impl CustomTask<'_> {
    /// The dimension's template rendered for the example, judged fields delimited in place.
    pub fn render(&self) -> Result<String, String> {
        self.suite.render(self.dimension, self.example)
    }

    /// The tags of the judged fields (what the system prompt tells the judge to treat as data).
    pub fn tags(&self) -> &[String] {
        self.suite.tags(self.dimension)
    }

    /// A pairwise dimension's two answers: the judged one and the other one (Err: why there
    /// is none). None for a dimension scored on a scale.
    pub fn pair(&self) -> Option<crate::custom::AnswerPair<'_>> {
        self.suite.pair(self.dimension, self.example)
    }

    /// A pairwise dimension's body with `first` in position A and `second` in position B.
    pub fn render_pair(&self, first: &str, second: &str) -> Result<String, String> {
        self.suite
            .render_pair(self.dimension, self.example, (first, second))
    }
}

impl JudgeTask<'_> {
    /// Whether the judge compares two answers (twice, positions swapped) instead of scoring one.
    pub fn is_pairwise(&self) -> bool {
        self.custom
            .is_some_and(|c| c.suite.is_pairwise(c.dimension))
    }
}

/// The judge questions of `example`, one per suite dimension, in suite order.
pub fn judge_tasks<'a>(suite: &'a Suite, example: &'a Example) -> Vec<JudgeTask<'a>> {
    let fields: Vec<(&'a str, Cow<'a, str>)> = match example {
        Example::Support(e) => vec![
            ("ticket", Cow::Borrowed(e.ticket.as_str())),
            ("response", Cow::Borrowed(e.response.as_str())),
        ],
        Example::Rag(e) => {
            let trace = e.trace.as_ref();
            vec![
                ("question", Cow::Borrowed(e.question.as_str())),
                (
                    "answer",
                    Cow::Borrowed(trace.and_then(|t| t.answer.as_deref()).unwrap_or("")),
                ),
                (
                    "context",
                    Cow::Borrowed(trace.and_then(|t| t.context.as_deref()).unwrap_or("")),
                ),
            ]
        }
        Example::Log(e) => vec![("output", Cow::Borrowed(e.output.as_str()))],
        Example::Custom(e) => {
            let Some(custom) = suite.custom.as_deref() else {
                return Vec::new();
            };
            return suite
                .dimensions
                .iter()
                .enumerate()
                .map(|(i, d)| JudgeTask {
                    dimension: d,
                    fields: custom.judged(i, e),
                    custom: Some(CustomTask {
                        suite: custom,
                        dimension: i,
                        example: e,
                    }),
                })
                .collect();
        }
    };
    suite
        .dimensions
        .iter()
        .map(|d| JudgeTask {
            dimension: d,
            fields: fields.clone(),
            custom: None,
        })
        .collect()
}

/// One code scorer's request for one example: the check (where to send it) and the request.
#[derive(Debug)]
pub struct ScorerTask<'a> {
    pub check: &'a ExternalCheck,
    pub request: ScorerRequest<'a>,
}

/// The code scorers to ask for `example`, one per `command` or `http` check of a custom suite,
/// in the order [`crate::custom::CustomSuite::external`] lists them (the order of the scores
/// [`finish`] takes back). None for any other suite.
pub fn scorer_tasks<'a>(suite: &'a Suite, example: &'a Example) -> Vec<ScorerTask<'a>> {
    let (Example::Custom(e), Some(custom)) = (example, suite.custom.as_deref()) else {
        return Vec::new();
    };
    custom
        .external()
        .enumerate()
        .map(|(i, check)| ScorerTask {
            check,
            request: custom.scorer_request(i, e),
        })
        .collect()
}

/// Types records of one suite (the producer's job). Holds the provider rules and, for
/// log-analysis, the scenario files already read.
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

    /// Validates one record; Err is the skip reason. Human labels are checked after the
    /// suite's own fields.
    pub fn parse(&mut self, value: &Value) -> Result<Example, String> {
        let mut example = self.parse_fields(value)?;
        let labels = human::read(&self.suite, value)?;
        if !labels.is_empty() {
            example.set_human(labels);
        }
        Ok(example)
    }

    fn parse_fields(&mut self, value: &Value) -> Result<Example, String> {
        match self.suite.kind {
            SuiteKind::SupportJudge => {
                support::parse_example(value, &self.rules).map(Example::Support)
            }
            SuiteKind::RagLayers => rag::parse_example(value).map(|e| Example::Rag(Box::new(e))),
            SuiteKind::LogAnalysis => {
                loganalysis::parse_example(value, &mut self.scenarios).map(Example::Log)
            }
            SuiteKind::Custom => match self.suite.custom.as_deref() {
                Some(custom) => custom
                    .parse(value, &self.rules, &self.suite.group_by)
                    .map(|e| Example::Custom(Box::new(e))),
                None => Err("the custom suite has no record section".to_owned()),
            },
        }
    }

    /// A target run's record before its call: gives `pending` what the record shares with
    /// others and only the producer can read — a log-analysis record's scenario, loaded and
    /// checked as for a recorded example (the same skip reasons). Err is the skip reason.
    pub fn resolve_shared(
        &mut self,
        mut pending: PendingRecord,
        value: &Value,
    ) -> Result<PendingRecord, String> {
        if self.suite.kind == SuiteKind::LogAnalysis {
            pending.scenario = Some(loganalysis::resolve_scenario(value, &mut self.scenarios)?);
        }
        Ok(pending)
    }

    /// Validates the record a target completed from `pending`, as [`Evaluator::parse`] does a
    /// recorded one, except that a log-analysis example takes the scenario the producer
    /// resolved ([`Evaluator::resolve_shared`]): the record's `scenario` field is never read
    /// again, so a worker reads no file a record names.
    pub fn parse_completed(
        &mut self,
        value: &Value,
        pending: &PendingRecord,
    ) -> Result<Example, String> {
        if self.suite.kind != SuiteKind::LogAnalysis {
            let mut example = self.parse(value)?;
            if let Example::Custom(e) = &mut example {
                e.baseline = pending.baseline.clone();
            }
            return Ok(example);
        }
        let scenario = pending
            .scenario
            .as_ref()
            .ok_or("the record's scenario was not resolved before the call")?;
        let mut example = loganalysis::parse_completed(value, scenario).map(Example::Log)?;
        let labels = human::read(&self.suite, value)?;
        if !labels.is_empty() {
            example.set_human(labels);
        }
        Ok(example)
    }
}
