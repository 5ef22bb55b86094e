//! The run spec: everything a worker anywhere needs to evaluate a run's examples exactly as the
//! submitter meant — stored once in Redis (`run:{id}:spec`), never repeated per message.

use serde::{Deserialize, Serialize};

use crate::suite::Suite;
use evalfleet_config::{JudgeConfig, Target};
use evalfleet_model::routing::ProviderRules;

/// Which judge scores the examples. Typed from the command line to every worker: the spec
/// carries it as `none`, `heuristic` or `live`, and nothing else deserialises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JudgeMode {
    /// No judge: judge dimensions are null and never gate.
    None,
    /// Offline text-overlap scores, labelled `heuristic` everywhere.
    #[default]
    Heuristic,
    /// Real providers, as configured under `judges:` in the config file.
    Live,
}

impl JudgeMode {
    pub fn name(self) -> &'static str {
        match self {
            JudgeMode::None => "none",
            JudgeMode::Heuristic => "heuristic",
            JudgeMode::Live => "live",
        }
    }
}

impl std::fmt::Display for JudgeMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for JudgeMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        [JudgeMode::None, JudgeMode::Heuristic, JudgeMode::Live]
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| format!("unknown judge '{s}': use none, heuristic or live"))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSpec {
    pub suite: Suite,
    pub judge: JudgeMode,
    /// Providers, routing, retry, prices and budget of live judges. API keys are not in here:
    /// each worker reads them from its own environment.
    pub judges: JudgeConfig,
    pub model_prefixes: ProviderRules,
    /// The dataset as the submitter named it (for reports).
    pub dataset: String,
    /// A target run: the target as its file wrote it, `${VAR}` unresolved (each worker reads
    /// them from its own environment).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
    /// `--target-model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_model: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::JudgeMode;

    #[test]
    fn judge_modes_parse_and_serialise_by_name_and_nothing_else_does() {
        for m in [JudgeMode::None, JudgeMode::Heuristic, JudgeMode::Live] {
            assert_eq!(m.name().parse::<JudgeMode>(), Ok(m));
            assert_eq!(serde_json::to_string(&m).unwrap(), format!("\"{m}\""));
        }
        assert_eq!(
            "Live".parse::<JudgeMode>().unwrap_err(),
            "unknown judge 'Live': use none, heuristic or live"
        );
        assert!(serde_json::from_str::<JudgeMode>("\"online\"").is_err());
    }
}
