//! Every query is checked against a plain reference: the file's rows as `export` writes them,
//! filtered, sorted and sliced in memory.

use std::cmp::Ordering;
use std::path::Path;
use std::time::Duration;

use evalfleet_model::record::{JudgeId, Metrics, Outcome, ResultRecord, Score, Scores};
use serde_json::{json, Value};

use super::*;
use crate::{export, ExportFormat, ItemsLayout, ItemsWriter};

fn layout() -> ItemsLayout {
    ItemsLayout {
        dimensions: vec!["relevance".into(), "tone".into()],
        metrics: vec!["f1".into()],
        group_keys: vec!["model".into(), "prompt_version".into()],
        human: vec![],
    }
}

const MODELS: [&str; 3] = ["gpt-4o", "claude", "Mistral Large"];

/// Row `i`: a mix of statuses, tags, groups, null and tied scores, texts to search.
fn record(i: u64) -> ResultRecord {
    let id = format!("item-{i:05}");
    match i % 23 {
        5 => return ResultRecord::failed("r", "s", i, Some(i + 1), id, "judge 500".into()),
        11 => return ResultRecord::skipped("r", "s", i, None, id, "bad JSON at col 3".into()),
        _ => {}
    }
    let mut r = ResultRecord::failed("r", "s", i, Some(i + 1), id, String::new());
    r.outcome = Outcome::Ok;
    r.reason = None;
    let low = i.is_multiple_of(7);
    r.passed = !low && !i.is_multiple_of(13);
    r.fail_tags = match (low, i.is_multiple_of(13)) {
        (true, true) => vec!["low_relevance".into(), "rude".into()],
        (true, false) => vec!["low_relevance".into()],
        (false, true) => vec!["rude".into()],
        _ => vec![],
    };
    r.overall_score = (!i.is_multiple_of(17)).then(|| (i % 10) as f64 / 10.0);
    let judge = JudgeId {
        provider: "heuristic".into(),
        model: "heuristic".into(),
    };
    let relevance = if i.is_multiple_of(19) {
        Score::unscored(judge.clone(), "no reply".into())
    } else {
        let why = if i.is_multiple_of(101) {
            "Cites the REFUND policy".to_owned()
        } else {
            format!("covers {} keywords", i % 9)
        };
        Score::scored((1 + i % 5) as f64, why, judge.clone())
    };
    let tone = Score::scored(
        if i.is_multiple_of(3) { 5.0 } else { 4.0 },
        "polite".into(),
        judge,
    );
    r.scores = Scores(vec![("relevance".into(), relevance), ("tone".into(), tone)]);
    r.metrics = Metrics(vec![(
        "f1".into(),
        (!i.is_multiple_of(4)).then(|| (i % 50) as f64 / 50.0),
    )]);
    r.group.model = Some(MODELS[(i % 3) as usize].into());
    r.group.prompt_version = (!i.is_multiple_of(5)).then(|| format!("v{}", i % 2));
    if i.is_multiple_of(250) {
        r.details.insert(
            "metadata".into(),
            json!({"lang": "de", "note": "Übergröße"}),
        );
    }
    r.latency_ms = ((i * 7919) % 1000) as f64;
    r
}

fn write(path: &Path, n: u64, shift: u64) {
    let file = std::fs::File::create(path).unwrap();
    let mut writer = ItemsWriter::new(file, &layout()).unwrap();
    for i in 0..n {
        let mut r = record(i);
        r.latency_ms += shift as f64;
        writer.push(&r).unwrap();
    }
    writer.finish().unwrap();
}

/// 20,000 rows: three row groups.
const ROWS: u64 = 20_000;

fn table() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join("items.parquet"), ROWS, 0);
    dir
}

fn exported(path: &Path) -> Vec<Value> {
    let mut out = Vec::new();
    export(path, ExportFormat::Jsonl, &mut out).unwrap();
    String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn text(v: &Value) -> Option<&str> {
    v.as_str()
}

/// The reference: `q` applied to `rows` in memory.
fn expected(rows: &[Value], q: &ItemQuery) -> (u64, Vec<Value>) {
    let needle = q.q.as_ref().map(|n| n.to_lowercase());
    let mut kept: Vec<&Value> = rows
        .iter()
        .filter(|r| q.status.as_deref().is_none_or(|s| r["status"] == s))
        .filter(|r| {
            q.tag
                .as_deref()
                .is_none_or(|t| r["fail_tags"].as_array().unwrap().iter().any(|x| x == t))
        })
        .filter(|r| q.group.iter().all(|(k, v)| r[format!("group.{k}")] == **v))
        .filter(|r| {
            needle.as_deref().is_none_or(|n| {
                let o = r.as_object().unwrap();
                o.iter()
                    .filter(|(k, _)| {
                        ["id", "reason", "outputs", "metadata"].contains(&k.as_str())
                            || k.ends_with(".reasoning")
                    })
                    .filter_map(|(_, v)| text(v))
                    .any(|t| t.to_lowercase().contains(n))
            })
        })
        .collect();
    if let Some(sort) = &q.sort {
        let (desc, col) = match sort.strip_prefix('-') {
            Some(c) => (true, c),
            None => (false, sort.as_str()),
        };
        kept.sort_by(|a, b| {
            let (x, y) = (&a[col], &b[col]);
            let c = match (x.is_null(), y.is_null()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                _ => {
                    let c = match (x, y) {
                        (Value::String(x), Value::String(y)) => x.as_bytes().cmp(y.as_bytes()),
                        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
                        _ => x.as_f64().unwrap().total_cmp(&y.as_f64().unwrap()),
                    };
                    if desc {
                        c.reverse()
                    } else {
                        c
                    }
                }
            };
            c.then(a["index"].as_u64().cmp(&b["index"].as_u64()))
        });
    }
    let total = kept.len() as u64;
    let page = kept
        .into_iter()
        .skip(q.offset as usize)
        .take(q.limit)
        .cloned()
        .collect();
    (total, page)
}

fn params(text: &str) -> ItemQuery {
    let pairs: Vec<(&str, &str)> = text
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| p.split_once('=').unwrap_or((p, "")))
        .collect();
    ItemQuery::from_params(pairs).unwrap()
}

/// Checks `query` against the reference; a sorted page deeper than `window` from both ends of
/// its result must be refused naming `offset` instead.
fn check(cache: &ItemsCache, window: u64, path: &Path, rows: &[Value], query: &str) {
    let q = params(query);
    let want = expected(rows, &q);
    check_with(cache, window, path, &want, query);
}

fn check_with(
    cache: &ItemsCache,
    window: u64,
    path: &Path,
    (total, items): &(u64, Vec<Value>),
    query: &str,
) {
    let (total, items) = (*total, items);
    let q = params(query);
    let sorted = q
        .sort
        .as_deref()
        .is_some_and(|s| s.trim_start_matches('-') != "index");
    let end = q.offset + q.limit as u64;
    if sorted && q.limit > 0 && end > window && q.offset < total && total - q.offset > window {
        let err = cache.query(path, &q).unwrap_err();
        assert!(
            matches!(
                err,
                ItemsError::Query {
                    param: "offset",
                    ..
                }
            ),
            "{query}: {err}"
        );
        return;
    }
    let page = cache
        .query(path, &q)
        .unwrap_or_else(|e| panic!("{query}: {e}"));
    assert_eq!(page.total, total, "{query}: total");
    assert_eq!((page.offset, page.limit), (q.offset, q.limit), "{query}");
    let ids = |v: &[Value]| v.iter().map(|r| r["index"].clone()).collect::<Vec<_>>();
    assert_eq!(ids(&page.items), ids(items), "{query}: rows");
    assert_eq!(&page.items, items, "{query}: row contents");
}

const QUERIES: &[&str] = &[
    "",
    "offset=8150&limit=100",
    "offset=19950&limit=1000",
    "offset=25000",
    "limit=0",
    "sort=-index&offset=3",
    "status=failed",
    "status=skipped&offset=300&limit=500",
    "status=ok&tag=rude&offset=100",
    "tag=low_relevance&group=model=claude",
    "group=model=Mistral Large,prompt_version=v1&limit=1000",
    "group=prompt_version=v0&sort=-latency_ms&offset=1000",
    "q=refund",
    "q=ÜBERGRÖSSE",
    "q=ITEM-0001&sort=-relevance.score",
    "q=bad json",
    "sort=relevance.score&offset=15000",
    "sort=-relevance.score",
    "sort=-relevance.score&offset=19900&limit=1000",
    "sort=overall_score&offset=19000&limit=1000",
    "sort=-metric.f1&status=ok",
    "sort=id&offset=17",
    "sort=-id",
    "sort=group.model&limit=300",
    "sort=-group.prompt_version&offset=9000",
    "sort=passed&tag=rude",
    "sort=-reason&limit=30",
    "status=ok&sort=-index&offset=7000&limit=1000",
    "status=failed&limit=0",
    "status=ok&sort=tone.score&limit=0",
];

#[test]
fn every_query_gives_the_rows_a_plain_filter_and_sort_give() {
    let dir = table();
    let path = dir.path().join("items.parquet");
    let rows = exported(&path);
    assert_eq!(rows.len() as u64, ROWS);
    // Each first page waits for its count, so totals are exact whatever the machine's load
    // (`a_first_page_need_not_wait_for_its_count` tests the other way).
    let exact = |cache: ItemsCache| cache.with_count_wait(Duration::MAX);
    let caches = [
        (exact(ItemsCache::default()), SORT_WINDOW),
        (exact(ItemsCache::new(0)), SORT_WINDOW),
        // Bounds small enough to reach: the deep pages of a filter in descending dataset order
        // and of a sort take their other roads.
        (exact(ItemsCache::bounded(3000, 500, 2500)), 2500),
    ];
    // Paging through one result, forwards and back, as the cache serves it.
    let paged = [
        "status=ok&sort=-latency_ms",
        "tag=rude",
        "q=keywords&sort=-index",
    ]
    .iter()
    .flat_map(|q| [0, 100, 200, 2400, 2500, 9000, 12000, 100].map(|o| format!("{q}&offset={o}")));
    for query in QUERIES.iter().map(|q| q.to_string()).chain(paged) {
        let want = expected(&rows, &params(&query));
        for (cache, window) in &caches {
            check_with(cache, *window, &path, &want, &query);
        }
    }
    // Through the function without a cache, too.
    let q = params("status=ok&sort=-tone.score&offset=40");
    let (total, items) = expected(&rows, &q);
    let page = query(&path, &q).unwrap();
    assert_eq!((page.total, page.items), (total, items));
}

#[test]
fn a_first_page_need_not_wait_for_its_count() {
    let dir = table();
    let path = dir.path().join("items.parquet");
    let rows = exported(&path);
    let cache = ItemsCache::default().with_count_wait(Duration::ZERO);
    for query in ["q=refund", "tag=rude&offset=50", "status=ok&limit=1000"] {
        let q = params(query);
        let (total, items) = expected(&rows, &q);
        let page = cache.query(&path, &q).unwrap();
        assert_eq!(page.items, items, "{query}: the page is whole");
        if !page.total_exact {
            let end = (q.offset + q.limit as u64).min(total);
            assert!(
                (end..=total).contains(&page.total),
                "{query}: a lower bound"
            );
        }
        // The count goes on in the background; a later request has it, exact.
        let counted = (0..500).find_map(|_| {
            let page = cache.query(&path, &q).unwrap();
            if page.total_exact {
                return Some(page.total);
            }
            std::thread::sleep(Duration::from_millis(10));
            None
        });
        assert_eq!(counted, Some(total), "{query}");
    }
}

#[test]
fn a_sorted_page_deep_in_the_middle_of_a_long_result_is_refused_naming_offset() {
    let dir = table();
    let path = dir.path().join("items.parquet");
    let cache = ItemsCache::bounded(3000, 500, 2500);
    let rows = exported(&path);
    // Within the window of either end: served.
    check(&cache, 2500, &path, &rows, "sort=-latency_ms&offset=2400");
    check(&cache, 2500, &path, &rows, "sort=-latency_ms&offset=17600");
    let err = cache
        .query(&path, &params("sort=-latency_ms&offset=9000"))
        .unwrap_err();
    assert!(
        matches!(
            err,
            ItemsError::Query {
                param: "offset",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn nulls_come_last_either_way_and_ties_go_in_dataset_order() {
    let dir = table();
    let path = dir.path().join("items.parquet");
    for sort in ["overall_score", "-overall_score"] {
        let q = params(&format!("sort={sort}&limit=1000&offset=19000"));
        let page = query(&path, &q).unwrap();
        let last = page.items.last().unwrap();
        assert!(last["overall_score"].is_null(), "{sort}: nulls last");
        let first = query(&path, &params(&format!("sort={sort}&limit=5"))).unwrap();
        let idx: Vec<u64> = (first.items.iter())
            .map(|r| r["index"].as_u64().unwrap())
            .collect();
        let mut sorted = idx.clone();
        sorted.sort();
        assert_eq!(idx, sorted, "{sort}: ties in dataset order");
        let want = if sort.starts_with('-') { 0.9 } else { 0.0 };
        assert_eq!(first.items[0]["overall_score"], json!(want), "{sort}");
    }
}

#[test]
fn parameters_are_read_with_defaults_and_limits() {
    let q = ItemQuery::from_params([]).unwrap();
    assert_eq!(q, ItemQuery::default());
    assert_eq!((q.offset, q.limit), (0, DEFAULT_LIMIT));
    let q = params("status=&tag=&q=&group=&sort=&limit=1000&offset=5");
    assert_eq!(
        (q.filtered(), q.sort, q.limit, q.offset),
        (false, None, 1000, 5)
    );
    let q = params("group=model=a=b, prompt_version=v1");
    assert_eq!(
        q.group,
        vec![
            ("model".into(), "a=b".into()),
            ("prompt_version".into(), "v1".into())
        ]
    );
    let refused = [
        ("limit=1001", "limit"),
        ("limit=-1", "limit"),
        ("limit=ten", "limit"),
        ("offset=-5", "offset"),
        ("status=passed", "status"),
        ("group=model", "group"),
        ("group=model=a,", "group"),
        ("group==x", "group"),
        ("sort=-", "sort"),
        ("status=ok&status=failed", "status"),
        ("page=2", "query"),
    ];
    for (text, param) in refused {
        let pairs: Vec<(&str, &str)> = text
            .split('&')
            .map(|p| p.split_once('=').unwrap_or((p, "")))
            .collect();
        match ItemQuery::from_params(pairs) {
            Err(ItemsError::Query { param: p, message }) => {
                assert_eq!(p, param, "{text}: {message}")
            }
            other => panic!("{text}: {other:?}"),
        }
    }
}

#[test]
fn unknown_columns_are_errors_naming_the_parameter() {
    let dir = table();
    let path = dir.path().join("items.parquet");
    let cases = [
        ("sort=nope", "sort"),
        ("sort=-fail_tags", "sort"),
        ("group=domain=x", "group"),
    ];
    for (text, param) in cases {
        match query(&path, &params(text)) {
            Err(ItemsError::Query { param: p, message }) => {
                assert_eq!(p, param, "{text}: {message}");
                assert!(message.contains('\''), "{message}");
            }
            other => panic!("{text}: {other:?}"),
        }
    }
    let missing = query(&dir.path().join("none.parquet"), &ItemQuery::default());
    assert!(matches!(missing, Err(ItemsError::Io { .. })));
}

#[test]
fn a_rewritten_file_is_read_afresh() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("items.parquet");
    write(&path, 9000, 0);
    let cache = ItemsCache::default();
    let q = params("sort=-latency_ms&limit=3");
    let before = cache.query(&path, &q).unwrap();
    assert_eq!(before.total, 9000);
    // Same name, other rows (and another length, so the change is seen whatever the clock).
    write(&path, 9500, 5000);
    let after = cache.query(&path, &q).unwrap();
    assert_eq!(after.total, 9500);
    assert_eq!(after.items, expected(&exported(&path), &q).1);
}

#[test]
fn facets_list_columns_tags_and_group_values() {
    let dir = table();
    let path = dir.path().join("items.parquet");
    let facets = ItemsCache::default().facets(&path).unwrap();
    assert_eq!(facets.tags, vec!["low_relevance", "rude"]);
    assert_eq!(
        facets.groups["model"],
        vec!["Mistral Large", "claude", "gpt-4o"]
    );
    assert_eq!(facets.groups["prompt_version"], vec!["v0", "v1"]);
    assert_eq!(&facets.columns[..3], ["index", "id", "line"]);
    assert!(facets.columns.contains(&"metric.f1".to_owned()));
    assert!(!facets.truncated);
}

#[test]
fn pruning_by_statistics_finds_the_rows_a_full_scan_finds_at_both_ends() {
    let dir = table();
    let path = dir.path().join("items.parquet");
    let table = table::Table::open(&path).unwrap();
    assert!(table.starts.len() > 3, "several row groups");
    let pages = bounds::units(&table, "latency_ms", true, false).expect("a page index");
    assert!(
        pages.len() > 2 * (table.starts.len() - 1),
        "pages, not row groups"
    );
    for filter in ["", "status=ok", "tag=rude"] {
        let f = filter::Filter::resolve(&params(filter), table.schema()).unwrap();
        // latency_ms has nulls (the skipped rows): they come last, so first when flipped.
        for column in ["latency_ms", "overall_score", "relevance.score"] {
            for desc in [false, true] {
                for k in [1, 100, 2500, 8200, 19_000] {
                    for flip in [false, true] {
                        let what = format!("{filter} {column} desc={desc} k={k} flip={flip}");
                        let full = scan::sorted(&table, &path, &f, column, desc, k, flip).unwrap();
                        let (pruned, _, _) =
                            scan::sorted_pruned(&table, &path, &f, (column, desc), k, flip)
                                .unwrap()
                                .expect("statistics");
                        assert_eq!(full.segments[0].positions, pruned, "{what}");
                    }
                }
            }
        }
    }
}
