//! Finding the agent's structured analysis inside free text (docs/DESIGN.md §2.3, §9).
//!
//! Agents are asked for a fenced JSON block followed by a narrative, but real outputs wrap it in
//! other fences, drop the fence, nest it in a wrapper object or put prose and braces around it.
//! Candidates, in order: every fenced block (any info string, or none), then every balanced
//! `{…}` in text order by start position (string-aware, so braces inside JSON strings do not
//! count). A candidate that does not win is no barrier: objects inside it are later candidates.
//! The first candidate that parses as a JSON object carrying `events_detected`, `timeline` or
//! `metrics` (with a non-null value) wins and is validated by [`super::schema`].

use serde_json::{Map, Value};

use super::schema::{validate, ParsedOutput};

/// The keys that make an object the agent's structured analysis.
const CARRIER_KEYS: [&str; 3] = ["events_detected", "timeline", "metrics"];
/// The same keys as they must appear in the JSON text.
const QUOTED_KEYS: [&str; 3] = ["\"events_detected\"", "\"timeline\"", "\"metrics\""];

/// The structured-output extraction: the first carrying object, validated; `None` when the text
/// has no such object (the output is then evaluated as free text).
pub fn parse_structured_output(text: &str) -> Option<ParsedOutput> {
    find_carrier(text).map(|obj| validate(&obj))
}

fn find_carrier(text: &str) -> Option<Map<String, Value>> {
    fenced_blocks(text)
        .into_iter()
        .find_map(|block| carrier(block.trim()))
        .or_else(|| balanced_objects(text).find_map(carrier))
}

/// The candidate as a carrying object, or `None`.
fn carrier(candidate: &str) -> Option<Map<String, Value>> {
    // Cheap filter before a full parse: a carrier must spell one of its keys.
    if !QUOTED_KEYS.iter().any(|k| candidate.contains(k)) {
        return None;
    }
    match serde_json::from_str::<Value>(candidate) {
        Ok(Value::Object(obj)) if CARRIER_KEYS.iter().any(|k| is_present(&obj, k)) => Some(obj),
        _ => None,
    }
}

/// A key counts as present when its value is not `null`.
pub(crate) fn is_present(obj: &Map<String, Value>, key: &str) -> bool {
    obj.get(key).is_some_and(|v| !v.is_null())
}

/// Contents of the ``` fences in text order. The info string is the rest of the opening line,
/// whatever it says; a fence closed on its own opening line (```{…}```) has no info string; an
/// unclosed fence runs to the end of the text.
fn fenced_blocks(text: &str) -> Vec<&str> {
    let mut blocks = Vec::new();
    let mut pos = 0;
    while let Some(found) = text[pos..].find("```") {
        let after = pos + found + 3;
        let line_end = text[after..].find('\n').map_or(text.len(), |i| after + i);
        if let Some(close) = text[after..line_end].find("```") {
            blocks.push(&text[after..after + close]);
            pos = after + close + 3;
            continue;
        }
        let start = (line_end + 1).min(text.len());
        match text[start..].find("```") {
            Some(close) => {
                blocks.push(&text[start..start + close]);
                pos = start + close + 3;
            }
            None => {
                blocks.push(&text[start..]);
                break;
            }
        }
    }
    blocks
}

/// Every balanced `{…}` slice, ordered by where it starts (outer objects before their inner
/// ones). Braces inside JSON strings of the object being balanced are ignored; a `{` that never
/// closes yields nothing. Only a `{` followed (after JSON whitespace) by `"` can open an object
/// with a key, so other braces of prose or code are not even balanced: the result is the same
/// and text full of stray braces stays cheap.
fn balanced_objects(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let opens_keyed_object = move |start: usize| {
        bytes[start + 1..]
            .iter()
            .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
            == Some(&b'"')
    };
    text.bytes()
        .enumerate()
        .filter(move |&(i, b)| b == b'{' && opens_keyed_object(i))
        .filter_map(move |(start, _)| {
            balanced_end(text.as_bytes(), start).map(|end| &text[start..=end])
        })
}

/// Index of the `}` closing the `{` at `start`, string-aware.
fn balanced_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, &b) in bytes.iter().enumerate().skip(start) {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(text: &str) -> Vec<String> {
        find_carrier(text)
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default()
    }

    #[test]
    fn fenced_json_block_with_narrative_after() {
        let text = "Analysis:\n```json\n{\"timeline\": [{\"event\": \"a\"}], \"tag\": 1}\n```\nThe VM {started}.";
        assert_eq!(keys(text), ["timeline", "tag"]);
    }

    #[test]
    fn fences_with_any_or_no_info_string_count_and_come_first() {
        // The bare fence comes after an unfenced carrier in the text, yet fences are tried first.
        let text = "{\"metrics\": {}, \"first\": 1}\n```\n{\"metrics\": {}, \"fenced\": 1}\n```";
        assert_eq!(keys(text), ["metrics", "fenced"]);
        let text = "```JavaScript\n{\"timeline\": [], \"js\": true}\n```";
        assert_eq!(keys(text), ["timeline", "js"]);
        let text = "inline ```{\"timeline\": [], \"one_line\": 1}``` done";
        assert_eq!(keys(text), ["timeline", "one_line"]);
        assert_eq!(
            fenced_blocks("a ```x\nbody\n``` b ```\nopen"),
            ["body\n", "open"]
        );
        assert!(fenced_blocks("no fences").is_empty());
    }

    #[test]
    fn fenced_block_without_carrier_keys_loses_to_later_candidates() {
        let text = "```json\n{\"summary\": \"ok\"}\n```\nthen {\"events_detected\": []}";
        assert_eq!(keys(text), ["events_detected"]);
    }

    #[test]
    fn prose_around_unfenced_json_and_nested_braces() {
        let text = "Here you go: {\"events_detected\": [{\"event_type\": \"x\", \"meta\": {\"a\": {\"b\": 1}}}]} hope it helps {:)";
        assert_eq!(keys(text), ["events_detected"]);
    }

    #[test]
    fn braces_inside_strings_do_not_unbalance() {
        let text =
            r#"note {"timeline": [{"event": "brace } and { and \" quote }"}], "z": "}"} end"#;
        assert_eq!(keys(text), ["timeline", "z"]);
    }

    #[test]
    fn failed_outer_candidate_lets_its_inner_object_win() {
        // The outer object is not JSON (unquoted key), the inner one is.
        let text = r#"{ result: {"metrics": {"m": 1}}, trailing }"#;
        assert_eq!(keys(text), ["metrics"]);
        let text = r#"{"note": "x", result: {"metrics": {"m": 1}}, "timeline": []}"#;
        assert_eq!(keys(text), ["metrics"]);
        // The outer object is JSON but does not carry a key: its inner object is a candidate.
        let text = r#"{"analysis": {"timeline": []}, "note": "x"}"#;
        assert_eq!(keys(text), ["timeline"]);
        // An unclosed brace before the object does not hide it.
        let text = r#"oops { {"events_detected": []}"#;
        assert_eq!(keys(text), ["events_detected"]);
    }

    #[test]
    fn first_carrier_in_text_order_wins_and_null_keys_do_not_carry() {
        let text = r#"{"metrics": null} {"timeline": [], "n": 1} {"events_detected": [], "n": 2}"#;
        assert_eq!(keys(text), ["timeline", "n"]);
        assert!(find_carrier(r#"{"events": []} [1, 2] {"timeline": null}"#).is_none());
        assert!(find_carrier("no json here").is_none());
        assert!(find_carrier("").is_none());
    }

    #[test]
    fn arrays_and_other_json_values_are_not_objects() {
        assert!(find_carrier("```json\n[{\"timeline\": 1}]\n```").is_some()); // the inner object
        assert!(find_carrier("```json\n\"timeline\"\n```").is_none());
    }

    #[test]
    fn only_braces_that_open_a_keyed_object_are_candidates() {
        let text = "fn f() { let x = {}; }\n{ \n\t\"timeline\": [] } {\"a\": {1}";
        let got: Vec<&str> = balanced_objects(text).collect();
        assert_eq!(got, ["{ \n\t\"timeline\": [] }"]);
        // Many stray braces stay cheap: none of them needs balancing.
        let noisy = "{ ".repeat(50_000) + "{\"metrics\": {}}";
        assert_eq!(keys(&noisy), ["metrics"]);
    }

    #[test]
    fn multibyte_text_around_json_is_fine() {
        let text = "분석 결과 — {\"timeline\": [{\"event\": \"VM 시작\"}]} 끝 ✓";
        assert_eq!(keys(text), ["timeline"]);
    }

    #[test]
    fn parse_structured_output_validates_the_winner() {
        let p = parse_structured_output(r#"{"events_detected": [{"event_type": "a"}, {}]}"#)
            .expect("parsed");
        assert_eq!(p.events_detected.as_ref().map(Vec::len), Some(1));
        assert_eq!(p.errors, ["events_detected[1]: missing 'event_type'"]);
        assert!(parse_structured_output("plain prose").is_none());
    }
}
