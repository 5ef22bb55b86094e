//! Inference: what a starter suite says about a sample of records (rules 1–13 of the module).

use std::collections::HashSet;

use serde_json::Value;

use crate::custom::spec::FieldType;
use evalfleet_model::routing::ProviderRules;

/// How many records `suite init` reads to infer the suite.
pub const SAMPLE_RECORDS: usize = 1000;

/// Words (any case) that mark a column as the judged text: the first text column named one of
/// them wins, else the first whose name contains one (`bot_answer`, `model_response`).
pub const JUDGED_NAMES: &[&str] = &[
    "answer",
    "response",
    "output",
    "completion",
    "reply",
    "prediction",
    "generation",
];

/// Column names (any case) taken for the reference (gold) text.
pub const REFERENCE_NAMES: &[&str] = &[
    "reference",
    "gold",
    "gold_answer",
    "expected",
    "expected_output",
    "ideal",
    "target",
    "label",
];

/// Names (any case) of columns that label a record rather than carry text for the judge.
const LABEL_NAMES: &[&str] = &[
    "model",
    "provider",
    "prompt_version",
    "version",
    "variant",
    "locale",
    "language",
    "lang",
    "split",
    "experiment",
];

/// Words a field cannot be called, because a template naming it would not mean the field:
/// Jinja keywords and literals, and minijinja's globals and special variables.
#[rustfmt::skip]
const JINJA_RESERVED: &[&str] = &[
    "true", "false", "none", "True", "False", "None", "and", "or", "not", "in", "is", "if",
    "else", "elif", "endif", "for", "endfor", "set", "endset", "block", "endblock", "extends",
    "include", "import", "from", "macro", "endmacro", "call", "endcall", "filter", "endfilter",
    "with", "endwith", "autoescape", "endautoescape", "raw", "endraw", "do", "continue", "break",
    "loop", "self", "super", "caller", "varargs", "kwargs", "range", "dict", "debug", "namespace",
];

/// Grouping columns have at least this many distinct sampled values...
const GROUP_MIN_DISTINCT: usize = 2;
/// ... and at most this many.
const GROUP_MAX_DISTINCT: usize = 20;
/// A "token" value (a label such as `gpt-4o` or `v2`) is at most this many characters.
const TOKEN_MAX_CHARS: usize = 64;
/// A column whose values are numbers "but for a few" is still a number column: at most one
/// value in [`FEW_IN`] (and at least one) may be something else...
const FEW_IN: usize = 20;
/// ... as long as numbers outnumber the others this many times over (two numbers and one word
/// are a text column).
const NUMBERS_PER_EXCEPTION: usize = 4;
/// The values that are not numbers [`InferredField::not_numbers`] keeps, at most.
const EXCEPTIONS_KEPT: usize = 20;

/// One declared field of the starter suite.
#[derive(Debug, Clone, PartialEq)]
pub struct InferredField {
    /// The dataset column (the field's `path:` when it differs from `name`).
    pub column: String,
    /// The field name: a Jinja-safe identifier.
    pub name: String,
    pub kind: FieldType,
    pub required: bool,
    /// A `number` column with a few values that are not numbers: their records (indexes into
    /// the sample, at most 20) and the values as text. Those records will be skipped.
    pub not_numbers: Vec<(usize, String)>,
    /// How many sampled values are not numbers, in all (the list above stops at 20).
    pub not_numbers_count: usize,
}

/// What [`infer`] found; [`render`] writes it. Roles name fields by their field name.
#[derive(Debug, Clone, PartialEq)]
pub struct Inferred {
    /// How many records (JSON objects) the inference saw.
    pub sampled: usize,
    /// Whether the columns came from a CSV header (cells are text).
    pub csv: bool,
    /// The id column (`record.id`).
    pub id: String,
    pub fields: Vec<InferredField>,
    /// Columns left out because their name cannot be a record path.
    pub unusable: Vec<String>,
    pub provider_field: Option<String>,
    pub judged: String,
    pub reference: Option<String>,
    /// The template's other fields, in column order (the judged field comes after them).
    pub context: Vec<String>,
    /// One grouping per field, in column order.
    pub group_by: Vec<String>,
}

impl Inferred {
    pub(super) fn field(&self, name: &str) -> Option<&InferredField> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// The name of the token_f1 check (when there is a reference).
    pub fn f1_check(&self) -> String {
        format!("{}_f1", self.judged)
    }
}

/// What the sample says about one column.
#[derive(Debug, Default)]
struct ColumnStats {
    /// Records where the column is present, non-null and (for text) not blank.
    filled: usize,
    /// JSON kinds seen among non-null values (bit per [`FieldType`]).
    kinds: u8,
    /// CSV: non-empty cells, and how many parse as numbers / booleans.
    cells: usize,
    numbers: usize,
    bools: usize,
    /// Filled values that are JSON numbers or (CSV) cells that parse as numbers...
    numeric: usize,
    /// ... and the first [`EXCEPTIONS_KEPT`] others, with their record's index in the sample.
    exceptions: Vec<(usize, String)>,
    /// Characters of the string values, in all (the mean length tells free text).
    chars: usize,
    /// Distinct string values, kept up to one more than [`GROUP_MAX_DISTINCT`].
    distinct: HashSet<String>,
    /// Every string value is a short token without whitespace.
    tokens: bool,
    /// Non-empty string values, and how many of them name a model with a known provider.
    strings: usize,
    routed: usize,
}

fn kind_bit(kind: FieldType) -> u8 {
    match kind {
        FieldType::String => 1,
        FieldType::Number => 2,
        FieldType::Bool => 4,
        FieldType::List => 8,
        FieldType::Object => 16,
        FieldType::Json => 32,
    }
}

/// A CSV cell as a number: the CSV reader's rule (an i64, or a finite f64), on trimmed text.
fn is_number(text: &str) -> bool {
    text.parse::<i64>().is_ok() || text.parse::<f64>().is_ok_and(f64::is_finite)
}

fn is_bool(text: &str) -> bool {
    text.eq_ignore_ascii_case("true") || text.eq_ignore_ascii_case("false")
}

impl ColumnStats {
    fn new() -> Self {
        ColumnStats {
            tokens: true,
            ..ColumnStats::default()
        }
    }

    fn add(&mut self, record: usize, value: &Value, csv: bool, rules: &ProviderRules) {
        if value.is_null() {
            return;
        }
        self.note_number(record, value, csv);
        let kind = match value {
            Value::String(_) => FieldType::String,
            Value::Number(_) => FieldType::Number,
            Value::Bool(_) => FieldType::Bool,
            Value::Array(_) => FieldType::List,
            Value::Object(_) => FieldType::Object,
            Value::Null => return,
        };
        self.kinds |= kind_bit(kind);
        let Value::String(s) = value else {
            self.filled += 1;
            return;
        };
        let text = s.trim();
        if text.is_empty() {
            return;
        }
        self.filled += 1;
        self.strings += 1;
        self.chars += text.chars().count();
        if rules.provider_of(text).is_some() {
            self.routed += 1;
        }
        if csv {
            self.cells += 1;
            self.numbers += usize::from(is_number(text));
            self.bools += usize::from(is_bool(text));
        }
        if s.chars().count() > TOKEN_MAX_CHARS || s.chars().any(char::is_whitespace) {
            self.tokens = false;
        }
        if self.distinct.len() <= GROUP_MAX_DISTINCT {
            self.distinct.insert(s.clone());
        }
    }

    /// Counts a filled value as a number or keeps it as an exception (a blank text counts as
    /// neither, as it does not count as filled).
    fn note_number(&mut self, record: usize, value: &Value, csv: bool) {
        let numeric = match value {
            Value::Number(_) => true,
            Value::String(s) if s.trim().is_empty() => return,
            Value::String(s) => csv && is_number(s.trim()),
            _ => false,
        };
        if numeric {
            self.numeric += 1;
        } else if self.exceptions.len() < EXCEPTIONS_KEPT {
            let text = match value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            self.exceptions.push((record, text));
        }
    }

    /// Values that are not numbers, in all.
    fn not_numbers(&self) -> usize {
        self.filled - self.numeric
    }

    /// Numbers but for a few (at least one): a number column with bad values in some records.
    fn mostly_numbers(&self) -> bool {
        let others = self.not_numbers();
        others > 0
            && others * FEW_IN <= self.filled.max(FEW_IN)
            && self.numeric >= others * NUMBERS_PER_EXCEPTION
    }

    /// The mean length of the string values, in characters.
    fn mean_chars(&self) -> f64 {
        self.chars as f64 / self.strings.max(1) as f64
    }

    fn kind(&self, csv: bool) -> FieldType {
        if self.mostly_numbers() {
            return FieldType::Number;
        }
        if csv {
            return match self.cells {
                0 => FieldType::String,
                n if self.numbers == n => FieldType::Number,
                n if self.bools == n => FieldType::Bool,
                _ => FieldType::String,
            };
        }
        [
            FieldType::String,
            FieldType::Number,
            FieldType::Bool,
            FieldType::List,
            FieldType::Object,
        ]
        .into_iter()
        .find(|&k| self.kinds == kind_bit(k))
        .unwrap_or(FieldType::Json)
    }
}

/// Whether a column name can be a record path: no empty segment between dots.
fn usable_path(column: &str) -> bool {
    column.split('.').all(|s| !s.trim().is_empty())
}

/// Whether `name` can be written as `{{ name }}` and mean the field.
fn is_safe_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !JINJA_RESERVED.contains(&name)
}

/// A Jinja-safe version of a column name (uniqueness is the caller's).
fn safe_name(column: &str) -> String {
    let mut name: String = column
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        name.insert(0, '_');
    }
    if JINJA_RESERVED.contains(&name.as_str()) {
        name.push('_');
    }
    name
}

fn is_label_like(column: &str) -> bool {
    let lower = column.to_lowercase();
    LABEL_NAMES.contains(&lower.as_str())
        || lower.ends_with("_model")
        || lower.ends_with("_version")
}

fn named_one_of(column: &str, names: &[&str]) -> bool {
    names.contains(&column.to_lowercase().as_str())
}

/// Infers a starter suite from sampled records. `columns` is the CSV header (None for JSON);
/// `records` are the sampled records; `rules` are the model-prefix rules of routing. Err is a
/// message for the user (the dataset has no record or no column to judge).
pub fn infer(
    columns: Option<&[String]>,
    records: &[Value],
    rules: &ProviderRules,
) -> Result<Inferred, String> {
    let csv = columns.is_some();
    let objects: Vec<(usize, &serde_json::Map<String, Value>)> = (records.iter().enumerate())
        .filter_map(|(i, r)| Some((i, r.as_object()?)))
        .collect();
    if objects.is_empty() {
        return Err("no record in the sample is a JSON object with columns".to_owned());
    }
    let all_columns: Vec<String> = match columns {
        Some(c) => c.to_vec(),
        None => {
            let mut seen = HashSet::new();
            let mut order = Vec::new();
            for key in objects.iter().flat_map(|(_, o)| o.keys()) {
                if seen.insert(key.as_str()) {
                    order.push(key.clone());
                }
            }
            order
        }
    };
    let (columns, unusable): (Vec<String>, Vec<String>) =
        all_columns.into_iter().partition(|c| usable_path(c));
    if columns.is_empty() {
        return Err("the records have no usable column".to_owned());
    }
    let id = columns
        .iter()
        .find(|c| c.as_str() == "id")
        .or_else(|| columns.iter().find(|c| c.to_lowercase().ends_with("id")))
        .unwrap_or(&columns[0])
        .clone();
    let columns: Vec<&String> = columns.iter().filter(|c| **c != id).collect();
    if columns.is_empty() {
        return Err(format!(
            "the records have no column besides the id '{id}': there is nothing to judge"
        ));
    }

    // Field names: already-safe names keep theirs, the others get a safe, unique one.
    let mut taken: HashSet<String> = columns
        .iter()
        .filter(|c| is_safe_name(c))
        .map(|c| c.to_string())
        .collect();
    let names: Vec<String> = columns
        .iter()
        .map(|c| {
            if is_safe_name(c) {
                return c.to_string();
            }
            let base = safe_name(c);
            let mut name = base.clone();
            let mut n = 2;
            while taken.contains(&name) {
                name = format!("{base}_{n}");
                n += 1;
            }
            taken.insert(name.clone());
            name
        })
        .collect();

    let mut stats: Vec<ColumnStats> = columns.iter().map(|_| ColumnStats::new()).collect();
    for (record, obj) in &objects {
        for (column, s) in columns.iter().zip(&mut stats) {
            if let Some(v) = obj.get(column.as_str()) {
                s.add(*record, v, csv, rules);
            }
        }
    }
    let fields: Vec<InferredField> = columns
        .iter()
        .zip(&names)
        .zip(&stats)
        .map(|((column, name), s)| {
            let mostly = s.mostly_numbers();
            InferredField {
                column: column.to_string(),
                name: name.clone(),
                kind: s.kind(csv),
                required: s.filled == objects.len(),
                not_numbers: if mostly {
                    s.exceptions.clone()
                } else {
                    Vec::new()
                },
                not_numbers_count: if mostly { s.not_numbers() } else { 0 },
            }
        })
        .collect();
    let is_string = |i: usize| fields[i].kind == FieldType::String;

    let provider = (0..fields.len()).find(|&i| {
        fields[i].column.eq_ignore_ascii_case("model")
            && is_string(i)
            && stats[i].strings > 0
            && stats[i].routed * 2 >= stats[i].strings
    });
    let reference = (0..fields.len())
        .find(|&i| is_string(i) && named_one_of(&fields[i].column, REFERENCE_NAMES));
    // A number or a boolean is never judged: a judge scores text (or, failing any, JSON).
    let judgeable = |i: usize| !matches!(fields[i].kind, FieldType::Number | FieldType::Bool);
    let free_text = |i: usize| {
        is_string(i)
            && Some(i) != reference
            && Some(i) != provider
            && !is_label_like(&fields[i].column)
    };
    let named = |exact: bool| {
        (0..fields.len()).find(|&i| {
            let lower = fields[i].column.to_lowercase();
            judgeable(i)
                && Some(i) != reference
                && JUDGED_NAMES.iter().any(|n| {
                    if exact {
                        lower == *n
                    } else {
                        lower.contains(n)
                    }
                })
        })
    };
    let longest = (0..fields.len())
        .filter(|&i| free_text(i))
        .max_by(|&a, &b| {
            stats[a]
                .mean_chars()
                .total_cmp(&stats[b].mean_chars())
                .then(b.cmp(&a))
        });
    let judged = named(true)
        .or_else(|| named(false))
        .or(longest)
        .or_else(|| (0..fields.len()).rev().find(|&i| is_string(i) && Some(i) != reference))
        .or_else(|| (0..fields.len()).rev().find(|&i| judgeable(i) && Some(i) != reference))
        .ok_or_else(|| {
            format!("no column holds text to judge (every column but the id '{id}' holds numbers or booleans, or is the reference)")
        })?;
    let groups: Vec<usize> = (0..fields.len())
        .filter(|&i| {
            let s = &stats[i];
            is_string(i)
                && i != judged
                && Some(i) != reference
                && (GROUP_MIN_DISTINCT..=GROUP_MAX_DISTINCT).contains(&s.distinct.len())
                && (is_label_like(&fields[i].column) || Some(i) == provider || s.tokens)
        })
        .collect();
    let context: Vec<usize> = (0..fields.len())
        .filter(|&i| {
            is_string(i)
                && i != judged
                && Some(i) != reference
                && Some(i) != provider
                && !groups.contains(&i)
                && !is_label_like(&fields[i].column)
        })
        .collect();
    let name_of = |i: usize| fields[i].name.clone();
    Ok(Inferred {
        sampled: objects.len(),
        csv,
        id,
        provider_field: provider.map(name_of),
        judged: name_of(judged),
        reference: reference.map(name_of),
        context: context.into_iter().map(name_of).collect(),
        group_by: groups.into_iter().map(name_of).collect(),
        unusable,
        fields,
    })
}
