//! Tests of the rag-layers generator, with a compact re-statement of the default gates of
//! docs/DESIGN.md §2.2 (heuristic judge: groundedness = share of answer tokens in the context,
//! relevance = share of question tokens in the answer) to check the pass-rate target.

use super::*;
use std::collections::HashSet;

#[rustfmt::skip]
const GOLD: [&str; 6] = [
    r#"{"id": "lg041", "question": "SoS(Share of Shelf)란 무엇인가요?", "gold": {"answer": "SoS(Share of Shelf)는 특정 카테고리 Top 100 내에서 해당 브랜드 제품이 차지하는 비율입니다. 예를 들어, Lip Care Top 100에 5개 제품이 있으면 SoS = 5%입니다. 온라인 선반 점유율을 측정하는 핵심 KPI입니다.", "doc_chunk_ids": ["metric_guide_sos_01"], "kg_entities": ["sos"], "kg_edges": [], "concepts": ["sos", "definition", "kpi"], "constraints": [], "expected_values": {}}, "metadata": {"requires_kg": false, "domain": "metric", "difficulty": "easy"}}"#,
    r#"{"id": "lg042", "question": "HHI(Herfindahl-Hirschman Index) 계산 방식은?", "gold": {"answer": "HHI는 각 브랜드 점유율의 제곱합으로 계산합니다. HHI = Σ(Si²), Si는 각 브랜드의 시장점유율입니다. 0에 가까울수록 완전경쟁, 1에 가까울수록 독점 시장입니다. HHI < 0.15는 비집중, 0.15~0.25는 중간집중, > 0.25는 고집중 시장입니다.", "doc_chunk_ids": ["metric_guide_hhi_01", "metric_guide_hhi_02"], "kg_entities": ["hhi"], "kg_edges": [], "concepts": ["hhi", "calculation", "market_concentration"], "constraints": [], "expected_values": {}}, "metadata": {"requires_kg": false, "domain": "metric", "difficulty": "medium"}}"#,
    r#"{"id": "lg048", "question": "현재 LANEIGE의 Lip Care 카테고리 SoS는 얼마인가요?", "gold": {"answer": "현재 LANEIGE의 Lip Care 카테고리 SoS는 약 5.2%입니다. Top 100 기준 5개 제품이 랭크되어 있으며, 이는 Lip Care 카테고리에서 상위 3위권 수준입니다.", "doc_chunk_ids": ["metric_guide_sos_01"], "kg_entities": ["laneige", "lip_care", "sos"], "kg_edges": ["laneige -hasSoS-> lip_care"], "concepts": ["sos", "data_query"], "constraints": [], "expected_values": {"sos": 5.2}}, "metadata": {"requires_kg": true, "domain": "metric", "difficulty": "easy"}}"#,
    r#"{"id": "lg057", "question": "BIODANCE의 Lip Care 점유율은 얼마인가요?", "gold": {"answer": "BIODANCE는 주로 Skin Care(특히 Bio-Collagen 마스크)에서 강세를 보이는 K-Beauty 브랜드입니다. Lip Care 전용 제품은 주력 라인이 아니며, Lip Care 카테고리 SoS는 1% 미만으로 추정됩니다.", "doc_chunk_ids": ["competitor_analysis_01"], "kg_entities": ["biodance", "lip_care", "sos"], "kg_edges": ["biodance -competesWith-> laneige"], "concepts": ["sos", "competitor_analysis", "biodance"], "constraints": [], "expected_values": {}}, "metadata": {"requires_kg": true, "domain": "metric", "difficulty": "medium"}}"#,
    r#"{"id": "lg075", "question": "평점 4.5 이상인 LANEIGE 제품은?", "gold": {"answer": "평점 4.5 이상 LANEIGE 제품: 1) Lip Sleeping Mask Berry - 4.7점 (10만+ 리뷰), 2) Lip Glowy Balm - 4.6점 (3만+ 리뷰), 3) Water Bank Blue Hyaluronic Moisturizer - 4.5점 (2만+ 리뷰). 이 세 제품이 LANEIGE 리뷰 평점의 핵심 자산입니다.", "doc_chunk_ids": [], "kg_entities": ["laneige", "lip_sleeping_mask", "lip_glowy_balm", "water_bank"], "kg_edges": ["laneige -hasProduct-> lip_sleeping_mask", "laneige -hasProduct-> lip_glowy_balm", "laneige -hasProduct-> water_bank"], "concepts": ["review_rating", "product_quality"], "constraints": [{"field": "rating", "operator": ">=", "value": 4.5}], "expected_values": {}}, "metadata": {"requires_kg": true, "domain": "product", "difficulty": "easy"}}"#,
    r#"{"id": "lg165", "question": "오늘 날씨 어때?", "gold": {"answer": "죄송합니다. 저는 LANEIGE 브랜드 Amazon 경쟁력 분석 전용 시스템입니다. 날씨 정보는 제공할 수 없습니다. LANEIGE 제품 순위, 시장 지표(SoS, HHI, CPI), 경쟁사 분석 등 뷰티 시장 관련 질문을 도와드릴 수 있습니다.", "doc_chunk_ids": [], "kg_entities": [], "kg_edges": [], "concepts": ["out_of_scope"], "constraints": [], "expected_values": {}}, "metadata": {"requires_kg": false, "domain": "edge", "difficulty": "easy"}}"#,
];

fn gold() -> Vec<Value> {
    GOLD.iter()
        .map(|s| serde_json::from_str(s).unwrap())
        .collect()
}

fn set(v: &Value) -> HashSet<String> {
    let items = v.as_array().map_or(&[][..], Vec::as_slice);
    items
        .iter()
        .filter_map(Value::as_str)
        .map(|s| s.trim().to_lowercase())
        .filter(|s| !s.is_empty())
        .collect()
}

fn set_f1(a: &HashSet<String>, b: &HashSet<String>) -> f64 {
    match (a.is_empty(), b.is_empty()) {
        (true, true) => 1.0,
        (true, false) | (false, true) => 0.0,
        _ => {
            let tp = a.intersection(b).count() as f64;
            if tp == 0.0 {
                0.0
            } else {
                2.0 * tp / (a.len() as f64 + b.len() as f64)
            }
        }
    }
}

fn share(of: &[String], within: &[String]) -> f64 {
    if of.is_empty() {
        return 1.0;
    }
    of.iter().filter(|t| within.contains(t)).count() as f64 / of.len() as f64
}

fn answer_f1(a: &[String], g: &[String]) -> f64 {
    let mut pool = g.to_vec();
    let common = a
        .iter()
        .filter(|t| {
            pool.iter()
                .position(|p| p == *t)
                .map(|i| pool.swap_remove(i))
                .is_some()
        })
        .count() as f64;
    if a.is_empty() && g.is_empty() {
        return 1.0;
    }
    if common == 0.0 {
        return 0.0;
    }
    let (p, r) = (common / a.len() as f64, common / g.len() as f64);
    2.0 * p * r / (p + r)
}

/// The default gates of docs/DESIGN.md §2.2 with the heuristic judge; returns the fail tags.
fn fail_tags(item: &Value) -> Vec<&'static str> {
    let (g, t) = (&item["gold"], &item["trace"]);
    let requires_kg = item["metadata"]["requires_kg"].as_bool().unwrap_or(true);
    let mut tags = Vec::new();
    if set_f1(&set(&t["entities"]), &set(&g["kg_entities"])) < 0.5 {
        tags.push("L1_mapping_fail");
    }
    if set_f1(&set(&t["concepts"]), &set(&g["concepts"])) < 0.5 {
        tags.push("L1_concept_fail");
    }
    let mut retrieved: Vec<&str> = Vec::new();
    for c in t["retrieved_chunk_ids"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
    {
        if !retrieved.contains(&c) {
            retrieved.push(c);
        }
    }
    let gold_chunks = set(&g["doc_chunk_ids"]);
    let hits = retrieved
        .iter()
        .take(8)
        .filter(|c| gold_chunks.contains(**c))
        .count();
    let recall = if gold_chunks.is_empty() {
        1.0
    } else {
        hits as f64 / gold_chunks.len() as f64
    };
    let gold_entities = set(&g["kg_entities"]);
    let kg_top = t["kg_entities"]
        .as_array()
        .unwrap()
        .iter()
        .take(8)
        .filter_map(Value::as_str);
    let hit = gold_entities.is_empty()
        || kg_top
            .map(str::to_lowercase)
            .any(|e| gold_entities.contains(&e));
    if !requires_kg && recall < 0.8 {
        tags.push("L2_doc_retrieval_fail");
    }
    if requires_kg && !hit {
        tags.push("L3_kg_fail");
    }
    if requires_kg && set_f1(&set(&t["kg_edges"]), &set(&g["kg_edges"])) < 0.5 {
        tags.push("L3_edge_fail");
    }
    let inferences = t["inferences"].as_array().unwrap();
    let allowed: Vec<&str> = RULES.iter().map(|r| r.0).collect();
    let bad = inferences
        .iter()
        .filter(|i| {
            let empty = |k: &str| i[k].as_str().is_none_or(|s| s.trim().is_empty());
            let c = i["confidence"].as_f64().unwrap_or(-1.0);
            empty("rule_name")
                || empty("insight")
                || !allowed.contains(&i["insight_type"].as_str().unwrap_or(""))
                || !(0.0..=1.0).contains(&c)
        })
        .count()
        + t["constraint_violations"].as_array().unwrap().len();
    if (bad as f64 / inferences.len().max(1) as f64).min(1.0) > 0.05 {
        tags.push("L4_constraint_violation");
    }
    if let (Some(gt), Some(tt)) = (g["entity_types"].as_object(), t["entity_types"].as_object()) {
        let both: Vec<&String> = gt.keys().filter(|k| tt.contains_key(*k)).collect();
        let agree = both.iter().filter(|k| gt[**k] == tt[**k]).count();
        if !both.is_empty() && (agree as f64) < 0.9 * both.len() as f64 {
            tags.push("L4_type_inconsistency");
        }
    }
    let answer = tokens(t["answer"].as_str().unwrap());
    if let Some(gold_answer) = g["answer"].as_str() {
        if answer_f1(&answer, &tokens(gold_answer)) < 0.5 {
            tags.push("L5_wrong_answer");
        }
    }
    if share(&answer, &tokens(t["context"].as_str().unwrap())) < 0.7 {
        tags.push("L5_grounding_fail");
    }
    if share(&tokens(item["question"].as_str().unwrap()), &answer) < 0.7 {
        tags.push("L5_relevance_fail");
    }
    tags
}

#[test]
fn same_seed_same_items_different_seed_different() {
    let a: Vec<Value> = rag_layers(gold(), 50, 7).collect();
    assert_eq!(a, rag_layers(gold(), 50, 7).collect::<Vec<_>>());
    assert_ne!(a, rag_layers(gold(), 50, 8).collect::<Vec<_>>());
}

#[test]
fn ids_cycle_with_round_suffixes_and_gold_is_kept() {
    let items: Vec<Value> = rag_layers(gold(), 14, 1).collect();
    let ids: Vec<&str> = items.iter().map(|v| v["id"].as_str().unwrap()).collect();
    assert_eq!(
        &ids[..7],
        ["lg041", "lg042", "lg048", "lg057", "lg075", "lg165", "lg041-r1"]
    );
    assert_eq!(ids[12], "lg041-r2");
    assert_eq!(
        items[4]["gold"]["constraints"],
        gold()[4]["gold"]["constraints"]
    );
    assert_eq!(rag_layers(Vec::new(), 10, 1).count(), 0);
}

#[test]
fn every_item_has_a_complete_trace() {
    let keys = [
        "entities",
        "concepts",
        "applied_rules",
        "retrieved_chunk_ids",
        "kg_entities",
        "kg_edges",
        "inferences",
        "constraint_violations",
        "answer",
        "context",
        "latency_ms",
        "usage",
    ];
    let mut typed = 0;
    for item in rag_layers(gold(), 600, 3) {
        let t = &item["trace"];
        for k in keys {
            assert!(!t[k].is_null(), "{k} missing in {item}");
        }
        assert!(!t["answer"].as_str().unwrap().trim().is_empty());
        assert!(!t["context"].as_str().unwrap().trim().is_empty());
        assert!(t["usage"]["input_tokens"].as_u64().unwrap() > 0);
        assert!(!t["retrieved_chunk_ids"].as_array().unwrap().is_empty());
        if t.get("entity_types").is_some() {
            typed += 1;
            assert!(item["gold"]["entity_types"].is_object());
        }
    }
    assert!((150..270).contains(&typed), "{typed}");
}

#[test]
fn about_eighty_percent_pass_and_every_gate_fails_sometimes() {
    let mut passed = 0;
    let mut seen = HashSet::new();
    let n = 6000;
    for item in rag_layers(gold(), n, 42) {
        let tags = fail_tags(&item);
        passed += usize::from(tags.is_empty());
        seen.extend(tags);
    }
    let rate = passed as f64 / n as f64;
    assert!((0.75..=0.85).contains(&rate), "pass rate {rate}");
    assert_eq!(seen.len(), 10, "{seen:?}");
}

#[test]
fn constraints_render_canonically() {
    let c: Value = serde_json::json!({"field": "rating", "operator": ">=", "value": 4.5});
    assert_eq!(canonical_constraint(&c), "rating >= 4.5");
    let c: Value = serde_json::json!({"field": "brand", "operator": "==", "value": "laneige"});
    assert_eq!(canonical_constraint(&c), "brand == laneige");
}
