//! `GET /runs/{id}/items` of a real aggregator, on a run finished by a real fleet (RabbitMQ,
//! Redis, a worker, `submit --wait`): its pages are `evalfleet export`'s rows — the same rows,
//! page after page — and its filters, text search, sorts and totals are those of a plain
//! filter and sort over the exported rows. Bad parameters are 400s naming them, an unknown run
//! a 404, an unfinished one a 409, a request without the token a 401; `/items/facets` lists the
//! tags and groups the rows carry.

mod common;

use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::time::Duration;

use common::served::{self, encode, Served, TOKEN};
use serde_json::Value;

/// The query `text` (`key=value&...`, values not encoded) applied to `rows` in memory: the
/// total and the page.
fn expected(rows: &[Value], text: &str) -> (u64, Vec<Value>) {
    let mut kept: Vec<&Value> = rows.iter().collect();
    let (mut sort, mut offset, mut limit) = (None, 0usize, 100usize);
    for (key, value) in text.split('&').filter_map(|p| p.split_once('=')) {
        match key {
            "status" => kept.retain(|r| r["status"] == value),
            "tag" => kept.retain(|r| {
                r["fail_tags"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|t| t == value)
            }),
            "group" => {
                for (k, v) in value.split(',').filter_map(|p| p.split_once('=')) {
                    kept.retain(|r| r[format!("group.{k}")] == v);
                }
            }
            "q" => {
                let needle = value.to_lowercase();
                kept.retain(|r| {
                    r.as_object().unwrap().iter().any(|(k, v)| {
                        let searched = ["id", "reason", "outputs", "metadata"]
                            .contains(&k.as_str())
                            || k.ends_with(".reasoning");
                        searched
                            && v.as_str()
                                .is_some_and(|t| t.to_lowercase().contains(&needle))
                    })
                })
            }
            "sort" => sort = Some(value.to_owned()),
            "offset" => offset = value.parse().unwrap(),
            "limit" => limit = value.parse().unwrap(),
            other => panic!("{other}"),
        }
    }
    if let Some(sort) = sort {
        let (desc, col) = match sort.strip_prefix('-') {
            Some(c) => (true, c.to_owned()),
            None => (false, sort),
        };
        kept.sort_by(|a, b| {
            let (x, y) = (&a[&col], &b[&col]);
            let by_value = match (x.is_null(), y.is_null()) {
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
            by_value.then(a["index"].as_u64().cmp(&b["index"].as_u64()))
        });
    }
    let total = kept.len() as u64;
    (
        total,
        kept.into_iter().skip(offset).take(limit).cloned().collect(),
    )
}

/// `GET /runs/{run}/items?<text>` with the token: the status and the body as JSON.
fn call(s: &Served, run: &str, text: &str, auth: Option<&str>) -> (u16, Value) {
    let query: Vec<String> = (text.split('&'))
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => format!("{k}={}", encode(v)),
            None => p.to_owned(),
        })
        .collect();
    let path = format!("/runs/{run}/items?{}", query.join("&"));
    let (status, body) = served::get(s.port, &path, auth).expect("GET");
    let json = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"));
    (status, json)
}

fn bearer() -> String {
    format!("Bearer {TOKEN}")
}

fn page(s: &Served, text: &str) -> Value {
    let (status, body) = call(s, &s.run, text, Some(&bearer()));
    assert_eq!(status, 200, "{text}: {body}");
    body
}

#[test]
fn the_item_api_pages_export_rows_filtered_sorted_and_searched() {
    let s = served::served(200);
    let rows = &s.rows;
    let statuses: BTreeSet<&str> = rows.iter().map(|r| r["status"].as_str().unwrap()).collect();
    assert_eq!(
        statuses,
        BTreeSet::from(["ok", "skipped"]),
        "a run with skipped records"
    );

    // Page after page, every row as export wrote it, in dataset order.
    let mut seen = Vec::new();
    for offset in (0..rows.len()).step_by(60) {
        let p = page(&s, &format!("offset={offset}&limit=60"));
        assert_eq!(
            (
                p["total"].as_u64(),
                p["offset"].as_u64(),
                p["limit"].as_u64()
            ),
            (Some(rows.len() as u64), Some(offset as u64), Some(60))
        );
        seen.extend(p["items"].as_array().unwrap().iter().cloned());
    }
    assert_eq!(&seen, rows, "the pages are export's rows");
    assert_eq!(
        page(&s, "")["items"].as_array().unwrap().len(),
        100,
        "limit defaults to 100"
    );

    // Filters, search and sorts: what a plain filter and sort of the rows give.
    let ok = rows.iter().find(|r| r["status"] == "ok").unwrap();
    let tagged = (rows.iter())
        .find(|r| !r["fail_tags"].as_array().unwrap().is_empty())
        .expect("an item failing a gate");
    let tag = tagged["fail_tags"][0].as_str().unwrap();
    let model = ok["group.model"].as_str().unwrap();
    let version = ok["group.prompt_version"].as_str().unwrap();
    let word = (ok["relevance.reasoning"]
        .as_str()
        .unwrap()
        .split_whitespace())
    .max_by_key(|w| w.len())
    .unwrap()
    .to_uppercase();
    let id_part = ok["id"].as_str().unwrap()[2..].to_uppercase();
    let queries = [
        "status=skipped".to_owned(),
        "status=failed".to_owned(),
        "status=ok&offset=150&limit=1000".to_owned(),
        format!("tag={tag}"),
        format!("group=model={model}"),
        format!("group=model={model},prompt_version={version}&tag={tag}&limit=5"),
        format!("q={word}"),
        format!("q={id_part}"),
        "q=missing field".to_owned(),
        "sort=-relevance.score&limit=30".to_owned(),
        "sort=relevance.score&offset=20".to_owned(),
        "sort=-overall_score&status=ok&offset=150".to_owned(),
        "sort=-latency_ms".to_owned(),
        "sort=id&offset=5&limit=10".to_owned(),
        "sort=-index&limit=7".to_owned(),
        format!("sort=-tone.score&group=model={model}&offset=3&limit=8"),
    ];
    for text in &queries {
        let p = page(&s, text);
        let (total, items) = expected(rows, text);
        assert_eq!(p["total"].as_u64(), Some(total), "{text}: total");
        let index = |v: &[Value]| v.iter().map(|r| r["index"].clone()).collect::<Vec<_>>();
        let got = p["items"].as_array().unwrap();
        assert_eq!(index(got), index(&items), "{text}: rows");
        assert_eq!(got, &items, "{text}: row contents");
    }
    assert!(page(&s, &format!("q={word}"))["total"].as_u64().unwrap() > 0);

    // Bad parameters: 400 naming them.
    for (text, param) in [
        ("limit=1001", "limit"),
        ("offset=-1", "offset"),
        ("status=passed", "status"),
        ("sort=nope", "sort"),
        ("sort=fail_tags", "sort"),
        ("group=model", "group"),
        ("group=nokey=x", "group"),
        ("page=2", "query"),
    ] {
        let (status, body) = call(&s, &s.run, text, Some(&bearer()));
        assert_eq!(status, 400, "{text}: {body}");
        assert_eq!(body["parameter"], param, "{text}: {body}");
        assert!(body["error"].as_str().unwrap().starts_with(param), "{body}");
    }
    assert_eq!(
        page(&s, "limit=1000")["items"].as_array().unwrap().len(),
        rows.len()
    );

    // The token, an unknown run.
    for auth in [None, Some("Bearer wrong")] {
        let (status, body) = call(&s, &s.run, "", auth);
        assert_eq!(status, 401, "{body}");
    }
    let (status, _) = call(&s, &format!("{}-nope", s.fleet.prefix), "", Some(&bearer()));
    assert_eq!(status, 404);

    // The facets: every tag and group value the rows carry.
    let path = format!("/runs/{}/items/facets", s.run);
    let (status, body) = served::get(s.port, &path, Some(&bearer())).unwrap();
    assert_eq!(status, 200, "{body}");
    let facets: Value = serde_json::from_str(&body).unwrap();
    let tags: BTreeSet<&str> = (rows.iter())
        .flat_map(|r| {
            r["fail_tags"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_str().unwrap())
        })
        .collect();
    let listed: BTreeSet<&str> = (facets["tags"].as_array().unwrap().iter())
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(listed, tags);
    let models: BTreeSet<&str> = rows
        .iter()
        .filter_map(|r| r["group.model"].as_str())
        .collect();
    let listed: BTreeSet<&str> = (facets["groups"]["model"].as_array().unwrap().iter())
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(listed, models);
    assert_eq!(facets["columns"][0], "index");
}

#[test]
fn a_run_without_its_report_yet_is_a_409() {
    let mut fleet = common::fleet::Fleet::new("");
    let port = served::free_port();
    fleet.aggregator("agg", port);
    // No worker: the run stays running.
    let data = fleet.generate("support-judge", 5, 3);
    let run = format!("{}-open", fleet.prefix);
    fleet.submit(&data, &run, &[]);
    let started = std::time::Instant::now();
    loop {
        match served::get(port, &format!("/runs/{run}/items"), None) {
            Ok((409, body)) => {
                let body: Value = serde_json::from_str(&body).unwrap();
                assert!(
                    body["error"].as_str().unwrap().contains("not complete"),
                    "{body}"
                );
                break;
            }
            other => assert!(
                started.elapsed() < Duration::from_secs(30),
                "{other:?}\n{}",
                fleet.log("agg")
            ),
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}
