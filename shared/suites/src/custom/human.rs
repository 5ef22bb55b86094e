//! A custom suite's human labels (`human: FIELD` on a judge dimension): checked when the suite
//! loads, so a typo is an error naming the key, not a column of nulls in a million results.

use std::collections::BTreeMap;

use super::record::RecordPlan;
use super::spec::{FieldType, JudgeSpec};
use super::template::Templates;

/// Every `human:` names a declared field that can hold a number, and no dimension's template
/// shows the judge the people's score of that dimension.
pub(crate) fn check(
    judge: &JudgeSpec,
    plan: &RecordPlan,
    templates: &Templates,
) -> Result<(), String> {
    let columns: Vec<(&str, FieldType)> = plan.columns().collect();
    for (d, t) in judge.dimensions.iter().zip(&templates.dims) {
        let Some(field) = &d.human else { continue };
        let at = format!("judge dimension '{}': human", d.name);
        let i = plan
            .index_of(field)
            .ok_or_else(|| format!("{at}: '{field}' is not a field in record.fields"))?;
        if !matches!(
            columns[i].1,
            FieldType::Number | FieldType::String | FieldType::Json
        ) {
            return Err(format!(
                "{at}: '{field}' is a field of type {}; people's scores need a number (or a string or json field holding one)",
                columns[i].1.noun()
            ));
        }
        if t.used.contains(&i) {
            return Err(format!(
                "{at}: '{field}' is in the dimension's template, which would show the judge the people's score"
            ));
        }
    }
    Ok(())
}

/// Dimension → the path of its human-label field.
pub(crate) fn labels(judge: &JudgeSpec, plan: &RecordPlan) -> BTreeMap<String, String> {
    let columns: Vec<(&str, FieldType)> = plan.columns().collect();
    judge
        .dimensions
        .iter()
        .filter_map(|d| {
            let i = plan.index_of(d.human.as_deref()?)?;
            Some((d.name.clone(), columns[i].0.to_owned()))
        })
        .collect()
}
