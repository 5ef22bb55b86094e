//! rag-layers items (docs/DESIGN.md §2.2) with a synthetic system `trace` of varied quality.
//!
//! Why: the rag-layers suite grades a recorded trace layer by layer (L1 query understanding …
//! L5 answer). The golden set has no traces, so the bundled example and the benchmarks need
//! realistic ones: mostly close to gold, with each layer failing now and then (see [`FAULTS`])
//! so that every gate and fail tag shows up in reports. Good traces are built so that the
//! heuristic judge passes them: the answer restates the question and the context carries the
//! answer's sentences, so about 80% of items pass the default gates.

use super::{obj, others, pick, rng, sentences, str_array, str_list, tokens, weighted};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::{Map, Value};

/// The 26 allowed insight types (docs/DESIGN.md §9), paired with a rule name and an insight template.
#[rustfmt::skip]
const RULES: [(&str, &str); 26] = [
    ("market_position", "premium_position_rule"), ("market_dominance", "category_leader_rule"),
    ("market_share", "sos_threshold_rule"), ("competitive_threat", "competitor_rank_gain_rule"),
    ("competitive_advantage", "review_moat_rule"), ("competitor_movement", "competitor_launch_rule"),
    ("growth_opportunity", "whitespace_category_rule"), ("growth_momentum", "rank_uptrend_rule"),
    ("entry_opportunity", "low_hhi_entry_rule"), ("risk_alert", "rank_drop_alert_rule"),
    ("rank_shock", "rank_shock_rule"), ("rating_decline", "rating_drop_rule"),
    ("price_position", "cpi_band_rule"), ("price_quality_gap", "price_quality_rule"),
    ("price_dependency", "discount_dependency_rule"), ("brand_strength", "brand_strength_rule"),
    ("stability", "rank_stability_rule"), ("volatility", "rank_volatility_rule"),
    ("sentiment_strength", "review_sentiment_rule"), ("sentiment_weakness", "negative_review_rule"),
    ("sentiment_advantage", "sentiment_vs_competitor_rule"), ("sentiment_gap", "sentiment_gap_rule"),
    ("customer_perception", "customer_perception_rule"), ("sentiment_analysis", "review_keyword_rule"),
    ("rank_analysis", "bsr_rank_rule"), ("market_structure", "hhi_structure_rule"),
];
const INVALID_TYPES: [&str; 4] = ["market_vibe", "brand_hype", "Sentiment Score", "trend"];
const INSIGHTS: [&str; 4] = [
    "{e}는 {c} 관점에서 카테고리 평균을 상회합니다.",
    "{e} shows a consistent {c} signal over the last 30 days.",
    "{e}의 {c} 지표가 경쟁사 대비 우위에 있습니다.",
    "{e}: {c} trend flagged for review by the ontology reasoner.",
];
const MISC_PASSAGES: [&str; 6] = [
    "Amazon Best Sellers 순위는 매시간 갱신되며 카테고리별로 Top 100까지 집계됩니다.",
    "배송 및 반품 정책은 판매 지역과 풀필먼트 방식에 따라 다를 수 있습니다.",
    "COSRX Snail Mucin 96% Essence는 Skin Care 카테고리 상위권의 스테디셀러입니다.",
    "TIRTIR Mask Fit Cushion은 Face Powder 카테고리에서 빠르게 순위를 높였습니다.",
    "리뷰 수와 평점은 제품 신뢰도를 보여 주는 보조 지표로 활용됩니다.",
    "Prime Day 기간에는 할인율에 따라 순위 변동성이 크게 증가합니다.",
];
const REFUSALS: [&str; 2] = [
    "죄송합니다. 제공된 문서에서 해당 질문에 대한 정보를 찾을 수 없습니다.",
    "I could not find enough information in the knowledge base to answer this question.",
];

/// Per-item fault probabilities, drawn independently (index order of [`Fault`]): L1 entity
/// miss, L1 concept miss, L2 retrieval miss, L3 KG entity miss, L3 edge miss, L4 violation,
/// L4 type conflict (only on the ~35% of items carrying entity types).
const FAULTS: [f64; 7] = [0.025, 0.025, 0.08, 0.025, 0.025, 0.03, 0.08];
enum Fault {
    Entity,
    Concept,
    Retrieval,
    Kg,
    Edge,
    Violation,
    TypeConflict,
}
/// Answer modes: good (copy or restated close paraphrase), wrong (another item's answer),
/// ungrounded (hallucinated details, context without the answer), refusal, partial.
const ANSWER_WEIGHTS: [f64; 5] = [0.93, 0.02, 0.02, 0.015, 0.015];
const ENTITY_TYPES_SHARE: f64 = 0.35;

struct Gold {
    record: Value,
    id: String,
    question: String,
    answer: Option<String>,
    chunks: Vec<String>,
    entities: Vec<String>,
    edges: Vec<String>,
    concepts: Vec<String>,
    rules: Vec<String>,
    /// The gold answer alone already contains ≥ 80% of the question tokens.
    answer_covers_question: bool,
}

/// Streams `n` rag-layers items: gold records are taken cyclically (an empty `gold` gives
/// nothing; records that are not objects are ignored), ids get `-r1`, `-r2`, … when cycling
/// past the gold count, and each item gains a synthetic `trace` (and, on ~35% of items,
/// `gold.entity_types` + `trace.entity_types`), deterministic for `seed`.
pub fn rag_layers(gold: Vec<Value>, n: u64, seed: u64) -> impl Iterator<Item = Value> {
    let golds: Vec<Gold> = gold
        .into_iter()
        .filter(Value::is_object)
        .map(prepare)
        .collect();
    let pool = |f: fn(&Gold) -> &Vec<String>| {
        let mut all: Vec<String> = golds.iter().flat_map(|g| f(g).iter().cloned()).collect();
        all.sort();
        all.dedup();
        all
    };
    let pools = [
        pool(|g| &g.chunks),
        pool(|g| &g.entities),
        pool(|g| &g.edges),
        pool(|g| &g.concepts),
    ];
    let mut rng = rng(seed);
    let n = if golds.is_empty() { 0 } else { n };
    (0..n).map(move |i| {
        let len = golds.len() as u64;
        item(&mut rng, &golds, (i % len) as usize, i / len, &pools)
    })
}

fn prepare(record: Value) -> Gold {
    let g = record.get("gold").cloned().unwrap_or(Value::Null);
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let rules = g
        .get("constraints")
        .and_then(Value::as_array)
        .map_or(Vec::new(), |a| a.iter().map(canonical_constraint).collect());
    let (id, question) = (s(&record, "id"), s(&record, "question"));
    let answer = g.get("answer").and_then(Value::as_str).map(str::to_owned);
    let covers = answer.as_deref().is_some_and(|a| {
        let (q, a) = (tokens(&question), tokens(a));
        q.iter().filter(|t| a.contains(t)).count() * 5 >= q.len() * 4
    });
    Gold {
        chunks: str_list(&g, "doc_chunk_ids"),
        entities: str_list(&g, "kg_entities"),
        edges: str_list(&g, "kg_edges"),
        concepts: str_list(&g, "concepts"),
        rules,
        answer_covers_question: covers,
        answer,
        id,
        question,
        record,
    }
}

/// `field operator value` (docs/DESIGN.md §9): strings without quotes, numbers as their JSON text.
fn canonical_constraint(c: &Value) -> String {
    match c {
        Value::String(s) => s.clone(),
        Value::Object(o) => {
            let part = |k: &str| match o.get(k) {
                Some(Value::String(s)) => s.clone(),
                Some(v) => v.to_string(),
                None => String::new(),
            };
            format!("{} {} {}", part("field"), part("operator"), part("value"))
        }
        other => other.to_string(),
    }
}

/// Gold list with occasional one-entry misses and extras that keep set F1 ≥ 0.5.
fn near(rng: &mut ChaCha8Rng, gold: &[String], pool: &[String]) -> Vec<String> {
    let mut v = gold.to_vec();
    if v.len() >= 2 && rng.random_bool(0.15) {
        v.remove(rng.random_range(0..v.len()));
    }
    if !gold.is_empty() && rng.random_bool(0.2) {
        v.extend(others(rng, pool, gold, 1));
    }
    v
}

/// Inserts `gold` entries among `noise`: good → all within the first 3 + gold ranks, bad →
/// ranked after 8 distractors or (half the time) missing.
fn ranked(
    rng: &mut ChaCha8Rng,
    gold: &[String],
    mut noise: Vec<String>,
    good: bool,
) -> Vec<String> {
    if !good {
        if rng.random_bool(0.5) {
            noise.extend(gold.iter().cloned());
        }
        return noise;
    }
    let mut out = noise;
    let mut pos = if rng.random_bool(0.75) {
        0
    } else {
        rng.random_range(0..=out.len().min(2))
    };
    for g in gold {
        out.insert(pos.min(out.len()), g.clone());
        pos += 1 + usize::from(rng.random_bool(0.2));
    }
    out
}

fn entity_type(e: &str) -> &'static str {
    match e {
        "sos" | "hhi" | "cpi" | "churn_rate" | "rank_volatility" | "bsr" => "metric",
        "lip_care" | "skin_care" | "face_powder" | "lip_makeup" | "beauty" | "k_beauty" => {
            "category"
        }
        "lip_sleeping_mask" | "water_bank" | "neo_cushion" | "lip_glowy_balm" | "snail_mucin"
        | "cream_skin" | "mask_fit_cushion" => "product",
        "amorepacific" => "company",
        "tiktok" => "channel",
        "new_entrants" => "concept",
        _ => "brand",
    }
}

fn types_map(entities: &[String], conflict_on: Option<usize>) -> Value {
    let mut m = Map::new();
    for (i, e) in entities.iter().enumerate() {
        let t = match (conflict_on == Some(i), entity_type(e)) {
            (true, "brand") => "product",
            (true, _) => "brand",
            (false, t) => t,
        };
        m.insert(e.clone(), Value::from(t));
    }
    Value::Object(m)
}

fn inference(rng: &mut ChaCha8Rng, g: &Gold, entities: &[String]) -> Value {
    let (ty, rule) = pick(rng, &RULES);
    let e = entities
        .first()
        .or(g.entities.first())
        .map_or("LANEIGE", String::as_str);
    let c = g.concepts.first().map_or(ty, String::as_str);
    let mut insight = String::new();
    super::fill(&mut insight, pick(rng, &INSIGHTS), |k| match k {
        "e" => Some(e),
        "c" => Some(c),
        _ => None,
    });
    let confidence = (rng.random_range(55..99) as f64) / 100.0;
    obj([
        ("rule_name", Value::from(rule)),
        ("insight_type", Value::from(ty)),
        ("insight", Value::String(insight)),
        ("confidence", Value::from(confidence)),
    ])
}

fn item(
    rng: &mut ChaCha8Rng,
    golds: &[Gold],
    at: usize,
    round: u64,
    pools: &[Vec<String>; 4],
) -> Value {
    let g = &golds[at];
    let fault: Vec<bool> = FAULTS.iter().map(|p| rng.random_bool(*p)).collect();
    let [chunk_pool, entity_pool, edge_pool, concept_pool] = pools;

    // L1
    let entities = if fault[Fault::Entity as usize] {
        let keep = g
            .entities
            .iter()
            .take(usize::from(g.entities.len() > 3))
            .cloned();
        keep.chain(others(rng, entity_pool, &g.entities, 3))
            .collect()
    } else if g.entities.is_empty() {
        Vec::new()
    } else {
        near(rng, &g.entities, entity_pool)
    };
    let concepts = if fault[Fault::Concept as usize] {
        others(rng, concept_pool, &g.concepts, 2)
    } else {
        near(rng, &g.concepts, concept_pool)
    };
    let mut applied_rules = g.rules.clone();
    if !applied_rules.is_empty() && rng.random_bool(0.1) {
        applied_rules.clear();
    }
    // L2 / L3
    let k = rng.random_range(2..5);
    let mut noise = others(rng, chunk_pool, &g.chunks, k);
    let misc = rng.random_range(1..60u32);
    noise.insert(
        rng.random_range(0..=noise.len()),
        format!("doc_misc_{misc:03}"),
    );
    if fault[Fault::Retrieval as usize] {
        noise.extend((0..8).map(|k| format!("doc_misc_{:03}", misc + 60 + k)));
    }
    let retrieved = ranked(rng, &g.chunks, noise, !fault[Fault::Retrieval as usize]);
    let k = if fault[Fault::Kg as usize] { 9 } else { 3 };
    let kg_noise = others(rng, entity_pool, &g.entities, k);
    let kg_entities = ranked(rng, &g.entities, kg_noise, !fault[Fault::Kg as usize]);
    let kg_edges = if fault[Fault::Edge as usize] {
        others(rng, edge_pool, &g.edges, 2)
    } else {
        near(rng, &g.edges, edge_pool)
    };
    // L4
    let k = rng.random_range(0..4);
    let mut inferences: Vec<Value> = (0..k).map(|_| inference(rng, g, &entities)).collect();
    let mut violations: Vec<Value> = Vec::new();
    if fault[Fault::Violation as usize] {
        match (rng.random_range(0..4), inferences.first_mut()) {
            (0, Some(v)) => v["insight_type"] = Value::from(pick(rng, &INVALID_TYPES)),
            (1, Some(v)) => v["insight"] = Value::from(""),
            (2, Some(v)) => v["confidence"] = Value::from(1.35),
            _ => violations.push(Value::String(match g.rules.first() {
                Some(r) => format!("{r} violated: an item outside the constraint was included"),
                None => {
                    "brand == laneige violated: competitor product listed as LANEIGE".to_owned()
                }
            })),
        }
    }
    let typed = rng.random_bool(ENTITY_TYPES_SHARE);
    let conflict = (typed && fault[Fault::TypeConflict as usize] && !entities.is_empty())
        .then(|| rng.random_range(0..entities.len()));

    // L5
    let q = g.question.trim_end_matches(['?', '？', ' ']);
    let mut context_text: Vec<String> = Vec::new();
    let answer = match (weighted(rng, &ANSWER_WEIGHTS), g.answer.as_deref()) {
        (0, Some(gold)) => {
            context_text = sentences(gold).into_iter().map(str::to_owned).collect();
            let mut body = gold.to_owned();
            let s = sentences(gold);
            if s.len() >= 3 && rng.random_bool(0.25) {
                body = s[..s.len() - 1].join(" ");
            }
            match rng.random_range(0..4) {
                0 if g.answer_covers_question && body.len() == gold.len() => body,
                0 | 1 => format!("{q}: {body}"),
                2 => format!("{q} — {body}"),
                _ => format!("{body} ({q})"),
            }
        }
        (0, None) => {
            let ents = entities.join(", ");
            context_text.push(format!("{q}: {ents}"));
            format!("{q}: {ents}")
        }
        (1, _) => {
            let other =
                &golds[(at + 1 + rng.random_range(0..golds.len().max(2) - 1)) % golds.len()];
            let text = other
                .answer
                .clone()
                .unwrap_or_else(|| other.question.clone());
            context_text = sentences(&text).into_iter().map(str::to_owned).collect();
            text
        }
        (2, gold) => {
            let base = gold.map_or(String::new(), |a| {
                sentences(a).first().copied().unwrap_or("").to_owned()
            });
            format!("{q}: {base} 추가로 2027년 1분기에는 점유율이 12.4%까지 오를 것으로 확정되었으며, 신제품 7종이 동시 출시됩니다.")
        }
        (3, _) => (pick(rng, &REFUSALS)).to_owned(),
        (_, gold) => {
            // Partial: grounded in the right passages but stops after the first sentence.
            let gold = gold.unwrap_or("LANEIGE");
            context_text = sentences(gold).into_iter().map(str::to_owned).collect();
            sentences(gold).first().copied().unwrap_or(gold).to_owned()
        }
    };
    // Context: the query, then top retrieved passages (gold chunks carry the answer text).
    let mut context = format!("Q: {}\n", g.question);
    let carriers: Vec<&String> = retrieved.iter().filter(|c| g.chunks.contains(c)).collect();
    for (k, id) in retrieved.iter().enumerate() {
        let carrier = carriers.iter().position(|c| *c == id);
        if k >= 4 && carrier.is_none() {
            continue;
        }
        let mut mine: Vec<&str> = carrier.map_or(Vec::new(), |p| {
            context_text
                .iter()
                .skip(p)
                .step_by(carriers.len())
                .map(String::as_str)
                .collect()
        });
        if mine.is_empty() {
            mine.push(MISC_PASSAGES[(misc as usize + k) % MISC_PASSAGES.len()]);
        }
        context.push_str(&format!("[{id}] {}\n", mine.join(" ")));
    }
    if carriers.is_empty() && !context_text.is_empty() {
        context.push_str(&format!("[kg] {}\n", context_text.join(" ")));
    }
    if !kg_edges.is_empty() {
        context.push_str(&format!("[kg_edges] {}\n", kg_edges.join("; ")));
    }
    let latency = (450.0 - rng.random::<f64>().max(1e-9).ln() * 1100.0).min(30_000.0);
    let input_tokens = context.chars().count() as u64 / 2 + 380;
    let output_tokens = answer.chars().count() as u64 / 2 + 6;
    let usage = obj([
        ("input_tokens", input_tokens.into()),
        ("output_tokens", output_tokens.into()),
    ]);

    let mut out = g.record.clone();
    if round > 0 {
        out["id"] = Value::String(format!("{}-r{round}", g.id));
    }
    let mut trace = obj([
        ("entities", str_array(&entities)),
        ("concepts", str_array(&concepts)),
        ("applied_rules", str_array(&applied_rules)),
        ("retrieved_chunk_ids", str_array(&retrieved)),
        ("kg_entities", str_array(&kg_entities)),
        ("kg_edges", str_array(&kg_edges)),
        ("inferences", Value::Array(inferences)),
        ("constraint_violations", Value::Array(violations)),
        ("answer", Value::String(answer)),
        ("context", Value::String(context)),
        ("latency_ms", Value::from(latency.round() as u64)),
        ("usage", usage),
    ]);
    if typed && out.get("gold").is_some_and(Value::is_object) {
        out["gold"]["entity_types"] = types_map(&g.entities, None);
        trace["entity_types"] = types_map(&entities, conflict);
    }
    out["trace"] = trace;
    out
}

#[cfg(test)]
#[path = "rag_tests.rs"]
mod tests;
