//! How a check reads a value: present or not, its text, case folding, equality and numbers.

use std::borrow::Cow;

use serde_json::Value;

/// `None` for absent and for JSON `null`: both mean "no value for this item".
pub(super) fn present(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| !v.is_null())
}

/// A JSON string's own text; any other value's compact JSON.
pub(super) fn text(v: &Value) -> Cow<'_, str> {
    match v {
        Value::String(s) => Cow::Borrowed(s),
        other => Cow::Owned(other.to_string()),
    }
}

/// Unicode lowercase, without allocating for the common all-lowercase ASCII text.
pub(super) fn lowercase(s: &str) -> Cow<'_, str> {
    if s.is_ascii() {
        if s.bytes().any(|b| b.is_ascii_uppercase()) {
            Cow::Owned(s.to_ascii_lowercase())
        } else {
            Cow::Borrowed(s)
        }
    } else {
        Cow::Owned(s.to_lowercase())
    }
}

/// Lowercases `text` when the check is case-insensitive, keeping a borrow where it can.
pub(super) fn folded(text: Cow<'_, str>, case_insensitive: bool) -> Cow<'_, str> {
    if !case_insensitive {
        return text;
    }
    match text {
        Cow::Borrowed(s) => lowercase(s),
        Cow::Owned(s) => match lowercase(&s) {
            Cow::Borrowed(_) => Cow::Owned(s),
            Cow::Owned(lower) => Cow::Owned(lower),
        },
    }
}

/// `equals`: strings exactly (or case-insensitively), numbers numerically (1 == 1.0), anything
/// else by JSON equality. `b_folded` says `b` was lowercased at compile time.
pub(super) fn values_equal(a: &Value, b: &Value, case_insensitive: bool, b_folded: bool) -> bool {
    match (a, b) {
        (Value::String(a), Value::String(b)) if case_insensitive => {
            let a = lowercase(a);
            if b_folded {
                *a == **b
            } else {
                a == lowercase(b)
            }
        }
        (Value::Number(a), Value::Number(b)) => {
            // Integers compare exactly, so large ids do not collide through f64 rounding.
            if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
                x == y
            } else if let (Some(x), Some(y)) = (a.as_u64(), b.as_u64()) {
                x == y
            } else {
                a.as_f64() == b.as_f64()
            }
        }
        _ => a == b,
    }
}

/// `range`'s number: a JSON number, or a string holding a finite number (surrounding whitespace
/// allowed, as CSV cells often carry it).
pub(super) fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok().filter(|x| x.is_finite()),
        _ => None,
    }
}

pub(super) fn within(x: f64, min: Option<f64>, max: Option<f64>) -> bool {
    min.is_none_or(|m| x >= m) && max.is_none_or(|m| x <= m)
}
