//! Check specs and compilation: what a suite file may write, and the errors that name what to
//! change. The helpers here serve `eval_tests.rs` too.

use serde::Deserialize;
use serde_json::{json, Value};

use super::*;

/// A spec from YAML, as a suite file would give it.
fn spec(yaml: &str) -> CheckSpec {
    serde_norway::from_str(yaml).unwrap_or_else(|e| panic!("{yaml}: {e}"))
}

pub(super) fn check(yaml: &str) -> Check {
    Check::compile(&spec(yaml)).unwrap_or_else(|e| panic!("{yaml}: {e}"))
}

fn compile_err(yaml: &str) -> String {
    match Check::compile(&spec(yaml)) {
        Ok(c) => panic!("{yaml} compiled to {c:?}"),
        Err(e) => e,
    }
}

/// Scores a field without a reference.
pub(super) fn eval(c: &Check, field: Value) -> Option<f64> {
    c.eval(Some(&field), None)
}

/// Scores a field against a reference.
pub(super) fn eval_ref(c: &Check, field: Value, reference: Value) -> Option<f64> {
    c.eval(Some(&field), Some(&reference))
}

pub(super) fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-12)
}

const EXAMPLE: &str = r#"
checks:
  - {name: answer_f1, type: token_f1, field: answer, reference: reference}
  - {name: exact, type: exact_match, field: answer, reference: reference}
  - {name: cites_source, type: regex, field: answer, pattern: '\[\d+\]'}
  - {name: no_apology, type: contains, field: answer, value: "sorry", case_sensitive: false, negate: true}
  - {name: fast, type: range, field: latency_ms, max: 2000}
  - {name: valid, type: json_schema, field: output, schema: {type: object, required: [name]}}
"#;

#[derive(Deserialize)]
struct Suite {
    checks: Vec<CheckSpec>,
}

// ---- the spec as YAML ----

#[test]
fn the_example_suite_deserialises_and_compiles() {
    let suite: Suite = serde_norway::from_str(EXAMPLE).unwrap();
    assert_eq!(suite.checks.len(), 6);
    let f1 = &suite.checks[0];
    assert_eq!(
        (
            f1.name.as_str(),
            f1.kind.as_str(),
            f1.field.as_deref().unwrap()
        ),
        ("answer_f1", "token_f1", "answer")
    );
    assert_eq!(f1.reference.as_deref(), Some("reference"));
    assert_eq!(suite.checks[2].pattern.as_deref(), Some(r"\[\d+\]"));
    assert_eq!(suite.checks[3].value, Some(json!("sorry")));
    assert_eq!(suite.checks[3].case_sensitive, Some(false));
    assert_eq!(suite.checks[3].negate, Some(true));
    assert_eq!(
        (suite.checks[4].min, suite.checks[4].max),
        (None, Some(2000.0))
    );
    assert_eq!(
        suite.checks[5].schema,
        Some(json!({"type": "object", "required": ["name"]}))
    );
    let kinds: Vec<&str> = suite
        .checks
        .iter()
        .map(|s| Check::compile(s).unwrap().kind())
        .collect();
    assert_eq!(
        kinds,
        [
            "token_f1",
            "exact_match",
            "regex",
            "contains",
            "range",
            "json_schema"
        ]
    );
}

#[test]
fn an_unknown_key_fails_naming_it() {
    let e = serde_norway::from_str::<CheckSpec>("{name: c, type: regex, field: a, patern: x}")
        .unwrap_err()
        .to_string();
    assert!(e.contains("patern"), "{e}");
}

#[test]
fn a_spec_round_trips_without_unset_keys() {
    let s = spec("{name: fast, type: range, field: latency_ms, max: 2000}");
    let out = serde_json::to_value(&s).unwrap();
    assert_eq!(
        out,
        json!({"name": "fast", "type": "range", "field": "latency_ms", "max": 2000.0})
    );
    let back: CheckSpec = serde_json::from_value(out).unwrap();
    assert_eq!(back, s);
}

#[test]
fn every_type_has_its_keys() {
    assert_eq!(CHECK_TYPES.len(), 13, "11 computed here, 2 code scorers");
    for kind in CHECK_TYPES {
        assert!(keys_of(kind).is_some(), "{kind}");
    }
}

// ---- absent data ----

#[test]
fn an_absent_or_null_field_gives_none_for_every_type() {
    let all = [
        "{name: c, type: equals, field: a, value: x}",
        "{name: c, type: contains, field: a, value: x}",
        "{name: c, type: starts_with, field: a, value: x}",
        "{name: c, type: regex, field: a, pattern: x}",
        "{name: c, type: is_json, field: a}",
        "{name: c, type: json_schema, field: a, schema: {type: object}}",
        "{name: c, type: exact_match, field: a, reference: r}",
        "{name: c, type: token_f1, field: a, reference: r}",
        "{name: c, type: similarity, field: a, value: x}",
        "{name: c, type: length, field: a, max: 3}",
        "{name: c, type: range, field: a, max: 3, negate: true}",
    ];
    // Every type computed here (the code scorers' nulls are the worker's: external_tests.rs).
    assert_eq!(all.len(), CHECK_TYPES.len() - 2);
    for yaml in all {
        let c = check(yaml);
        let r = json!("x");
        assert_eq!(c.eval(None, Some(&r)), None, "{yaml}");
        assert_eq!(c.eval(Some(&Value::Null), Some(&r)), None, "{yaml}");
    }
}

#[test]
fn an_absent_or_null_reference_gives_none_when_needed() {
    for yaml in [
        "{name: c, type: equals, field: a, reference: r}",
        "{name: c, type: exact_match, field: a, reference: r}",
        "{name: c, type: token_f1, field: a, reference: r}",
        "{name: c, type: similarity, field: a, reference: r}",
    ] {
        let c = check(yaml);
        assert!(c.needs_reference(), "{yaml}");
        let a = json!("x");
        assert_eq!(c.eval(Some(&a), None), None, "{yaml}");
        assert_eq!(c.eval(Some(&a), Some(&Value::Null)), None, "{yaml}");
    }
    // A check without a reference ignores whatever is passed as one.
    let c = check("{name: c, type: equals, field: a, value: x}");
    assert!(!c.needs_reference());
    assert_eq!(c.eval(Some(&json!("x")), None), Some(1.0));
    assert_eq!(c.eval(Some(&json!("x")), Some(&json!("y"))), Some(1.0));
}

#[test]
fn fields_lists_the_field_then_the_reference() {
    let c = check("{name: c, type: token_f1, field: answer, reference: gold}");
    assert_eq!(c.fields().collect::<Vec<_>>(), ["answer", "gold"]);
    assert_eq!(c.name, "c");
    let c = check("{name: c, type: is_json, field: output}");
    assert_eq!(c.fields().collect::<Vec<_>>(), ["output"]);
}

// ---- equals ----

fn assert_err(yaml: &str, name: &str, needles: &[&str]) {
    let e = compile_err(yaml);
    assert!(e.starts_with(&format!("check '{name}': ")), "{e}");
    for n in needles {
        assert!(e.contains(n), "{e:?} lacks {n:?}");
    }
}

#[test]
fn an_unknown_type_lists_the_valid_ones() {
    assert_err(
        "{name: x, type: regexp, field: a, pattern: y}",
        "x",
        &["unknown type 'regexp'", &CHECK_TYPES.join(", ")],
    );
}

#[test]
fn a_key_the_type_does_not_take_is_named() {
    let e = compile_err("{name: x, type: contains, field: a, value: y, pattern: z}");
    assert!(
        e.starts_with("check 'x': 'pattern' does not apply to type contains"),
        "{e}"
    );
    assert!(e.contains("value, any, all, case_sensitive, negate"), "{e}");
    assert_err(
        "{name: x, type: is_json, field: a, case_sensitive: true}",
        "x",
        &["'case_sensitive' does not apply to type is_json"],
    );
    assert_err(
        "{name: x, type: range, field: a, max: 1, unit: words}",
        "x",
        &["'unit' does not apply to type range"],
    );
    assert_err(
        "{name: x, type: exact_match, field: a, reference: r, value: y}",
        "x",
        &["'value' does not apply to type exact_match"],
    );
}

#[test]
fn negate_is_refused_on_continuous_types() {
    for kind in ["token_f1", "similarity"] {
        assert_err(
            &format!("{{name: f, type: {kind}, field: a, reference: r, negate: true}}"),
            "f",
            &[
                &format!("'negate' does not apply to type {kind}"),
                "continuous",
            ],
        );
    }
}

#[test]
fn bad_regexes_and_schemas_report_the_library_error() {
    let e = compile_err("{name: r, type: regex, field: a, pattern: '(unclosed'}");
    assert!(e.starts_with("check 'r': invalid 'pattern': "), "{e}");
    // Built at run time so clippy does not reject the deliberately broken pattern.
    let pattern = String::from("(unclosed");
    let lib = regex::Regex::new(&pattern).unwrap_err().to_string();
    assert!(e.ends_with(&lib), "{e}");
    assert_err(
        "{name: s, type: json_schema, field: a, schema: {type: 12}}",
        "s",
        &["invalid JSON Schema at '/type': "],
    );
    assert_err(
        "{name: s, type: json_schema, field: a, schema: {$ref: '#/$defs/missing'}}",
        "s",
        &["invalid JSON Schema", "/$defs/missing"],
    );
}

#[test]
fn contains_needs_exactly_one_needle_key() {
    assert_err(
        "{name: c, type: contains, field: a, value: x, any: [y]}",
        "c",
        &["exactly one of 'value', 'any', 'all' (got value, any)"],
    );
    assert_err(
        "{name: c, type: contains, field: a}",
        "c",
        &["exactly one of 'value', 'any', 'all' (got none)"],
    );
    assert_err(
        "{name: c, type: contains, field: a, any: []}",
        "c",
        &["'any' is empty"],
    );
    assert_err(
        "{name: c, type: contains, field: a, value: 42}",
        "c",
        &["'value' must be a string for type contains", "got 42"],
    );
}

#[test]
fn missing_required_keys_are_named() {
    for (yaml, msg) in [
        (
            "{name: c, type: equals, field: a}",
            "needs 'value' or 'reference'",
        ),
        (
            "{name: c, type: equals, field: a, value: 1, reference: r}",
            "not both",
        ),
        ("{name: c, type: starts_with, field: a}", "needs 'value'"),
        ("{name: c, type: regex, field: a}", "needs 'pattern'"),
        ("{name: c, type: json_schema, field: a}", "needs 'schema'"),
        (
            "{name: c, type: exact_match, field: a}",
            "type exact_match needs 'reference'",
        ),
        (
            "{name: c, type: token_f1, field: a}",
            "type token_f1 needs 'reference'",
        ),
        (
            "{name: c, type: similarity, field: a}",
            "needs 'reference' or a string 'value'",
        ),
        (
            "{name: c, type: similarity, field: a, value: 3}",
            "'value' must be a string for type similarity",
        ),
        (
            "{name: c, type: length, field: a}",
            "needs 'min', 'max' or both",
        ),
        (
            "{name: c, type: range, field: a, unit: chars}",
            "'unit' does not apply",
        ),
        (
            "{name: c, type: range, field: a}",
            "type range needs 'min', 'max' or both",
        ),
        ("{name: '', type: is_json, field: a}", "'name' is empty"),
        ("{name: c, type: is_json, field: ' '}", "'field' is empty"),
    ] {
        let e = compile_err(yaml);
        assert!(e.starts_with("check '"), "{e}");
        assert!(e.contains(msg), "{yaml}: {e:?} lacks {msg:?}");
    }
}

#[test]
fn bounds_and_units_are_checked() {
    assert_err(
        "{name: c, type: range, field: a, min: 5, max: 1}",
        "c",
        &["'min' (5) is greater than 'max' (1)"],
    );
    assert_err(
        "{name: c, type: length, field: a, min: .nan}",
        "c",
        &["'min' is not a number"],
    );
    assert_err(
        "{name: c, type: length, field: a, max: 3, unit: tokens}",
        "c",
        &["unit 'tokens' is not one of: chars, words"],
    );
}
