//! Per-item L1–L5 deterministic metrics and the weighted overall score (docs/DESIGN.md §2.2, §2.4).
//!
//! This is where the layer functions meet one example: it picks exact or fuzzy L1 matching,
//! evaluates a missing trace as an empty one (the system returned nothing, which must score
//! badly rather than be skipped), and folds the twelve numbers plus the judge scores into the
//! overall score with the suite's weights. Judge scores are passed in, never invented here.

use serde::Serialize;

use super::answer::answer_scores;
use super::example::{RagExample, Trace};
use super::fuzzy::fuzzy_set_f1;
use super::ontology::{constraint_violation_rate, type_consistency_rate};
use super::options::{RagOptions, Weights};
use super::retrieval::{doc_retrieval, hits_at_k, kg_edge_f1};
use super::sets::set_f1;

/// The twelve deterministic metrics of one item, all in [0, 1].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RagMetrics {
    pub entity_link_f1: f64,
    pub concept_map_f1: f64,
    pub constraint_extraction_f1: f64,
    pub context_recall: f64,
    pub context_precision: f64,
    pub mrr: f64,
    pub hits_at_k: f64,
    pub kg_edge_f1: f64,
    pub constraint_violation_rate: f64,
    pub type_consistency_rate: f64,
    pub exact_match: f64,
    pub answer_f1: f64,
    /// The gold answer was absent, so exact_match and answer_f1 are 1.0 by rule.
    pub gold_absent: bool,
}

/// The four layer scores that the overall score weights.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LayerScores {
    pub l1: f64,
    pub l2_l3: f64,
    pub l4: f64,
    pub l5: f64,
}

/// Compute L1–L5 deterministic metrics. A missing trace is evaluated as an empty trace.
pub fn compute_metrics(ex: &RagExample, opts: &RagOptions) -> RagMetrics {
    let empty = Trace::default();
    let trace = ex.trace.as_ref().unwrap_or(&empty);
    let gold = &ex.gold;
    let l1 = |predicted: &[String], expected: &[String]| match &opts.fuzzy {
        Some(fuzzy) => fuzzy_set_f1(predicted, expected, fuzzy),
        None => set_f1(predicted, expected),
    };
    let docs = doc_retrieval(&trace.retrieved_chunk_ids, &gold.doc_chunk_ids, opts.top_k);
    let answer = answer_scores(trace.answer.as_deref(), gold.answer.as_deref());
    RagMetrics {
        entity_link_f1: l1(&trace.entities, &gold.kg_entities),
        concept_map_f1: l1(&trace.concepts, &gold.concepts),
        constraint_extraction_f1: l1(&trace.applied_rules, &gold.constraints),
        context_recall: docs.recall,
        context_precision: docs.precision,
        mrr: docs.mrr,
        hits_at_k: hits_at_k(&trace.kg_entities, &gold.kg_entities, opts.top_k),
        kg_edge_f1: kg_edge_f1(&trace.kg_edges, &gold.kg_edges),
        constraint_violation_rate: constraint_violation_rate(
            &trace.inferences,
            &trace.constraint_violations,
            &opts.insight_types,
        ),
        type_consistency_rate: type_consistency_rate(
            gold.entity_types.as_ref(),
            trace.entity_types.as_ref(),
        ),
        exact_match: answer.exact_match,
        answer_f1: answer.answer_f1,
        gold_absent: answer.gold_absent,
    }
}

impl RagMetrics {
    /// (metric name as in docs/DESIGN.md §2.4, value), in that order. The judge dimensions
    /// (groundedness, relevance) are not here: they come from the judge.
    pub fn named(&self) -> [(&'static str, f64); 12] {
        [
            ("entity_link_f1", self.entity_link_f1),
            ("concept_map_f1", self.concept_map_f1),
            ("constraint_extraction_f1", self.constraint_extraction_f1),
            ("context_recall", self.context_recall),
            ("context_precision", self.context_precision),
            ("mrr", self.mrr),
            ("hits_at_k", self.hits_at_k),
            ("kg_edge_f1", self.kg_edge_f1),
            ("constraint_violation_rate", self.constraint_violation_rate),
            ("type_consistency_rate", self.type_consistency_rate),
            ("exact_match", self.exact_match),
            ("answer_f1", self.answer_f1),
        ]
    }

    /// The layer scores: L1 = mean of the three L1 F1s; L2/L3 = requires_kg ?
    /// 0.3·recall + 0.1·mrr + 0.4·hits + 0.2·edge_f1 : 0.5·recall + 0.2·precision + 0.3·mrr;
    /// L4 = 0.5·(1 − violation) + 0.5·type_consistency; L5 = mean of answer_f1 and the non-null
    /// judge scores.
    pub fn layers(
        &self,
        requires_kg: bool,
        groundedness: Option<f64>,
        relevance: Option<f64>,
    ) -> LayerScores {
        let l1 = (self.entity_link_f1 + self.concept_map_f1 + self.constraint_extraction_f1) / 3.0;
        let l2_l3 = if requires_kg {
            0.3 * self.context_recall
                + 0.1 * self.mrr
                + 0.4 * self.hits_at_k
                + 0.2 * self.kg_edge_f1
        } else {
            0.5 * self.context_recall + 0.2 * self.context_precision + 0.3 * self.mrr
        };
        let l4 = 0.5 * (1.0 - self.constraint_violation_rate) + 0.5 * self.type_consistency_rate;
        let l5_parts: Vec<f64> = std::iter::once(self.answer_f1)
            .chain(groundedness)
            .chain(relevance)
            .collect();
        let l5 = l5_parts.iter().sum::<f64>() / l5_parts.len() as f64;
        LayerScores { l1, l2_l3, l4, l5 }
    }

    /// overall = w.l1·L1 + w.l2_l3·L2/L3 + w.l4·L4 + w.l5·L5 (weights used as given; see
    /// [`Weights::validate`]). Layer scores as in [`RagMetrics::layers`].
    pub fn overall(
        &self,
        requires_kg: bool,
        groundedness: Option<f64>,
        relevance: Option<f64>,
        w: &Weights,
    ) -> f64 {
        let l = self.layers(requires_kg, groundedness, relevance);
        w.l1 * l.l1 + w.l2_l3 * l.l2_l3 + w.l4 * l.l4 + w.l5 * l.l5
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rag::options::FuzzyOptions;
    use crate::rag::parse::parse_example;
    use serde_json::json;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    fn example(trace: serde_json::Value) -> RagExample {
        parse_example(&json!({
            "id": "lg001",
            "question": "LANEIGE 립 슬리핑 마스크 순위는?",
            "gold": {
                "answer": "LANEIGE Lip Sleeping Mask is ranked 3rd",
                "doc_chunk_ids": ["c1", "c2"],
                "kg_entities": ["laneige", "lip_sleeping_mask"],
                "kg_edges": ["laneige -hasProduct-> lip_sleeping_mask"],
                "concepts": ["product_ranking", "market_share"],
                "constraints": [{"field": "rating", "operator": ">=", "value": 4.5}],
                "entity_types": {"laneige": "Brand", "lip_sleeping_mask": "Product"}
            },
            "trace": trace
        }))
        .unwrap()
    }

    fn full_trace() -> serde_json::Value {
        json!({
            "entities": ["LANEIGE", "cosrx"],
            "concepts": ["product_ranking"],
            "applied_rules": ["Rating >= 4.5"],
            "retrieved_chunk_ids": ["x", "c2", "x", "c1", "c3"],
            "kg_entities": ["cosrx", "laneige"],
            "kg_edges": [
                {"subject": "laneige", "predicate": "hasProduct", "object": "lip_sleeping_mask"},
                "laneige -competesWith-> cosrx"
            ],
            "inferences": [
                {"rule_name": "r1", "insight_type": "market_share", "insight": "ok", "confidence": 0.7},
                {"rule_name": "r2", "insight_type": "bogus", "insight": "x"}
            ],
            "answer": "Lip Sleeping Mask is ranked 3rd",
            "entity_types": {"LANEIGE": "brand", "lip_sleeping_mask": "Category"}
        })
    }

    #[test]
    fn every_metric_of_a_full_trace() {
        let opts = RagOptions {
            top_k: 2,
            ..RagOptions::default()
        };
        let m = compute_metrics(&example(full_trace()), &opts);
        assert_eq!(m.entity_link_f1, 0.5);
        assert!(close(m.concept_map_f1, 2.0 / 3.0));
        assert_eq!(m.constraint_extraction_f1, 1.0); // object rendered "rating >= 4.5"
                                                     // distinct ranking [x, c2, c1, c3], top-2 [x, c2]
        assert_eq!(
            (m.context_recall, m.context_precision, m.mrr),
            (0.5, 0.5, 0.5)
        );
        assert_eq!(m.hits_at_k, 1.0);
        assert!(close(m.kg_edge_f1, 2.0 / 3.0));
        assert_eq!(m.constraint_violation_rate, 0.5);
        assert_eq!(m.type_consistency_rate, 0.5);
        assert_eq!(m.exact_match, 0.0);
        assert!(close(m.answer_f1, 12.0 / 13.0)); // P = 1, R = 6/7
        assert!(!m.gold_absent);
        // With the default k = 8 the whole distinct list counts.
        let m = compute_metrics(&example(full_trace()), &RagOptions::default());
        assert!(close(m.context_precision, 0.5) && m.context_recall == 1.0 && m.mrr == 0.5);
    }

    #[test]
    fn a_missing_trace_is_an_empty_trace() {
        let mut ex = example(json!(null));
        assert!(ex.trace.is_none());
        let m = compute_metrics(&ex, &RagOptions::default());
        let expected = [
            0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, // L1, L2, L3: nothing returned
            0.0, 1.0, // L4: no violations, no types to compare
            0.0, 0.0, // L5: no answer
        ];
        let values: Vec<f64> = m.named().iter().map(|(_, v)| *v).collect();
        assert_eq!(values, expected);
        // Same numbers as an explicit empty trace.
        ex.trace = Some(Trace::default());
        assert_eq!(compute_metrics(&ex, &RagOptions::default()), m);
    }

    #[test]
    fn an_empty_gold_and_empty_trace_score_perfectly_except_violations() {
        let ex = parse_example(&json!({"id": "a", "question": "q"})).unwrap();
        let m = compute_metrics(&ex, &RagOptions::default());
        assert!(m.gold_absent);
        for (name, v) in m.named() {
            let want = if name == "constraint_violation_rate" {
                0.0
            } else {
                1.0
            };
            assert_eq!(v, want, "{name}");
        }
    }

    #[test]
    fn fuzzy_mode_applies_to_the_three_l1_metrics_only() {
        let mut trace = full_trace();
        trace["entities"] = json!(["라네즈", "Lip Sleeping Mask"]);
        trace["concepts"] = json!(["product ranking", "market-share"]);
        let ex = example(trace);
        let exact = compute_metrics(&ex, &RagOptions::default());
        assert_eq!((exact.entity_link_f1, exact.concept_map_f1), (0.0, 0.0));
        let mut fuzzy = FuzzyOptions::default();
        fuzzy.aliases.insert("라네즈".into(), "LANEIGE".into());
        let opts = RagOptions {
            fuzzy: Some(fuzzy),
            ..RagOptions::default()
        };
        let m = compute_metrics(&ex, &opts);
        assert_eq!((m.entity_link_f1, m.concept_map_f1), (1.0, 1.0));
        assert!(close(m.kg_edge_f1, 2.0 / 3.0)); // edges stay exact
    }

    fn sample() -> RagMetrics {
        RagMetrics {
            entity_link_f1: 1.0,
            concept_map_f1: 0.5,
            constraint_extraction_f1: 0.0,
            context_recall: 0.5,
            context_precision: 0.25,
            mrr: 0.5,
            hits_at_k: 1.0,
            kg_edge_f1: 0.5,
            constraint_violation_rate: 0.25,
            type_consistency_rate: 0.5,
            exact_match: 0.0,
            answer_f1: 0.4,
            gold_absent: false,
        }
    }

    #[test]
    fn layer_scores_follow_the_design_formulas() {
        let l = sample().layers(true, Some(0.8), None);
        assert!(close(l.l1, 0.5));
        assert!(close(l.l2_l3, 0.3 * 0.5 + 0.1 * 0.5 + 0.4 + 0.2 * 0.5)); // 0.7
        assert!(close(l.l4, 0.5 * 0.75 + 0.5 * 0.5)); // 0.625
        assert!(close(l.l5, 0.6));
        let l = sample().layers(false, None, None);
        assert!(close(l.l2_l3, 0.5 * 0.5 + 0.2 * 0.25 + 0.3 * 0.5)); // 0.45
        assert!(close(l.l5, 0.4)); // judge absent: answer_f1 alone
        let l = sample().layers(false, Some(0.8), Some(0.2));
        assert!(close(l.l5, 1.4 / 3.0));
    }

    #[test]
    fn overall_uses_the_default_weights() {
        let w = Weights::default();
        // 0.1·0.5 + 0.35·0.7 + 0.1·0.625 + 0.45·0.6
        assert!(close(sample().overall(true, Some(0.8), None, &w), 0.6275));
        // 0.1·0.5 + 0.35·0.45 + 0.1·0.625 + 0.45·0.6
        assert!(close(sample().overall(false, Some(0.8), None, &w), 0.54));
    }

    #[test]
    fn overall_honours_custom_weights() {
        let only = |l1, l2_l3, l4, l5| Weights { l1, l2_l3, l4, l5 };
        let m = sample();
        assert!(close(
            m.overall(true, Some(0.8), None, &only(1.0, 0.0, 0.0, 0.0)),
            0.5
        ));
        assert!(close(
            m.overall(true, Some(0.8), None, &only(0.0, 1.0, 0.0, 0.0)),
            0.7
        ));
        assert!(close(
            m.overall(true, Some(0.8), None, &only(0.0, 0.0, 1.0, 0.0)),
            0.625
        ));
        assert!(close(
            m.overall(true, Some(0.8), None, &only(0.0, 0.0, 0.0, 1.0)),
            0.6
        ));
        let w = only(0.25, 0.25, 0.25, 0.25);
        assert!(close(
            m.overall(true, Some(0.8), None, &w),
            (0.5 + 0.7 + 0.625 + 0.6) / 4.0
        ));
    }

    #[test]
    fn named_lists_the_design_metric_names_in_order() {
        let names: Vec<&str> = sample().named().iter().map(|(n, _)| *n).collect();
        assert_eq!(
            names,
            [
                "entity_link_f1",
                "concept_map_f1",
                "constraint_extraction_f1",
                "context_recall",
                "context_precision",
                "mrr",
                "hits_at_k",
                "kg_edge_f1",
                "constraint_violation_rate",
                "type_consistency_rate",
                "exact_match",
                "answer_f1"
            ]
        );
        assert_eq!(sample().named()[4], ("context_precision", 0.25));
    }
}
