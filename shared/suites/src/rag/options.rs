//! Suite options of `rag-layers`: what a suite YAML may override.
//!
//! Every knob docs/DESIGN.md §2.2/§9 calls "configurable" lives here with its documented default
//! (top_k 8, exact L1 matching, the seed's 26 insight types, the 0.10/0.35/0.10/0.45 weights), so
//! a suite file can override any single field and leave the rest alone, and a typo in a key is a
//! load error rather than a silently ignored setting (`deny_unknown_fields`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The seed project's 26 insight types (docs/DESIGN.md §9), the default L4 allow-list.
pub const DEFAULT_INSIGHT_TYPES: [&str; 26] = [
    "market_position",
    "market_dominance",
    "market_share",
    "competitive_threat",
    "competitive_advantage",
    "competitor_movement",
    "growth_opportunity",
    "growth_momentum",
    "entry_opportunity",
    "risk_alert",
    "rank_shock",
    "rating_decline",
    "price_position",
    "price_quality_gap",
    "price_dependency",
    "brand_strength",
    "stability",
    "volatility",
    "sentiment_strength",
    "sentiment_weakness",
    "sentiment_advantage",
    "sentiment_gap",
    "customer_perception",
    "sentiment_analysis",
    "rank_analysis",
    "market_structure",
];

/// Options of the `rag-layers` metrics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RagOptions {
    /// k of recall@k, precision@k and hits@k (default 8).
    pub top_k: usize,
    /// Fuzzy L1 matching; `None` (the default) = exact matching after lowercase + trim.
    pub fuzzy: Option<FuzzyOptions>,
    /// L4 insight-type allow-list, compared after lowercase + trim.
    pub insight_types: Vec<String>,
    /// Weights of the overall score.
    pub weights: Weights,
}

impl Default for RagOptions {
    fn default() -> Self {
        RagOptions {
            top_k: 8,
            fuzzy: None,
            insight_types: DEFAULT_INSIGHT_TYPES
                .iter()
                .map(|s| s.to_string())
                .collect(),
            weights: Weights::default(),
        }
    }
}

impl RagOptions {
    /// Checks the options a suite file supplied; `Err` names the key and the reason.
    pub fn validate(&self) -> Result<(), String> {
        if self.top_k == 0 {
            return Err("'top_k' must be at least 1".to_string());
        }
        if self.insight_types.iter().all(|t| t.trim().is_empty()) {
            return Err("'insight_types' must list at least one insight type".to_string());
        }
        if let Some(fuzzy) = &self.fuzzy {
            fuzzy.validate()?;
        }
        self.weights.validate()
    }
}

/// Opt-in fuzzy L1 matching (docs/DESIGN.md §2.2): aliases first, then Ratcliff/Obershelp similarity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FuzzyOptions {
    /// alias → canonical name; both sides are compared after lowercase + trim, one level deep.
    pub aliases: BTreeMap<String, String>,
    /// Minimum similarity (inclusive) for two names to match (default 0.8).
    pub threshold: f64,
}

impl Default for FuzzyOptions {
    fn default() -> Self {
        FuzzyOptions {
            aliases: BTreeMap::new(),
            threshold: 0.8,
        }
    }
}

impl FuzzyOptions {
    /// The threshold must be a number in [0, 1].
    pub fn validate(&self) -> Result<(), String> {
        if !(0.0..=1.0).contains(&self.threshold) {
            return Err(format!(
                "'fuzzy.threshold' must be between 0 and 1, got {}",
                self.threshold
            ));
        }
        Ok(())
    }
}

/// Weights of the overall score: `l1·L1 + l2_l3·L2/L3 + l4·L4 + l5·L5`, used as given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Weights {
    pub l1: f64,
    pub l2_l3: f64,
    pub l4: f64,
    pub l5: f64,
}

impl Default for Weights {
    fn default() -> Self {
        Weights {
            l1: 0.10,
            l2_l3: 0.35,
            l4: 0.10,
            l5: 0.45,
        }
    }
}

impl Weights {
    /// Weights are not renormalised, so they must be finite, non-negative and sum to 1
    /// (± 1e-6) for the overall score to stay in [0, 1].
    pub fn validate(&self) -> Result<(), String> {
        let named = [
            ("l1", self.l1),
            ("l2_l3", self.l2_l3),
            ("l4", self.l4),
            ("l5", self.l5),
        ];
        for (name, w) in named {
            if !w.is_finite() || w < 0.0 {
                return Err(format!(
                    "'weights.{name}' must be a non-negative number, got {w}"
                ));
            }
        }
        let sum: f64 = named.iter().map(|(_, w)| w).sum();
        if (sum - 1.0).abs() > 1e-6 {
            return Err(format!("'weights' must sum to 1, got {sum}"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_design_values() {
        let o = RagOptions::default();
        assert_eq!(o.top_k, 8);
        assert_eq!(o.fuzzy, None);
        assert_eq!(o.insight_types.len(), 26);
        assert_eq!(o.insight_types[0], "market_position");
        assert_eq!(o.insight_types[25], "market_structure");
        assert_eq!(
            o.weights,
            Weights {
                l1: 0.10,
                l2_l3: 0.35,
                l4: 0.10,
                l5: 0.45
            }
        );
        assert_eq!(FuzzyOptions::default().threshold, 0.8);
        assert_eq!(o.validate(), Ok(()));
    }

    #[test]
    fn a_partial_override_keeps_the_other_defaults() {
        let o: RagOptions = serde_json::from_value(serde_json::json!({
            "top_k": 3,
            "fuzzy": {"aliases": {"라네즈": "laneige"}},
            "weights": {"l5": 0.55, "l1": 0.0}
        }))
        .unwrap();
        assert_eq!(o.top_k, 3);
        let fuzzy = o.fuzzy.unwrap();
        assert_eq!(fuzzy.threshold, 0.8);
        assert_eq!(fuzzy.aliases["라네즈"], "laneige");
        assert_eq!(o.weights.l2_l3, 0.35);
        assert_eq!(o.weights.l5, 0.55);
        assert_eq!(o.weights.l1, 0.0);
        assert_eq!(o.insight_types.len(), 26);
    }

    #[test]
    fn unknown_keys_are_rejected() {
        let err = serde_json::from_value::<RagOptions>(serde_json::json!({"topk": 3})).unwrap_err();
        assert!(err.to_string().contains("topk"), "{err}");
        let err = serde_json::from_value::<Weights>(serde_json::json!({"l6": 0.1})).unwrap_err();
        assert!(err.to_string().contains("l6"), "{err}");
    }

    #[test]
    fn validation_names_the_key() {
        let mut o = RagOptions {
            top_k: 0,
            ..RagOptions::default()
        };
        assert_eq!(o.validate().unwrap_err(), "'top_k' must be at least 1");
        o.top_k = 5;
        o.weights.l5 = 0.5;
        assert!(o
            .validate()
            .unwrap_err()
            .starts_with("'weights' must sum to 1"));
        o.weights.l5 = 0.45;
        o.weights.l4 = -0.1;
        assert!(o.validate().unwrap_err().starts_with("'weights.l4'"));
        o.weights.l4 = 0.10;
        o.fuzzy = Some(FuzzyOptions {
            threshold: 1.5,
            ..FuzzyOptions::default()
        });
        assert!(o.validate().unwrap_err().starts_with("'fuzzy.threshold'"));
        o.fuzzy = None;
        o.insight_types = vec![" ".into()];
        assert!(o.validate().unwrap_err().starts_with("'insight_types'"));
    }
}
