//! The run spec: everything a worker anywhere needs to evaluate a run's examples exactly as the
//! submitter meant — stored once in Redis (`run:{id}:spec`), never repeated per message.

use serde::{Deserialize, Serialize};

use crate::config::JudgeConfig;
use crate::routing::ProviderRules;
use crate::suite::Suite;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSpec {
    pub suite: Suite,
    /// `none`, `heuristic` or `live`.
    pub judge: String,
    /// Providers, routing, retry, prices and budget of live judges. API keys are not in here:
    /// each worker reads them from its own environment.
    pub judges: JudgeConfig,
    pub model_prefixes: ProviderRules,
    /// The dataset as the submitter named it (for reports).
    pub dataset: String,
}
