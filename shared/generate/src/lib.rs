//! # evalfleet-generate
//! Owns: synthetic datasets. Depends on nothing of evalfleet's: it writes the records a user
//! would, as JSON, so it cannot drift with the types that read them.
//!
//! Deterministic, realistic example generators for the three built-in suites.
//!
//! Why this exists: users need something to run before they have a dataset of their own (the
//! bundled `examples/*.jsonl` are written by these functions with seed 7), and the fleet needs
//! benchmark datasets of up to 10^7 examples whose scores *differ* across models, prompt versions
//! and agent configurations, so that reports, gates and dashboards show real structure instead
//! of one flat number. Every generator is a lazy iterator (memory does not grow with `n`) driven
//! by one `ChaCha8Rng::seed_from_u64(seed)` stream, so the same seed yields byte-identical
//! datasets on every platform, and a prefix of a longer run equals a shorter run.
//!
//! - [`support_judge`]: support tickets and bot responses (docs/DESIGN.md §2.1);
//! - [`rag_layers`]: rag-layers gold items with a synthetic system `trace` (docs/DESIGN.md §2.2);
//! - [`log_analysis`]: agent answers about log scenarios (docs/DESIGN.md §2.3).

mod log;
mod rag;
mod support;

pub use log::log_analysis;
pub use rag::rag_layers;
pub use support::support_judge;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Map, Value};

/// The one RNG every generator uses: portable and reproducible across platforms.
pub(crate) fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

/// A uniformly chosen element, cloned (the slice must not be empty).
pub(crate) fn pick<T: Clone>(rng: &mut ChaCha8Rng, items: &[T]) -> T {
    items[rng.random_range(0..items.len())].clone()
}

/// Index drawn with the given non-negative weights (all-zero weights pick index 0).
pub(crate) fn weighted(rng: &mut ChaCha8Rng, weights: &[f64]) -> usize {
    let total: f64 = weights.iter().sum();
    if total <= 0.0 {
        return 0;
    }
    let mut x = rng.random::<f64>() * total;
    for (i, w) in weights.iter().enumerate() {
        if x < *w {
            return i;
        }
        x -= w;
    }
    weights.len() - 1
}

/// Appends `pattern` to `out`, replacing each `{name}` with `slot(name)`; names `slot` does
/// not know (returns `None`) are copied verbatim, braces included.
pub(crate) fn fill<'a>(out: &mut String, pattern: &str, slot: impl Fn(&str) -> Option<&'a str>) {
    let mut rest = pattern;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after
            .find('}')
            .and_then(|close| Some((close, slot(&after[..close])?)))
        {
            Some((close, value)) => {
                out.push_str(value);
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
}

/// Builds a JSON object from `(key, value)` pairs, keeping their order.
pub(crate) fn obj<const N: usize>(pairs: [(&str, Value); N]) -> Value {
    let mut map = Map::with_capacity(N);
    for (k, v) in pairs {
        map.insert(k.to_owned(), v);
    }
    Value::Object(map)
}

/// Strings of a JSON array field (non-strings and a missing field give nothing).
pub(crate) fn str_list(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// `items` as a JSON array of strings.
pub(crate) fn str_array<S: AsRef<str>>(items: &[S]) -> Value {
    Value::Array(
        items
            .iter()
            .map(|s| Value::String(s.as_ref().to_owned()))
            .collect(),
    )
}

/// Answer tokens as the L5 metrics see them: lowercase, split on non-word characters.
pub(crate) fn tokens(s: &str) -> Vec<String> {
    s.to_lowercase()
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Sentences of a gold answer (split after ". ", punctuation kept).
pub(crate) fn sentences(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(p) = rest.find(". ") {
        out.push(&rest[..=p]);
        rest = rest[p + 2..].trim_start();
    }
    if !rest.trim().is_empty() {
        out.push(rest);
    }
    out
}

/// Up to `k` entries of `pool` not in `taken`, in random order (may return fewer).
pub(crate) fn others(
    rng: &mut ChaCha8Rng,
    pool: &[String],
    taken: &[String],
    k: usize,
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for _ in 0..k * 4 {
        if out.len() == k || pool.is_empty() {
            break;
        }
        let c = pick(rng, pool);
        if !taken.contains(&c) && !out.contains(&c) {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_replaces_known_slots_and_keeps_unknown_braces() {
        let mut out = String::new();
        let slot = |name: &str| match name {
            "svc" => Some("billing-api"),
            _ => None,
        };
        fill(&mut out, "{svc} says {x} and {svc}{", slot);
        assert_eq!(out, "billing-api says {x} and billing-api{");
    }

    #[test]
    fn weighted_respects_zero_weights() {
        let mut r = rng(1);
        for _ in 0..1000 {
            assert_eq!(weighted(&mut r, &[0.0, 3.0, 0.0]), 1);
        }
        assert_eq!(weighted(&mut r, &[0.0, 0.0]), 0);
    }

    #[test]
    fn sentences_and_tokens_follow_the_answer_rules() {
        assert_eq!(sentences("A b. C d. E"), ["A b.", "C d.", "E"]);
        assert_eq!(tokens("SoS(Share)란 무엇?"), ["sos", "share", "란", "무엇"]);
        let pool: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        let got = others(&mut rng(3), &pool, &pool[..1], 5);
        assert!(got.len() <= 2 && !got.contains(&pool[0]));
    }

    #[test]
    fn obj_keeps_insertion_order() {
        let v = obj([("z", Value::from(1)), ("a", Value::from(2))]);
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["z", "a"]);
    }
}
