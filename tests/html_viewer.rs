//! `report.html`'s item browser, driven in real headless Chromium through WebDriver
//! (chromedriver + fantoccini): the page loads without script errors, filtering by fail tag, by
//! group and by text gives the counts report.json implies, sorting orders a score column, and
//! clicking a row opens that item's inputs and judge reasoning. The heatmaps are there.
//!
//! chromedriver and Chromium are expected at /usr/bin (Debian `chromium-driver`, `chromium`).
//! When absent the test is skipped with a notice, except under `CI=true`, where it fails.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{available, items, listening, read_json, run_suite, tempdir};
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};

const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const CHROMIUM: &str = "/usr/bin/chromium";

/// chromedriver on a port of its own, killed when dropped.
struct Driver(Child, u16);

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn driver(test: &str) -> Option<Driver> {
    let present = Path::new(CHROMEDRIVER).is_file() && Path::new(CHROMIUM).is_file();
    let fix = "apt-get install chromium chromium-driver";
    if !available(test, "chromedriver and chromium", present, fix) {
        return None;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let child = Command::new(CHROMEDRIVER)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting chromedriver");
    let started = Instant::now();
    while !listening(&format!("127.0.0.1:{port}")) {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "chromedriver did not listen"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    Some(Driver(child, port))
}

async fn browser(driver: &Driver, profile: &Path) -> Client {
    // fantoccini's client is built with rustls, which needs a process-wide crypto provider.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        json!({
            "binary": CHROMIUM,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                     "--no-first-run", "--disable-background-networking",
                     "--disable-component-update", "--disable-sync", "--window-size=1300,1800",
                     format!("--user-data-dir={}", profile.display())],
        }),
    );
    ClientBuilder::rustls()
        .expect("TLS roots")
        .capabilities(caps)
        .connect(&format!("http://127.0.0.1:{}", driver.1))
        .await
        .expect("a WebDriver session")
}

/// Writes the reports of `examples/<dataset>` into `dir` and returns (report.html, report.json).
fn reports(dataset: &str, suite: &str, dir: &Path) -> (PathBuf, Value) {
    let out = dir.join("out");
    let exit = run_suite(Path::new(&format!("examples/{dataset}")), suite, &out, &[]);
    exit.assert_no_panic();
    (out.join("report.html"), read_json(&out.join("report.json")))
}

async fn js(c: &Client, script: &str) -> Value {
    c.execute(script, vec![]).await.expect("script runs")
}

async fn count(c: &Client) -> String {
    c.find(Locator::Css("#count"))
        .await
        .expect("#count")
        .text()
        .await
        .expect("text")
}

/// A browser on the report of a bundled example, loaded without script errors; the driver and
/// the report's directory live as long as it.
struct Opened {
    c: Client,
    report: Value,
    _driver: Driver,
    _dir: tempfile::TempDir,
}

/// [`Opened`] for `test`, or None when the test is skipped (no chromedriver outside CI).
async fn open(test: &str, dataset: &str, suite: &str) -> Option<Opened> {
    let driver = driver(test)?;
    let dir = tempdir();
    let (page, report) = reports(dataset, suite, dir.path());
    let c = browser(&driver, &dir.path().join("profile")).await;
    loaded_without_errors(&c, &page).await;
    Some(Opened {
        c,
        report,
        _driver: driver,
        _dir: dir,
    })
}

async fn loaded_without_errors(c: &Client, page: &Path) {
    c.goto(&format!("file://{}", page.display()))
        .await
        .expect("open report.html");
    assert_eq!(
        js(c, "return window.__viewerReady === true").await,
        json!(true)
    );
    assert_eq!(
        js(c, "return window.__viewerErrors").await,
        json!([]),
        "script errors"
    );
    let heatmaps = js(
        c,
        "return document.querySelectorAll('table.heatmap').length",
    )
    .await;
    assert!(heatmaps.as_u64().unwrap_or(0) >= 1, "no heatmap");
}

#[tokio::test(flavor = "multi_thread")]
async fn support_judge_items_filter_sort_and_open() {
    let Some(Opened {
        c,
        report,
        _driver,
        _dir,
    }) = open(
        "support_judge_items_filter_sort_and_open",
        "support-judge.jsonl",
        "support-judge",
    )
    .await
    else {
        return;
    };
    let results = items(&report);
    assert_eq!(count(&c).await, format!("{0} of {0} items", results.len()));
    let rows = "return document.querySelectorAll('#items-table tbody tr').length";
    assert_eq!(js(&c, rows).await, json!(100), "one page of 100 rows");

    // Filter by fail tag, then also by model: the counts report.json implies.
    let tagged: Vec<&Value> = results
        .iter()
        .filter(|r| {
            r["fail_tags"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t == "low_relevance")
        })
        .collect();
    assert!(!tagged.is_empty());
    c.find(Locator::Css("#f-tag"))
        .await
        .unwrap()
        .select_by_value("low_relevance")
        .await
        .unwrap();
    assert_eq!(
        count(&c).await,
        format!("{} of {} items", tagged.len(), results.len())
    );
    let model = tagged[0]["model"].as_str().unwrap();
    c.find(Locator::Css("#f-g-model"))
        .await
        .unwrap()
        .select_by_value(model)
        .await
        .unwrap();
    let both = tagged.iter().filter(|r| r["model"] == model).count();
    assert_eq!(
        count(&c).await,
        format!("{both} of {} items", results.len())
    );
    for id in ["#f-tag", "#f-g-model"] {
        c.find(Locator::Css(id))
            .await
            .unwrap()
            .select_by_value("")
            .await
            .unwrap();
    }

    // Text search over ids and inputs.
    let target = &results[8];
    let id = target["id"].as_str().unwrap();
    c.find(Locator::Css("#f-search"))
        .await
        .unwrap()
        .send_keys(id)
        .await
        .unwrap();
    assert_eq!(count(&c).await, format!("1 of {} items", results.len()));
    c.find(Locator::Css("#f-search"))
        .await
        .unwrap()
        .clear()
        .await
        .unwrap();
    js(
        &c,
        "document.getElementById('f-search').dispatchEvent(new Event('input'))",
    )
    .await;

    // Sort by relevance: ascending, then descending.
    let column = "return Array.from(document.querySelectorAll('#items-table tbody tr')).map(r => Number(r.children[document.querySelector('th[data-key=\"s:relevance\"]').cellIndex].textContent))";
    for descending in [false, true] {
        c.find(Locator::Css("th[data-key='s:relevance']"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        let values: Vec<f64> = serde_json::from_value(js(&c, column).await).unwrap();
        let mut sorted = values.clone();
        sorted.sort_by(|a, b| a.partial_cmp(b).unwrap());
        if descending {
            sorted.reverse();
        }
        assert_eq!(
            values, sorted,
            "sorted by relevance (descending: {descending})"
        );
    }

    // Open an item: its inputs and the judge's reasoning are shown.
    c.find(Locator::Css("#f-search"))
        .await
        .unwrap()
        .send_keys(id)
        .await
        .unwrap();
    c.find(Locator::Css("#items-table tbody tr"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let panel = c.find(Locator::Css("#detail")).await.unwrap();
    assert!(
        panel.is_displayed().await.unwrap(),
        "the detail panel opens"
    );
    let text = panel.text().await.unwrap();
    let reasoning = target["relevance"]["reasoning"].as_str().unwrap();
    assert!(text.contains(reasoning), "reasoning shown:\n{text}");
    let ticket = target["inputs"]["ticket"].as_str().unwrap();
    assert!(
        text.contains(ticket.lines().next().unwrap()),
        "ticket shown:\n{text}"
    );
    c.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn rag_layers_items_filter_by_fail_tags_and_show_metrics() {
    let Some(Opened {
        c,
        report,
        _driver,
        _dir,
    }) = open(
        "rag_layers_items_filter_by_fail_tags_and_show_metrics",
        "rag-layers.jsonl",
        "rag-layers",
    )
    .await
    else {
        return;
    };
    let all = items(&report);
    let failing = all
        .iter()
        .filter(|r| !r["fail_tags"].as_array().unwrap().is_empty())
        .count();
    assert!(failing > 0 && failing < all.len());
    c.find(Locator::Css("#f-tag"))
        .await
        .unwrap()
        .select_by_value("(any)")
        .await
        .unwrap();
    assert_eq!(count(&c).await, format!("{failing} of {} items", all.len()));
    c.find(Locator::Css("#f-tag"))
        .await
        .unwrap()
        .select_by_value("(none)")
        .await
        .unwrap();
    let passing = all.len() - failing;
    assert_eq!(count(&c).await, format!("{passing} of {} items", all.len()));
    c.find(Locator::Css("#f-outcome"))
        .await
        .unwrap()
        .select_by_value("ok")
        .await
        .unwrap();
    c.find(Locator::Css("#items-table tbody tr"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let text = c
        .find(Locator::Css("#detail"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for expected in ["Metrics and checks", "entity_link_f1", "Inputs", "question"] {
        assert!(text.contains(expected), "{expected} in\n{text}");
    }
    c.close().await.unwrap();
}

/// Polls until the viewer has no request in flight and `#count` reads `want`.
async fn wait_count(c: &Client, want: &str) {
    let started = Instant::now();
    loop {
        let idle = js(
            c,
            "return window.__viewerPending === 0 && !document.body.classList.contains('busy')",
        )
        .await;
        if idle == json!(true) && count(c).await == want {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "#count is '{}', not '{want}' (error: {})",
            count(c).await,
            js(c, "return document.getElementById('error').textContent").await
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Polls until `script` returns true.
async fn wait_for(c: &Client, script: &str) {
    let started = Instant::now();
    while js(c, script).await != json!(true) {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "waited for: {script}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn choose(c: &Client, select: &str, value: &str) {
    c.find(Locator::Css(select))
        .await
        .unwrap_or_else(|_| panic!("{select}"))
        .select_by_value(value)
        .await
        .unwrap();
}

async fn enter_token(c: &Client, token: &str) {
    wait_for(c, "return !document.getElementById('auth').hidden").await;
    c.find(Locator::Css("#token"))
        .await
        .unwrap()
        .send_keys(token)
        .await
        .unwrap();
    c.find(Locator::Css("#auth button"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
}

/// `GET /runs/{id}/view` of an aggregator that requires a token, on a finished fleet run: the
/// page asks for the token (again after a wrong one), then its filters, search, sorting,
/// paging and detail pane show what the item API serves — the counts `evalfleet export`'s rows
/// imply.
#[test]
fn the_run_viewer_asks_for_the_token_and_browses_the_items_api() {
    let test = "the_run_viewer_asks_for_the_token_and_browses_the_items_api";
    let Some(driver) = driver(test) else {
        return;
    };
    let served = common::served::served(200);
    let rows = served.rows.clone();
    let url = format!("http://127.0.0.1:{}/runs/{}/view", served.port, served.run);
    let dir = tempdir();
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    runtime.block_on(async {
        let c = browser(&driver, &dir.path().join("profile")).await;
        c.goto(&url).await.expect("open the viewer");
        enter_token(&c, "not-the-token").await;
        wait_for(&c, "return document.getElementById('auth-error').textContent.includes('refused')").await;
        enter_token(&c, common::served::TOKEN).await;
        wait_for(&c, "return window.__viewerReady === true").await;
        assert_eq!(js(&c, "return window.__viewerErrors").await, json!([]), "script errors");
        let n = rows.len();
        let all = format!("{n} of {n} items");
        wait_count(&c, &all).await;
        let trs = "return document.querySelectorAll('#items-table tbody tr').length";
        assert_eq!(js(&c, trs).await, json!(100), "one page of 100 rows");

        // Status, tag and group filters: the counts of the exported rows.
        let of = |k: usize| format!("{k} of {n} items");
        let skipped = rows.iter().filter(|r| r["status"] == "skipped").count();
        choose(&c, "#f-status", "skipped").await;
        wait_count(&c, &of(skipped)).await;
        choose(&c, "#f-status", "").await;
        let tagged: Vec<&Value> = (rows.iter())
            .filter(|r| r["fail_tags"].as_array().unwrap().iter().any(|t| t == "low_relevance"))
            .collect();
        assert!(!tagged.is_empty());
        choose(&c, "#f-tag", "low_relevance").await;
        wait_count(&c, &of(tagged.len())).await;
        let model = tagged[0]["group.model"].as_str().unwrap();
        choose(&c, "#f-g-model", model).await;
        let both = tagged.iter().filter(|r| r["group.model"] == model).count();
        wait_count(&c, &of(both)).await;
        choose(&c, "#f-tag", "").await;
        choose(&c, "#f-g-model", "").await;
        wait_count(&c, &all).await;

        // Text search: one id (and the skipped record repeating it).
        let target = &rows[8];
        let id = target["id"].as_str().unwrap();
        let search = c.find(Locator::Css("#f-search")).await.unwrap();
        search.send_keys(&id.to_uppercase()).await.unwrap();
        let same = (rows.iter())
            .filter(|r| r["id"].as_str().unwrap().contains(id))
            .count();
        wait_count(&c, &of(same)).await;
        search.clear().await.unwrap();
        js(&c, "document.getElementById('f-search').dispatchEvent(new Event('input'))").await;
        wait_count(&c, &all).await;

        // Sort by relevance: ascending, then descending; unscored rows (null) last.
        let column = "var i = document.querySelector('th[data-key=\"relevance.score\"]').cellIndex; return Array.from(document.querySelectorAll('#items-table tbody tr')).map(r => { var t = r.children[i].textContent; return t === '–' ? null : Number(t); })";
        for descending in [false, true] {
            c.find(Locator::Css("th[data-key='relevance.score']")).await.unwrap().click().await.unwrap();
            let arrow = if descending { "▼" } else { "▲" };
            wait_for(&c, &format!("return document.querySelector('th[data-key=\"relevance.score\"]').textContent.includes('{arrow}') && window.__viewerPending === 0")).await;
            let values: Vec<Option<f64>> = serde_json::from_value(js(&c, column).await).unwrap();
            let scored: Vec<f64> = values.iter().flatten().copied().collect();
            let mut sorted = scored.clone();
            sorted.sort_by(|a, b| a.partial_cmp(b).unwrap());
            if descending {
                sorted.reverse();
            }
            assert_eq!(scored, sorted, "sorted (descending: {descending})");
            let first_null = values.iter().position(Option::is_none).unwrap_or(values.len());
            assert!(values[first_null..].iter().all(Option::is_none), "nulls last");
        }

        // Paging.
        c.find(Locator::Css("#next")).await.unwrap().click().await.unwrap();
        let pages = n.div_ceil(100);
        wait_for(&c, &format!("return document.getElementById('page').textContent === 'page 2 of {pages}' && window.__viewerPending === 0")).await;
        assert_eq!(js(&c, trs).await, json!((n - 100).min(100)));

        // Open an item: its judges' reasoning is shown.
        c.find(Locator::Css("th[data-key='index']")).await.unwrap().click().await.unwrap();
        wait_for(&c, "return document.querySelector('th[data-key=\"index\"]').textContent.includes('▲') && window.__viewerPending === 0").await;
        search.send_keys(id).await.unwrap();
        wait_count(&c, &of(same)).await;
        c.find(Locator::Css("#items-table tbody tr")).await.unwrap().click().await.unwrap();
        let panel = c.find(Locator::Css("#detail")).await.unwrap();
        assert!(panel.is_displayed().await.unwrap(), "the detail pane opens");
        let text = panel.text().await.unwrap();
        let reasoning = target["relevance.reasoning"].as_str().unwrap();
        assert!(text.contains(reasoning), "reasoning shown:\n{text}");
        assert!(text.contains(id), "{text}");

        // The token is asked for once per tab: a reload goes straight to the items.
        c.refresh().await.unwrap();
        wait_for(&c, "return window.__viewerReady === true").await;
        assert_eq!(js(&c, "return document.getElementById('auth').hidden").await, json!(true));
        wait_count(&c, &all).await;
        c.close().await.unwrap();
    });
}
