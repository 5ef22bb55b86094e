//! Each check type's evaluation of items: what passes, what fails, and what has no value.

use serde_json::json;

use super::tests::{check, close, eval, eval_ref};

#[test]
fn equals_compares_strings_exactly_by_default() {
    let c = check("{name: c, type: equals, field: a, value: Paris}");
    assert_eq!(eval(&c, json!("Paris")), Some(1.0));
    assert_eq!(eval(&c, json!("paris")), Some(0.0));
    assert_eq!(eval(&c, json!("Paris ")), Some(0.0)); // no trimming
    let c = check(r#"{name: c, type: equals, field: a, value: ""}"#);
    assert_eq!(eval(&c, json!("")), Some(1.0));
    assert_eq!(eval(&c, json!(" ")), Some(0.0));
}

#[test]
fn equals_can_ignore_case_including_unicode() {
    let c = check("{name: c, type: equals, field: a, value: ÜBER, case_sensitive: false}");
    assert_eq!(eval(&c, json!("über")), Some(1.0));
    assert_eq!(eval(&c, json!("Über")), Some(1.0));
    assert_eq!(eval(&c, json!("uber")), Some(0.0));
    let c = check("{name: c, type: equals, field: a, reference: r, case_sensitive: false}");
    assert_eq!(eval_ref(&c, json!("PARIS"), json!("paris")), Some(1.0));
    assert_eq!(eval_ref(&c, json!("Ünïcödé"), json!("üNÏCÖDÉ")), Some(1.0));
}

#[test]
fn equals_compares_numbers_numerically() {
    let c = check("{name: c, type: equals, field: a, value: 1}");
    assert_eq!(eval(&c, json!(1)), Some(1.0));
    assert_eq!(eval(&c, json!(1.0)), Some(1.0));
    assert_eq!(eval(&c, json!(1.5)), Some(0.0));
    assert_eq!(eval(&c, json!("1")), Some(0.0)); // a string is not a number
    let c = check("{name: c, type: equals, field: a, reference: r}");
    assert_eq!(eval_ref(&c, json!(-3), json!(-3.0)), Some(1.0));
    // Large integers compare exactly, not through f64 (both round to 2^63 as floats).
    assert_eq!(
        eval_ref(
            &c,
            json!(9_223_372_036_854_775_807_i64),
            json!(9_223_372_036_854_775_806_i64)
        ),
        Some(0.0)
    );
    assert_eq!(eval_ref(&c, json!(u64::MAX), json!(u64::MAX)), Some(1.0));
}

#[test]
fn equals_compares_other_values_as_json() {
    let c = check("{name: c, type: equals, field: a, value: {x: 1, y: [true, null]}}");
    assert_eq!(eval(&c, json!({"y": [true, null], "x": 1})), Some(1.0));
    assert_eq!(eval(&c, json!({"x": 1, "y": [true]})), Some(0.0));
    let c = check("{name: c, type: equals, field: a, value: true, negate: true}");
    assert_eq!(eval(&c, json!(true)), Some(0.0));
    assert_eq!(eval(&c, json!(false)), Some(1.0));
    assert_eq!(eval(&c, json!("true")), Some(1.0));
}

// ---- contains / starts_with ----

#[test]
fn contains_a_value() {
    let c = check("{name: c, type: contains, field: a, value: cat}");
    assert_eq!(eval(&c, json!("the cat sat")), Some(1.0));
    assert_eq!(eval(&c, json!("the Cat sat")), Some(0.0));
    assert_eq!(eval(&c, json!("")), Some(0.0));
    // Non-strings are searched in their JSON text.
    let c = check(r#"{name: c, type: contains, field: a, value: '"k":'}"#);
    assert_eq!(eval(&c, json!({"k": 1})), Some(1.0));
    let c = check(r#"{name: c, type: contains, field: a, value: ""}"#);
    assert_eq!(eval(&c, json!("")), Some(1.0));
}

#[test]
fn contains_case_insensitively_with_unicode() {
    let c = check("{name: c, type: contains, field: a, value: ünïcödé, case_sensitive: false}");
    assert_eq!(eval(&c, json!("Say ÜNÏCÖDÉ!")), Some(1.0));
    assert_eq!(eval(&c, json!("Ünïcödé")), Some(1.0));
    assert_eq!(eval(&c, json!("Unicode")), Some(0.0));
    // The needle is lowercased too.
    let c = check("{name: c, type: contains, field: a, value: SORRY, case_sensitive: false}");
    assert_eq!(eval(&c, json!("I am sorry.")), Some(1.0));
}

#[test]
fn contains_any_and_all() {
    let any = check("{name: c, type: contains, field: a, any: [cat, dog]}");
    let all = check("{name: c, type: contains, field: a, all: [cat, dog]}");
    for (text, want_any, want_all) in [
        ("cat and dog", 1.0, 1.0),
        ("only a dog", 1.0, 0.0),
        ("a bird", 0.0, 0.0),
        ("", 0.0, 0.0),
    ] {
        assert_eq!(eval(&any, json!(text)), Some(want_any), "{text}");
        assert_eq!(eval(&all, json!(text)), Some(want_all), "{text}");
    }
}

#[test]
fn negate_flips_a_pass_fail_result() {
    let c = check(
        r#"{name: no_apology, type: contains, field: answer, value: "sorry", case_sensitive: false, negate: true}"#,
    );
    assert_eq!(eval(&c, json!("Sorry, I cannot.")), Some(0.0));
    assert_eq!(eval(&c, json!("Here it is.")), Some(1.0));
    // An absent field stays absent rather than becoming a pass.
    assert_eq!(c.eval(None, None), None);
    let c = check("{name: c, type: contains, field: a, value: x, negate: false}");
    assert_eq!(eval(&c, json!("x")), Some(1.0));
}

#[test]
fn starts_with_a_prefix() {
    let c = check("{name: c, type: starts_with, field: a, value: 'Answer:'}");
    assert_eq!(eval(&c, json!("Answer: 42")), Some(1.0));
    assert_eq!(eval(&c, json!(" Answer: 42")), Some(0.0));
    assert_eq!(eval(&c, json!("answer: 42")), Some(0.0));
    assert_eq!(eval(&c, json!("")), Some(0.0));
    let c = check("{name: c, type: starts_with, field: a, value: 'ÉTAT', case_sensitive: false}");
    assert_eq!(eval(&c, json!("état civil")), Some(1.0));
    let c = check("{name: c, type: starts_with, field: a, value: '{', negate: true}");
    assert_eq!(eval(&c, json!({"a": 1})), Some(0.0));
    assert_eq!(eval(&c, json!([1])), Some(1.0));
}

// ---- regex ----

#[test]
fn regex_matches_anywhere_unless_anchored() {
    let c = check(r"{name: c, type: regex, field: a, pattern: '\[\d+\]'}");
    assert_eq!(eval(&c, json!("as shown [12].")), Some(1.0));
    assert_eq!(eval(&c, json!("as shown [x].")), Some(0.0));
    let anchored = check(r"{name: c, type: regex, field: a, pattern: '^\d+$'}");
    assert_eq!(eval(&anchored, json!("123")), Some(1.0));
    assert_eq!(eval(&anchored, json!("a 123")), Some(0.0));
    assert_eq!(eval(&anchored, json!(123)), Some(1.0)); // the number's text
    let unanchored = check(r"{name: c, type: regex, field: a, pattern: '\d+'}");
    assert_eq!(eval(&unanchored, json!("a 123")), Some(1.0));
}

#[test]
fn a_regex_that_matches_nothing_scores_zero() {
    let c = check("{name: c, type: regex, field: a, pattern: 'zzz'}");
    assert_eq!(eval(&c, json!("abc")), Some(0.0));
    assert_eq!(eval(&c, json!("")), Some(0.0));
}

#[test]
fn regex_can_ignore_case() {
    let sensitive = check("{name: c, type: regex, field: a, pattern: 'error'}");
    let insensitive =
        check("{name: c, type: regex, field: a, pattern: 'error', case_sensitive: false}");
    assert_eq!(eval(&sensitive, json!("ERROR: x")), Some(0.0));
    assert_eq!(eval(&insensitive, json!("ERROR: x")), Some(1.0));
    let c = check("{name: c, type: regex, field: a, pattern: 'ü', case_sensitive: false}");
    assert_eq!(eval(&c, json!("Ü")), Some(1.0));
    let c = check("{name: c, type: regex, field: a, pattern: 'error', negate: true}");
    assert_eq!(eval(&c, json!("fine")), Some(1.0));
}

// ---- is_json / json_schema ----

#[test]
fn is_json_parses_strings_and_accepts_other_values() {
    let c = check("{name: c, type: is_json, field: a}");
    for ok in [r#"{"a": [1, 2]}"#, "[]", "42", " \"x\" ", "null", "true"] {
        assert_eq!(eval(&c, json!(ok)), Some(1.0), "{ok}");
    }
    for bad in ["", "{", "{'a': 1}", "[1,]", "hello", "{} {}"] {
        assert_eq!(eval(&c, json!(bad)), Some(0.0), "{bad}");
    }
    assert_eq!(eval(&c, json!({"a": 1})), Some(1.0));
    assert_eq!(eval(&c, json!([1])), Some(1.0));
    assert_eq!(eval(&c, json!(3.5)), Some(1.0));
    let c = check("{name: c, type: is_json, field: a, negate: true}");
    assert_eq!(eval(&c, json!("nope")), Some(1.0));
}

#[test]
fn json_schema_validates_values_and_json_strings() {
    let c = check(
        "{name: valid, type: json_schema, field: output, schema: {type: object, required: [name]}}",
    );
    assert_eq!(eval(&c, json!({"name": "x"})), Some(1.0));
    assert_eq!(eval(&c, json!({"other": 1})), Some(0.0));
    assert_eq!(eval(&c, json!(r#"{"name": "x", "age": 3}"#)), Some(1.0));
    assert_eq!(eval(&c, json!(r#"{"age": 3}"#)), Some(0.0));
    assert_eq!(eval(&c, json!("[1, 2]")), Some(0.0));
    // An unparseable string fails rather than being validated as a string.
    assert_eq!(eval(&c, json!(r#"{"name": "#)), Some(0.0));
    assert_eq!(eval(&c, json!("")), Some(0.0));
    // A string schema: the JSON string "\"x\"" is parsed to "x" first.
    let s = check("{name: c, type: json_schema, field: a, schema: {type: string}}");
    assert_eq!(eval(&s, json!("\"x\"")), Some(1.0));
    assert_eq!(eval(&s, json!("x")), Some(0.0));
}

#[test]
fn json_schema_resolves_local_refs() {
    let yaml = r##"
name: c
type: json_schema
field: a
schema:
  $defs:
    item: {type: object, required: [id], properties: {id: {type: integer}}}
  definitions:
    tag: {type: string, minLength: 1}
  type: object
  properties:
    items: {type: array, items: {$ref: '#/$defs/item'}}
    tags: {type: array, items: {$ref: '#/definitions/tag'}}
  required: [items]
"##;
    let c = check(yaml);
    assert_eq!(
        eval(&c, json!({"items": [{"id": 1}, {"id": 2}]})),
        Some(1.0)
    );
    assert_eq!(eval(&c, json!({"items": [{"id": "1"}]})), Some(0.0));
    assert_eq!(eval(&c, json!({"items": [{}]})), Some(0.0));
    assert_eq!(eval(&c, json!({"items": [], "tags": ["a"]})), Some(1.0));
    assert_eq!(eval(&c, json!({"items": [], "tags": [""]})), Some(0.0));
    assert_eq!(eval(&c, json!(r#"{"items": [{"id": 7}]}"#)), Some(1.0));
}

#[test]
fn json_schema_negated() {
    let c = check("{name: c, type: json_schema, field: a, schema: {type: array}, negate: true}");
    assert_eq!(eval(&c, json!([1])), Some(0.0));
    assert_eq!(eval(&c, json!({"a": 1})), Some(1.0));
}

// ---- exact_match / token_f1 ----

#[test]
fn exact_match_is_squad_style() {
    let c = check("{name: c, type: exact_match, field: a, reference: r}");
    assert_eq!(
        eval_ref(&c, json!("  The Cat!"), json!("the cat")),
        Some(1.0)
    );
    assert_eq!(
        eval_ref(&c, json!("the cat sat"), json!("the cat")),
        Some(0.0)
    );
    assert_eq!(eval_ref(&c, json!(""), json!("")), Some(1.0));
    assert_eq!(eval_ref(&c, json!(""), json!("x")), Some(0.0));
    assert_eq!(eval_ref(&c, json!(42), json!("42")), Some(1.0)); // text of the number
    let c = check("{name: c, type: exact_match, field: a, reference: r, negate: true}");
    assert_eq!(eval_ref(&c, json!("a"), json!("b")), Some(1.0));
}

#[test]
fn token_f1_of_a_partial_overlap() {
    let c = check("{name: c, type: token_f1, field: a, reference: r}");
    // pred [the cat sat], gold [the cat]: common 2, P = 2/3, R = 1, F1 = 2·(2/3)/(5/3) = 0.8.
    assert!(close(
        eval_ref(&c, json!("the cat sat"), json!("the cat")),
        0.8
    ));
    assert!(close(
        eval_ref(&c, json!("The Cat"), json!("the cat.")),
        1.0
    ));
    assert!(close(eval_ref(&c, json!("dog"), json!("the cat")), 0.0));
    assert!(close(eval_ref(&c, json!(""), json!("")), 1.0));
    assert!(close(eval_ref(&c, json!(""), json!("cat")), 0.0));
}

#[test]
fn token_f1_keeps_hangul_tokens() {
    let c = check("{name: c, type: token_f1, field: a, reference: r}");
    // pred [서울은 수도이다] (2), gold [서울은 한국의 수도이다] (3): common 2,
    // P = 1, R = 2/3, F1 = 2·(2/3)/(5/3) = 0.8.
    assert!(close(
        eval_ref(
            &c,
            json!("서울은 수도이다."),
            json!("서울은 한국의 수도이다")
        ),
        0.8
    ));
    // A particle makes a different token: "서울" ≠ "서울은".
    assert!(close(eval_ref(&c, json!("서울"), json!("서울은")), 0.0));
}

// ---- similarity ----

#[test]
fn similarity_is_normalised_levenshtein() {
    let c = check("{name: c, type: similarity, field: a, reference: r}");
    // kitten → sitting: 3 edits over 7 characters.
    assert!(close(
        eval_ref(&c, json!("kitten"), json!("sitting")),
        1.0 - 3.0 / 7.0
    ));
    assert!(close(eval_ref(&c, json!(""), json!("")), 1.0));
    assert!(close(eval_ref(&c, json!("abc"), json!("")), 0.0));
    assert!(close(eval_ref(&c, json!("abc"), json!("abc")), 1.0));
    assert!(close(
        eval_ref(&c, json!("Abc"), json!("abc")),
        1.0 - 1.0 / 3.0
    ));
    // Characters, not bytes: "héllo" vs "hello" is one edit over five.
    assert!(close(eval_ref(&c, json!("héllo"), json!("hello")), 0.8));
}

#[test]
fn similarity_to_a_value_and_case_insensitively() {
    let c = check("{name: c, type: similarity, field: a, value: Kitten, case_sensitive: false}");
    assert!(close(eval(&c, json!("SITTING")), 1.0 - 3.0 / 7.0));
    assert!(close(eval(&c, json!("kITTEN")), 1.0));
    let c = check("{name: c, type: similarity, field: a, reference: r, case_sensitive: false}");
    assert!(close(eval_ref(&c, json!("ÜBER"), json!("über")), 1.0));
}

// ---- length ----

#[test]
fn length_counts_unicode_characters() {
    let c = check("{name: c, type: length, field: a, min: 5, max: 5}");
    assert_eq!(eval(&c, json!("héllo")), Some(1.0)); // 5 chars, 6 bytes
    assert_eq!(eval(&c, json!("hello!")), Some(0.0));
    assert_eq!(eval(&c, json!("안녕하세요")), Some(1.0));
    let c = check("{name: c, type: length, field: a, max: 0}");
    assert_eq!(eval(&c, json!("")), Some(1.0));
    assert_eq!(eval(&c, json!(" ")), Some(0.0));
    let c = check("{name: c, type: length, field: a, min: 2, unit: chars}");
    assert_eq!(eval(&c, json!(42)), Some(1.0)); // "42"
    assert_eq!(eval(&c, json!(7)), Some(0.0));
}

#[test]
fn length_in_words_is_inclusive() {
    let c = check("{name: c, type: length, field: a, min: 2, max: 3, unit: words}");
    for (text, want) in [
        ("", 0.0),
        ("one", 0.0),
        ("one two", 1.0),
        ("  one\ttwo\nthree  ", 1.0),
        ("one two three four", 0.0),
    ] {
        assert_eq!(eval(&c, json!(text)), Some(want), "{text:?}");
    }
    let c = check("{name: c, type: length, field: a, max: 100, unit: words, negate: true}");
    assert_eq!(eval(&c, json!("short")), Some(0.0));
}

// ---- range ----

#[test]
fn range_is_inclusive_and_accepts_numeric_strings() {
    let c = check("{name: fast, type: range, field: latency_ms, max: 2000}");
    assert_eq!(eval(&c, json!(2000)), Some(1.0));
    assert_eq!(eval(&c, json!(2000.5)), Some(0.0));
    assert_eq!(eval(&c, json!(-1)), Some(1.0));
    assert_eq!(eval(&c, json!("1500")), Some(1.0));
    assert_eq!(eval(&c, json!(" 1.5e3 ")), Some(1.0));
    assert_eq!(eval(&c, json!("2500")), Some(0.0));
    let c = check("{name: c, type: range, field: a, min: 0, max: 1}");
    assert_eq!(eval(&c, json!(0)), Some(1.0));
    assert_eq!(eval(&c, json!(1.0)), Some(1.0));
    assert_eq!(eval(&c, json!(1.0000001)), Some(0.0));
    let c = check("{name: c, type: range, field: a, min: 3, max: 3}");
    assert_eq!(eval(&c, json!(3)), Some(1.0));
}

#[test]
fn range_fails_a_non_number_even_when_negated() {
    let c = check("{name: c, type: range, field: a, min: 0, max: 10}");
    let negated = check("{name: c, type: range, field: a, min: 0, max: 10, negate: true}");
    for bad in [
        json!("fast"),
        json!(""),
        json!("inf"),
        json!("NaN"),
        json!(true),
        json!([1]),
        json!({"ms": 1}),
    ] {
        assert_eq!(eval(&c, bad.clone()), Some(0.0), "{bad}");
        assert_eq!(eval(&negated, bad.clone()), Some(0.0), "{bad}");
    }
    assert_eq!(eval(&negated, json!(11)), Some(1.0));
    assert_eq!(eval(&negated, json!(5)), Some(0.0));
}

// ---- compile errors ----
