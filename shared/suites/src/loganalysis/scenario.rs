//! Ground truth of one log-analysis scenario, in the seed project's `explainagents` format.
//!
//! Only the sections the metrics read are typed (`key_events`, `timeline`, `metrics`,
//! `anomalies`, `compliance_evaluation`); everything else in a scenario file (evidence, root
//! cause, findings, tags…) is ignored, and a section that is missing or `null` is empty, so a
//! scenario written for a newer seed still loads. Entries inside a section are typed strictly:
//! a ground-truth file that does not say what the metrics need is rejected at load time instead
//! of silently scoring every agent 0.

use serde::ser::SerializeMap;
use serde::{de, Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// One scenario's ground truth (docs/DESIGN.md §2.3). It serialises to the typed sections only, in a
/// form that reads back to the same value: the fleet stores that form once per run, keyed by
/// its digest (see [`super::ScenarioRef`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Scenario {
    #[serde(default, deserialize_with = "null_as_default")]
    pub key_events: Vec<GtEvent>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub timeline: Vec<GtTimelineEntry>,
    /// Named metrics in file order (`serde_json` keeps object order in this workspace).
    #[serde(
        default,
        deserialize_with = "metric_map",
        serialize_with = "ordered_map"
    )]
    pub metrics: Vec<(String, MetricValue)>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub anomalies: Vec<GtAnomaly>,
    /// Compliance intents in file order: `{intent_name: {status, ...}}`.
    #[serde(
        default,
        deserialize_with = "intent_map",
        serialize_with = "ordered_map"
    )]
    pub compliance_evaluation: Vec<(String, GtIntent)>,
}

/// A key event the agent should detect.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GtEvent {
    pub event_type: String,
    #[serde(default)]
    pub timestamp: Option<String>,
    #[serde(default)]
    pub instance_id: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
}

/// One ground-truth timeline entry, in chronological order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GtTimelineEntry {
    #[serde(default)]
    pub time: Option<String>,
    pub event: String,
}

/// An anomaly the agent should report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GtAnomaly {
    #[serde(rename = "type")]
    pub anomaly_type: String,
    #[serde(default)]
    pub description: Option<String>,
}

/// One compliance intent: only its expected `status` is scored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GtIntent {
    pub status: String,
}

/// A metric value on either side: a number, or a text (a numeric text compares as a number).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum MetricValue {
    Number(f64),
    Text(String),
}

impl MetricValue {
    /// `Some` for a number or a numeric string (`"19.84"`, `" -3 "`, `"1e3"`).
    pub fn as_number(&self) -> Option<f64> {
        match self {
            MetricValue::Number(n) => Some(*n),
            MetricValue::Text(s) => parse_numeric_text(s),
        }
    }

    /// Reads a JSON value; `None` unless it is a number or a string.
    pub fn from_json(value: &Value) -> Option<MetricValue> {
        match value {
            Value::Number(n) => n.as_f64().map(MetricValue::Number),
            Value::String(s) => Some(MetricValue::Text(s.clone())),
            _ => None,
        }
    }
}

/// A string that is a plain decimal number (JSON-number-like, optional sign): nothing else, so
/// `"inf"`, `"NaN"`, `"19.84s"` and `""` are texts.
pub(crate) fn parse_numeric_text(s: &str) -> Option<f64> {
    let t = s.trim();
    let body = t.strip_prefix(['-', '+']).unwrap_or(t);
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = digits(int) && digits(frac) && !(int.is_empty() && frac.is_empty());
    let exponent_ok = exponent.is_none_or(|e| {
        let e = e.strip_prefix(['-', '+']).unwrap_or(e);
        !e.is_empty() && digits(e)
    });
    if mantissa_ok && exponent_ok {
        t.parse::<f64>().ok()
    } else {
        None
    }
}

/// `[(name, value)]` → `{name: value}`, in order.
fn ordered_map<S: Serializer, V: Serialize>(
    entries: &[(String, V)],
    s: S,
) -> Result<S::Ok, S::Error> {
    let mut map = s.serialize_map(Some(entries.len()))?;
    for (name, value) in entries {
        map.serialize_entry(name, value)?;
    }
    map.end()
}

fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

fn metric_map<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(String, MetricValue)>, D::Error> {
    let map: Option<serde_json::Map<String, Value>> = Option::deserialize(d)?;
    map.unwrap_or_default()
        .into_iter()
        .map(|(name, value)| match MetricValue::from_json(&value) {
            Some(v) => Ok((name, v)),
            None => Err(de::Error::custom(format!(
                "metric '{name}' must be a number or a string"
            ))),
        })
        .collect()
}

fn intent_map<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(String, GtIntent)>, D::Error> {
    let map: Option<serde_json::Map<String, Value>> = Option::deserialize(d)?;
    map.unwrap_or_default()
        .into_iter()
        .map(|(name, value)| {
            GtIntent::deserialize(&value)
                .map(|intent| (name.clone(), intent))
                .map_err(|e| de::Error::custom(format!("compliance intent '{name}': {e}")))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn missing_and_null_sections_are_empty_and_unknown_fields_ignored() {
        let s: Scenario = serde_json::from_value(json!({
            "scenario_id": "x", "timeline": null, "anomalies": null,
            "key_events": [{"event_type": "vm_started", "evidence": "...", "line_number": 3}]
        }))
        .unwrap();
        assert_eq!(s.key_events.len(), 1);
        assert_eq!(s.key_events[0].instance_id, None);
        assert!(s.timeline.is_empty() && s.metrics.is_empty() && s.anomalies.is_empty());
        assert!(s.compliance_evaluation.is_empty());
    }

    #[test]
    fn metrics_and_intents_keep_file_order() {
        let s: Scenario = serde_json::from_str(
            r#"{"metrics": {"z": 1, "a": "x", "m": 2.5},
                "compliance_evaluation": {"b_intent": {"status": "DEGRADED", "x": 1},
                                          "a_intent": {"status": "COMPLIANT"}}}"#,
        )
        .unwrap();
        let names: Vec<&str> = s.metrics.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["z", "a", "m"]);
        assert_eq!(s.metrics[1].1, MetricValue::Text("x".into()));
        assert_eq!(s.compliance_evaluation[0].0, "b_intent");
        assert_eq!(s.compliance_evaluation[0].1.status, "DEGRADED");
    }

    #[test]
    fn bad_metric_value_and_intent_without_status_are_rejected() {
        let e =
            serde_json::from_str::<Scenario>(r#"{"metrics": {"ok": 1, "bad": true}}"#).unwrap_err();
        assert!(
            e.to_string()
                .contains("metric 'bad' must be a number or a string"),
            "{e}"
        );
        let e = serde_json::from_str::<Scenario>(r#"{"compliance_evaluation": {"i": {}}}"#)
            .unwrap_err();
        assert!(e.to_string().contains("compliance intent 'i'"), "{e}");
        let e = serde_json::from_str::<Scenario>(r#"{"key_events": [{"timestamp": "t"}]}"#)
            .unwrap_err();
        assert!(e.to_string().contains("event_type"), "{e}");
    }

    #[test]
    fn the_serialised_form_reads_back_to_the_same_scenario() {
        let s: Scenario = serde_json::from_value(json!({
            "key_events": [{"event_type": "vm_started", "instance_id": "i-1", "timestamp": "t"}],
            "timeline": [{"time": "00:01", "event": "boot"}, {"event": "ready"}],
            "metrics": {"z": 1, "a": "x", "m": 2.5, "n": -0.0},
            "anomalies": [{"type": "latency", "description": "slow"}],
            "compliance_evaluation": {"b": {"status": "DEGRADED"}, "a": {"status": "COMPLIANT"}},
            "evidence": "ignored"
        }))
        .unwrap();
        let text = serde_json::to_string(&s).unwrap();
        assert!(!text.contains("evidence"), "{text}");
        assert_eq!(serde_json::from_str::<Scenario>(&text).unwrap(), s);
    }

    #[test]
    fn numeric_text_is_strictly_a_number() {
        assert_eq!(parse_numeric_text("19.84"), Some(19.84));
        assert_eq!(parse_numeric_text(" -3 "), Some(-3.0));
        assert_eq!(parse_numeric_text("1e3"), Some(1000.0));
        assert_eq!(parse_numeric_text(".5"), Some(0.5));
        for bad in ["", "inf", "NaN", "19.84s", "1.2.3", "-", ".", "1e", "0x10"] {
            assert_eq!(parse_numeric_text(bad), None, "{bad}");
        }
        assert_eq!(MetricValue::Text("12".into()).as_number(), Some(12.0));
        assert_eq!(MetricValue::Text("abc".into()).as_number(), None);
    }
}
