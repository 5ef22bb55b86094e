use std::fs::File;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, UInt64Type};
use arrow_array::{Array, RecordBatch};
use evalfleet_model::record::{JudgeId, Metrics, Outcome, ResultRecord, Score, Scores, TargetCall};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::{json, Value};

use super::*;

fn layout() -> ItemsLayout {
    ItemsLayout {
        dimensions: vec!["relevance".into()],
        metrics: vec!["f1".into()],
        group_keys: vec!["model".into()],
        human: vec!["relevance".into()],
    }
}

fn ok(index: u64) -> ResultRecord {
    let mut r = ResultRecord::failed(
        "r",
        "s",
        index,
        Some(index + 1),
        format!("t{index}"),
        String::new(),
    );
    r.outcome = Outcome::Ok;
    r.reason = None;
    r.passed = index.is_multiple_of(2);
    r.fail_tags = if r.passed {
        vec![]
    } else {
        vec!["low_relevance".into(), "short".into()]
    };
    r.overall_score = Some(index as f64);
    let judge = JudgeId {
        provider: "anthropic".into(),
        model: "claude".into(),
    };
    let mut score = Score::scored(4.0, "on topic, \"quoted\"".into(), judge);
    score.human = index.is_multiple_of(2).then_some(5.0);
    r.scores = Scores(vec![("relevance".into(), score)]);
    r.metrics = Metrics(vec![("f1".into(), Some(0.5))]);
    r.group.model = Some("gpt-4o".into());
    r.details.insert("metadata".into(), json!({"lang": "en"}));
    r.usage.input_tokens = 10;
    r.usage.cost_usd = 0.25;
    r
}

fn write(records: &[ResultRecord]) -> tempfile::NamedTempFile {
    let file = tempfile::NamedTempFile::new().unwrap();
    let mut writer = ItemsWriter::new(file.reopen().unwrap(), &layout()).unwrap();
    for r in records {
        writer.push(r).unwrap();
    }
    writer.finish().unwrap();
    file
}

fn read(file: &tempfile::NamedTempFile) -> (Vec<RecordBatch>, usize) {
    let builder =
        ParquetRecordBatchReaderBuilder::try_new(File::open(file.path()).unwrap()).unwrap();
    let groups = builder.metadata().num_row_groups();
    let batches = builder.build().unwrap().map(Result::unwrap).collect();
    (batches, groups)
}

#[test]
fn every_result_is_one_row_with_its_figures_in_flat_columns() {
    let mut failed = ResultRecord::failed("r", "s", 1, Some(2), "t1".into(), "judge 500".into());
    failed.target = Some(TargetCall {
        name: "bot".into(),
        tokens_in: 7,
        ..TargetCall::default()
    });
    let skipped = ResultRecord::skipped("r", "s", 2, Some(3), String::new(), "bad json".into());
    let file = write(&[ok(0), failed, skipped]);
    let (batches, groups) = read(&file);
    assert_eq!(groups, 1);
    let batch = &batches[0];
    assert_eq!(batch.num_rows(), 3);
    let col = |name: &str| {
        batch
            .column_by_name(name)
            .unwrap_or_else(|| panic!("{name}"))
    };
    let text = |name: &str, row: usize| {
        let c = col(name).as_string::<i32>();
        (!c.is_null(row)).then(|| c.value(row).to_owned())
    };
    assert_eq!(text("status", 0).as_deref(), Some("ok"));
    assert_eq!(text("status", 1).as_deref(), Some("failed"));
    assert_eq!(text("reason", 2).as_deref(), Some("bad json"));
    assert_eq!(
        text("relevance.judge", 0).as_deref(),
        Some("anthropic/claude")
    );
    assert_eq!(
        text("relevance.reasoning", 0).as_deref(),
        Some("on topic, \"quoted\"")
    );
    assert_eq!(text("relevance.reasoning", 1), None, "no judge ran");
    assert_eq!(text("group.model", 0).as_deref(), Some("gpt-4o"));
    assert_eq!(text("metadata", 0).as_deref(), Some(r#"{"lang":"en"}"#));
    assert_eq!(text("target.name", 1).as_deref(), Some("bot"));
    let scores = col("relevance.score").as_primitive::<Float64Type>();
    assert_eq!(scores.value(0), 4.0);
    assert!(scores.is_null(1));
    assert_eq!(col("metric.f1").as_primitive::<Float64Type>().value(0), 0.5);
    assert_eq!(col("index").as_primitive::<UInt64Type>().value(2), 2);
    let passed = col("passed").as_boolean();
    assert!(passed.value(0));
    assert!(passed.is_null(1), "only an evaluated item passes or fails");
    assert!(!col("relevance.unscored").as_boolean().value(0));
    let human = col("relevance.human").as_primitive::<Float64Type>();
    assert_eq!(human.value(0), 5.0, "the person's score beside the judge's");
    assert!(human.is_null(1));
    let names: Vec<&str> = batch
        .schema_ref()
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect();
    let at = |n: &str| names.iter().position(|x| *x == n).unwrap();
    assert_eq!(at("relevance.human"), at("relevance.unscored") + 1);
}

#[test]
fn rows_go_out_in_row_groups_in_order() {
    let n = ROWS_PER_GROUP * 2 + 5;
    let records: Vec<ResultRecord> = (0..n as u64).map(ok).collect();
    let file = write(&records);
    let (batches, groups) = read(&file);
    assert_eq!(groups, 3);
    let indexes: Vec<u64> = batches
        .iter()
        .flat_map(|b| {
            let c = b
                .column_by_name("index")
                .unwrap()
                .as_primitive::<UInt64Type>();
            c.values().to_vec()
        })
        .collect();
    assert_eq!(indexes, (0..n as u64).collect::<Vec<_>>());
}

#[test]
fn export_writes_json_lines_and_csv() {
    let file = write(&[ok(0), ok(1)]);
    let mut jsonl = Vec::new();
    assert_eq!(
        export(file.path(), ExportFormat::Jsonl, &mut jsonl).unwrap(),
        2
    );
    let lines: Vec<Value> = String::from_utf8(jsonl)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[1]["id"], "t1");
    assert_eq!(lines[1]["fail_tags"], json!(["low_relevance", "short"]));
    assert_eq!(lines[0]["outputs"], Value::Null, "nulls are written");
    assert_eq!(lines[0]["relevance.score"], 4.0);

    let mut csv = Vec::new();
    export(file.path(), ExportFormat::Csv, &mut csv).unwrap();
    let csv = String::from_utf8(csv).unwrap();
    let mut rows = csv.lines();
    let header: Vec<&str> = rows.next().unwrap().split(',').collect();
    assert_eq!(&header[..3], ["index", "id", "line"]);
    assert!(csv.contains("low_relevance;short"), "{csv}");
    assert!(
        csv.contains("\"on topic, \"\"quoted\"\"\""),
        "quoted as CSV quotes: {csv}"
    );

    let mut copy = Vec::new();
    export(file.path(), ExportFormat::Parquet, &mut copy).unwrap();
    assert_eq!(copy, std::fs::read(file.path()).unwrap());
}

#[test]
fn rows_read_back_with_their_figures_and_reasonings_when_asked() {
    let file = write(&[
        ok(0),
        ResultRecord::skipped("r", "s", 1, Some(2), String::new(), "bad".into()),
    ]);
    let mut rows = Vec::new();
    read_rows(file.path(), true, &mut |r| {
        rows.push(r);
        Ok(())
    })
    .unwrap();
    assert_eq!(rows.len(), 2);
    let first = &rows[0];
    assert_eq!(
        (first.index, first.id.as_str(), first.status.as_str()),
        (0, "t0", "ok")
    );
    assert_eq!(first.passed, Some(true));
    assert_eq!(
        first.scores,
        vec![(
            "relevance".to_owned(),
            Some(4.0),
            Some("on topic, \"quoted\"".to_owned())
        )]
    );
    assert_eq!(first.metrics, vec![("f1".to_owned(), Some(0.5))]);
    assert_eq!(
        first.groups,
        vec![("model".to_owned(), Some("gpt-4o".to_owned()))]
    );
    assert_eq!(rows[1].status, "skipped");
    assert_eq!(rows[1].passed, None);

    let mut without = Vec::new();
    read_rows(file.path(), false, &mut |r| {
        without.push(r);
        Ok(())
    })
    .unwrap();
    assert_eq!(
        without[0].scores,
        vec![("relevance".to_owned(), Some(4.0), None)]
    );
}
