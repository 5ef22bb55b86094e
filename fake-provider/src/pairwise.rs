//! The fake judge's answer to a pairwise question ("which of answers A and B is better?",
//! `{"verdict": "A" | "B" | "tie", "reasoning": "..."}`): a pure function of the two answers'
//! texts, so it does not change when they swap places — the more thorough answer (more
//! distinct words of three letters or more) is better, equal ones tie — unless the provider is
//! told to favour position A on a share of questions (`position_bias`), drawn from
//! (seed, prompt), which is what a biased judge does: its verdict follows the position.

use std::collections::HashSet;
use std::sync::LazyLock;

use regex::Regex;

use crate::judge::stable_hash;

/// What the pairwise reply format says; a prompt that has it asks for a verdict, not a score.
const MARKER: &str = r#"{"verdict": "A" | "B" | "tie""#;

/// The opening tag of an answer block: `<answer_a>` or `<answer_b>` followed by a newline
/// (the system prompt names the tags too, but never with a newline after them).
static OPENING: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"<([a-z0-9_-]+)_(a|b)>\n").expect("static regex"));

/// Whether `prompt` is a pairwise question.
pub fn is_pairwise_prompt(prompt: &str) -> bool {
    prompt.contains(MARKER)
}

/// The two answers of a pairwise prompt: the text of the first complete `<X_a>` and `<X_b>`
/// blocks (None when one is missing).
fn answers(prompt: &str) -> Option<(&str, &str)> {
    let mut found: [Option<&str>; 2] = [None, None];
    for caps in OPENING.captures_iter(prompt) {
        let whole = caps.get(0)?;
        let slot = usize::from(&caps[2] == "b");
        if found[slot].is_some() {
            continue;
        }
        let closing = format!("\n</{}_{}>", &caps[1], &caps[2]);
        let rest = &prompt[whole.end()..];
        if let Some(end) = rest.find(&closing) {
            found[slot] = Some(&rest[..end]);
        }
    }
    Some((found[0]?, found[1]?))
}

/// Distinct lowercase words of three characters or more.
fn thoroughness(text: &str) -> usize {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
        .collect::<HashSet<_>>()
        .len()
}

/// The verdict: `A`, `B` or `tie`.
pub fn verdict(seed: u64, prompt: &str, position_bias: f64) -> &'static str {
    let draw = stable_hash(seed ^ 0xb1a5, prompt);
    let u = (draw >> 11) as f64 / (1u64 << 53) as f64;
    if u < position_bias {
        return "A";
    }
    let Some((a, b)) = answers(prompt) else {
        return "tie";
    };
    match thoroughness(a).cmp(&thoroughness(b)) {
        std::cmp::Ordering::Greater => "A",
        std::cmp::Ordering::Less => "B",
        std::cmp::Ordering::Equal => "tie",
    }
}

/// The bare JSON reply; `invalid` names a verdict the format does not allow (the pairwise
/// form of an out-of-range score).
pub fn json(seed: u64, prompt: &str, position_bias: f64, invalid: bool) -> String {
    let v = if invalid {
        "C"
    } else {
        verdict(seed, prompt, position_bias)
    };
    format!(
        "{{\"verdict\": \"{v}\", \"reasoning\": \"Verdict {v}: the fake provider prefers the \
         more thorough answer, deterministically from the two texts.\"}}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prompt(a: &str, b: &str) -> String {
        format!(
            "Answer A is in <answer_a>, B in <answer_b>. {MARKER}, \"reasoning\": \"...\"}}\n\
             Q: why?\n\n<answer_a>\n{a}\n</answer_a>\n\n<answer_b>\n{b}\n</answer_b>"
        )
    }

    #[test]
    fn the_more_thorough_answer_wins_in_either_position() {
        let long = "Restart the router, then renew the DHCP lease and check the cable.";
        let short = "Restart it.";
        assert!(is_pairwise_prompt(&prompt(long, short)));
        assert!(!is_pairwise_prompt("score from 1 to 5"));
        assert_eq!(verdict(7, &prompt(long, short), 0.0), "A");
        assert_eq!(verdict(7, &prompt(short, long), 0.0), "B");
        assert_eq!(verdict(7, &prompt("same words", "words same"), 0.0), "tie");
        assert_eq!(verdict(7, "no blocks here", 0.0), "tie");
    }

    #[test]
    fn position_bias_answers_a() {
        let long = "Restart the router, then renew the DHCP lease and check the cable.";
        assert_eq!(verdict(7, &prompt("Restart it.", long), 1.0), "A");
        let json = json(7, &prompt("x", "y"), 0.0, true);
        assert!(json.starts_with("{\"verdict\": \"C\""), "{json}");
    }
}
