//! The columns of `items.parquet`: which exist for a run, what each holds, and how one result
//! record fills one row of each. One row per result (ok, failed and skipped alike, in the
//! dataset's order), flat columns so that `pandas.read_parquet` gives one column per figure;
//! what has no fixed shape (metadata, a target's outputs, epochs) is JSON text. The schema is
//! documented in `docs/ITEMS.md`; a column added here goes there too.

use std::sync::Arc;

use arrow_array::builder::{
    ArrayBuilder, BooleanBuilder, Float64Builder, ListBuilder, StringBuilder, UInt32Builder,
    UInt64Builder,
};
use arrow_array::ArrayRef;
use arrow_schema::{DataType, Field, Schema};
use evalfleet_model::record::ResultRecord;
use serde_json::Value;

/// What varies from run to run: the suite's judge dimensions, the metrics (and custom checks)
/// its records carry, and the keys of its groupings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ItemsLayout {
    pub dimensions: Vec<String>,
    pub metrics: Vec<String>,
    pub group_keys: Vec<String>,
    /// The dimensions the suite names human labels for: each gets a `<dimension>.human` column.
    pub human: Vec<String>,
}

/// Where a column's value comes from in a record.
#[derive(Debug, Clone)]
enum Source {
    Index,
    Id,
    Line,
    Status,
    Passed,
    Reason,
    FailTags,
    OverallScore,
    Score(String),
    Reasoning(String),
    Judge(String),
    Unscored(String),
    Human(String),
    Metric(String),
    Group(String),
    Metadata,
    Outputs,
    TargetName,
    TargetLatency,
    TargetAttempts,
    TargetTokensIn,
    TargetTokensOut,
    TargetCost,
    Epochs,
    LatencyMs,
    Attempts,
    TokensIn,
    TokensOut,
    CostUsd,
}

impl Source {
    fn data_type(&self) -> DataType {
        use Source::*;
        match self {
            Index | Line | TargetTokensIn | TargetTokensOut | TokensIn | TokensOut => {
                DataType::UInt64
            }
            Attempts | TargetAttempts => DataType::UInt32,
            Passed | Unscored(_) => DataType::Boolean,
            OverallScore | Score(_) | Human(_) | Metric(_) | TargetLatency | TargetCost
            | LatencyMs | CostUsd => DataType::Float64,
            FailTags => DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
            Id | Status | Reason | Reasoning(_) | Judge(_) | Group(_) | Metadata | Outputs
            | TargetName | Epochs => DataType::Utf8,
        }
    }

    /// Whether the column is never null.
    fn required(&self) -> bool {
        use Source::*;
        matches!(
            self,
            Index | Id | Status | FailTags | LatencyMs | Attempts | TokensIn | TokensOut | CostUsd
        )
    }

    fn builder(&self) -> Builder {
        match self.data_type() {
            DataType::UInt64 => Builder::U64(UInt64Builder::new()),
            DataType::UInt32 => Builder::U32(UInt32Builder::new()),
            DataType::Boolean => Builder::Bool(BooleanBuilder::new()),
            DataType::Float64 => Builder::F64(Float64Builder::new()),
            DataType::List(_) => Builder::List(ListBuilder::new(StringBuilder::new())),
            _ => Builder::Str(StringBuilder::new()),
        }
    }

    /// This column's value in `rec`.
    fn value(&self, rec: &ResultRecord) -> Cell {
        use Source::*;
        let ok = rec.outcome == evalfleet_model::record::Outcome::Ok;
        let target = rec.target.as_ref();
        let json = |v: Option<String>| Cell::Str(v);
        match self {
            Index => Cell::U64(Some(rec.index)),
            Id => Cell::Str(Some(rec.id.clone())),
            Line => Cell::U64(rec.line),
            Status => Cell::Str(Some(rec.outcome.as_str().to_owned())),
            // Only an evaluated item passes or fails its gates.
            Passed => Cell::Bool(ok.then_some(rec.passed)),
            Reason => Cell::Str(rec.reason.clone()),
            FailTags => Cell::List(rec.fail_tags.clone()),
            OverallScore => Cell::F64(rec.overall_score),
            Score(d) => Cell::F64(rec.scores.get(d).and_then(|s| s.score)),
            Reasoning(d) => Cell::Str(rec.scores.get(d).map(|s| s.reasoning.clone())),
            Judge(d) => Cell::Str(
                rec.scores
                    .get(d)
                    .map(|s| format!("{}/{}", s.judge.provider, s.judge.model)),
            ),
            Unscored(d) => Cell::Bool(rec.scores.get(d).map(|s| s.unscored.is_some())),
            Human(d) => Cell::F64(rec.scores.get(d).and_then(|s| s.human)),
            Metric(m) => Cell::F64(rec.metrics.get(m)),
            Group(k) => Cell::Str(rec.group.get(k).map(str::to_owned)),
            Metadata => json(rec.details.get("metadata").map(Value::to_string)),
            Outputs => json(
                rec.outputs
                    .as_ref()
                    .map(|o| Value::Object(o.clone()).to_string()),
            ),
            TargetName => Cell::Str(target.map(|t| t.name.clone())),
            TargetLatency => Cell::F64(target.map(|t| t.latency_ms)),
            TargetAttempts => Cell::U32(target.map(|t| t.attempts)),
            TargetTokensIn => Cell::U64(target.map(|t| t.tokens_in)),
            TargetTokensOut => Cell::U64(target.map(|t| t.tokens_out)),
            TargetCost => Cell::F64(target.map(|t| t.cost_usd)),
            Epochs => json(
                (!rec.epochs.is_empty())
                    .then(|| serde_json::to_string(&rec.epochs).unwrap_or_default()),
            ),
            LatencyMs => Cell::F64(Some(rec.latency_ms)),
            Attempts => Cell::U32(Some(rec.attempts)),
            TokensIn => Cell::U64(Some(rec.usage.input_tokens)),
            TokensOut => Cell::U64(Some(rec.usage.output_tokens)),
            CostUsd => Cell::F64(Some(rec.usage.cost_usd)),
        }
    }
}

/// One value on its way into a builder.
enum Cell {
    U64(Option<u64>),
    U32(Option<u32>),
    F64(Option<f64>),
    Bool(Option<bool>),
    Str(Option<String>),
    List(Vec<String>),
}

/// A column's values so far.
enum Builder {
    U64(UInt64Builder),
    U32(UInt32Builder),
    F64(Float64Builder),
    Bool(BooleanBuilder),
    Str(StringBuilder),
    List(ListBuilder<StringBuilder>),
}

impl Builder {
    fn push(&mut self, cell: Cell) {
        match (self, cell) {
            (Builder::U64(b), Cell::U64(v)) => b.append_option(v),
            (Builder::U32(b), Cell::U32(v)) => b.append_option(v),
            (Builder::F64(b), Cell::F64(v)) => b.append_option(v),
            (Builder::Bool(b), Cell::Bool(v)) => b.append_option(v),
            (Builder::Str(b), Cell::Str(v)) => b.append_option(v),
            (Builder::List(b), Cell::List(v)) => {
                for tag in v {
                    b.values().append_value(tag);
                }
                b.append(true);
            }
            _ => unreachable!("a column's builder is made from its source's data type"),
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Builder::U64(b) => Arc::new(b.finish()),
            Builder::U32(b) => Arc::new(b.finish()),
            Builder::F64(b) => Arc::new(b.finish()),
            Builder::Bool(b) => Arc::new(b.finish()),
            Builder::Str(b) => Arc::new(b.finish()),
            Builder::List(b) => Arc::new(b.finish()),
        }
    }

    fn len(&self) -> usize {
        match self {
            Builder::U64(b) => b.len(),
            Builder::U32(b) => b.len(),
            Builder::F64(b) => b.len(),
            Builder::Bool(b) => b.len(),
            Builder::Str(b) => b.len(),
            Builder::List(b) => b.len(),
        }
    }
}

/// A run's columns: their schema, and the rows not yet written.
pub(crate) struct Columns {
    schema: Arc<Schema>,
    columns: Vec<(Source, Builder)>,
}

impl Columns {
    pub(crate) fn new(layout: &ItemsLayout) -> Self {
        use Source::*;
        let mut named: Vec<(String, Source)> = vec![
            ("index".into(), Index),
            ("id".into(), Id),
            ("line".into(), Line),
            ("status".into(), Status),
            ("passed".into(), Passed),
            ("reason".into(), Reason),
            ("fail_tags".into(), FailTags),
            ("overall_score".into(), OverallScore),
        ];
        for d in &layout.dimensions {
            named.push((format!("{d}.score"), Score(d.clone())));
            named.push((format!("{d}.reasoning"), Reasoning(d.clone())));
            named.push((format!("{d}.judge"), Judge(d.clone())));
            named.push((format!("{d}.unscored"), Unscored(d.clone())));
            if layout.human.contains(d) {
                named.push((format!("{d}.human"), Human(d.clone())));
            }
        }
        for m in &layout.metrics {
            named.push((format!("metric.{m}"), Metric(m.clone())));
        }
        for k in &layout.group_keys {
            named.push((format!("group.{k}"), Group(k.clone())));
        }
        named.extend([
            ("metadata".into(), Metadata),
            ("outputs".into(), Outputs),
            ("target.name".into(), TargetName),
            ("target.latency_ms".into(), TargetLatency),
            ("target.attempts".into(), TargetAttempts),
            ("target.tokens_in".into(), TargetTokensIn),
            ("target.tokens_out".into(), TargetTokensOut),
            ("target.cost_usd".into(), TargetCost),
            ("epochs".into(), Epochs),
            ("latency_ms".into(), LatencyMs),
            ("attempts".into(), Attempts),
            ("tokens_in".into(), TokensIn),
            ("tokens_out".into(), TokensOut),
            ("cost_usd".into(), CostUsd),
        ]);
        let fields: Vec<Field> = named
            .iter()
            .map(|(name, source)| Field::new(name, source.data_type(), !source.required()))
            .collect();
        Columns {
            schema: Arc::new(Schema::new(fields)),
            columns: named
                .into_iter()
                .map(|(_, source)| {
                    let builder = source.builder();
                    (source, builder)
                })
                .collect(),
        }
    }

    pub(crate) fn schema(&self) -> Arc<Schema> {
        self.schema.clone()
    }

    /// Adds `rec` as a row.
    pub(crate) fn push(&mut self, rec: &ResultRecord) {
        for (source, builder) in &mut self.columns {
            builder.push(source.value(rec));
        }
    }

    /// Rows pushed and not yet taken.
    pub(crate) fn rows(&self) -> usize {
        self.columns.first().map_or(0, |(_, b)| b.len())
    }

    /// The rows pushed so far, as arrays in schema order; the builders start again empty.
    pub(crate) fn take(&mut self) -> Vec<ArrayRef> {
        self.columns.iter_mut().map(|(_, b)| b.finish()).collect()
    }
}
