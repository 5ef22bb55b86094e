//! Judge prompt templates of a custom suite (Jinja syntax, minijinja), compiled once per run.
//!
//! A template names declared fields only: a variable the suite does not declare is an error when
//! the suite loads, naming the dimension and the variable, not a blank in a million prompts.
//! Judged fields render as delimited, neutralised blocks ([`crate::delimit`]), exactly as the
//! built-in suites' fields do, so instructions inside them stay data.

use minijinja::{AutoEscape, Environment, Value as JinjaValue};
use serde_json::Value;

use super::record::{text_of, RecordPlan};
use super::spec::JudgeSpec;
use crate::delimit;

/// One dimension's template: which fields it uses and which of those are judged.
#[derive(Debug, Clone)]
pub(crate) struct DimTemplate {
    /// Declared-field indices the template uses, in declaration order.
    pub(crate) used: Vec<usize>,
    /// The judged subset of `used`, in declaration order.
    pub(crate) judged: Vec<usize>,
    /// The judged fields' tags, in the same order.
    pub(crate) tags: Vec<String>,
}

pub(crate) struct Templates {
    env: Environment<'static>,
    pub(crate) dims: Vec<DimTemplate>,
}

impl std::fmt::Debug for Templates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Templates")
            .field("dims", &self.dims)
            .finish()
    }
}

impl Templates {
    pub(crate) fn compile(judge: &JudgeSpec, plan: &RecordPlan) -> Result<Templates, String> {
        let mut env = crate::bounded::environment();
        // Prompts are plain text: never HTML-escape, whatever a dimension is called.
        env.set_auto_escape_callback(|_| AutoEscape::None);
        let globals: Vec<String> = env.globals().map(|(k, _)| k.to_owned()).collect();
        let declared: Vec<&str> = plan.names().collect();
        let mut dims = Vec::with_capacity(judge.dimensions.len());
        for d in &judge.dimensions {
            let at = format!("judge dimension '{}'", d.name);
            env.add_template_owned(d.name.clone(), d.template.clone())
                .map_err(|e| format!("{at}: template: {}", jinja_error(&e)))?;
            let template = env
                .get_template(&d.name)
                .map_err(|e| format!("{at}: template: {}", jinja_error(&e)))?;
            let mut vars: Vec<String> = template
                .undeclared_variables(false)
                .into_iter()
                .filter(|v| !globals.contains(v))
                .collect();
            vars.sort();
            if let Some(v) = vars.iter().find(|v| !declared.contains(&v.as_str())) {
                return Err(format!(
                    "{at}: the template uses '{v}', which is not a field in record.fields (declared: {})",
                    declared.join(", ")
                ));
            }
            let used: Vec<usize> = (0..declared.len())
                .filter(|&i| vars.iter().any(|v| v == declared[i]))
                .collect();
            let judged: Vec<usize> = match &d.judged {
                None => used.clone(),
                Some(names) => {
                    for n in names {
                        let Some(i) = plan.index_of(n) else {
                            return Err(format!(
                                "{at}: judged field '{n}' is not a field in record.fields"
                            ));
                        };
                        if !used.contains(&i) {
                            return Err(format!(
                                "{at}: judged field '{n}' is not used by the template"
                            ));
                        }
                    }
                    used.iter()
                        .copied()
                        .filter(|&i| names.iter().any(|n| n == declared[i]))
                        .collect()
                }
            };
            let tags = judged
                .iter()
                .map(|&i| delimit::tag_name(declared[i]))
                .collect();
            dims.push(DimTemplate { used, judged, tags });
        }
        Ok(Templates { env, dims })
    }

    /// The user message body of dimension `dim` for one example's field values. Absent
    /// optional fields render as empty text.
    pub(crate) fn render(
        &self,
        dim: usize,
        name: &str,
        plan: &RecordPlan,
        values: &[Option<Value>],
    ) -> Result<String, String> {
        let t = &self.dims[dim];
        self.render_with(dim, name, plan, values, &|k, v| {
            let text = v.map(text_of).unwrap_or_default();
            delimit::block(&t.tags[k], &text, &t.tags)
        })
    }

    /// A pairwise dimension's body: its one judged field renders as two blocks, `first` in
    /// the dimension's first tag (position A) and `second` in its second (position B).
    pub(crate) fn render_pair(
        &self,
        dim: usize,
        name: &str,
        plan: &RecordPlan,
        values: &[Option<Value>],
        (first, second): (&str, &str),
    ) -> Result<String, String> {
        let tags = &self.dims[dim].tags;
        self.render_with(dim, name, plan, values, &|_, _| {
            format!(
                "{}\n\n{}",
                delimit::block(&tags[0], first, tags),
                delimit::block(&tags[1], second, tags)
            )
        })
    }

    /// The body with each judged field (its position among the judged, its value) rendered by
    /// `judged`, the other fields as they are.
    fn render_with(
        &self,
        dim: usize,
        name: &str,
        plan: &RecordPlan,
        values: &[Option<Value>],
        judged: &dyn Fn(usize, Option<&Value>) -> String,
    ) -> Result<String, String> {
        let t = &self.dims[dim];
        let names: Vec<&str> = plan.names().collect();
        let context: JinjaValue = t
            .used
            .iter()
            .map(|&i| {
                let value = match (&values[i], t.judged.iter().position(|&j| j == i)) {
                    (v, Some(k)) => JinjaValue::from(judged(k, v.as_ref())),
                    (Some(v), None) => JinjaValue::from_serialize(v),
                    (None, None) => JinjaValue::from(""),
                };
                (names[i], value)
            })
            .collect();
        self.env
            .get_template(name)
            .and_then(|tpl| crate::bounded::render(&tpl, context))
            .map_err(|e| format!("judge dimension '{name}': template: {}", jinja_error(&e)))
    }
}

/// A minijinja error with its line, without the debug dump.
fn jinja_error(e: &minijinja::Error) -> String {
    let mut msg = e.to_string();
    if let Some(line) = e.line() {
        if !msg.contains("line ") {
            msg.push_str(&format!(" (line {line})"));
        }
    }
    msg
}
