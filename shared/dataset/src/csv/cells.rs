//! Typed cells: how a CSV cell's text becomes a JSON value (`--cell NAME=TYPE`), and how a bad
//! cell is quoted in the reason its record is skipped.

use serde_json::Value;

/// The longest part of a cell quoted in a reason; a 10 MB cell must not become a 10 MB message.
const QUOTE_CHARS: usize = 40;

/// How a CSV cell becomes a JSON value; columns not listed stay strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CellType {
    /// The cell's text as given, untrimmed; an empty cell is `""`.
    String,
    /// A JSON number: an integer that fits i64 stays an integer, anything else must be a
    /// finite f64.
    Number,
    /// `true/false`, `yes/no`, `1/0`, in any case.
    Bool,
    /// The cell parsed as JSON (an object, an array, a quoted string, ...).
    Json,
}

/// A typed cell's value from its trimmed, non-empty text.
pub(super) fn typed(kind: CellType, text: &str) -> Result<Value, String> {
    match kind {
        CellType::String => Ok(Value::String(text.to_owned())),
        CellType::Number => {
            if let Ok(i) = text.parse::<i64>() {
                return Ok(Value::from(i));
            }
            match text.parse::<f64>() {
                Ok(f) if f.is_finite() => Ok(Value::from(f)),
                Ok(_) => Err(format!("{} is not a finite number", quote(text))),
                Err(_) => Err(format!("{} is not a number", quote(text))),
            }
        }
        CellType::Bool => {
            let is = |words: [&str; 3]| words.iter().any(|w| text.eq_ignore_ascii_case(w));
            if is(["true", "yes", "1"]) {
                Ok(Value::Bool(true))
            } else if is(["false", "no", "0"]) {
                Ok(Value::Bool(false))
            } else {
                Err(format!(
                    "{} is not a boolean (true/false, yes/no, 1/0)",
                    quote(text)
                ))
            }
        }
        CellType::Json => serde_json::from_str(text).map_err(|e| {
            // serde's own "at line L column C" counts within the cell; say so.
            let msg = e.to_string();
            let msg = msg.split(" at line ").next().unwrap_or(&msg);
            if e.line() == 0 {
                format!("invalid JSON: {msg}")
            } else {
                format!(
                    "invalid JSON: {msg} at line {} column {} of the cell",
                    e.line(),
                    e.column()
                )
            }
        }),
    }
}

/// `'text'`, cut to its first [`QUOTE_CHARS`] characters.
fn quote(text: &str) -> String {
    match text.char_indices().nth(QUOTE_CHARS) {
        Some((cut, _)) => format!("'{}…'", &text[..cut]),
        None => format!("'{text}'"),
    }
}
