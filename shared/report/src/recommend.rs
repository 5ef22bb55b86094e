//! Recommendations: what to look at first, derived only from what the run measured.
//!
//! A recommendation fires on a fail tag that items actually carry, or on an unscored rate that
//! was actually observed — never on an absent score (a judge that did not run says nothing).

use crate::aggregate::RunAggregator;
use evalfleet_suites::suite::Suite;

/// Advice per known fail tag; other tags fall back to their gate's meaning.
fn advice(tag: &str) -> Option<&'static str> {
    Some(match tag {
        "L1_mapping_fail" => "Improve entity linking: extend the alias dictionary and check the NER step against the KG's entity names.",
        "L1_concept_fail" => "Review concept mapping: the ontology's concept labels and the classifier's vocabulary disagree.",
        "L2_doc_retrieval_fail" => "Improve document retrieval: tune chunking and the embedding model, or raise top_k, for questions that need documents.",
        "L3_kg_fail" => "Improve KG lookup: gold entities are missing from the top-k graph results; check entity resolution before traversal.",
        "L3_edge_fail" => "Check KG traversal: the relations used differ from the gold edges; review predicate selection.",
        "L4_constraint_violation" => "Fix inference output: insights miss required fields, use unknown insight types or confidences outside [0, 1].",
        "L4_type_inconsistency" => "Align entity typing with the ontology: predicted entity types disagree with the gold types.",
        "L5_wrong_answer" => "Improve answer generation: answers share too few tokens with the gold answers; check the prompt and the context passed.",
        "L5_grounding_fail" => "Ground answers in the retrieved context: the judge found claims the context does not support.",
        "L5_relevance_fail" => "Keep answers on the question: the judge found answers that drift from what was asked.",
        "low_relevance" => "Responses miss the ticket's actual problem: add retrieval of runbooks or ask the model to restate the issue first.",
        "poor_tone" => "Tighten the tone: the system prompt should ask for professional, concise answers without filler.",
        "events_missed" => "The agent misses key events: list the expected event types in its prompt and ask for structured output.",
        "timeline_out_of_order" => "The timeline is missing or out of order: ask the agent to sort events by timestamp.",
        "metrics_wrong" => "Metrics are missing or off by more than 10%: name the expected metrics and units in the prompt.",
        "anomalies_missed" => "Anomalies go unreported: ask the agent to call out recurring warnings and state mismatches explicitly.",
        "compliance_wrong" => "The compliance verdict is wrong or missing: give the agent the thresholds and require compliance_status.",
        _ => return None,
    })
}

/// The run's recommendations, most frequent problem first.
pub fn recommendations(suite: &Suite, agg: &RunAggregator) -> Vec<String> {
    let total = agg.all.total().max(1) as f64;
    let mut out: Vec<String> = agg
        .top_fail_reasons(suite)
        .into_iter()
        .map(|(tag, n)| {
            let text = advice(&tag).map(str::to_owned).unwrap_or_else(|| {
                let meaning = suite
                    .gates
                    .iter()
                    .find(|g| g.tag == tag)
                    .map_or("", |g| g.meaning.as_str());
                format!("Investigate items tagged {tag}. {meaning}")
                    .trim_end()
                    .to_owned()
            });
            format!(
                "{tag} ({n} of {} items, {:.0}%): {text}",
                agg.all.total(),
                100.0 * n as f64 / total
            )
        })
        .collect();
    if let Some(rate) = agg.unscored_rate().filter(|r| *r > 0.0) {
        out.push(format!(
            "{} judge replies stayed unscored ({:.1}%): check the judge prompt and the judge model's JSON compliance.",
            agg.totals.unscored,
            rate * 100.0
        ));
    }
    if agg.totals.failed > 0 {
        let kinds: Vec<String> = agg
            .failure_reasons
            .iter()
            .map(|(k, n)| format!("{k} ×{n}"))
            .collect();
        out.push(format!("{} examples failed to process ({}): see `failed` and re-run them with `evalfleet retry`.", agg.totals.failed, kinds.join(", ")));
    }
    out
}
