//! Reading a required string field of a dataset record, with the built-in suites' reasons
//! (docs/DESIGN.md §2.1, §9): `Missing 'f' field` when it is absent (a JSON null is present),
//! `'f' must be a string`, and — where the suite wants text — `'f' is empty` after trimming
//! (Unicode whitespace). One rule, so every suite words it the same way.

use serde_json::{Map, Value};

/// Whether a blank string (empty after trimming) is a valid value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blank {
    /// `'f' is empty`: support-judge's fields, rag-layers' id and question.
    Rejected,
    /// A log-analysis agent may answer with nothing; that is a result, not bad input.
    Allowed,
}

/// The string at `name`, or the skip reason.
pub fn required_string<'a>(
    obj: &'a Map<String, Value>,
    name: &str,
    blank: Blank,
) -> Result<&'a str, String> {
    match obj.get(name) {
        None => Err(format!("Missing '{name}' field")),
        Some(Value::String(s)) if blank == Blank::Rejected && s.trim().is_empty() => {
            Err(format!("'{name}' is empty"))
        }
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(format!("'{name}' must be a string")),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reasons_follow_the_seed_loader() {
        let obj = json!({"a": "x", "n": null, "i": 1, "b": " \u{a0}"});
        let obj = obj.as_object().unwrap();
        assert_eq!(required_string(obj, "a", Blank::Rejected), Ok("x"));
        assert_eq!(
            required_string(obj, "z", Blank::Rejected).unwrap_err(),
            "Missing 'z' field"
        );
        assert_eq!(
            required_string(obj, "n", Blank::Rejected).unwrap_err(),
            "'n' must be a string",
            "a JSON null is present"
        );
        assert_eq!(
            required_string(obj, "i", Blank::Allowed).unwrap_err(),
            "'i' must be a string"
        );
        assert_eq!(
            required_string(obj, "b", Blank::Rejected).unwrap_err(),
            "'b' is empty"
        );
        assert_eq!(required_string(obj, "b", Blank::Allowed), Ok(" \u{a0}"));
    }
}
