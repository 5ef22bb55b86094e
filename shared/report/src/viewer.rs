//! The item browser of `report.html`: the run's items as JSON inside the page, read by an inline
//! script (`assets/viewer.js`) that renders a sortable, filterable, paged table and opens one
//! item's inputs, verdicts, metrics and fail tags on a click. Everything stays in the file: no
//! network, no library.
//!
//! A page holds at most [`EMBEDDED_ITEMS`] items (the first ones, in dataset order) and says so
//! when it holds fewer than the run has: a browser stays fast with 20,000 rows, and the writer
//! streams them, so a 10^6-item run costs the page no more memory than a small one. Every item
//! stays in `report.json`.

use serde_json::{json, Map, Value};

use evalfleet_model::record::ResultRecord;
use evalfleet_suites::suite::Suite;

use super::{ReportError, ReportInput, Sink};

/// Items embedded in one page at most.
pub const EMBEDDED_ITEMS: u64 = 20_000;

const SCRIPT: &str = include_str!("assets/viewer.js");

/// The items section: its controls, the data, and the script that renders them.
pub(super) fn write(w: &mut Sink<'_>, input: &ReportInput<'_>) -> Result<(), ReportError> {
    let total = input.agg.totals.examples;
    w.put("<h2>Items</h2>\n")?;
    if total > EMBEDDED_ITEMS {
        w.put(&format!(
            "<p class=\"note\" id=\"capped\">This page holds the first {EMBEDDED_ITEMS} of {total} items; every item is in <code>report.json</code>.</p>\n"
        ))?;
    }
    w.put("<div id=\"controls\"></div><p class=\"meta\"><span id=\"count\"></span> · <button id=\"prev\">‹ previous</button> <span id=\"page\"></span> <button id=\"next\">next ›</button></p>\n<div class=\"scroll\"><table id=\"items-table\"></table></div>\n<aside id=\"detail\" hidden></aside>\n")?;
    w.put("<script type=\"application/json\" id=\"meanings\">")?;
    w.put(&safe_json(&meanings(input.suite)))?;
    w.put("</script>\n<script type=\"application/json\" id=\"items\">[")?;
    let mut n = 0u64;
    input.items.for_each_item(None, &mut |rec| {
        if n >= EMBEDDED_ITEMS {
            return Ok(());
        }
        if n > 0 {
            w.put(",")?;
        }
        n += 1;
        w.put(&safe_json(&item(rec)))
    })?;
    w.put("]</script>\n<script>")?;
    w.put(SCRIPT)?;
    w.put("</script>\n")
}

/// What the viewer shows of one record.
fn item(rec: &ResultRecord) -> Value {
    json!({
        "index": rec.index,
        "line": rec.line,
        "id": rec.id,
        "outcome": rec.outcome,
        "group": rec.group,
        "scores": rec.scores,
        "metrics": rec.metrics,
        "overall_score": rec.overall_score,
        "passed": rec.passed,
        "fail_tags": rec.fail_tags,
        "reason": rec.reason,
        "inputs": rec.details.get("inputs"),
    })
}

/// Each fail tag's meaning, as the suite states it.
fn meanings(suite: &Suite) -> Value {
    let map: Map<String, Value> = suite
        .gates
        .iter()
        .map(|g| (g.tag.clone(), Value::String(g.meaning.clone())))
        .collect();
    Value::Object(map)
}

/// JSON that can sit inside a `<script>` element: `<` only occurs inside JSON strings, where
/// `\u003c` means the same, so no text of an item can close the element or open a comment.
fn safe_json(v: &Value) -> String {
    v.to_string().replace('<', "\\u003c")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_text_can_close_the_script_element() {
        let v = json!({"answer": "</script><script>alert(1)</script><!--"});
        let safe = safe_json(&v);
        assert!(!safe.contains('<'), "{safe}");
        assert_eq!(serde_json::from_str::<Value>(&safe).unwrap(), v);
    }
}
