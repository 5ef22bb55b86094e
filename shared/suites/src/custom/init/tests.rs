//! Tests of `suite init`'s inference and rendering.
use serde_json::json;

use super::infer::*;
use super::*;
use crate::custom::spec::FieldType;
use crate::suite::Suite;
use evalfleet_model::routing::ProviderRules;
use evalfleet_model::suite::SuiteKind;
use serde_json::Value;

fn rules() -> ProviderRules {
    ProviderRules::default()
}

/// CSV-like records: every cell a string, as the CSV reader gives them untyped.
fn csv(header: &[&str], rows: &[&[&str]]) -> (Vec<String>, Vec<Value>) {
    let columns: Vec<String> = header.iter().map(|s| s.to_string()).collect();
    let records = rows
        .iter()
        .map(|r| {
            Value::Object(
                columns
                    .iter()
                    .zip(r.iter())
                    .map(|(c, v)| (c.clone(), json!(v)))
                    .collect(),
            )
        })
        .collect();
    (columns, records)
}

fn infer_csv(header: &[&str], rows: &[&[&str]]) -> Inferred {
    let (columns, records) = csv(header, rows);
    infer(Some(&columns), &records, &rules()).unwrap()
}

fn kind(i: &Inferred, name: &str) -> FieldType {
    i.field(name)
        .unwrap_or_else(|| panic!("no field {name}"))
        .kind
}

/// The rendered suite, loaded by the real loader (templates and checks compiled).
fn load(i: &Inferred) -> (String, Suite) {
    let text = render(
        i,
        "starter",
        "data/x.csv",
        "config/suites/starter.yaml",
        None,
    );
    let suite = Suite::from_yaml(&text, "init")
        .unwrap_or_else(|e| panic!("the starter suite does not load: {e}\n{text}"));
    (text, suite)
}

fn qa_csv() -> Inferred {
    infer_csv(
        &[
            "item_id",
            "question",
            "answer",
            "gold_answer",
            "model",
            "prompt_version",
            "latency_ms",
            "cached",
            "notes",
        ],
        &[
            &[
                "a1",
                "What is 2+2?",
                "4",
                "4",
                "gpt-4o",
                "v1",
                "120",
                "true",
                "x y",
            ],
            &[
                "a2",
                "Capital of France?",
                "Paris",
                "Paris",
                "claude-3-5-haiku",
                "v2",
                "98.5",
                "FALSE",
                "",
            ],
            &[
                "a3",
                "Largest ocean?",
                "The Pacific",
                "Pacific",
                "gpt-4o-mini",
                "v1",
                " 77 ",
                "true",
                "1",
            ],
        ],
    )
}

#[test]
fn csv_types_come_from_the_cell_text() {
    let i = qa_csv();
    assert_eq!(kind(&i, "question"), FieldType::String);
    assert_eq!(kind(&i, "latency_ms"), FieldType::Number);
    assert_eq!(kind(&i, "cached"), FieldType::Bool);
    // "x y" and "1": not all numbers, not all booleans.
    assert_eq!(kind(&i, "notes"), FieldType::String);
    // "4", "Paris": a column with one number among text stays text.
    assert_eq!(kind(&i, "answer"), FieldType::String);
    let i = infer_csv(&["id", "n", "empty"], &[&["1", "", ""], &["2", "3", ""]]);
    assert_eq!(kind(&i, "n"), FieldType::Number, "empty cells do not vote");
    assert_eq!(kind(&i, "empty"), FieldType::String);
    let i = infer_csv(&["id", "x"], &[&["1", "inf"], &["2", "NaN"]]);
    assert_eq!(kind(&i, "x"), FieldType::String, "not finite numbers");
}

#[test]
fn json_types_and_mixed_columns() {
    let records = vec![
        json!({"id": 1, "q": "a", "n": 1, "b": true, "l": [1], "o": {"a": 1}, "m": 1, "z": null}),
        json!({"id": 2, "q": "b", "n": 2.5, "b": false, "l": [], "o": {}, "m": "one", "z": null}),
        json!({"id": 3, "q": "c", "n": null, "extra": "late"}),
    ];
    let i = infer(None, &records, &rules()).unwrap();
    let names: Vec<&str> = i.fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        ["q", "n", "b", "l", "o", "m", "z", "extra"],
        "first appearance order"
    );
    assert_eq!(kind(&i, "q"), FieldType::String);
    assert_eq!(kind(&i, "n"), FieldType::Number);
    assert_eq!(kind(&i, "b"), FieldType::Bool);
    assert_eq!(kind(&i, "l"), FieldType::List);
    assert_eq!(kind(&i, "o"), FieldType::Object);
    assert_eq!(kind(&i, "m"), FieldType::Json, "number and string");
    assert_eq!(kind(&i, "z"), FieldType::Json, "no value at all");
    assert!(!i.csv);
}

#[test]
fn required_means_filled_in_every_record() {
    let i = qa_csv();
    assert!(i.field("question").unwrap().required);
    assert!(i.field("latency_ms").unwrap().required);
    assert!(!i.field("notes").unwrap().required, "one empty cell");
    let records = vec![
        json!({"id": "a", "q": "x", "n": 0, "s": " ", "o": 1}),
        json!({"id": "b", "q": "y", "n": null, "s": "t"}),
    ];
    let i = infer(None, &records, &rules()).unwrap();
    assert!(i.field("q").unwrap().required);
    assert!(!i.field("n").unwrap().required, "null");
    assert!(!i.field("s").unwrap().required, "blank");
    assert!(!i.field("o").unwrap().required, "absent");
}

#[test]
fn the_id_is_id_else_a_name_ending_in_id_else_the_first_column() {
    // Text cells: a number column would not be judged, and these tests are about the id.
    let row: &[&str] = &["1", "b", "c"];
    assert_eq!(infer_csv(&["q", "item_id", "id"], &[row]).id, "id");
    let i = infer_csv(&["q", "item_id", "a"], &[row]);
    assert_eq!(i.id, "item_id");
    assert!(i.field("item_id").is_none(), "the id is not a field");
    assert_eq!(infer_csv(&["q", "ItemID", "a"], &[row]).id, "ItemID");
    let i = infer_csv(&["q", "x", "a"], &[row]);
    assert_eq!(i.id, "q");
    let err = infer(Some(&["id".to_owned()]), &[json!({"id": "1"})], &rules()).unwrap_err();
    assert!(err.contains("no column besides the id 'id'"), "{err}");
    assert!(infer(None, &[json!([1]), json!("x")], &rules()).is_err());
}

#[test]
fn provider_field_needs_half_the_models_routable() {
    let i = qa_csv();
    assert_eq!(i.provider_field.as_deref(), Some("model"));
    let (text, suite) = load(&i);
    assert!(text.contains("has no known provider are skipped"), "{text}");
    assert_eq!(
        suite
            .custom
            .unwrap()
            .spec()
            .record
            .provider_field
            .as_deref(),
        Some("model")
    );
    let half = infer_csv(
        &["id", "answer", "model"],
        &[&["1", "a", "gpt-4o"], &["2", "b", "llama-3"]],
    );
    assert_eq!(half.provider_field.as_deref(), Some("model"));
    let few = infer_csv(
        &["id", "answer", "model"],
        &[
            &["1", "a", "gpt-4o"],
            &["2", "b", "llama-3"],
            &["3", "c", "mistral"],
        ],
    );
    assert_eq!(few.provider_field, None);
    let (text, suite) = load(&few);
    assert!(
        text.contains("judges.default_judges judge every record"),
        "{text}"
    );
    assert_eq!(suite.custom.unwrap().spec().record.provider_field, None);
}

#[test]
fn unsafe_column_names_get_a_safe_name_and_a_path() {
    let i = infer_csv(
        &[
            "id",
            "user question",
            "2nd",
            "if",
            "user_question",
            "a-b.c",
            "ok.",
            "answer",
        ],
        &[&["1", "q", "x", "y", "z", "w", "v", "a"]],
    );
    let names: Vec<(&str, &str)> = i
        .fields
        .iter()
        .map(|f| (f.name.as_str(), f.column.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("user_question_2", "user question"),
            ("_2nd", "2nd"),
            ("if_", "if"),
            ("user_question", "user_question"),
            ("a_b_c", "a-b.c"),
            ("answer", "answer"),
        ]
    );
    assert_eq!(i.unusable, ["ok."]);
    let (text, suite) = load(&i);
    assert!(
        text.contains(r#""_2nd": {type: "string", required: true, path: "2nd"}"#),
        "{text}"
    );
    assert!(
        text.contains("User question: {{ user_question_2 }}"),
        "{text}"
    );
    assert!(text.contains("If: {{ if_ }}"), "{text}");
    let custom = suite.custom.unwrap();
    let rendered = custom
        .parse(
            &json!({"id": "1", "user question": "Q?", "2nd": "s", "if": "i", "user_question": "u",
                    "a-b.c": "w", "answer": "A"}),
            &rules(),
            &suite.group_by,
        )
        .map(|e| custom.render(0, &e).unwrap())
        .unwrap();
    assert!(rendered.contains("User question: Q?"), "{rendered}");
    assert!(rendered.contains("If: i"), "{rendered}");
}

#[test]
fn a_reference_adds_token_f1_and_its_gate() {
    let i = qa_csv();
    assert_eq!(i.reference.as_deref(), Some("gold_answer"));
    assert_eq!(i.judged, "answer");
    let (_, suite) = load(&i);
    let spec = suite.custom.as_ref().unwrap().spec();
    let checks: Vec<(&str, &str)> = spec
        .checks
        .iter()
        .map(|c| (c.name.as_str(), c.kind.as_str()))
        .collect();
    assert_eq!(checks, [("answer_f1", "token_f1"), ("not_empty", "length")]);
    assert_eq!(spec.checks[0].reference.as_deref(), Some("gold_answer"));
    let gates: Vec<(&str, &str, f64)> = suite
        .gates
        .iter()
        .map(|g| (g.tag.as_str(), g.metric.as_str(), g.threshold))
        .collect();
    assert_eq!(
        gates,
        [
            ("low_quality", "quality", 3.0),
            ("wrong_answer", "answer_f1", 0.5)
        ]
    );

    let plain = infer_csv(&["id", "prompt", "output"], &[&["1", "p", "o"]]);
    assert_eq!(plain.reference, None);
    assert_eq!(plain.judged, "output");
    let (_, suite) = load(&plain);
    let spec = suite.custom.as_ref().unwrap().spec();
    assert_eq!(spec.checks.len(), 1);
    assert_eq!(spec.checks[0].kind, "length");
    assert_eq!(suite.gates.len(), 1);
}

#[test]
fn template_groups_and_judged_fallback() {
    let i = qa_csv();
    assert_eq!(i.context, ["question", "notes"]);
    assert_eq!(i.group_by, ["model", "prompt_version"]);
    // `reply` is a judged name, taken before longer text.
    let i = infer_csv(
        &["id", "prompt", "reply", "model", "label"],
        &[
            &["1", "a prompt", "r", "gpt-4o", "g"],
            &["2", "another prompt", "s", "gpt-4o", "h"],
        ],
    );
    assert_eq!(i.judged, "reply");
    assert_eq!(i.reference.as_deref(), Some("label"));
    assert_eq!(i.context, ["prompt"]);
    assert_eq!(i.group_by, Vec::<String>::new(), "one model only");
    // Free text of a small sample is not a grouping; short tokens are.
    let i = infer_csv(
        &["id", "question", "answer", "team"],
        &[
            &["1", "How are you?", "a", "red"],
            &["2", "Who?", "b", "blue"],
        ],
    );
    assert_eq!(i.group_by, ["team"]);
    assert_eq!(i.context, ["question"]);
}

#[test]
fn the_judged_text_is_named_like_an_answer_else_the_longest_free_text() {
    let rows: &[&[&str]] = &[
        &[
            "1",
            "Where is my order?",
            "It ships on Friday from our depot.",
            "Friday",
            "en",
        ],
        &[
            "2",
            "Reset my password",
            "Use the Forgot password link.",
            "Forgot password",
            "fr",
        ],
    ];
    // A name that contains an answer word; the reference (`expected_output` contains `output`)
    // is never the judged text.
    let i = infer_csv(
        &[
            "ticket_id",
            "customer_question",
            "bot_answer",
            "expected_output",
            "lang",
        ],
        rows,
    );
    assert_eq!(i.judged, "bot_answer");
    assert_eq!(i.reference.as_deref(), Some("expected_output"));
    // No such name: the longest text, wherever it is.
    let i = infer_csv(&["id", "title", "body", "gold", "lang"], rows);
    assert_eq!(i.judged, "body");
    assert_eq!(i.context, ["title"]);
    // An exact name beats a containing one, and a number column named like an answer is not
    // judged.
    let i = infer_csv(
        &["id", "answer_count", "my_response", "reply"],
        &[
            &["1", "3", "long text here", "r"],
            &["2", "4", "more text", "s"],
        ],
    );
    assert_eq!(i.judged, "reply");
    assert_eq!(kind(&i, "answer_count"), FieldType::Number);
    let i = infer_csv(
        &["id", "answer", "note"],
        &[&["1", "3", "n"], &["2", "4", "m"]],
    );
    assert_eq!(i.judged, "note");
    // Nothing but numbers: nothing to judge.
    let (columns, records) = csv(&["id", "latency", "ok"], &[&["1", "3", "true"]]);
    let err = infer(Some(&columns), &records, &rules()).unwrap_err();
    assert!(err.contains("no column holds text to judge"), "{err}");
}

#[test]
fn numbers_but_for_a_few_make_a_number_column_that_names_the_others() {
    let mut rows: Vec<Vec<String>> = (0..30)
        .map(|n| vec![n.to_string(), format!("answer {n}"), (100 + n).to_string()])
        .collect();
    rows[3][2] = "abc".into();
    let rows: Vec<Vec<&str>> = rows
        .iter()
        .map(|r| r.iter().map(String::as_str).collect())
        .collect();
    let rows: Vec<&[&str]> = rows.iter().map(Vec::as_slice).collect();
    let i = infer_csv(&["id", "answer", "latency"], &rows);
    let latency = i.field("latency").unwrap();
    assert_eq!(latency.kind, FieldType::Number);
    assert_eq!(latency.not_numbers, [(3, "abc".to_owned())]);
    assert_eq!(latency.not_numbers_count, 1);
    let (text, _) = load(&i);
    assert!(
        text.contains("1 sampled value(s) of this column are not numbers (the first: \"abc\")"),
        "{text}"
    );
    // Two numbers and a word are text; so is a column of words with a few numbers.
    let i = infer_csv(
        &["id", "answer", "v"],
        &[&["1", "a", "1"], &["2", "b", "2"], &["3", "c", "x"]],
    );
    assert_eq!(kind(&i, "v"), FieldType::String);
    assert!(i.field("v").unwrap().not_numbers.is_empty());
    // JSON: numbers with one string among twenty values.
    let records: Vec<Value> = (0..20)
        .map(|n| json!({"id": n, "answer": "a", "cost": if n == 7 { json!("n/a") } else { json!(n) }}))
        .collect();
    let i = infer(None, &records, &rules()).unwrap();
    assert_eq!(kind(&i, "cost"), FieldType::Number);
    assert_eq!(
        i.field("cost").unwrap().not_numbers,
        [(7, "n/a".to_owned())]
    );
}

#[test]
fn a_csv_sample_renders_a_suite_that_loads_and_parses_its_records() {
    let i = qa_csv();
    let (text, suite) = load(&i);
    assert!(
        text.starts_with("# Starter custom suite 'starter'"),
        "{text}"
    );
    assert!(text.contains("evalfleet run data/x.csv --suite config/suites/starter.yaml\n"));
    assert!(text.contains("--judge live"));
    assert!(text.contains("\"Your own suite\""));
    assert_eq!(suite.name, "starter");
    assert_eq!(suite.kind, SuiteKind::Custom);
    assert_eq!(suite.run_gates.min_pass_rate, 0.8);
    assert_eq!(suite.run_gates.max_unscored_rate, 0.05);
    assert_eq!(suite.dimensions.len(), 1);
    assert_eq!((suite.dimensions[0].min, suite.dimensions[0].max), (1, 5));
    let groups: Vec<&str> = suite.group_by.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(groups, ["by_model", "by_prompt_version"]);
    let custom = suite.custom.clone().unwrap();
    assert_eq!(custom.spec().record.id, "item_id");
    assert_eq!(
        custom.spec().judge.dimensions[0].judged.as_deref(),
        Some(&["answer".to_owned()][..])
    );
    // The CSV reader types the cells from the suite's fields, then every record parses.
    let options = suite.read_options(None);
    assert_eq!(options.cells.len(), i.fields.len());
    let record = json!({"item_id": "a1", "question": "What is 2+2?", "answer": "4",
        "gold_answer": "4", "model": "gpt-4o", "prompt_version": "v1", "latency_ms": 120,
        "cached": true, "notes": "x y"});
    let e = custom.parse(&record, &rules(), &suite.group_by).unwrap();
    let prompt = custom.render(0, &e).unwrap();
    assert!(
        prompt.starts_with("Question: What is 2+2?\n\nNotes: x y\n\nAnswer: <answer>"),
        "{prompt}"
    );
}

#[test]
fn a_json_sample_renders_a_suite_that_loads() {
    let records = vec![
        json!({"id": "r1", "input": {"q": "hi"}, "response": "hello", "expected": "hello there",
               "model": "claude-sonnet-4", "score": 0.5, "tags": ["a"]}),
        json!({"id": "r2", "input": {"q": "bye"}, "response": "ciao", "expected": "goodbye",
               "model": "gpt-4o", "score": 1, "tags": []}),
    ];
    let i = infer(None, &records, &rules()).unwrap();
    assert_eq!(i.judged, "response");
    assert_eq!(i.reference.as_deref(), Some("expected"));
    assert_eq!(i.provider_field.as_deref(), Some("model"));
    let (_, suite) = load(&i);
    let custom = suite.custom.clone().unwrap();
    let e = custom
        .parse(&records[0], &rules(), &suite.group_by)
        .unwrap();
    assert_eq!(e.provider.as_deref(), Some("anthropic"));
    assert_eq!(custom.check_metrics(&e, &Default::default()).0 .0.len(), 2);
}

#[test]
fn strange_names_and_values_stay_valid_yaml() {
    let i = infer_csv(
        &["id", "we\"ird: {{x}} #c", "model\u{85}", "answer"],
        &[&["1", "a b", "m", "x"], &["2", "c d", "n", "y"]],
    );
    let (text, suite) = load(&i);
    let name = "dataset\nwith: \"quotes\" and {{ braces }}";
    let text2 = render(&i, name, name, "out #1.yaml", Some("csv"));
    let suite2 = Suite::from_yaml(&text2, "init").unwrap_or_else(|e| panic!("{e}\n{text2}"));
    assert_eq!(suite2.name, name);
    assert!(
        text2.contains("#   evalfleet run 'dataset with: \"quotes\" and {{ braces }}' --format csv --suite 'out #1.yaml'\n"),
        "{text2}"
    );
    assert!(
        text.contains("We\"ird: x c: {{ we_ird____x____c }}"),
        "{text}"
    );
    assert_eq!(suite.custom.unwrap().spec().record.fields.len(), 3);
}
