//! Text normalisation shared by every suite.
//!
//! The metric definitions in docs/DESIGN.md §2 and §9 hinge on small differences between normalisations
//! (lowercase+trim for set matching, non-word → space for answers, non-alphanumeric splits for
//! log words), so each one lives here once, under a name that says which rule it is.

use std::collections::HashSet;

/// Lowercase + trim (Unicode whitespace): the default normalisation of set metrics.
pub fn norm(s: &str) -> String {
    s.trim().to_lowercase()
}

/// Words of the log-analysis rules: lowercase, split on every non-alphanumeric character
/// (so `vm_started` → `vm`, `started`), empty pieces dropped.
pub fn words(s: &str) -> Vec<String> {
    s.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Answer tokens (SQuAD-style, Unicode-aware): lowercase, every non-word character (word =
/// alphanumeric or `_`) to a space, split on whitespace.
pub fn answer_tokens(s: &str) -> Vec<String> {
    s.to_lowercase()
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Word overlap = |A ∩ B| / min(|A|, |B|) over the two word *sets*; 0.0 when either is empty.
pub fn word_overlap(a: &[String], b: &[String]) -> f64 {
    let a: HashSet<&str> = a.iter().map(String::as_str).collect();
    let b: HashSet<&str> = b.iter().map(String::as_str).collect();
    let smaller = a.len().min(b.len());
    if smaller == 0 {
        return 0.0;
    }
    a.intersection(&b).count() as f64 / smaller as f64
}

/// XML- and HTML-escapes text and drops the control characters XML 1.0 cannot carry at all.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_on_underscore_and_punctuation() {
        assert_eq!(words("VM_Started (x2)"), vec!["vm", "started", "x2"]);
    }

    #[test]
    fn answer_tokens_keep_underscore_and_unicode() {
        assert_eq!(
            answer_tokens("  SoS는 5%, lip_care!"),
            vec!["sos는", "5", "lip_care"]
        );
    }

    #[test]
    fn overlap_is_over_the_smaller_set() {
        let a = words("vm started now");
        let b = words("vm started");
        assert_eq!(word_overlap(&a, &b), 1.0);
        assert_eq!(word_overlap(&a, &[]), 0.0);
    }
}
