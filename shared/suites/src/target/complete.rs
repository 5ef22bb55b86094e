//! The record a target's reply completes: its outputs written into the record's fields (a
//! dotted path makes nested objects), the constant `set` fields, and for a chat target the
//! model that answered. The completed record is then the suite's to validate.

use serde_json::{Map, Value};

use evalfleet_config::Target;

use super::TargetPlan;

/// What a target answered (as the reply cache keeps it, too).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Reply {
    /// A chat reply's text and the model that answered.
    Chat { text: String, model: String },
    /// An http reply's JSON body.
    Http(Value),
}

/// A completed record and the fields the target filled, with their values.
#[derive(Debug, Clone, PartialEq)]
pub struct Completed {
    pub record: Value,
    pub outputs: Map<String, Value>,
}

impl TargetPlan {
    /// `record` completed with `reply`; Err says which output the reply does not have.
    pub fn complete(&self, record: Map<String, Value>, reply: Reply) -> Result<Completed, String> {
        let mut outputs = Map::new();
        match (&self.target, reply) {
            (Target::Chat(t), Reply::Chat { text, model }) => {
                outputs.insert(t.output.clone(), Value::String(text));
                if let Some(field) = &t.model_field {
                    outputs.insert(field.clone(), Value::String(model));
                }
                outputs.extend(t.set.clone());
            }
            (Target::Http(t), Reply::Http(body)) => {
                for (field, pointer) in &t.outputs {
                    let Some(value) = body.pointer(pointer) else {
                        return Err(format!(
                            "target {}: {pointer} not found in the reply",
                            self.name()
                        ));
                    };
                    outputs.insert(field.clone(), value.clone());
                }
                outputs.extend(t.set.clone());
            }
            _ => return Err(format!("target {}: a reply of the wrong kind", self.name())),
        }
        let record = fill(record, &outputs).map_err(|e| format!("target {}: {e}", self.name()))?;
        Ok(Completed {
            record: Value::Object(record),
            outputs,
        })
    }
}

/// `record` with each output (a dotted path → its value) written into it: the completed
/// record, here and in `outputs.jsonl`. Err names an output whose path crosses a value that is
/// not an object.
pub fn fill(
    mut record: Map<String, Value>,
    outputs: &Map<String, Value>,
) -> Result<Map<String, Value>, String> {
    for (field, value) in outputs {
        set_path(&mut record, field, value.clone()).map_err(|e| format!("output {field}: {e}"))?;
    }
    Ok(record)
}

/// Sets `a.b.c` in `record`, making the objects on the way; Err when a step is not an object.
fn set_path(record: &mut Map<String, Value>, path: &str, value: Value) -> Result<(), String> {
    let mut steps = path.split('.').peekable();
    let mut at = record;
    while let Some(step) = steps.next() {
        if steps.peek().is_none() {
            at.insert(step.to_owned(), value);
            return Ok(());
        }
        let next = at
            .entry(step.to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        at = next
            .as_object_mut()
            .ok_or_else(|| format!("'{step}' is not an object in the record"))?;
    }
    Ok(())
}
