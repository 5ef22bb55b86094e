//! What the fake says as the system under test: a prompt that is not a judge prompt gets a
//! deterministic, plausible answer made from the prompt's own key words (a pure function of
//! the seed and the prompt, like a verdict), so a target run through the fake is repeatable and
//! its answers are on topic for the offline judge.

use crate::judge::stable_hash;

/// Words too common to be a prompt's key words.
const COMMON: &[&str] = &[
    "about",
    "after",
    "again",
    "answer",
    "because",
    "before",
    "being",
    "could",
    "engineer",
    "every",
    "fails",
    "first",
    "found",
    "given",
    "having",
    "information",
    "other",
    "please",
    "question",
    "should",
    "since",
    "still",
    "support",
    "their",
    "there",
    "these",
    "thing",
    "think",
    "those",
    "through",
    "today",
    "under",
    "until",
    "using",
    "where",
    "which",
    "while",
    "would",
    "sentences",
];

/// Stand-ins when a prompt has fewer key words than a template needs.
const FILLERS: [&str; 4] = ["service", "configuration", "deployment", "logs"];

/// Up to `n` distinct key words of `prompt`, in order: five letters or more, lowercased.
fn key_words(prompt: &str, n: usize) -> Vec<String> {
    let mut words: Vec<String> = Vec::with_capacity(n);
    for word in prompt.split(|c: char| !c.is_alphanumeric() && c != '-') {
        let word = word.trim_matches('-').to_lowercase();
        if word.chars().count() < 5 || word.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        if COMMON.contains(&word.as_str()) || words.contains(&word) {
            continue;
        }
        words.push(word);
        if words.len() == n {
            break;
        }
    }
    for filler in FILLERS {
        if words.len() == n {
            break;
        }
        words.push(filler.to_owned());
    }
    words
}

/// The answer to a prompt that is not a judge prompt.
pub fn for_prompt(seed: u64, prompt: &str) -> String {
    let w = key_words(prompt, 4);
    let (a, b, c, d) = (&w[0], &w[1], &w[2], &w[3]);
    match stable_hash(seed, prompt) % 4 {
        0 => format!(
            "The {a} problem usually comes from the {b} settings. Check the {b} configuration, \
             then restart the {c} service. If {d} still misbehaves, collect the logs and \
             escalate with the exact error message."
        ),
        1 => format!(
            "Thanks for the details on {a}. Update {b}, verify {c} afterwards, and keep an eye \
             on {d} for the next hour; that resolves most cases like this one."
        ),
        2 => format!(
            "This looks like a known {a} issue. Roll back the last {b} change, clear the {c} \
             cache and retry. If it persists, share the {d} output so we can dig deeper."
        ),
        _ => format!(
            "To fix {a}, confirm that {b} is reachable, then reapply the {c} settings and watch \
             {d} until it reports healthy again."
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_stable_and_on_topic() {
        let prompt = "You are a support engineer.\nVPN connection drops every hour on macOS Sonoma";
        let answer = for_prompt(7, prompt);
        assert_eq!(answer, for_prompt(7, prompt), "deterministic");
        assert!(answer.contains("connection"), "{answer}");
        assert!(!answer.contains("{"), "no JSON: {answer}");
        let short = for_prompt(7, "Hi");
        assert!(short.contains("service"), "fillers: {short}");
    }
}
