//! Suites: how examples are validated, which metrics and judge dimensions run, how results are
//! grouped and which gates apply.
//!
//! The three built-in suites are the YAML files in `config/suites/`, compiled in, so the
//! defaults users read are the defaults that run. A user suite file `extends` one of them (or
//! another suite file) and overrides what it names: gates merge by tag, a custom suite's checks
//! by name, everything else replaces the inherited value. A suite of `kind: custom` describes
//! its own records, judge prompts and checks ([`crate::custom`]).

mod file;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::custom::{CustomSuite, FieldType};
use crate::rag::RagOptions;
use evalfleet_dataset::{CellType, Format, ReadOptions};
use evalfleet_model::gate::Gate;
use evalfleet_model::suite::{CompareOptions, Dimension, Grouping, RunGates, SuiteKind};

pub use file::SuiteFile;

/// A resolved suite. It serialises whole into the run's spec in Redis, so every worker of a
/// fleet run evaluates with exactly the suite the run was submitted with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Suite {
    pub name: String,
    pub kind: SuiteKind,
    pub description: String,
    pub dimensions: Vec<Dimension>,
    pub gates: Vec<Gate>,
    pub group_by: Vec<Grouping>,
    pub run_gates: RunGates,
    /// How `compare` gates two runs of this suite (absent in reports written before it existed).
    #[serde(default, skip_serializing_if = "CompareOptions::is_empty")]
    pub compare: CompareOptions,
    /// rag-layers options (top-k, fuzzy L1, insight types, overall weights); defaults elsewhere.
    pub rag: RagOptions,
    /// A custom suite's records, judge prompts and checks, compiled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom: Option<Arc<CustomSuite>>,
    /// The suite's own system under test (`target:` in its file), as the file wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<evalfleet_config::Target>,
    /// Dimension → the record field (path) holding people's scores of it on its rubric scale:
    /// `human_labels` of a suite extending a built-in one, `human:` of a custom suite's
    /// dimension. The report measures the judge against them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub human_labels: BTreeMap<String, String>,
}

/// The YAML of a built-in suite, compiled in.
fn builtin_yaml(kind: SuiteKind) -> Option<&'static str> {
    match kind {
        SuiteKind::SupportJudge => {
            Some(include_str!("../../../../config/suites/support-judge.yaml"))
        }
        SuiteKind::RagLayers => Some(include_str!("../../../../config/suites/rag-layers.yaml")),
        SuiteKind::LogAnalysis => Some(include_str!("../../../../config/suites/log-analysis.yaml")),
        SuiteKind::Custom => None,
    }
}

/// How many suite files may extend one another in a chain.
const MAX_EXTENDS_DEPTH: usize = 8;

#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    #[error("unknown suite '{name}': use one of support-judge, rag-layers, log-analysis, a file in {dir}, or a path to a suite YAML file")]
    Unknown { name: String, dir: String },
    #[error("cannot read suite file '{path}'")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("suite file '{path}': {message}")]
    Invalid { path: String, message: String },
}

impl Suite {
    /// A built-in suite with its shipped defaults. `kind` must be one of [`SuiteKind::ALL`]:
    /// custom suites come from files.
    pub fn builtin(kind: SuiteKind) -> Suite {
        let yaml = builtin_yaml(kind)
            .unwrap_or_else(|| panic!("'{}' is not a built-in suite", kind.name()));
        let file: SuiteFile = serde_norway::from_str(yaml)
            .unwrap_or_else(|e| panic!("built-in suite {} does not parse: {e}", kind.name()));
        file.into_suite(None, kind.name())
            .unwrap_or_else(|e| panic!("built-in suite {} is incomplete: {e}", kind.name()))
    }

    /// Resolves `--suite S`: a path to a YAML file, a file `S.yaml` in `suites_dir`, or a
    /// built-in name.
    pub fn resolve(name: &str, suites_dir: Option<&Path>) -> Result<Suite, SuiteError> {
        let looks_like_path =
            name.ends_with(".yaml") || name.ends_with(".yml") || name.contains('/');
        if looks_like_path {
            return Suite::from_file(Path::new(name));
        }
        if let Some(dir) = suites_dir {
            let candidate = dir.join(format!("{name}.yaml"));
            if candidate.is_file() {
                return Suite::from_file(&candidate);
            }
        }
        SuiteKind::from_name(name)
            .map(Suite::builtin)
            .ok_or_else(|| SuiteError::Unknown {
                name: name.to_owned(),
                dir: suites_dir.map_or("config/suites".to_owned(), |d| d.display().to_string()),
            })
    }

    pub fn from_file(path: &Path) -> Result<Suite, SuiteError> {
        Suite::from_file_at_depth(path, 0)
    }

    fn from_file_at_depth(path: &Path, depth: usize) -> Result<Suite, SuiteError> {
        let text = std::fs::read_to_string(path).map_err(|source| SuiteError::Read {
            path: path.to_owned(),
            source,
        })?;
        Suite::parse(&text, &path.display().to_string(), path.parent(), depth)
    }

    /// Parses a suite file; `origin` names it in errors. `extends` may name a built-in suite
    /// only (there is no directory to find a parent file in).
    pub fn from_yaml(text: &str, origin: &str) -> Result<Suite, SuiteError> {
        Suite::parse(text, origin, None, 0)
    }

    /// `dir` is the directory of the file, where `extends: NAME` finds `NAME.yaml`.
    fn parse(
        text: &str,
        origin: &str,
        dir: Option<&Path>,
        depth: usize,
    ) -> Result<Suite, SuiteError> {
        let invalid = |message: String| SuiteError::Invalid {
            path: origin.to_owned(),
            message,
        };
        let file: SuiteFile = serde_norway::from_str(text).map_err(|e| invalid(e.to_string()))?;
        let base = match &file.extends {
            None => None,
            Some(parent) => {
                if let Some(kind) = SuiteKind::from_name(parent) {
                    Some(Suite::builtin(kind))
                } else {
                    let Some(dir) = dir else {
                        return Err(invalid(format!(
                            "'extends: {parent}' names no built-in suite"
                        )));
                    };
                    if depth >= MAX_EXTENDS_DEPTH {
                        return Err(invalid(format!(
                            "'extends: {parent}': more than {MAX_EXTENDS_DEPTH} suites extend one another (a cycle?)"
                        )));
                    }
                    let path = if parent.ends_with(".yaml") || parent.ends_with(".yml") {
                        dir.join(parent)
                    } else {
                        dir.join(format!("{parent}.yaml"))
                    };
                    if !path.is_file() {
                        return Err(invalid(format!(
                            "'extends: {parent}' names no built-in suite and no file {}",
                            path.display()
                        )));
                    }
                    Some(Suite::from_file_at_depth(&path, depth + 1)?)
                }
            }
        };
        file.into_suite(base, origin).map_err(invalid)
    }

    /// How to read a dataset for this suite: `format` (None = from the file), and the CSV cell
    /// types of a custom suite's typed fields.
    pub fn read_options(&self, format: Option<Format>) -> ReadOptions {
        let cells = self
            .custom
            .iter()
            .flat_map(|c| c.columns())
            .map(|(column, kind)| {
                let cell = match kind {
                    FieldType::String => CellType::String,
                    FieldType::Number => CellType::Number,
                    FieldType::Bool => CellType::Bool,
                    FieldType::List | FieldType::Object | FieldType::Json => CellType::Json,
                };
                (column.to_owned(), cell)
            })
            .collect();
        ReadOptions {
            format,
            cells,
            ..ReadOptions::default()
        }
    }

    /// Whether some checks of the suite are code scorers (`command`, `http`): its examples
    /// then wait on other processes, as live judges' do on the network.
    pub fn has_scorers(&self) -> bool {
        self.custom.as_ref().is_some_and(|c| c.external().len() > 0)
    }

    /// Whether a pairwise dimension compares with a baseline run's answers (`against` names
    /// the judged field): then the run needs `--baseline RUN`.
    pub fn needs_baseline(&self) -> bool {
        self.custom
            .as_ref()
            .is_some_and(|c| c.baseline_fields().next().is_some())
    }

    pub fn dimension(&self, name: &str) -> Option<&Dimension> {
        self.dimensions.iter().find(|d| d.name == name)
    }
}

#[cfg(test)]
mod tests;
