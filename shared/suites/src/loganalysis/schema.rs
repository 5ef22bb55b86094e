//! The agent-output schema (docs/DESIGN.md §9) and its validation.
//!
//! The winning object is the agent's own claim of what it found, so validation is forgiving at
//! the object level and strict per entry: a section with some bad entries still counts (method
//! `structured`), each bad entry is dropped and explained in `errors` with its path
//! (`events_detected[2]: missing 'event_type'`), and unknown fields are ignored. A key whose
//! value is `null` is absent; a key with a value of the wrong shape is present but empty.

use serde_json::{Map, Value};

use super::parse::is_present;
use super::scenario::MetricValue;

/// How sure the agent says it is of an event (weights of the confidence-weighted recall).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confidence {
    High,
    Medium,
    Low,
}

impl Confidence {
    /// high 1.0, medium 0.7, low 0.4.
    pub fn weight(self) -> f64 {
        match self {
            Confidence::High => 1.0,
            Confidence::Medium => 0.7,
            Confidence::Low => 0.4,
        }
    }
}

/// The agent's overall compliance verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ComplianceStatus {
    Compliant,
    Degraded,
    NonCompliant,
}

impl ComplianceStatus {
    /// `COMPLIANT`, `DEGRADED`, `NON_COMPLIANT`, read case-insensitively with `-` or a space
    /// accepted for `_` (`Non-Compliant`).
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_uppercase().replace(['-', ' '], "_").as_str() {
            "COMPLIANT" => Some(ComplianceStatus::Compliant),
            "DEGRADED" => Some(ComplianceStatus::Degraded),
            "NON_COMPLIANT" => Some(ComplianceStatus::NonCompliant),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct AgentEvent {
    pub event_type: String,
    pub instance_id: Option<String>,
    pub timestamp: Option<String>,
    pub description: Option<String>,
    pub confidence: Option<Confidence>,
    pub line_number: Option<i64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AgentTimelineEntry {
    pub event: String,
    pub time: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AgentAnomaly {
    pub anomaly_type: String,
    pub description: Option<String>,
    pub severity: Option<String>,
}

/// The validated structured analysis. A section is `Some` exactly when its key was present
/// (non-null), even if every entry was invalid.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParsedOutput {
    pub events_detected: Option<Vec<AgentEvent>>,
    pub timeline: Option<Vec<AgentTimelineEntry>>,
    /// Agent metrics in the order the agent wrote them.
    pub metrics: Option<Vec<(String, MetricValue)>>,
    pub anomalies: Option<Vec<AgentAnomaly>>,
    /// `None` when absent or invalid (an invalid status is listed in `errors`).
    pub compliance_status: Option<ComplianceStatus>,
    /// Schema errors, one per dropped entry (or wrongly shaped section).
    pub errors: Vec<String>,
}

/// Validates a carrying object against the schema.
pub(crate) fn validate(obj: &Map<String, Value>) -> ParsedOutput {
    let mut errors = Vec::new();
    let events_detected = list(obj, "events_detected", &mut errors, event);
    let timeline = list(obj, "timeline", &mut errors, timeline_entry);
    let metrics = is_present(obj, "metrics").then(|| metrics(&obj["metrics"], &mut errors));
    let anomalies = list(obj, "anomalies", &mut errors, anomaly);
    let compliance_status = match obj.get("compliance_status") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => ComplianceStatus::parse(s).or_else(|| {
            errors.push(format!(
                "compliance_status: '{s}' is not COMPLIANT, DEGRADED or NON_COMPLIANT"
            ));
            None
        }),
        Some(_) => {
            errors.push("compliance_status: must be a string".into());
            None
        }
    };
    ParsedOutput {
        events_detected,
        timeline,
        metrics,
        anomalies,
        compliance_status,
        errors,
    }
}

/// A present list section: valid entries kept, each invalid one reported as `key[i]: why`.
fn list<T>(
    obj: &Map<String, Value>,
    key: &str,
    errors: &mut Vec<String>,
    entry: fn(&Map<String, Value>) -> Result<T, String>,
) -> Option<Vec<T>> {
    if !is_present(obj, key) {
        return None;
    }
    let Some(items) = obj[key].as_array() else {
        errors.push(format!("{key}: must be an array"));
        return Some(Vec::new());
    };
    let mut kept = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let checked = match item.as_object() {
            Some(fields) => entry(fields),
            None => Err("must be an object".into()),
        };
        match checked {
            Ok(v) => kept.push(v),
            Err(why) => errors.push(format!("{key}[{i}]: {why}")),
        }
    }
    Some(kept)
}

fn event(f: &Map<String, Value>) -> Result<AgentEvent, String> {
    let event_type = req_string(f, "event_type")?;
    let instance_id = opt_string(f, "instance_id")?;
    let timestamp = opt_string(f, "timestamp")?;
    let description = opt_string(f, "description")?;
    let confidence = match opt_string(f, "confidence")? {
        None => None,
        Some(c) => Some(match c.trim().to_lowercase().as_str() {
            "high" => Confidence::High,
            "medium" => Confidence::Medium,
            "low" => Confidence::Low,
            _ => return Err("'confidence' must be high, medium or low".into()),
        }),
    };
    let line_number = match f.get("line_number") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_i64().ok_or("'line_number' must be an integer")?),
    };
    Ok(AgentEvent {
        event_type,
        instance_id,
        timestamp,
        description,
        confidence,
        line_number,
    })
}

fn timeline_entry(f: &Map<String, Value>) -> Result<AgentTimelineEntry, String> {
    Ok(AgentTimelineEntry {
        event: req_string(f, "event")?,
        time: opt_string(f, "time")?,
    })
}

fn anomaly(f: &Map<String, Value>) -> Result<AgentAnomaly, String> {
    Ok(AgentAnomaly {
        anomaly_type: req_string(f, "type")?,
        description: opt_string(f, "description")?,
        severity: opt_string(f, "severity")?,
    })
}

fn metrics(value: &Value, errors: &mut Vec<String>) -> Vec<(String, MetricValue)> {
    let Some(map) = value.as_object() else {
        errors.push("metrics: must be an object".into());
        return Vec::new();
    };
    map.iter()
        .filter_map(|(name, v)| match MetricValue::from_json(v) {
            Some(mv) => Some((name.clone(), mv)),
            None => {
                errors.push(format!("metrics.{name}: must be a number or a string"));
                None
            }
        })
        .collect()
}

/// Required: missing or `null` → "missing"; any other non-string → "must be a string".
fn req_string(f: &Map<String, Value>, key: &str) -> Result<String, String> {
    match f.get(key) {
        None | Some(Value::Null) => Err(format!("missing '{key}'")),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(format!("'{key}' must be a string")),
    }
}

fn opt_string(f: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match f.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("'{key}' must be a string")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(v: Value) -> ParsedOutput {
        validate(v.as_object().unwrap())
    }

    #[test]
    fn valid_object_is_read_completely() {
        let p = run(json!({
            "events_detected": [{"event_type": "vm_started", "instance_id": "b9000564",
                "timestamp": "2017-05-16 00:00:04", "description": "d", "confidence": "High",
                "line_number": 7, "unknown": [1]}],
            "timeline": [{"event": "VM Started", "time": "00:00:04"}],
            "metrics": {"a": 1.5, "b": "19.84"},
            "anomalies": [{"type": "recurring_warning", "severity": "medium"}],
            "compliance_status": "DEGRADED"
        }));
        assert!(p.errors.is_empty(), "{:?}", p.errors);
        let e = &p.events_detected.as_ref().unwrap()[0];
        assert_eq!(e.confidence, Some(Confidence::High));
        assert_eq!(e.line_number, Some(7));
        assert_eq!(p.timeline.unwrap()[0].time.as_deref(), Some("00:00:04"));
        let m = p.metrics.unwrap();
        assert_eq!(m[0], ("a".to_string(), MetricValue::Number(1.5)));
        assert_eq!(m[1].1, MetricValue::Text("19.84".into()));
        assert_eq!(p.anomalies.unwrap()[0].anomaly_type, "recurring_warning");
        assert_eq!(p.compliance_status, Some(ComplianceStatus::Degraded));
    }

    #[test]
    fn invalid_entries_are_dropped_with_their_path() {
        let p = run(json!({
            "events_detected": [{"event_type": "a"}, {"instance_id": "x"}, 5,
                {"event_type": "b", "confidence": "certain"}, {"event_type": 3},
                {"event_type": "c", "line_number": "7"}, {"event_type": null}],
            "timeline": [{"time": "1"}, {"event": "ok", "time": 4}],
            "metrics": {"ok": 1, "bad": [1], "nil": null},
            "anomalies": [{"description": "no type"}, {"type": "t"}],
        }));
        assert_eq!(p.events_detected.unwrap().len(), 1);
        assert_eq!(p.timeline.unwrap().len(), 0);
        assert_eq!(p.metrics.unwrap().len(), 1);
        assert_eq!(p.anomalies.unwrap().len(), 1);
        assert_eq!(
            p.errors,
            [
                "events_detected[1]: missing 'event_type'",
                "events_detected[2]: must be an object",
                "events_detected[3]: 'confidence' must be high, medium or low",
                "events_detected[4]: 'event_type' must be a string",
                "events_detected[5]: 'line_number' must be an integer",
                "events_detected[6]: missing 'event_type'",
                "timeline[0]: missing 'event'",
                "timeline[1]: 'time' must be a string",
                "metrics.bad: must be a number or a string",
                "metrics.nil: must be a number or a string",
                "anomalies[0]: missing 'type'",
            ]
        );
    }

    #[test]
    fn wrongly_shaped_sections_are_present_but_empty_and_null_is_absent() {
        let p = run(
            json!({"events_detected": {}, "timeline": "x", "metrics": [1],
                           "anomalies": null}),
        );
        assert_eq!(p.events_detected, Some(vec![]));
        assert_eq!(p.timeline, Some(vec![]));
        assert_eq!(p.metrics, Some(vec![]));
        assert_eq!(p.anomalies, None);
        assert_eq!(
            p.errors,
            [
                "events_detected: must be an array",
                "timeline: must be an array",
                "metrics: must be an object"
            ]
        );
    }

    #[test]
    fn compliance_status_invalid_counts_as_absent() {
        let p = run(json!({"timeline": [], "compliance_status": "MOSTLY_FINE"}));
        assert_eq!(p.compliance_status, None);
        assert_eq!(
            p.errors,
            ["compliance_status: 'MOSTLY_FINE' is not COMPLIANT, DEGRADED or NON_COMPLIANT"]
        );
        let p = run(json!({"timeline": [], "compliance_status": 1}));
        assert_eq!(p.errors, ["compliance_status: must be a string"]);
        let p = run(json!({"timeline": [], "compliance_status": " non-compliant "}));
        assert_eq!(p.compliance_status, Some(ComplianceStatus::NonCompliant));
        assert!(run(json!({"timeline": []})).compliance_status.is_none());
    }

    #[test]
    fn confidence_weights() {
        assert_eq!(Confidence::High.weight(), 1.0);
        assert_eq!(Confidence::Medium.weight(), 0.7);
        assert_eq!(Confidence::Low.weight(), 0.4);
    }
}
