//! A custom suite's sections as the suite file writes them: the record's fields, the judge's
//! prompts. Checks have their own module ([`super::checks`]). Every struct denies unknown keys,
//! so a typo is an error naming the key, not a silently ignored setting.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

/// The type a record field must have. `json` takes any value (in CSV, the cell parsed as JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FieldType {
    String,
    Number,
    Bool,
    List,
    Object,
    Json,
}

impl FieldType {
    /// The noun of a type error: `'latency_ms' must be a number`.
    pub fn noun(self) -> &'static str {
        match self {
            FieldType::String => "a string",
            FieldType::Number => "a number",
            FieldType::Bool => "a boolean",
            FieldType::List => "a list",
            FieldType::Object => "an object",
            FieldType::Json => "JSON",
        }
    }
}

/// One declared field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldSpec {
    #[serde(rename = "type")]
    pub kind: FieldType,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
    /// Dotted path in the record (`gold.answer`); default: the field's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

impl FieldSpec {
    pub fn path<'a>(&'a self, name: &'a str) -> &'a str {
        self.path.as_deref().unwrap_or(name)
    }
}

/// `record:`: where the id is, the fields in validation order, and the routing field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordSpec {
    /// Path of the id (default `id`); a string or an integer, used as text.
    #[serde(default = "default_id")]
    pub id: String,
    pub fields: IndexMap<String, FieldSpec>,
    /// A string field naming the model that answered: the judge provider is chosen from it by
    /// the model-prefix rules and `judges.judge_mapping`, as for support-judge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_field: Option<String>,
}

fn default_id() -> String {
    "id".to_owned()
}

/// `scale: {min, max}` of a judge dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scale {
    pub min: i64,
    pub max: i64,
}

/// One judge dimension of a custom suite.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DimensionSpec {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale: Option<Scale>,
    /// Pass/fail, scored 1/0 (the scale 0..1).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub binary: bool,
    pub rubric: String,
    /// Jinja template of the judge's user message; judged fields render as delimited blocks.
    pub template: String,
    /// The fields inserted as delimited, untrusted data; default: every field the template uses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judged: Option<Vec<String>>,
    /// A declared field holding people's scores of this dimension on its scale: the report
    /// measures the judge against them (never shown to the judge).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub human: Option<String>,
    /// Pairwise preference: the judge compares the judged answer with another answer
    /// (`against`), twice with positions swapped, instead of scoring it on a scale.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairwise: Option<PairwiseSpec>,
}

/// `pairwise: {against: FIELD}` of a judge dimension.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PairwiseSpec {
    /// The declared field holding the other answer (not the judged field itself).
    pub against: String,
}

impl DimensionSpec {
    /// The integer scale the judge answers on.
    pub fn range(&self) -> Result<(i64, i64), String> {
        if self.pairwise.is_some() {
            // A pairwise dimension's score is 1 / 0.5 / 0 (win / tie / loss), on [0, 1].
            return match (self.scale, self.binary) {
                (None, false) => Ok((0, 1)),
                _ => Err(format!(
                    "judge dimension '{}': 'pairwise' compares two answers and takes no 'scale' or 'binary'",
                    self.name
                )),
            };
        }
        match (self.scale, self.binary) {
            (Some(_), true) => Err(format!(
                "judge dimension '{}': give either 'scale' or 'binary: true', not both",
                self.name
            )),
            (None, true) => Ok((0, 1)),
            (Some(s), false) if s.min >= s.max => Err(format!(
                "judge dimension '{}': scale.min {} must be below scale.max {}",
                self.name, s.min, s.max
            )),
            (Some(s), false) => Ok((s.min, s.max)),
            (None, false) => Err(format!(
                "judge dimension '{}': needs 'scale: {{min, max}}' or 'binary: true'",
                self.name
            )),
        }
    }
}

/// `judge:`: an optional system prompt and the dimensions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JudgeSpec {
    /// Replaces the judge's opening line ("You are an impartial evaluation judge.").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    #[serde(default)]
    pub dimensions: Vec<DimensionSpec>,
}
