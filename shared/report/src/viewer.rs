//! The item browser of `report.html`: the run's items as JSON inside the page, read by an inline
//! script (`assets/viewer.js`) that renders a sortable, filterable, paged table and opens one
//! item's inputs, verdicts, metrics and fail tags on a click. Everything stays in the file: no
//! network, no library.
//!
//! A page opens at any run size: it holds every item of a run of up to [`EMBEDDED_ITEMS`];
//! above that, the worst items of each failure tag (those the report names) and an even sample
//! of the rest (spread over the dataset's order), at most [`EMBEDDED_ITEMS`] in all; and never
//! more than [`EMBEDDED_BYTES`] of items whatever their size. It says so when it holds fewer
//! items than the run has. The writer streams them, so a 10^7-item run costs the page no more
//! memory than a small one; every item is in `items.parquet` (and `evalfleet export`).

use std::collections::HashSet;

use serde_json::{json, Map, Value};

use evalfleet_model::record::ResultRecord;
use evalfleet_suites::suite::Suite;

use super::{ReportError, ReportInput, Sink};

/// Items embedded in one page at most.
pub const EMBEDDED_ITEMS: u64 = 20_000;

/// Bytes of items embedded in one page at most: the page stays well under 20 MB even when each
/// item carries a long trace.
pub const EMBEDDED_BYTES: usize = 12 << 20;

const SCRIPT: &str = include_str!("assets/viewer.js");

/// Which items a page holds.
struct Selection {
    /// The worst items of each failure tag, by index.
    worst: HashSet<u64>,
    /// An even sample of `room` of the run's `total` items besides (every item when they are
    /// equal).
    room: u64,
    total: u64,
}

impl Selection {
    fn of(input: &ReportInput<'_>) -> Self {
        let total = input.agg.totals.examples;
        if total <= EMBEDDED_ITEMS {
            return Selection {
                worst: HashSet::new(),
                room: total,
                total,
            };
        }
        let worst: HashSet<u64> = (input.agg.worst.values().flatten())
            .map(|w| w.index)
            .collect();
        Selection {
            room: EMBEDDED_ITEMS.saturating_sub(worst.len() as u64),
            worst,
            total,
        }
    }

    /// Whether the page holds item `index`: one of the worst, or where the sample's count
    /// steps up (exactly `room` of `total` indexes, evenly spread).
    fn holds(&self, index: u64) -> bool {
        let step = |i: u64| u128::from(i) * u128::from(self.room) / u128::from(self.total.max(1));
        step(index + 1) > step(index) || self.worst.contains(&index)
    }

    fn sampled(&self) -> bool {
        self.room < self.total
    }
}

/// The items section: its controls, the data, and the script that renders them.
pub(super) fn write(w: &mut Sink<'_>, input: &ReportInput<'_>) -> Result<(), ReportError> {
    let total = input.agg.totals.examples;
    let selection = Selection::of(input);
    w.put("<h2>Items</h2>\n")?;
    w.put("<div id=\"controls\"></div><p class=\"meta\"><span id=\"count\"></span> · <button id=\"prev\">‹ previous</button> <span id=\"page\"></span> <button id=\"next\">next ›</button></p>\n<div class=\"scroll\"><table id=\"items-table\"></table></div>\n<aside id=\"detail\" hidden></aside>\n")?;
    w.put("<script type=\"application/json\" id=\"meanings\">")?;
    w.put(&safe_json(&meanings(input.suite)))?;
    w.put("</script>\n<script type=\"application/json\" id=\"items\">[")?;
    let (mut n, mut bytes) = (0u64, 0usize);
    let mut embed = |rec: &ResultRecord| {
        let worst = selection.worst.contains(&rec.index);
        if !selection.holds(rec.index) || (n >= EMBEDDED_ITEMS && !worst) {
            return Ok(());
        }
        let json = safe_json(&item(rec));
        // The worst items are always held: the report names them.
        if bytes + json.len() > EMBEDDED_BYTES && !worst {
            return Ok(());
        }
        if n > 0 {
            w.put(",")?;
        }
        n += 1;
        bytes += json.len();
        w.put(&json)
    };
    if selection.sampled() {
        // Only the page's items are read: a sample of a 10^7-item run costs its own records.
        input
            .items
            .for_each_where(&|index| selection.holds(index), &mut embed)?;
    } else {
        input.items.for_each_item(None, &mut embed)?;
    }
    w.put("]</script>\n")?;
    if n < total {
        let what = if selection.sampled() {
            "the worst items of each failure tag and an even sample of the rest"
        } else {
            "the first ones that fit"
        };
        w.put(&format!(
            "<p class=\"note\" id=\"capped\">This page holds {n} of the run's {total} items: {what}. Every item is in <code>items.parquet</code> (<code>evalfleet export</code>) and <code>report.json</code>.</p>\n"
        ))?;
    }
    w.put("<script>")?;
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
