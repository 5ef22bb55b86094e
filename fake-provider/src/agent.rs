//! A demo agent to evaluate: `POST /agent` answers a question from a small built-in knowledge
//! base (the bundled rag-layers golden items) with a reply and a rag-layers trace, as the
//! agents our RAG suite grew from capture one. An http target points at it; faults, latency and
//! the seed are the server's, as for the provider endpoints.
//!
//! Request: `{"question": "..."}` (or `"query"`). Reply: `{"data": {"reply": {"text": ...},
//! "trace": {...}}}`. The best match is the knowledge-base question sharing most words with the
//! asked one; none shares any, and the agent says it does not know, with an empty retrieval.

use std::collections::BTreeSet;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::{json, Value};

use crate::clock::retry_after_secs;
use crate::exchange::truncate_body;
use crate::faults::Fault;
use crate::state::FakeProvider;
use crate::wire::{json_response, put};

/// The bundled rag-layers items: the knowledge the agent answers from.
const KNOWLEDGE: &str = include_str!("../../examples/rag-layers.jsonl");

/// One thing the agent knows: a question, its words, and the gold it answers with.
struct Entry {
    words: BTreeSet<String>,
    gold: Value,
}

static ENTRIES: LazyLock<Vec<Entry>> = LazyLock::new(|| {
    KNOWLEDGE
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|item| {
            let question = item.get("question")?.as_str()?;
            Some(Entry {
                words: words(question),
                gold: item.get("gold")?.clone(),
            })
        })
        .collect()
});

fn words(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 2)
        .map(str::to_lowercase)
        .collect()
}

/// The trace and answer for `question`.
pub fn answer(question: &str) -> Value {
    let asked = words(question);
    let best = ENTRIES
        .iter()
        .map(|e| (e.words.intersection(&asked).count(), e))
        .filter(|(shared, _)| *shared > 0)
        .max_by_key(|(shared, _)| *shared);
    let Some((_, entry)) = best else {
        let text = "I do not know: nothing in my knowledge base matches the question.";
        return json!({"data": {"reply": {"text": text}, "trace": {
            "entities": [], "concepts": [], "applied_rules": [], "retrieved_chunk_ids": [],
            "kg_entities": [], "kg_edges": [], "inferences": [], "constraint_violations": [],
            "answer": text, "context": format!("Q: {question}")
        }}});
    };
    let gold = &entry.gold;
    let list = |key: &str| gold.get(key).cloned().unwrap_or_else(|| json!([]));
    let text = gold.get("answer").and_then(Value::as_str).unwrap_or("");
    let chunks = list("doc_chunk_ids");
    let context = chunks
        .as_array()
        .map(|ids| {
            ids.iter()
                .filter_map(Value::as_str)
                .map(|id| format!("[{id}] {text}"))
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default();
    json!({"data": {"reply": {"text": text}, "trace": {
        "entities": list("kg_entities"),
        "concepts": list("concepts"),
        "applied_rules": list("constraints"),
        "retrieved_chunk_ids": chunks,
        "kg_entities": list("kg_entities"),
        "kg_edges": list("kg_edges"),
        "inferences": [],
        "constraint_violations": [],
        "answer": text,
        "context": format!("Q: {question}\n{context}")
    }}})
}

/// `POST /agent`.
pub async fn ask(State(state): State<Arc<FakeProvider>>, body: Bytes) -> Response {
    state.stats().agent_request();
    let cfg = state.config();
    let draws = state.draws();
    let request: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                &format!("the body is not JSON: {e}"),
            )
        }
    };
    let Some(question) = ["question", "query"]
        .iter()
        .find_map(|k| request.get(k).and_then(Value::as_str))
    else {
        return error(
            StatusCode::BAD_REQUEST,
            "the body has no \"question\" (or \"query\") string",
        );
    };
    let fault = Fault::pick(&cfg, draws.fault);
    let mut delay = cfg
        .latency_ms
        .saturating_add(draws.jitter % cfg.jitter_ms.saturating_add(1));
    if fault == Fault::Hang {
        delay = delay.saturating_add(cfg.hang_ms);
    }
    match fault {
        Fault::RateLimit | Fault::Quota => {
            let wait = Duration::from_millis(cfg.fault_retry_after_ms);
            let mut headers = HeaderMap::new();
            put(&mut headers, "retry-after", retry_after_secs(wait));
            let body = json!({"error": "too many requests"})
                .to_string()
                .into_bytes();
            return json_response(StatusCode::TOO_MANY_REQUESTS, headers, body);
        }
        _ => {}
    }
    if delay > 0 {
        state.sleep(Duration::from_millis(delay)).await;
    }
    let body = serde_json::to_vec(&answer(question)).unwrap_or_default();
    match fault {
        Fault::ServerError => error(StatusCode::INTERNAL_SERVER_ERROR, "internal error"),
        Fault::Overloaded => error(StatusCode::SERVICE_UNAVAILABLE, "overloaded"),
        Fault::Malformed => json_response(StatusCode::OK, HeaderMap::new(), truncate_body(body)),
        _ => json_response(StatusCode::OK, HeaderMap::new(), body),
    }
}

fn error(status: StatusCode, message: &str) -> Response {
    let body = json!({"error": message}).to_string().into_bytes();
    json_response(status, HeaderMap::new(), body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agent_answers_from_its_knowledge_with_a_rag_trace() {
        assert!(
            ENTRIES.len() >= 100,
            "the bundled items load: {}",
            ENTRIES.len()
        );
        let reply = answer("SoS(Share of Shelf)란 무엇인가요?");
        let trace = &reply["data"]["trace"];
        assert_eq!(trace["retrieved_chunk_ids"], json!(["metric_guide_sos_01"]));
        assert!(reply["data"]["reply"]["text"]
            .as_str()
            .unwrap()
            .contains("SoS"));
        assert_eq!(trace["answer"], reply["data"]["reply"]["text"]);
        let unknown = answer("???");
        assert_eq!(unknown["data"]["trace"]["retrieved_chunk_ids"], json!([]));
    }
}
