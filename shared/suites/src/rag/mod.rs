//! The `rag-layers` suite (seed 003): validation of dataset records and the per-item L1–L5
//! metrics of a RAG + knowledge-graph + ontology agent (docs/DESIGN.md §2.2, §2.4, §9).
//!
//! A hybrid agent fails in layers — it misreads the question (L1), retrieves the wrong chunks
//! (L2) or graph facts (L3), breaks the ontology (L4), or answers badly (L5) — and a single
//! answer score cannot say which. This module scores each layer separately and deterministically
//! from the recorded trace, so the fleet and the embedded run produce identical numbers; the LLM
//! judge dimensions (groundedness, relevance) are supplied by the caller, or by the offline
//! [`heuristic_groundedness`] / [`heuristic_relevance`] rules. Gates live in the generic gate
//! engine, not here.
//!
//! Files, one idea each: `options` (suite knobs), `example` (validated record types), `parse`
//! (record validation), `canon` (constraint/edge object rendering), `sets` (set F1), `fuzzy`
//! (alias + Ratcliff/Obershelp matching), `retrieval` (L2/L3), `ontology` (L4), `answer` (L5),
//! `metrics` (per-item assembly and overall), `heuristic` (offline judge).

mod answer;
mod canon;
mod example;
mod fuzzy;
mod heuristic;
mod metrics;
mod ontology;
mod options;
mod parse;
mod retrieval;
mod sets;

pub use answer::{answer_scores, exact_match, token_f1, AnswerScores};
pub use canon::{render_constraint, render_edge};
pub use example::{Gold, Metadata, RagExample, Trace, Usage};
pub use fuzzy::similarity;
pub use heuristic::{heuristic_groundedness, heuristic_relevance};
pub use metrics::{compute_metrics, LayerScores, RagMetrics};
pub use ontology::{constraint_violation_rate, type_consistency_rate};
pub use options::{FuzzyOptions, RagOptions, Weights, DEFAULT_INSIGHT_TYPES};
pub use parse::parse_example;
pub use retrieval::{doc_retrieval, hits_at_k, kg_edge_f1, DocRetrieval};
pub use sets::set_f1;
