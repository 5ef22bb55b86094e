//! The `support-judge` suite (seed 004): support-bot answers scored 1–5 on relevance and tone.
//!
//! Validation follows the seed's loader to the letter (field order, first problem only, exact
//! reasons) because users diff our `skipped` list against the one they already have.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use evalfleet_model::field::{required_string, Blank};
use evalfleet_model::routing::ProviderRules;

/// The required fields, in the order they are checked.
pub const FIELDS: [&str; 5] = ["id", "ticket", "response", "model", "prompt_version"];

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SupportExample {
    pub id: String,
    pub ticket: String,
    pub response: String,
    pub model: String,
    pub prompt_version: String,
    /// The response's provider, from the model-prefix rules.
    pub provider: String,
    /// Every other field of the record, kept as metadata.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
    /// People's scores of the judge dimensions, when the suite names a column of them.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub human: crate::evaluate::HumanLabels,
}

/// Validates one record (docs/DESIGN.md §2.1, §9): each field in order must be present (a JSON null is
/// present), a string, and non-empty after trimming; then the model's provider must be known.
pub fn parse_example(value: &Value, rules: &ProviderRules) -> Result<SupportExample, String> {
    let Value::Object(obj) = value else {
        return Err("Item is not an object".to_owned());
    };
    let mut fields: [&str; 5] = [""; 5];
    for (slot, name) in fields.iter_mut().zip(FIELDS) {
        *slot = required_string(obj, name, Blank::Rejected)?;
    }
    let [id, ticket, response, model, prompt_version] = fields;
    let provider = rules
        .provider_of(model)
        .ok_or_else(|| format!("Unknown model provider for: {model}"))?;
    let metadata = obj
        .iter()
        .filter(|(k, _)| !FIELDS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Ok(SupportExample {
        id: id.to_owned(),
        ticket: ticket.to_owned(),
        response: response.to_owned(),
        model: model.to_owned(),
        prompt_version: prompt_version.to_owned(),
        provider: provider.to_owned(),
        metadata,
        human: Default::default(),
    })
}

/// Words that carry no topic: left out of the relevance heuristic's keywords. Sorted, for binary search.
/// The longest stopword's length in bytes (a test checks it).
const STOPWORD_MAX: usize = 9;

const STOPWORDS: &[&str] = &[
    "about",
    "after",
    "again",
    "also",
    "anyone",
    "because",
    "been",
    "before",
    "being",
    "cant",
    "could",
    "does",
    "doesn",
    "every",
    "from",
    "getting",
    "have",
    "help",
    "hours",
    "into",
    "just",
    "keep",
    "keeps",
    "like",
    "minutes",
    "more",
    "need",
    "only",
    "over",
    "please",
    "seconds",
    "should",
    "since",
    "some",
    "still",
    "than",
    "thanks",
    "that",
    "their",
    "them",
    "then",
    "there",
    "these",
    "they",
    "this",
    "today",
    "trying",
    "want",
    "went",
    "what",
    "what's",
    "when",
    "where",
    "which",
    "while",
    "will",
    "with",
    "without",
    "would",
    "yesterday",
    "your",
];

/// Markers of an unprofessional register; each one found costs a point of tone (at most three).
const INFORMAL: &[&str] = &[
    "lol",
    "lmao",
    "omg",
    "hey!",
    "gonna",
    "wanna",
    "dunno",
    "you know",
    "so like",
    "kinda",
    "tbh",
    "idk",
    "no worries!",
    "haha",
    "btw",
];

/// All informal markers in one case-insensitive automaton: one pass over the response.
static INFORMAL_RE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    let alternation: Vec<String> = INFORMAL.iter().map(|m| regex::escape(m)).collect();
    regex::Regex::new(&format!("(?i){}", alternation.join("|")))
        .expect("the informal markers form a valid regex")
});

/// Keyword stems: a word's first five letters (lowercase), so `connect` and `connection` meet.
fn stems(text: &str) -> Vec<[char; 5]> {
    let mut lower = String::new();
    let mut out: Vec<[char; 5]> = Vec::new();
    for word in text.split(|c: char| !c.is_alphanumeric()) {
        if word.len() < 4 || word.chars().nth(3).is_none() {
            continue;
        }
        // The common case, an ASCII word longer than any stopword: its stem straight from its
        // first five bytes, with no lowercase copy of the whole word.
        if word.len() > STOPWORD_MAX && word.is_ascii() {
            let mut stem = ['\0'; 5];
            for (slot, b) in stem.iter_mut().zip(word.bytes()) {
                *slot = char::from(b.to_ascii_lowercase());
            }
            out.push(stem);
            continue;
        }
        lower.clear();
        lower.extend(word.chars().flat_map(char::to_lowercase));
        if STOPWORDS.binary_search(&lower.as_str()).is_ok() {
            continue;
        }
        let mut stem = ['\0'; 5];
        stem.iter_mut()
            .zip(lower.chars())
            .for_each(|(slot, c)| *slot = c);
        out.push(stem);
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Offline relevance, 1–5: the share of the ticket's keyword stems that the response uses,
/// full marks from 40 % coverage (a good answer names the problem's key terms, it does not
/// repeat the ticket). A deterministic stand-in for a judge, labelled as such.
pub fn heuristic_relevance(ticket: &str, response: &str) -> (u8, String) {
    let wanted = stems(ticket);
    let have = stems(response);
    if wanted.is_empty() {
        return (
            3,
            "heuristic: the ticket has no keywords to look for".to_owned(),
        );
    }
    let found = wanted
        .iter()
        .filter(|w| have.binary_search(w).is_ok())
        .count();
    let coverage = found as f64 / wanted.len() as f64;
    let score = 1 + (4.0 * (coverage / 0.4).min(1.0)).round() as u8;
    let reasoning = format!(
        "heuristic: the response uses {found} of the ticket's {} keywords ({:.0}% coverage)",
        wanted.len(),
        coverage * 100.0
    );
    (score, reasoning)
}

/// Offline tone, 1–5: starts at 5 and loses points for informal markers, shouting, piled-up
/// exclamation marks, rambling length or a curt reply.
pub fn heuristic_tone(response: &str) -> (u8, String) {
    let mut penalties: Vec<String> = Vec::new();
    let mut informal: Vec<&str> = INFORMAL_RE
        .find_iter(response)
        .filter_map(|m| {
            INFORMAL
                .iter()
                .copied()
                .find(|i| i.eq_ignore_ascii_case(m.as_str()))
        })
        .collect();
    informal.sort_unstable();
    informal.dedup();
    if !informal.is_empty() {
        penalties.push(format!("informal ({})", informal.join(", ")));
    }
    let mut score: i32 = 5 - (informal.len() as i32).min(3);
    if response.matches('!').count() > 1 {
        score -= 1;
        penalties.push("several exclamation marks".to_owned());
    }
    let (mut n_words, mut shouting) = (0, 0);
    for w in response.split_whitespace() {
        n_words += 1;
        if w.chars().filter(|c| c.is_alphabetic()).count() >= 4
            && !w.chars().any(char::is_lowercase)
        {
            shouting += 1;
        }
    }
    if n_words > 250 {
        score -= 2;
        penalties.push(format!("very verbose ({n_words} words)"));
    } else if n_words > 150 {
        score -= 1;
        penalties.push(format!("verbose ({n_words} words)"));
    } else if n_words < 6 {
        score -= 1;
        penalties.push("curt".to_owned());
    }
    if shouting >= 3 {
        score -= 1;
        penalties.push("shouting".to_owned());
    }
    let score = score.clamp(1, 5) as u8;
    let reasoning = if penalties.is_empty() {
        "heuristic: professional register, concise".to_owned()
    } else {
        format!("heuristic: {}", penalties.join("; "))
    };
    (score, reasoning)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(v: Value) -> Result<SupportExample, String> {
        parse_example(&v, &ProviderRules::default())
    }

    fn valid() -> Value {
        json!({"id": "t1", "ticket": "OOM in build", "response": "Raise -Xmx.",
               "model": "gpt-4o", "prompt_version": "v1", "team": "infra"})
    }

    #[test]
    fn stems_of_long_ascii_words_take_the_short_road_to_the_same_stems() {
        assert_eq!(
            STOPWORDS.iter().map(|w| w.len()).max(),
            Some(STOPWORD_MAX),
            "STOPWORD_MAX is the longest stopword"
        );
        assert!(
            STOPWORDS.windows(2).all(|w| w[0] < w[1]),
            "sorted for binary search"
        );
        let stem = |s: &str| -> [char; 5] {
            let mut out = ['\0'; 5];
            out.iter_mut().zip(s.chars()).for_each(|(o, c)| *o = c);
            out
        };
        // Long ASCII, short ASCII, a stopword, non-ASCII, and a long word in capitals.
        let got = stems("CONNECTIONS connect about Überprüfung KUBERNETES kubernetes");
        let mut want = vec![stem("conne"), stem("kuber"), stem("überp")];
        want.sort_unstable();
        assert_eq!(got, want);
    }

    #[test]
    fn valid_record_keeps_extra_fields_as_metadata() {
        let ex = check(valid()).unwrap();
        assert_eq!(ex.provider, "openai");
        assert_eq!(ex.metadata["team"], "infra");
        assert!(!ex.metadata.contains_key("id"));
    }

    #[test]
    fn every_validation_message() {
        assert_eq!(check(json!([1])).unwrap_err(), "Item is not an object");
        assert_eq!(check(json!("x")).unwrap_err(), "Item is not an object");
        for f in FIELDS {
            let mut v = valid();
            v.as_object_mut().unwrap().remove(f);
            assert_eq!(check(v).unwrap_err(), format!("Missing '{f}' field"));
            let mut v = valid();
            v[f] = json!(5);
            assert_eq!(check(v).unwrap_err(), format!("'{f}' must be a string"));
            let mut v = valid();
            v[f] = Value::Null;
            assert_eq!(check(v).unwrap_err(), format!("'{f}' must be a string"));
            let mut v = valid();
            v[f] = json!(" \u{2003}\t");
            assert_eq!(check(v).unwrap_err(), format!("'{f}' is empty"));
        }
    }

    #[test]
    fn first_problem_in_field_order_wins() {
        assert_eq!(
            check(json!({"ticket": 3})).unwrap_err(),
            "Missing 'id' field"
        );
        assert_eq!(
            check(json!({"id": "a", "response": 1})).unwrap_err(),
            "Missing 'ticket' field"
        );
        let mut v = valid();
        v["prompt_version"] = json!("");
        v["model"] = json!("llama-3");
        assert_eq!(check(v).unwrap_err(), "'prompt_version' is empty");
    }

    #[test]
    fn unknown_provider_comes_after_field_checks_and_keeps_model_as_given() {
        let mut v = valid();
        v["model"] = json!(" Llama-3 ");
        assert_eq!(
            check(v).unwrap_err(),
            "Unknown model provider for:  Llama-3 "
        );
    }

    #[test]
    fn tone_penalises_the_seed_informal_answer() {
        let r = "Hey! So like, databases are tricky sometimes you know? Have you tried turning it \
                 off and on again? Also maybe check if your computer is connected to the internet \
                 lol. Databases need internet to work I think.";
        let (score, why) = heuristic_tone(r);
        assert_eq!(score, 2, "{why}");
        assert_eq!(
            heuristic_tone("Increase the heap with -Xmx4g in JAVA_OPTS and rerun the build.").0,
            5
        );
    }

    #[test]
    fn relevance_follows_keyword_coverage() {
        let ticket = "Jenkins pipeline failing with OOM error on build step, Java heap space";
        let good =
            "Increase the Java heap for the Jenkins pipeline build step: the OOM error means \
                    heap space ran out; set -Xmx4g.";
        assert_eq!(heuristic_relevance(ticket, good).0, 5);
        assert_eq!(
            heuristic_relevance(ticket, "Please restart your router.").0,
            1
        );
    }
}
