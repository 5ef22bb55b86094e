//! User-defined ("custom") suites: a suite file describes the records (typed fields at paths),
//! the judge's prompts (Jinja templates over those fields) and deterministic checks, and the rest
//! of evalfleet — both modes, live judges, gates, reports, metrics — works for it unchanged.
//!
//! [`CustomSuite`] is the compiled form: it serialises as the spec the user wrote (so the run's
//! spec in Redis carries it to every worker) and compiles again on deserialisation, so a worker
//! never holds a custom suite whose templates or checks did not compile.

mod baseline;
pub mod checks;
pub mod external;
mod human;
pub mod init;
mod pairwise;
mod record;
pub mod spec;
mod template;

use std::borrow::Cow;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

pub use baseline::{BaselineAnswers, BaselineSource};
pub use checks::{Check, CheckSpec};
pub use external::{ExternalCheck, ExternalScore, ExternalScores, Scorer, ScorerRequest};
pub use record::{text_of, CustomExample};
pub use spec::{DimensionSpec, FieldSpec, FieldType, JudgeSpec, PairwiseSpec, RecordSpec, Scale};

use evalfleet_model::record::Metrics;
use evalfleet_model::routing::ProviderRules;
use evalfleet_model::suite::{Dimension, Grouping};
use record::RecordPlan;
use template::Templates;

/// A pairwise dimension's two answers for one example: the judged one, and the other one
/// (Err: why the item has none).
pub type AnswerPair<'a> = (Cow<'a, str>, Result<Cow<'a, str>, String>);

/// A custom suite's own sections, as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CustomSpec {
    pub record: RecordSpec,
    #[serde(default)]
    pub judge: JudgeSpec,
    #[serde(default)]
    pub checks: Vec<CheckSpec>,
}

/// A check bound to the declared fields it reads.
#[derive(Debug)]
struct BoundCheck {
    check: Check,
    field: usize,
    reference: Option<usize>,
}

/// A code scorer bound to the declared fields it sends.
#[derive(Debug)]
struct BoundExternal {
    check: ExternalCheck,
    fields: Vec<usize>,
}

/// One of the suite's checks, in suite order: computed here, or scored by the user's code
/// (its index in [`CustomSuite::external`]).
#[derive(Debug)]
enum Bound {
    Check(BoundCheck),
    External(usize),
}

/// A compiled custom suite.
#[derive(Debug)]
pub struct CustomSuite {
    spec: CustomSpec,
    plan: RecordPlan,
    templates: Templates,
    checks: Vec<Bound>,
    external: Vec<BoundExternal>,
    /// Per dimension: where a pairwise dimension's two answers are (None: scored on a scale).
    pairs: Vec<Option<pairwise::Pair>>,
}

impl CustomSuite {
    /// Compiles the spec: paths, templates, checks. Every error names its key.
    pub fn compile(spec: CustomSpec) -> Result<CustomSuite, String> {
        let plan = RecordPlan::new(&spec.record)?;
        let mut seen: Vec<&str> = Vec::new();
        for d in &spec.judge.dimensions {
            if seen.contains(&d.name.as_str()) {
                return Err(format!("judge.dimensions: '{}' is listed twice", d.name));
            }
            seen.push(&d.name);
            d.range()?;
            if d.rubric.trim().is_empty() {
                return Err(format!("judge dimension '{}': 'rubric' is empty", d.name));
            }
        }
        let mut templates = Templates::compile(&spec.judge, &plan)?;
        human::check(&spec.judge, &plan, &templates)?;
        let pairs = pairwise::compile(&spec.judge, &plan, &mut templates)?;
        let mut checks = Vec::with_capacity(spec.checks.len());
        let mut external = Vec::new();
        for c in &spec.checks {
            if seen.contains(&c.name.as_str()) {
                return Err(format!(
                    "check '{}': the name is already a judge dimension or another check",
                    c.name
                ));
            }
            seen.push(&c.name);
            let bind = |name: &str| {
                plan.index_of(name).ok_or_else(|| {
                    format!(
                        "check '{}': '{name}' is not a field in record.fields",
                        c.name
                    )
                })
            };
            if c.is_external() {
                let check = ExternalCheck::compile(c)?;
                let fields = check
                    .fields
                    .iter()
                    .map(|f| bind(f))
                    .collect::<Result<_, _>>()?;
                checks.push(Bound::External(external.len()));
                external.push(BoundExternal { check, fields });
                continue;
            }
            let check = Check::compile(c)?;
            let field = bind(&check.field)?;
            let reference = check.reference.as_deref().map(bind).transpose()?;
            checks.push(Bound::Check(BoundCheck {
                check,
                field,
                reference,
            }));
        }
        Ok(CustomSuite {
            spec,
            plan,
            templates,
            checks,
            external,
            pairs,
        })
    }

    pub fn spec(&self) -> &CustomSpec {
        &self.spec
    }

    /// Dimension → the record path of its `human:` field (people's scores of it).
    pub fn human_labels(&self) -> std::collections::BTreeMap<String, String> {
        human::labels(&self.spec.judge, &self.plan)
    }

    /// The judge dimensions as the rest of evalfleet sees them (name, integer scale, rubric).
    pub fn dimensions(&self) -> Result<Vec<Dimension>, String> {
        self.spec
            .judge
            .dimensions
            .iter()
            .map(|d| {
                let (min, max) = d.range()?;
                Ok(Dimension {
                    name: d.name.clone(),
                    min,
                    max,
                    // A pairwise dimension's 1 / 0.5 / 0 is already on [0, 1].
                    unit: d.pairwise.is_some(),
                    rubric: d.rubric.clone(),
                })
            })
            .collect()
    }

    /// The names a gate may test: the judge dimensions and the checks.
    pub fn metric_names(&self) -> impl Iterator<Item = &str> {
        self.spec
            .judge
            .dimensions
            .iter()
            .map(|d| d.name.as_str())
            .chain(self.spec.checks.iter().map(|c| c.name.as_str()))
    }

    /// (CSV column, type) of every declared field.
    pub fn columns(&self) -> impl Iterator<Item = (&str, FieldType)> {
        self.plan.columns()
    }

    /// Validates one record; Err is the skip reason.
    pub fn parse(
        &self,
        value: &Value,
        rules: &ProviderRules,
        group_by: &[Grouping],
    ) -> Result<CustomExample, String> {
        self.plan.parse(value, rules, group_by)
    }

    /// The suite's code scorers, in suite order: what the worker asks for each example.
    pub fn external(&self) -> impl ExactSizeIterator<Item = &ExternalCheck> {
        self.external.iter().map(|b| &b.check)
    }

    /// The request of code scorer `i` (in [`CustomSuite::external`]'s order) for one example.
    pub fn scorer_request<'a>(&'a self, i: usize, e: &'a CustomExample) -> ScorerRequest<'a> {
        let b = &self.external[i];
        let values = b.fields.iter().map(|&f| e.values[f].as_ref()).collect();
        b.check.request(&e.id, values)
    }

    /// Every check's value for one example, in suite order: null where a deterministic check's
    /// field is absent, and a code scorer's score from `external` (null when it has none).
    /// Beside them, each code scorer's reason by check name (for `details.check_reasons`).
    pub fn check_metrics(
        &self,
        e: &CustomExample,
        external: &ExternalScores,
    ) -> (Metrics, Map<String, Value>) {
        let mut reasons = Map::new();
        let metrics = self
            .checks
            .iter()
            .map(|bound| match bound {
                Bound::Check(b) => {
                    let field = e.values[b.field].as_ref();
                    let reference = b.reference.and_then(|r| e.values[r].as_ref());
                    (b.check.name.clone(), b.check.eval(field, reference))
                }
                Bound::External(i) => {
                    let name = self.external[*i].check.name.clone();
                    let scored = external.0.get(*i);
                    let (score, reason) = match scored {
                        Some(s) => (s.score, s.reason.clone()),
                        None => (None, Some("the code scorer was not asked".to_owned())),
                    };
                    if let Some(reason) = reason {
                        reasons.insert(name.clone(), Value::String(reason));
                    }
                    (name, score)
                }
            })
            .collect();
        (Metrics(metrics), reasons)
    }

    /// The names of the pairwise dimensions, in suite order.
    pub fn pairwise_dimensions(&self) -> impl Iterator<Item = &str> {
        self.spec
            .judge
            .dimensions
            .iter()
            .zip(&self.pairs)
            .filter(|(_, p)| p.is_some())
            .map(|(d, _)| d.name.as_str())
    }

    /// Whether dimension `dim` compares two answers instead of scoring one.
    pub fn is_pairwise(&self, dim: usize) -> bool {
        self.pairs.get(dim).is_some_and(Option::is_some)
    }

    /// A pairwise dimension's two answers for one example: the judged one, and the other one
    /// (Err naming the field when the record has none). None for a dimension scored on a scale.
    pub fn pair<'a>(&'a self, dim: usize, e: &'a CustomExample) -> Option<AnswerPair<'a>> {
        let pair = self.pairs.get(dim).copied().flatten()?;
        let names: Vec<&str> = self.plan.names().collect();
        let judged = e.values[pair.judged]
            .as_ref()
            .map(text_of)
            .unwrap_or_default();
        let against = match pair.against {
            pairwise::Against::Field(i) => e.values[i]
                .as_ref()
                .map(text_of)
                .ok_or_else(|| format!("the record has no '{}'", names[i])),
            pairwise::Against::Baseline => {
                let name = names[pair.judged];
                e.baseline
                    .get(name)
                    .map(|a| Cow::Borrowed(a.as_str()))
                    .ok_or_else(|| format!("the baseline run has no '{name}' for this item"))
            }
        };
        Some((judged, against))
    }

    /// A pairwise dimension's template for one example with `first` in position A and
    /// `second` in position B.
    pub fn render_pair(
        &self,
        dim: usize,
        e: &CustomExample,
        pair: (&str, &str),
    ) -> Result<String, String> {
        let name = &self.spec.judge.dimensions[dim].name;
        self.templates
            .render_pair(dim, name, &self.plan, &e.values, pair)
    }

    /// The judge's opening line, when the suite replaces it.
    pub fn system(&self) -> Option<&str> {
        self.spec.judge.system.as_deref()
    }

    /// The judged fields of dimension `dim` (name, text), in declaration order.
    pub fn judged<'a>(&'a self, dim: usize, e: &'a CustomExample) -> Vec<(&'a str, Cow<'a, str>)> {
        self.texts(&self.templates.dims[dim].judged, e)
    }

    /// The other fields the template of dimension `dim` shows the judge (context, not judged).
    pub fn context<'a>(&'a self, dim: usize, e: &'a CustomExample) -> Vec<(&'a str, Cow<'a, str>)> {
        let t = &self.templates.dims[dim];
        let others: Vec<usize> = t
            .used
            .iter()
            .copied()
            .filter(|i| !t.judged.contains(i))
            .collect();
        self.texts(&others, e)
    }

    /// The tags of dimension `dim`'s judged fields.
    pub fn tags(&self, dim: usize) -> &[String] {
        &self.templates.dims[dim].tags
    }

    /// Dimension `dim`'s template rendered for one example (the judge's user message body).
    pub fn render(&self, dim: usize, e: &CustomExample) -> Result<String, String> {
        let name = &self.spec.judge.dimensions[dim].name;
        self.templates.render(dim, name, &self.plan, &e.values)
    }

    fn texts<'a>(&'a self, fields: &[usize], e: &'a CustomExample) -> Vec<(&'a str, Cow<'a, str>)> {
        let names: Vec<&str> = self.plan.names().collect();
        fields
            .iter()
            .map(|&i| {
                let text = e.values[i].as_ref().map(text_of).unwrap_or_default();
                (names[i], text)
            })
            .collect()
    }
}

impl PartialEq for CustomSuite {
    fn eq(&self, other: &Self) -> bool {
        self.spec == other.spec
    }
}

impl Serialize for CustomSuite {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.spec.serialize(s)
    }
}

impl<'de> Deserialize<'de> for CustomSuite {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let spec = CustomSpec::deserialize(d)?;
        CustomSuite::compile(spec).map_err(serde::de::Error::custom)
    }
}
