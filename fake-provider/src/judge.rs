//! The fake judge: a reply that is a pure function of (seed, prompt text), so a test can predict
//! it and a retried prompt gets the same score — plus the ways real models dress their JSON up
//! (prose around it, a ```json fence) and the ways they get it wrong (out of range, no JSON).

use std::sync::LazyLock;

use regex::Regex;

/// The rubric range when the prompt does not name one.
pub const DEFAULT_RANGE: (i64, i64) = (1, 5);

static RANGE_PHRASE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)an integer from\s+(-?\d{1,9})\s+to\s+(-?\d{1,9})").expect("static regex")
});

/// Whether `prompt` asks for a verdict (it names a score or a rubric range); any other prompt is
/// a question to the system under test, answered by [`crate::answer::for_prompt`].
pub fn is_judge_prompt(prompt: &str) -> bool {
    prompt.contains("score")
        || RANGE_PHRASE.is_match(prompt)
        || crate::pairwise::is_pairwise_prompt(prompt)
}

/// The rubric range named by the first "an integer from MIN to MAX" in the prompt (bounds
/// swapped if given backwards), or 1 to 5 when the prompt names none.
pub fn rubric_range(prompt: &str) -> (i64, i64) {
    let Some(caps) = RANGE_PHRASE.captures(prompt) else {
        return DEFAULT_RANGE;
    };
    let bound = |i: usize| caps[i].parse::<i64>().ok();
    match (bound(1), bound(2)) {
        (Some(a), Some(b)) => (a.min(b), a.max(b)),
        _ => DEFAULT_RANGE,
    }
}

/// FNV-1a over the seed and the text, finished with a SplitMix64 mix: stable across Rust
/// versions and platforms (unlike `DefaultHasher`), cheap on the hot path.
pub fn stable_hash(seed: u64, text: &str) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h = OFFSET;
    for byte in seed.to_le_bytes().iter().chain(text.as_bytes()) {
        h ^= u64::from(*byte);
        h = h.wrapping_mul(PRIME);
    }
    splitmix64(h)
}

/// The SplitMix64 finaliser (also used to derive response ids).
pub fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The judge's verdict on one prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    pub score: i64,
    pub min: i64,
    pub max: i64,
}

impl Verdict {
    /// score = MIN + hash(seed, prompt) mod (MAX − MIN + 1).
    pub fn for_prompt(seed: u64, prompt: &str) -> Self {
        let (min, max) = rubric_range(prompt);
        let width = (i128::from(max) - i128::from(min) + 1) as u128;
        let offset = (u128::from(stable_hash(seed, prompt)) % width) as i128;
        let score = (i128::from(min) + offset) as i64;
        Self { score, min, max }
    }

    /// The same verdict with a score the rubric does not allow (max + 3).
    pub fn out_of_range(self) -> Self {
        Self {
            score: self.max.saturating_add(3),
            ..self
        }
    }

    /// The bare JSON reply: `{"score": N, "reasoning": "..."}`.
    pub fn json(&self) -> String {
        let Self { score, min, max } = *self;
        format!(
            "{{\"score\": {score}, \"reasoning\": \"Score {score} on the {min} to {max} scale: \
             the fake provider derived this judgment deterministically from the prompt.\"}}"
        )
    }
}

/// How a reply's JSON is dressed up when it is wrapped.
pub fn wrap(json: &str, style: u32) -> String {
    match style % 3 {
        0 => format!("Here is my evaluation of the response:\n\n```json\n{json}\n```"),
        1 => format!("```json\n{json}\n```"),
        _ => format!(
            "After reviewing the response against the rubric, my assessment follows.\n{json}\n\
             Let me know if you would like more detail."
        ),
    }
}

/// A reply with no JSON (and no digits) in it at all.
pub const NON_JSON_PROSE: &str = "The response is reasonable overall: it addresses the question \
    but could be more precise and better supported. I would place it somewhere near the middle \
    of the scale.";

/// Tokens estimated the way the issue fixes it: ceil(chars / 4).
pub fn estimate_tokens(text: &str) -> u32 {
    let chars = if text.is_ascii() {
        text.len()
    } else {
        text.chars().count()
    };
    u32::try_from(chars.div_ceil(4)).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_phrase_is_parsed() {
        assert_eq!(
            rubric_range("Score it as an integer from 0 to 10."),
            (0, 10)
        );
        assert_eq!(rubric_range("AN INTEGER FROM 5 TO 1"), (1, 5));
        assert_eq!(rubric_range("no phrase here"), DEFAULT_RANGE);
        assert_eq!(rubric_range("an integer from -2 to 2"), (-2, 2));
    }

    #[test]
    fn scores_are_stable_and_in_range() {
        for i in 0..500 {
            let prompt = format!("Rate as an integer from 0 to 10. Case {i}");
            let v = Verdict::for_prompt(7, &prompt);
            assert!((0..=10).contains(&v.score));
            assert_eq!(v, Verdict::for_prompt(7, &prompt));
        }
        // Pinned so a change of the hash (which would change every user's fake scores) is seen.
        assert_eq!(stable_hash(7, "abc"), 0xa843_cb4b_ee82_385c);
        assert_ne!(stable_hash(7, "abc"), stable_hash(8, "abc"));
    }

    #[test]
    fn token_estimate_rounds_up() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abcde"), 2);
        assert_eq!(estimate_tokens("ééé"), 1);
    }

    #[test]
    fn prose_has_no_json_or_digits() {
        assert!(!NON_JSON_PROSE.contains('{'));
        assert!(!NON_JSON_PROSE.chars().any(|c| c.is_ascii_digit()));
    }
}
