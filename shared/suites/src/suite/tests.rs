use super::*;
use evalfleet_model::gate::GateOp;

#[test]
fn builtins_load_with_the_design_defaults() {
    let s = Suite::builtin(SuiteKind::SupportJudge);
    assert_eq!(
        s.dimensions
            .iter()
            .map(|d| d.name.as_str())
            .collect::<Vec<_>>(),
        ["relevance", "tone"]
    );
    assert_eq!(
        s.group_by
            .iter()
            .map(|g| g.name.as_str())
            .collect::<Vec<_>>(),
        [
            "by_model",
            "by_prompt_version",
            "by_model_and_prompt_version"
        ]
    );
    let r = Suite::builtin(SuiteKind::RagLayers);
    let tags: Vec<&str> = r.gates.iter().map(|g| g.tag.as_str()).collect();
    assert_eq!(
        tags,
        [
            "L1_mapping_fail",
            "L1_concept_fail",
            "L2_doc_retrieval_fail",
            "L3_kg_fail",
            "L3_edge_fail",
            "L4_constraint_violation",
            "L4_type_inconsistency",
            "L5_wrong_answer",
            "L5_grounding_fail",
            "L5_relevance_fail"
        ]
    );
    assert_eq!(
        r.rag,
        crate::rag::RagOptions::default(),
        "the YAML restates the code defaults"
    );
    assert!(r.dimensions.iter().all(|d| d.unit));
    let l = Suite::builtin(SuiteKind::LogAnalysis);
    assert!(l.dimensions.is_empty());
}

#[test]
fn user_suite_extends_and_overrides() {
    let text = "name: strict\nextends: rag-layers\nrag: {top_k: 5}\ngates:\n  - {tag: L5_wrong_answer, threshold: 0.6}\n  - {tag: L4_type_inconsistency, enabled: false}\n  - {tag: slow, metric: mrr, op: '<', threshold: 0.2}\nrun_gates: {min_pass_rate: 0.9}\n";
    let s = Suite::from_yaml(text, "strict.yaml").unwrap();
    assert_eq!(s.name, "strict");
    assert_eq!(s.kind, SuiteKind::RagLayers);
    assert_eq!(s.rag.top_k, 5);
    let wrong = s.gates.iter().find(|g| g.tag == "L5_wrong_answer").unwrap();
    assert_eq!(
        (wrong.threshold, wrong.op, wrong.metric.as_str()),
        (0.6, GateOp::Below, "answer_f1")
    );
    assert!(!s.gates.iter().any(|g| g.tag == "L4_type_inconsistency"));
    assert_eq!(s.gates.last().unwrap().tag, "slow");
    assert_eq!(s.run_gates.min_pass_rate, 0.9);
    assert_eq!(s.dimensions.len(), 2, "dimensions are inherited");
}

#[test]
fn bad_suite_files_name_the_problem() {
    let err = |t: &str| Suite::from_yaml(t, "s.yaml").unwrap_err().to_string();
    assert!(err("extends: nope\n").contains("'extends: nope' names no built-in suite"));
    assert!(err("extends: rag-layers\ntop_k: 3\n").contains("unknown field `top_k`"));
    assert!(err("extends: rag-layers\ngates: [{tag: new}]\n")
        .contains("gate 'new' is new and needs 'metric'"));
    assert!(err("name: x\n").contains("needs 'extends"));
    assert!(
        err("extends: support-judge\ndimensions: [{name: d, min: 5, max: 1, rubric: r}]\n")
            .contains("min 5 must be below max 1")
    );
    assert!(err("extends: rag-layers\nrag: {top_k: 0}\n").contains("top_k"));
}

#[test]
fn resolve_finds_builtins_files_and_paths() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("mine.yaml"),
        "extends: support-judge\nrun_gates: {min_pass_rate: 0.5}\n",
    )
    .unwrap();
    assert_eq!(
        Suite::resolve("mine", Some(dir.path()))
            .unwrap()
            .run_gates
            .min_pass_rate,
        0.5
    );
    assert_eq!(
        Suite::resolve("log-analysis", Some(dir.path()))
            .unwrap()
            .kind,
        SuiteKind::LogAnalysis
    );
    let path = dir.path().join("mine.yaml");
    assert_eq!(
        Suite::resolve(path.to_str().unwrap(), None).unwrap().kind,
        SuiteKind::SupportJudge
    );
    let err = Suite::resolve("nosuch", Some(dir.path()))
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown suite 'nosuch'"), "{err}");
}

#[test]
fn shipped_example_suite_files_load() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/suites");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        Suite::from_file(&path).unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn compare_section_parses_and_is_inherited() {
    let suite = Suite::from_yaml(
        "extends: support-judge\ncompare:\n  max_drop: {relevance: 0.25, passed: 0.02}\n  lower_is_better: [latency]\n",
        "t.yaml",
    )
    .unwrap();
    assert_eq!(suite.compare.max_drop["relevance"], 0.25);
    assert_eq!(suite.compare.max_drop["passed"], 0.02);
    assert_eq!(suite.compare.lower_is_better, vec!["latency"]);
    assert!(Suite::builtin(SuiteKind::SupportJudge).compare.is_empty());
}

#[test]
fn compare_section_rejects_unknown_keys_and_negative_drops() {
    let err = Suite::from_yaml(
        "extends: support-judge\ncompare:\n  max_dorp: {relevance: 0.25}\n",
        "t.yaml",
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("t.yaml") && err.contains("max_dorp"), "{err}");
    let err = Suite::from_yaml(
        "extends: support-judge\ncompare:\n  max_drop: {relevance: -1}\n",
        "t.yaml",
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("compare.max_drop.relevance is -1"), "{err}");
}

#[test]
fn human_labels_extend_a_built_in_suite_and_errors_name_the_key() {
    let s = Suite::from_yaml(
        "extends: support-judge\nhuman_labels: {relevance: human_relevance, tone: labels.tone}\nrun_gates: {min_human_kappa: 0.6}\n",
        "h.yaml",
    )
    .unwrap();
    assert_eq!(s.human_labels["relevance"], "human_relevance");
    assert_eq!(s.human_labels["tone"], "labels.tone");
    assert_eq!(s.run_gates.min_human_kappa, Some(0.6));
    let err = |text: &str| Suite::from_yaml(text, "h.yaml").unwrap_err().to_string();
    assert!(
        err("extends: support-judge\nhuman_labels: {relevence: h}\n").contains(
            "human_labels: 'relevence' is not a judge dimension of this suite (it has: relevance, tone)"
        ),
        "a typo names the dimensions"
    );
    assert!(err("extends: support-judge\nhuman_labels: {tone: ''}\n")
        .contains("human_labels.tone: '' is not a field name"));
    assert!(
        err("extends: support-judge\nrun_gates: {min_human_kappa: 0.5}\n")
            .contains("run_gates.min_human_kappa needs a dimension with human labels")
    );
    assert!(err(
        "extends: support-judge\nhuman_labels: {tone: t}\nrun_gates: {min_human_kappa: 1.5}\n"
    )
    .contains("run_gates.min_human_kappa 1.5 is not in [-1, 1]"));
    assert!(err("extends: log-analysis\nhuman_labels: {tone: t}\n")
        .contains("'tone' is not a judge dimension of this suite (it has: none)"));
}

#[test]
fn a_custom_dimension_names_its_human_column_and_errors_name_the_key() {
    let suite = |human: &str, template: &str| {
        format!(
            "kind: custom\nrecord:\n  fields:\n    answer: {{type: string, required: true}}\n    h: {{type: number, path: labels.h}}\n    flag: {{type: bool}}\njudge:\n  dimensions:\n    - name: quality\n      scale: {{min: 1, max: 5}}\n      rubric: r\n      template: \"{template}\"\n      human: {human}\n"
        )
    };
    let s = Suite::from_yaml(&suite("h", "{{ answer }}"), "c.yaml").unwrap();
    assert_eq!(s.human_labels["quality"], "labels.h", "the field's path");
    let err = |text: &str| Suite::from_yaml(text, "c.yaml").unwrap_err().to_string();
    assert!(err(&suite("nope", "{{ answer }}"))
        .contains("judge dimension 'quality': human: 'nope' is not a field in record.fields"));
    assert!(err(&suite("flag", "{{ answer }}"))
        .contains("judge dimension 'quality': human: 'flag' is a field of type a boolean"));
    assert!(err(&suite("h", "{{ answer }} {{ h }}")).contains(
        "'h' is in the dimension's template, which would show the judge the people's score"
    ));
    let labelled = format!(
        "{}human_labels: {{quality: h}}\n",
        suite("h", "{{ answer }}")
    );
    assert!(err(&labelled).contains("'human_labels' is for built-in suites"));
}

#[test]
fn a_record_with_a_bad_human_label_is_skipped_after_its_own_fields() {
    let suite = Suite::from_yaml(
        "extends: support-judge\nhuman_labels: {tone: human_tone}\n",
        "h.yaml",
    )
    .unwrap();
    let mut ev = crate::evaluate::Evaluator::new(
        std::sync::Arc::new(suite),
        evalfleet_model::routing::ProviderRules::default(),
        None,
    );
    let rec = |extra: serde_json::Value| {
        let mut v = serde_json::json!({"id": "a", "ticket": "t", "response": "r", "model": "gpt-4o", "prompt_version": "v1"});
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        v
    };
    let ok = ev
        .parse(&rec(serde_json::json!({"human_tone": "4"})))
        .unwrap();
    assert_eq!(ok.human().get("tone"), Some(&4.0));
    let wire = serde_json::to_value(&ok).unwrap();
    assert_eq!(wire["support"]["human"], serde_json::json!({"tone": 4.0}));
    assert!(ev
        .parse(&rec(serde_json::json!({})))
        .unwrap()
        .human()
        .is_empty());
    assert_eq!(
        ev.parse(&rec(serde_json::json!({"human_tone": 9})))
            .unwrap_err(),
        "'human_tone' must be a whole number from 1 to 5 (the human score of 'tone')"
    );
    assert_eq!(
        ev.parse(&rec(serde_json::json!({"human_tone": 9, "ticket": 1})))
            .unwrap_err(),
        "'ticket' must be a string",
        "the suite's own reasons come first"
    );
}
