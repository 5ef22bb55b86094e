//! One log-analysis dataset record and the scenario files it points to.
//!
//! A dataset of 10^6 agent runs usually covers a handful of scenarios, so a record may name its
//! ground truth by a path relative to the dataset; [`ScenarioCache`] reads each such file once
//! and hands out shared [`ScenarioRef`]s (digested once per file). Validation reports the first problem only, with the stable
//! messages of the support-judge loader, so `evalfleet validate` reads the same across suites.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::scenario::Scenario;
use super::scenario_ref::ScenarioRef;
use evalfleet_model::field::{required_string, Blank};

/// A validated record: `{id, scenario, output, config?, model?}`. On the wire the scenario is
/// its digest (see [`ScenarioRef`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogExample {
    pub id: String,
    pub scenario: ScenarioRef,
    pub output: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// People's scores of the judge dimensions, when the suite names a column of them.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub human: crate::evaluate::HumanLabels,
}

/// Loads scenario files referenced by relative path (relative to the dataset's directory) once
/// each; many examples share a scenario. A file that fails to load fails the same way for every
/// record that names it (the error is cached too).
#[derive(Debug, Default)]
pub struct ScenarioCache {
    base_dir: Option<PathBuf>,
    loaded: HashMap<PathBuf, Result<ScenarioRef, String>>,
}

impl ScenarioCache {
    /// `base_dir`: the dataset's directory; `None` resolves paths against the working directory.
    pub fn new(base_dir: Option<PathBuf>) -> Self {
        ScenarioCache {
            base_dir,
            loaded: HashMap::new(),
        }
    }

    /// The scenario at `rel` (as written in the record), read and parsed on first use.
    pub fn load(&mut self, rel: &str) -> Result<ScenarioRef, String> {
        let path = match &self.base_dir {
            Some(dir) => dir.join(rel),
            None => PathBuf::from(rel),
        };
        self.loaded
            .entry(path)
            .or_insert_with_key(|path| {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("Cannot read scenario '{rel}': {e}"))?;
                serde_json::from_str::<Scenario>(&text)
                    .map(|s| ScenarioRef::new(Arc::new(s)))
                    .map_err(|e| {
                        if e.is_data() {
                            format!("Scenario '{rel}' is not a valid scenario: {e}")
                        } else {
                            format!("Scenario '{rel}' is not valid JSON: {e}")
                        }
                    })
            })
            .clone()
    }

    /// Number of distinct scenario files read so far (failed ones included).
    pub fn len(&self) -> usize {
        self.loaded.len()
    }

    pub fn is_empty(&self) -> bool {
        self.loaded.is_empty()
    }
}

/// Validate one record: `{id, scenario: object | "relative/path.json", output: string,
/// config?: string, model?: string}`. `Err` carries the first problem; `output` may be empty.
pub fn parse_example(value: &Value, cache: &mut ScenarioCache) -> Result<LogExample, String> {
    parse_with(value, |obj| scenario_of(obj, cache))
}

/// Validate a record a target completed, whose scenario the producer resolved before the call
/// ([`resolve_scenario`]): the worker that completes it has no dataset directory to read a
/// scenario file from, so the record's own `scenario` field is not read again.
pub fn parse_completed(value: &Value, scenario: &ScenarioRef) -> Result<LogExample, String> {
    parse_with(value, |_| Ok(scenario.clone()))
}

/// A record's `scenario` (an inline object, or a path read through `cache`), with the same
/// reasons as [`parse_example`] when it is missing or bad. `Err` also when `value` is not an
/// object.
pub fn resolve_scenario(value: &Value, cache: &mut ScenarioCache) -> Result<ScenarioRef, String> {
    let obj = value.as_object().ok_or("Item is not an object")?;
    scenario_of(obj, cache)
}

/// The record's fields in their order, its scenario from `scenario`.
fn parse_with(
    value: &Value,
    scenario: impl FnOnce(&Map<String, Value>) -> Result<ScenarioRef, String>,
) -> Result<LogExample, String> {
    let obj = value.as_object().ok_or("Item is not an object")?;
    let id = required_string(obj, "id", Blank::Allowed)?.to_owned();
    if id.trim().is_empty() {
        return Err("'id' is empty".into());
    }
    let scenario = scenario(obj)?;
    let output = required_string(obj, "output", Blank::Allowed)?.to_owned();
    let config = optional_string(obj, "config")?;
    let model = optional_string(obj, "model")?;
    Ok(LogExample {
        id,
        scenario,
        output,
        config,
        model,
        human: Default::default(),
    })
}

fn scenario_of(obj: &Map<String, Value>, cache: &mut ScenarioCache) -> Result<ScenarioRef, String> {
    match obj.get("scenario") {
        None => Err("Missing 'scenario' field".into()),
        Some(v @ Value::Object(_)) => Scenario::deserialize(v)
            .map(|scenario| ScenarioRef::new(Arc::new(scenario)))
            .map_err(|e| format!("'scenario' is not valid: {e}")),
        Some(Value::String(path)) if path.trim().is_empty() => Err("'scenario' is empty".into()),
        Some(Value::String(path)) => cache.load(path),
        Some(_) => Err("'scenario' must be an object or a path".into()),
    }
}

/// Absent → `None`; present (a JSON `null` included, as in support-judge) → must be a string.
fn optional_string(obj: &Map<String, Value>, field: &str) -> Result<Option<String>, String> {
    match obj.get(field) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("'{field}' must be a string")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tmp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "evalfleet-loganalysis-{name}-{}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn check(v: Value) -> Result<LogExample, String> {
        parse_example(&v, &mut ScenarioCache::new(None))
    }

    #[test]
    fn inline_scenario_record_is_valid() {
        let ex = check(
            json!({"id": "a", "scenario": {"key_events": []}, "output": "",
                              "config": "baseline", "model": "gpt-4o-mini", "extra": 1}),
        )
        .unwrap();
        assert_eq!(ex.id, "a");
        assert_eq!(ex.output, "");
        assert_eq!(ex.config.as_deref(), Some("baseline"));
        assert_eq!(ex.model.as_deref(), Some("gpt-4o-mini"));
    }

    #[test]
    fn first_problem_is_reported_with_stable_messages() {
        let cases = [
            (json!([1]), "Item is not an object"),
            (json!({"scenario": {}, "output": ""}), "Missing 'id' field"),
            (
                json!({"id": 3, "scenario": {}, "output": ""}),
                "'id' must be a string",
            ),
            (json!({"id": null}), "'id' must be a string"),
            (json!({"id": "  ", "scenario": {}}), "'id' is empty"),
            (json!({"id": "a", "output": ""}), "Missing 'scenario' field"),
            (
                json!({"id": "a", "scenario": 4}),
                "'scenario' must be an object or a path",
            ),
            (json!({"id": "a", "scenario": " "}), "'scenario' is empty"),
            (json!({"id": "a", "scenario": {}}), "Missing 'output' field"),
            (
                json!({"id": "a", "scenario": {}, "output": 1}),
                "'output' must be a string",
            ),
            (
                json!({"id": "a", "scenario": {}, "output": "", "config": null}),
                "'config' must be a string",
            ),
            (
                json!({"id": "a", "scenario": {}, "output": "", "model": 7}),
                "'model' must be a string",
            ),
        ];
        for (record, want) in cases {
            assert_eq!(check(record.clone()).unwrap_err(), want, "{record}");
        }
        let bad = check(json!({"id": "a", "scenario": {"key_events": 1}, "output": ""}));
        assert!(bad.unwrap_err().starts_with("'scenario' is not valid: "));
    }

    #[test]
    fn a_completed_record_takes_the_scenario_resolved_before_its_call() {
        let resolved = ScenarioRef::new(Arc::new(
            serde_json::from_value(json!({"metrics": {"m": 2}})).unwrap(),
        ));
        // Off the wire: the digest alone, as a fleet worker receives it.
        let wire: ScenarioRef =
            serde_json::from_str(&serde_json::to_string(&resolved).unwrap()).unwrap();
        // The path names no file here: it is not read again.
        let completed = json!({"id": "a", "scenario": "gt/elsewhere.json", "output": "found it",
                               "model": "m"});
        let ex = parse_completed(&completed, &wire).unwrap();
        assert_eq!(ex.scenario.digest(), resolved.digest());
        assert!(ex.scenario.get().is_none(), "attached later, by digest");
        assert_eq!(
            (ex.output.as_str(), ex.model.as_deref()),
            ("found it", Some("m"))
        );
        // The rest of the record is checked as a recorded one.
        let no_output = json!({"id": "a", "scenario": "gt/elsewhere.json"});
        assert_eq!(
            parse_completed(&no_output, &wire).unwrap_err(),
            "Missing 'output' field"
        );
    }

    #[test]
    fn scenario_paths_are_relative_to_the_base_and_loaded_once() {
        let dir = tmp_dir("cache");
        std::fs::create_dir_all(dir.join("gt")).unwrap();
        std::fs::write(dir.join("gt/s.json"), r#"{"metrics": {"m": 1}}"#).unwrap();
        std::fs::write(dir.join("gt/broken.json"), "{not json").unwrap();
        std::fs::write(dir.join("gt/shape.json"), r#"{"timeline": 3}"#).unwrap();
        let mut cache = ScenarioCache::new(Some(dir.clone()));
        let rec = |i: u32| json!({"id": format!("e{i}"), "scenario": "gt/s.json", "output": "x"});
        let a = parse_example(&rec(1), &mut cache).unwrap();
        let b = parse_example(&rec(2), &mut cache).unwrap();
        let (sa, sb) = (a.scenario.get().unwrap(), b.scenario.get().unwrap());
        assert!(Arc::ptr_eq(sa, sb));
        assert_eq!(cache.len(), 1);
        assert_eq!(sa.metrics.len(), 1);

        let err = |path: &str, cache: &mut ScenarioCache| {
            parse_example(&json!({"id": "x", "scenario": path, "output": ""}), cache).unwrap_err()
        };
        let missing = err("gt/none.json", &mut cache);
        assert!(
            missing.starts_with("Cannot read scenario 'gt/none.json': "),
            "{missing}"
        );
        let broken = err("gt/broken.json", &mut cache);
        assert!(
            broken.starts_with("Scenario 'gt/broken.json' is not valid JSON: "),
            "{broken}"
        );
        let shape = err("gt/shape.json", &mut cache);
        assert!(shape.starts_with("Scenario 'gt/shape.json' is not a valid scenario: "));
        // Errors are cached: fixing the file does not change a running validation.
        std::fs::write(dir.join("gt/broken.json"), "{}").unwrap();
        assert_eq!(err("gt/broken.json", &mut cache), broken);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
