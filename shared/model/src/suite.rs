//! The suite vocabulary: the words a suite, a result and a report share (the kind of suite, its
//! judge dimensions, its groupings, its run gates, its `compare:` options). The resolved suite
//! itself, with its parsers and checks, is `evalfleet_suites::suite::Suite`.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SuiteKind {
    SupportJudge,
    RagLayers,
    LogAnalysis,
    /// A user-defined suite: records, judge prompts and checks come from its file.
    Custom,
}

impl SuiteKind {
    /// The built-in kinds.
    pub const ALL: [SuiteKind; 3] = [
        SuiteKind::SupportJudge,
        SuiteKind::RagLayers,
        SuiteKind::LogAnalysis,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SuiteKind::SupportJudge => "support-judge",
            SuiteKind::RagLayers => "rag-layers",
            SuiteKind::LogAnalysis => "log-analysis",
            SuiteKind::Custom => "custom",
        }
    }

    pub fn from_name(name: &str) -> Option<SuiteKind> {
        SuiteKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// A judge dimension: what a judge scores, on which integer scale, with which rubric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dimension {
    pub name: String,
    pub min: i64,
    pub max: i64,
    /// Reported on [0, 1] (`(score − min) / (max − min)`) instead of the raw rubric scale.
    #[serde(default)]
    pub unit: bool,
    pub rubric: String,
}

impl Dimension {
    /// A score on this dimension's rubric scale as a fraction of the scale:
    /// `(score − min) / (max − min)`, so `min` is 0 and `max` is 1.
    pub fn to_unit(&self, score: f64) -> f64 {
        (score - self.min as f64) / (self.max - self.min) as f64
    }
}

/// A named grouping of results, e.g. `by_model` over `[model]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grouping {
    pub name: String,
    pub keys: Vec<String>,
}

/// Run-level gates: what makes `run` exit with the "gates failed" code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RunGates {
    /// The share of items that must pass every item gate.
    pub min_pass_rate: f64,
    /// The share of judge calls that may end unscored.
    pub max_unscored_rate: f64,
    /// With a panel of judges: the inter-judge agreement each dimension must reach (Cohen's
    /// kappa for two judges, Krippendorff's alpha for more). None = not gated.
    pub min_agreement: Option<f64>,
    /// With human labels on a dimension (`human:` / `human_labels`): the quadratic-weighted
    /// Cohen's kappa between judge and people each such dimension must reach. None = not gated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_human_kappa: Option<f64>,
    /// With pairwise dimensions (`pairwise: {against: FIELD}`): the share of items each such
    /// dimension must win (`min_win_rate: 0.5` fails a run whose win_rate < 0.5). None = not gated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_win_rate: Option<f64>,
}

impl Default for RunGates {
    fn default() -> Self {
        RunGates {
            min_pass_rate: 0.0,
            max_unscored_rate: 1.0,
            min_agreement: None,
            min_human_kappa: None,
            min_win_rate: None,
        }
    }
}

/// The suite's `compare:` section: how `evalfleet compare` judges a drop between two runs of
/// this suite. Names are dimensions, metrics or `passed`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CompareOptions {
    /// Per-name overrides of `--max-drop`: the drop (in the quantity's own units; a share for
    /// `passed`) a significant decrease must exceed to count as a regression.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub max_drop: std::collections::BTreeMap<String, f64>,
    /// Metrics where lower is better (beside those with a `>` gate, which are inferred).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lower_is_better: Vec<String>,
}

impl CompareOptions {
    pub fn is_empty(&self) -> bool {
        self.max_drop.is_empty() && self.lower_is_better.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dimension(min: i64, max: i64) -> Dimension {
        Dimension {
            name: "d".into(),
            min,
            max,
            unit: false,
            rubric: String::new(),
        }
    }

    #[test]
    fn to_unit_maps_the_rubric_scale_onto_zero_to_one() {
        let d = dimension(1, 5);
        assert_eq!(d.to_unit(1.0), 0.0);
        assert_eq!(d.to_unit(5.0), 1.0);
        assert_eq!(d.to_unit(2.0), 0.25);
        assert_eq!(d.to_unit(3.5), 0.625, "a panel's mean is scaled too");
        assert_eq!(dimension(0, 10).to_unit(7.0), 0.7);
        assert_eq!(dimension(-2, 2).to_unit(0.0), 0.5);
    }
}
