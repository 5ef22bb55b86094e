//! Judge replies: find the verdict object in whatever the model wrote and check it.
//!
//! OpenAI is asked for `json_object` output, but Anthropic (and many OpenAI-compatible servers)
//! answer in free text: bare JSON, a ```json fence, or JSON inside prose. Rather than special-case
//! each shape, the parser takes the whole reply if it is one JSON object, and otherwise the
//! first balanced `{…}` (brace scanning that skips braces inside JSON strings) that parses and
//! has a `score` key — fences and prose around it are simply not part of the object. The score
//! must be an integer in the rubric's range; the `Err` text is short because it becomes the
//! re-ask's problem line and, after the re-ask, the `unscored` reason in reports.

use serde_json::{Map, Value};

/// A usable judge answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub score: i64,
    pub reasoning: String,
}

/// Opening braces tried as object starts before giving up (bounds the work on hostile text).
const MAX_CANDIDATES: usize = 256;

/// Parses a judge reply into a verdict whose score lies in `min..=max`.
pub fn parse_verdict(text: &str, min: i64, max: i64) -> Result<Verdict, String> {
    if text.trim().is_empty() {
        return Err("empty reply".into());
    }
    let object = find_verdict_object(text)
        .ok_or_else(|| "no JSON object with a 'score' in the reply".to_owned())?;
    let score = integer_score(&object["score"])?;
    if score < min || score > max {
        return Err(format!("score {score} is outside {min}..{max}"));
    }
    let reasoning = match object.get("reasoning") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.trim().to_owned(),
        Some(_) => return Err("reasoning is not a string".into()),
    };
    Ok(Verdict { score, reasoning })
}

/// The whole text as an object with `score`, else the first balanced object in it that has one.
fn find_verdict_object(text: &str) -> Option<Map<String, Value>> {
    find_object_with(text, "score")
}

/// The whole text as an object with `key`, else the first balanced object in it that has one
/// (a pairwise reply's `verdict`, too).
pub(crate) fn find_object_with(text: &str, key: &str) -> Option<Map<String, Value>> {
    let with_score = |candidate: &str| match serde_json::from_str::<Value>(candidate) {
        Ok(Value::Object(map)) if map.contains_key(key) => Some(map),
        _ => None,
    };
    if let Some(map) = with_score(text.trim()) {
        return Some(map);
    }
    text.match_indices('{')
        .take(MAX_CANDIDATES)
        .filter_map(|(start, _)| balanced_end(text, start).map(|end| &text[start..end]))
        .find_map(with_score)
}

/// The end (exclusive) of the balanced object that starts at `start` (a `{`), counting only
/// braces outside JSON strings.
fn balanced_end(text: &str, start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, c) in text[start..].bytes().enumerate() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => in_string = true,
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(start + i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// An integer, an integral float (`4.0`) or a string holding either (`"4"`).
fn integer_score(value: &Value) -> Result<i64, String> {
    match value {
        Value::Number(n) => number_to_i64(n),
        Value::String(s) => match serde_json::from_str::<Value>(s.trim()) {
            Ok(Value::Number(n)) => number_to_i64(&n),
            _ => Err(format!("score is not a number: {}", short(value))),
        },
        other => Err(format!("score is not a number: {}", short(other))),
    }
}

fn number_to_i64(n: &serde_json::Number) -> Result<i64, String> {
    if let Some(i) = n.as_i64() {
        return Ok(i);
    }
    // A u64 beyond i64, or a float.
    let f = n.as_f64().unwrap_or(f64::NAN);
    if f.fract() != 0.0 || !f.is_finite() {
        return Err(format!("score is not an integer: {n}"));
    }
    // Integral floats strictly inside the i64 range convert exactly.
    if f > -9.2e18 && f < 9.2e18 {
        Ok(f as i64)
    } else {
        Err(format!("score {n} is out of range"))
    }
}

/// A JSON value for an error message, cut to 40 characters.
fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= 40 {
        text
    } else {
        format!("{}…", text.chars().take(40).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> Verdict {
        parse_verdict(text, 1, 5).unwrap_or_else(|e| panic!("{text:?}: {e}"))
    }

    fn err(text: &str) -> String {
        parse_verdict(text, 1, 5).expect_err(text)
    }

    fn v(score: i64, reasoning: &str) -> Verdict {
        Verdict {
            score,
            reasoning: reasoning.into(),
        }
    }

    #[test]
    fn bare_json() {
        assert_eq!(ok(r#"{"score": 4, "reasoning": "Good."}"#), v(4, "Good."));
        assert_eq!(
            ok("  \n{\"score\":1,\"reasoning\":\"  Off-topic. \"}\n"),
            v(1, "Off-topic.")
        );
    }

    #[test]
    fn fenced_json() {
        assert_eq!(
            ok("```json\n{\"score\": 5, \"reasoning\": \"Direct.\"}\n```"),
            v(5, "Direct.")
        );
        assert_eq!(ok("```\n{\"score\": 2}\n```"), v(2, ""));
        assert_eq!(
            ok("Here you go:\n```JSON\n{\"score\": 3, \"reasoning\": \"Partial.\"}\n```\nThanks"),
            v(3, "Partial.")
        );
    }

    #[test]
    fn json_in_prose() {
        assert_eq!(
            ok("After review, my verdict is {\"score\": 4, \"reasoning\": \"Mostly right.\"} as asked."),
            v(4, "Mostly right.")
        );
        // Braces inside strings do not end the object; objects without `score` are skipped,
        // including a broken one and the echoed template.
        assert_eq!(
            ok(
                r#"Format {"score": <integer>} {"note": "x"} {oops {"score": 2, "reasoning": "Uses } and { and \" quotes."} {"score": 5}"#
            ),
            v(2, "Uses } and { and \" quotes.")
        );
        // A verdict nested in a wrapper object is found.
        assert_eq!(
            ok(r#"{"result": {"score": 3, "reasoning": "Meh."}}"#),
            v(3, "Meh.")
        );
        assert_eq!(ok(r#"[{"score": 4}"#), v(4, ""));
    }

    #[test]
    fn score_forms() {
        assert_eq!(ok(r#"{"score": 4.0}"#), v(4, ""));
        assert_eq!(ok(r#"{"score": "4"}"#), v(4, ""));
        assert_eq!(ok(r#"{"score": " 5 "}"#), v(5, ""));
        assert_eq!(ok(r#"{"score": "3.0"}"#), v(3, ""));
        assert_eq!(ok(r#"{"score": 1e0}"#), v(1, ""));
        assert_eq!(ok(r#"{"score": 5, "reasoning": null}"#), v(5, ""));
        assert_eq!(parse_verdict(r#"{"score": -2}"#, -3, 3), Ok(v(-2, "")));
        assert_eq!(parse_verdict(r#"{"score": 0}"#, 0, 10), Ok(v(0, "")));
    }

    #[test]
    fn rejections() {
        assert_eq!(err(""), "empty reply");
        assert_eq!(err("  \n"), "empty reply");
        assert_eq!(
            err("I would give it a 4."),
            "no JSON object with a 'score' in the reply"
        );
        assert_eq!(
            err(r#"{"rating": 4}"#),
            "no JSON object with a 'score' in the reply"
        );
        assert_eq!(
            err(r#"{"score": 4,}"#),
            "no JSON object with a 'score' in the reply"
        );
        assert_eq!(
            err(r#"{"score": 4"#),
            "no JSON object with a 'score' in the reply"
        );
        assert_eq!(err("4"), "no JSON object with a 'score' in the reply");
        assert_eq!(err(r#"{"score": 8}"#), "score 8 is outside 1..5");
        assert_eq!(err(r#"{"score": 0}"#), "score 0 is outside 1..5");
        assert_eq!(err(r#"{"score": 8.0}"#), "score 8 is outside 1..5");
        assert_eq!(err(r#"{"score": 3.5}"#), "score is not an integer: 3.5");
        assert_eq!(err(r#"{"score": "3.5"}"#), "score is not an integer: 3.5");
        assert_eq!(
            err(r#"{"score": "four"}"#),
            "score is not a number: \"four\""
        );
        assert_eq!(err(r#"{"score": ""}"#), "score is not a number: \"\"");
        assert_eq!(err(r#"{"score": null}"#), "score is not a number: null");
        assert_eq!(err(r#"{"score": true}"#), "score is not a number: true");
        assert_eq!(err(r#"{"score": [4]}"#), "score is not a number: [4]");
        assert_eq!(err(r#"{"score": 1e300}"#), "score 1e+300 is out of range");
        assert_eq!(
            err(r#"{"score": 18446744073709551615}"#),
            "score 18446744073709551615 is out of range"
        );
        assert_eq!(
            err(r#"{"score": 4, "reasoning": 7}"#),
            "reasoning is not a string"
        );
        assert_eq!(
            err(&format!("{{\"score\": \"{}\"}}", "x".repeat(100))),
            format!("score is not a number: \"{}…", "x".repeat(39))
        );
    }

    #[test]
    fn the_first_object_with_a_score_decides() {
        assert_eq!(
            err(r#"{"score": 9} then {"score": 4}"#),
            "score 9 is outside 1..5"
        );
        assert_eq!(ok(r#"{"score": 2} then {"score": 9}"#), v(2, ""));
    }

    #[test]
    fn hostile_text_is_bounded() {
        let text = "{".repeat(100_000);
        assert_eq!(
            parse_verdict(&text, 1, 5).unwrap_err(),
            "no JSON object with a 'score' in the reply"
        );
    }
}
