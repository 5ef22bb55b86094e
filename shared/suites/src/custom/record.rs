//! A dataset record of a custom suite, validated against the declared fields.
//!
//! Validation follows the built-in suites' rules (docs/DESIGN.md §2.1, §9): the id first, then each
//! declared field in declaration order, first problem only, with the same reasons
//! (`Missing 'f' field`, `'f' must be a string`, `'f' is empty`), then the routing field's
//! provider. A field read from a path other than its name says the path too, so a user can find
//! it in the record.

use serde_json::{Map, Value};

use super::spec::{FieldType, RecordSpec};
use evalfleet_model::record::Group;
use evalfleet_model::routing::ProviderRules;
use evalfleet_model::suite::Grouping;

/// A validated record of a custom suite.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CustomExample {
    pub id: String,
    /// The declared fields' values, in declaration order; None = absent (an optional field that
    /// is missing or null).
    pub values: Vec<Option<Value>>,
    /// The provider of the model that answered, when the suite routes by a field.
    pub provider: Option<String>,
    /// The suite's group keys this record carries.
    pub group: Group,
    /// Every top-level record field the suite does not declare, kept as metadata.
    pub metadata: Map<String, Value>,
    /// People's scores of the judge dimensions, when the suite names a column of them.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub human: crate::evaluate::HumanLabels,
    /// The baseline run's answers of this item, by judged field name, when a pairwise
    /// dimension compares with a baseline run (`against` names the judged field). Attached by
    /// the producer, which found them by id; absent when the baseline has no such item.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub baseline: super::BaselineAnswers,
}

/// The record plan, derived once from the spec: paths split, the routing field's index, and
/// which top-level keys the declared fields use (the rest is metadata).
#[derive(Debug, Clone)]
pub(crate) struct RecordPlan {
    id_path: Vec<String>,
    id_name: String,
    fields: Vec<FieldPlan>,
    provider_field: Option<usize>,
    declared_roots: Vec<String>,
}

#[derive(Debug, Clone)]
struct FieldPlan {
    name: String,
    /// The path as written, for messages and CSV column names.
    path: String,
    segments: Vec<String>,
    kind: FieldType,
    required: bool,
}

impl RecordPlan {
    pub(crate) fn new(spec: &RecordSpec) -> Result<RecordPlan, String> {
        let split = |p: &str, what: &str| -> Result<Vec<String>, String> {
            let segments: Vec<String> = p.split('.').map(str::to_owned).collect();
            if segments.iter().any(|s| s.trim().is_empty()) {
                return Err(format!("{what}: path '{p}' has an empty segment"));
            }
            Ok(segments)
        };
        let id_path = split(&spec.id, "record.id")?;
        let mut fields = Vec::with_capacity(spec.fields.len());
        for (name, f) in &spec.fields {
            if name.trim().is_empty() {
                return Err("record.fields: a field has an empty name".to_owned());
            }
            let path = f.path(name).to_owned();
            fields.push(FieldPlan {
                segments: split(&path, &format!("record.fields.{name}"))?,
                name: name.clone(),
                path,
                kind: f.kind,
                required: f.required,
            });
        }
        let provider_field = match &spec.provider_field {
            None => None,
            Some(p) => {
                let i = fields.iter().position(|f| &f.name == p).ok_or_else(|| {
                    format!("record.provider_field: '{p}' is not a field in record.fields")
                })?;
                if fields[i].kind != FieldType::String {
                    return Err(format!(
                        "record.provider_field: '{p}' must be a field of type string"
                    ));
                }
                Some(i)
            }
        };
        let mut declared_roots: Vec<String> = fields
            .iter()
            .map(|f| f.path.clone())
            .chain(fields.iter().map(|f| f.segments[0].clone()))
            .chain([spec.id.clone(), id_path[0].clone()])
            .collect();
        declared_roots.sort();
        declared_roots.dedup();
        Ok(RecordPlan {
            id_name: id_path.last().cloned().unwrap_or_default(),
            id_path,
            fields,
            provider_field,
            declared_roots,
        })
    }

    /// A record's id, with the same reasons as validation.
    pub(crate) fn id_of(&self, value: &Value) -> Result<String, String> {
        let Value::Object(obj) = value else {
            return Err("Item is not an object".to_owned());
        };
        self.id(obj)
    }

    /// Declared field `i` of a record, typed as validation types it (None: absent).
    pub(crate) fn field_of(&self, value: &Value, i: usize) -> Result<Option<Value>, String> {
        let Value::Object(obj) = value else {
            return Err("Item is not an object".to_owned());
        };
        self.fields[i].read(obj)
    }

    /// The index of a declared field.
    pub(crate) fn index_of(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == name)
    }

    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.fields.iter().map(|f| f.name.as_str())
    }

    /// (column, type) of every declared field, for reading CSV cells: the column is the path
    /// as written (`gold.answer` is a column of that name).
    pub(crate) fn columns(&self) -> impl Iterator<Item = (&str, FieldType)> {
        self.fields.iter().map(|f| (f.path.as_str(), f.kind))
    }

    /// Validates one record.
    pub(crate) fn parse(
        &self,
        value: &Value,
        rules: &ProviderRules,
        group_by: &[Grouping],
    ) -> Result<CustomExample, String> {
        let Value::Object(obj) = value else {
            return Err("Item is not an object".to_owned());
        };
        let id = self.id(obj)?;
        let mut values = Vec::with_capacity(self.fields.len());
        for f in &self.fields {
            values.push(f.read(obj)?);
        }
        let provider = match self.provider_field {
            None => None,
            Some(i) => {
                let model = values[i].as_ref().and_then(Value::as_str).ok_or_else(|| {
                    format!(
                        "Missing '{}' field{}",
                        self.fields[i].name,
                        self.fields[i].at()
                    )
                })?;
                let provider = rules
                    .provider_of(model)
                    .ok_or_else(|| format!("Unknown model provider for: {model}"))?;
                Some(provider.to_owned())
            }
        };
        let mut group = Group::default();
        for key in group_by.iter().flat_map(|g| &g.keys) {
            if group.get(key).is_some() {
                continue;
            }
            let found = match self.index_of(key) {
                Some(i) => values[i].as_ref(),
                None => lookup(
                    obj,
                    key,
                    &key.split('.').map(str::to_owned).collect::<Vec<_>>(),
                ),
            };
            if let Some(v) = found.filter(|v| !v.is_null()) {
                group.set(key, text_of(v).into_owned());
            }
        }
        let metadata = obj
            .iter()
            .filter(|(k, _)| self.declared_roots.binary_search(k).is_err())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Ok(CustomExample {
            id,
            values,
            provider,
            group,
            metadata,
            human: Default::default(),
            baseline: Default::default(),
        })
    }

    fn id(&self, obj: &Map<String, Value>) -> Result<String, String> {
        let path = self.id_path.join(".");
        let name = &self.id_name;
        let at = if path == *name {
            String::new()
        } else {
            format!(" (path '{path}')")
        };
        match lookup(obj, &path, &self.id_path) {
            None => Err(format!("Missing '{name}' field{at}")),
            Some(Value::String(s)) if s.trim().is_empty() => Err(format!("'{name}' is empty{at}")),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Ok(n.to_string()),
            Some(_) => Err(format!("'{name}' must be a string or an integer{at}")),
        }
    }
}

impl FieldPlan {
    /// `(path 'gold.answer')` when the path is not the name.
    fn at(&self) -> String {
        if self.path == self.name {
            String::new()
        } else {
            format!(" (path '{}')", self.path)
        }
    }

    fn read(&self, obj: &Map<String, Value>) -> Result<Option<Value>, String> {
        let value = lookup(obj, &self.path, &self.segments);
        let Some(value) = value else {
            return if self.required {
                Err(format!("Missing '{}' field{}", self.name, self.at()))
            } else {
                Ok(None)
            };
        };
        // A JSON null is present for a required field (as in support-judge) and absent for an
        // optional one; `json` fields take any value.
        if value.is_null() && !self.required && self.kind != FieldType::Json {
            return Ok(None);
        }
        let fits = match self.kind {
            FieldType::String => value.is_string(),
            FieldType::Number => value.is_number(),
            FieldType::Bool => value.is_boolean(),
            FieldType::List => value.is_array(),
            FieldType::Object => value.is_object(),
            FieldType::Json => true,
        };
        if !fits {
            return Err(format!(
                "'{}' must be {}{}",
                self.name,
                self.kind.noun(),
                self.at()
            ));
        }
        if self.required && value.as_str().is_some_and(|s| s.trim().is_empty()) {
            return Err(format!("'{}' is empty{}", self.name, self.at()));
        }
        Ok(Some(value.clone()))
    }
}

/// The value at `path`: the literal key first (a CSV column may be named `gold.answer`), then
/// the dotted path through nested objects.
fn lookup<'a>(obj: &'a Map<String, Value>, path: &str, segments: &[String]) -> Option<&'a Value> {
    if let Some(v) = obj.get(path) {
        return Some(v);
    }
    if segments.len() < 2 {
        return None;
    }
    let mut cur = obj.get(&segments[0])?;
    for s in &segments[1..] {
        cur = cur.as_object()?.get(s)?;
    }
    Some(cur)
}

/// A value as text: a string is itself, anything else its compact JSON.
pub fn text_of(v: &Value) -> std::borrow::Cow<'_, str> {
    match v {
        Value::String(s) => std::borrow::Cow::Borrowed(s),
        other => std::borrow::Cow::Owned(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn plan(yaml: &str) -> RecordPlan {
        RecordPlan::new(&serde_norway::from_str(yaml).unwrap()).unwrap()
    }

    fn qa() -> RecordPlan {
        plan(
            "fields:\n  question: {type: string, required: true}\n  answer: {type: string, required: true}\n  \
             reference: {type: string, path: gold.answer}\n  model: {type: string}\n  latency_ms: {type: number}\n\
             provider_field: model\n",
        )
    }

    fn parse(p: &RecordPlan, v: Value) -> Result<CustomExample, String> {
        let by_model = Grouping {
            name: "by_model".into(),
            keys: vec!["model".into(), "team".into()],
        };
        p.parse(&v, &ProviderRules::default(), &[by_model])
    }

    #[test]
    fn a_valid_record_keeps_values_metadata_group_and_provider() {
        let e = parse(
            &qa(),
            json!({"id": 7, "question": "q", "answer": "a", "gold": {"answer": "g"},
                   "model": "claude-3", "team": "x", "extra": [1]}),
        )
        .unwrap();
        assert_eq!(e.id, "7");
        assert_eq!(e.values[2], Some(json!("g")));
        assert_eq!(e.values[4], None);
        assert_eq!(e.provider.as_deref(), Some("anthropic"));
        assert_eq!(e.group.get("model"), Some("claude-3"));
        assert_eq!(e.group.get("team"), Some("x"));
        assert_eq!(e.metadata.keys().collect::<Vec<_>>(), ["team", "extra"]);
    }

    #[test]
    fn reasons_follow_the_built_in_rules_in_field_order() {
        let p = qa();
        let base = json!({"id": "a", "question": "q", "answer": "a", "model": "gpt-4o"});
        let with = |k: &str, v: Value| {
            let mut r = base.clone();
            r[k] = v;
            parse(&p, r).unwrap_err()
        };
        assert_eq!(parse(&p, json!([1])).unwrap_err(), "Item is not an object");
        assert_eq!(with("id", json!("  ")), "'id' is empty");
        assert_eq!(
            with("id", json!(1.5)),
            "'id' must be a string or an integer"
        );
        assert_eq!(with("question", json!(null)), "'question' must be a string");
        assert_eq!(with("question", json!(" \u{a0}")), "'question' is empty");
        assert_eq!(
            with("latency_ms", json!("fast")),
            "'latency_ms' must be a number"
        );
        assert_eq!(
            with("gold", json!({"answer": 3})),
            "'reference' must be a string (path 'gold.answer')"
        );
        assert_eq!(
            with("model", json!("llama-3")),
            "Unknown model provider for: llama-3"
        );
        let mut no_q = base.clone();
        no_q.as_object_mut().unwrap().remove("question");
        no_q["answer"] = json!(1);
        assert_eq!(parse(&p, no_q).unwrap_err(), "Missing 'question' field");
        let mut no_model = base.clone();
        no_model.as_object_mut().unwrap().remove("model");
        assert_eq!(parse(&p, no_model).unwrap_err(), "Missing 'model' field");
        // An optional null is absent; an optional empty string is kept.
        let ok = parse(
            &p,
            json!({"id": "a", "question": "q", "answer": "a", "model": "gpt-4o",
                                   "latency_ms": null, "gold": {"answer": ""}}),
        )
        .unwrap();
        assert_eq!(ok.values[4], None);
        assert_eq!(ok.values[2], Some(json!("")));
    }

    #[test]
    fn a_literal_dotted_column_wins_over_the_nested_path() {
        let e = parse(
            &qa(),
            json!({"id": "a", "question": "q", "answer": "a", "model": "gpt-4o", "gold.answer": "csv"}),
        )
        .unwrap();
        assert_eq!(e.values[2], Some(json!("csv")));
    }

    #[test]
    fn a_nested_id_path_is_named_in_its_reason() {
        let p = plan("id: meta.key\nfields: {}\n");
        assert_eq!(
            p.parse(&json!({"meta": {}}), &ProviderRules::default(), &[])
                .unwrap_err(),
            "Missing 'key' field (path 'meta.key')"
        );
        assert_eq!(
            p.parse(
                &json!({"meta": {"key": "k"}}),
                &ProviderRules::default(),
                &[]
            )
            .unwrap()
            .id,
            "k"
        );
    }

    #[test]
    fn plan_errors_name_the_key() {
        let err = |y: &str| RecordPlan::new(&serde_norway::from_str(y).unwrap()).unwrap_err();
        assert_eq!(
            err("fields: {a: {type: string}}\nprovider_field: model\n"),
            "record.provider_field: 'model' is not a field in record.fields"
        );
        assert_eq!(
            err("fields: {n: {type: number}}\nprovider_field: n\n"),
            "record.provider_field: 'n' must be a field of type string"
        );
        assert_eq!(
            err("fields: {a: {type: string, path: 'x..y'}}\n"),
            "record.fields.a: path 'x..y' has an empty segment"
        );
    }
}
