//! `outputs.jsonl`: a target run's completed records, one per line in the dataset's own shape,
//! so that they can be evaluated again later without calling the target
//! (`evalfleet run reports/<run>/outputs.jsonl --suite other-suite`).
//!
//! A record is the dataset's record with the target's outputs written in (the same
//! [`fill`] the worker completed it with), in dataset order; an example the target gave no
//! outputs for (its call failed) has no line.

use evalfleet_model::record::ResultRecord;
use evalfleet_suites::target::fill;

use crate::{ItemSource, ReportError, Sink};

/// The file's name in the report directory.
pub const FILE_NAME: &str = "outputs.jsonl";

pub(crate) fn write(w: &mut Sink<'_>, items: &dyn ItemSource) -> Result<(), ReportError> {
    items.for_each_item(None, &mut |rec| match completed(rec)? {
        Some(record) => {
            w.json(&record)?;
            w.put("\n")
        }
        None => Ok(()),
    })
}

/// `rec`'s completed record, if the target gave it outputs.
fn completed(
    rec: &ResultRecord,
) -> Result<Option<serde_json::Map<String, serde_json::Value>>, ReportError> {
    let (Some(record), Some(outputs)) = (&rec.dataset_record, &rec.outputs) else {
        return Ok(None);
    };
    let failed = |e: String| ReportError::Source(format!("item {} ({}): {e}", rec.index, rec.id));
    let record = record.parse().map_err(|e| failed(e.to_string()))?;
    fill(record, outputs).map(Some).map_err(failed)
}

#[cfg(test)]
mod tests {
    use evalfleet_model::record::RawJson;
    use serde_json::json;

    use super::*;

    #[test]
    fn a_completed_record_is_the_dataset_record_with_the_outputs_written_in() {
        let mut rec = ResultRecord::failed("r", "s", 0, Some(1), "q1".into(), String::new());
        assert_eq!(completed(&rec).unwrap(), None, "no target, no line");
        rec.dataset_record =
            Some(RawJson::of(&json!({"id": "q1", "question": "?", "trace": "old"})).unwrap());
        rec.outputs = json!({"trace": {"steps": []}, "trace.answer": "yes"})
            .as_object()
            .cloned();
        assert_eq!(
            serde_json::Value::Object(completed(&rec).unwrap().unwrap()),
            json!({"id": "q1", "question": "?", "trace": {"steps": [], "answer": "yes"}})
        );
    }
}
