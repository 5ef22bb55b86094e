//! `report.html` renders in a real browser: headless Chromium loads the generated page of the
//! support-judge and rag-layers examples, its DOM has the title, the SVG charts, the heatmaps and
//! the section headings, and a screenshot is a real (non-blank) PNG. The page is self-contained:
//! no `http://` or `https://` reference, no script or stylesheet loaded from elsewhere.
//! (`tests/html_viewer.rs` drives the page's item browser.)
//!
//! Chromium is expected at /usr/bin/chromium. When it is absent the browser tests are skipped
//! with a notice, except on CI (`CI` set), where they fail.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{run_suite, run_with_timeout, tempdir, Output};

const CHROMIUM: &str = "/usr/bin/chromium";
const PNG_SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', b'\r', b'\n', 0x1a, b'\n'];

/// The browser, or None (with a notice) when it is absent outside CI.
fn chromium() -> Option<PathBuf> {
    let path = PathBuf::from(CHROMIUM);
    if path.is_file() {
        return Some(path);
    }
    if std::env::var_os("CI").is_some() {
        panic!("{CHROMIUM} is missing: CI must install chromium (apt-get install chromium) for the HTML rendering tests");
    }
    eprintln!("notice: {CHROMIUM} not found; skipping the headless rendering check (install chromium to run it)");
    None
}

/// Writes the reports of `examples/<suite>.jsonl` into `dir/out` and returns report.html.
fn report_html(suite: &str, dir: &Path) -> PathBuf {
    let out = dir.join("out");
    let exit = run_suite(
        Path::new(&format!("examples/{suite}.jsonl")),
        suite,
        &out,
        &[],
    );
    exit.assert_no_panic();
    assert!(matches!(exit.code, Some(0 | 1)), "{suite}: {exit:?}");
    let html = out.join("report.html");
    assert!(html.is_file(), "{suite}: no report.html");
    html
}

/// Runs headless Chromium on `page` with `args`, a fresh profile, and a 60 s limit.
fn headless(browser: &Path, dir: &Path, args: &[String], page: &Path) -> Output {
    let profile = dir.join(format!("profile-{}", args.len()));
    let mut cmd = Command::new(browser);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .args(args)
    .arg(format!("file://{}", page.display()));
    let out = run_with_timeout(cmd, Duration::from_secs(60));
    assert!(
        !out.timed_out,
        "chromium did not finish within 60 s\nstderr: {}",
        out.stderr
    );
    assert_eq!(out.code, Some(0), "chromium failed\nstderr: {}", out.stderr);
    out
}

fn check_dom(suite: &str, dom: &str) {
    assert!(
        dom.contains(&format!("<title>evalfleet · {suite} · ")),
        "{suite}: no <title> in the DOM:\n{dom:.2000}"
    );
    let svg_with_rect = dom.split("<svg").skip(1).any(|chunk| {
        chunk
            .split("</svg>")
            .next()
            .is_some_and(|body| body.contains("<rect"))
    });
    assert!(svg_with_rect, "{suite}: no <svg> with a <rect> in the DOM");
    for heading in [
        "<h2>Group comparisons</h2>",
        "<table class=\"heatmap\"",
        "<h2>Items</h2>",
        "<h2>Failure reasons</h2>",
        "<h1>evalfleet report: ",
    ] {
        assert!(dom.contains(heading), "{suite}: the DOM lacks {heading}");
    }
}

fn renders_in_chromium(suite: &str) {
    let Some(browser) = chromium() else {
        return;
    };
    let dir = tempdir();
    let page = report_html(suite, dir.path());

    let dump = headless(&browser, dir.path(), &["--dump-dom".to_owned()], &page);
    check_dom(suite, &dump.stdout);

    let shot = dir.path().join("shot.png");
    headless(
        &browser,
        dir.path(),
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1200,1600".to_owned(),
        ],
        &page,
    );
    let png = std::fs::read(&shot)
        .unwrap_or_else(|e| panic!("{suite}: no screenshot at {}: {e}", shot.display()));
    assert!(
        png.starts_with(&PNG_SIGNATURE),
        "{suite}: the screenshot is not a PNG"
    );
    assert!(
        png.len() > 10 * 1024,
        "{suite}: the screenshot is {} bytes: a blank page?",
        png.len()
    );
}

#[test]
fn support_judge_report_renders_in_chromium() {
    renders_in_chromium("support-judge");
}

#[test]
fn rag_layers_report_renders_in_chromium() {
    renders_in_chromium("rag-layers");
}

#[test]
fn report_html_is_self_contained() {
    for suite in ["support-judge", "rag-layers", "log-analysis"] {
        let dir = tempdir();
        let html =
            std::fs::read_to_string(report_html(suite, dir.path())).expect("reading report.html");
        // The items' own texts (inside the JSON data blocks) may quote any URL: data, not a
        // reference.
        let html = without_data_blocks(&html);
        for scheme in ["http://", "https://"] {
            assert!(
                !html.contains(scheme),
                "{suite}: report.html references {scheme} at {:?}",
                html.find(scheme)
                    .map(|i| html[i..].chars().take(80).collect::<String>())
            );
        }
        assert!(
            !html.contains("<script src") && !html.contains("<link"),
            "{suite}: report.html loads a script or stylesheet from elsewhere"
        );
    }
}

/// The page without its `<script type="application/json">` data blocks.
fn without_data_blocks(html: &str) -> String {
    let open = "<script type=\"application/json\"";
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    while let Some(at) = rest.find(open) {
        out.push_str(&rest[..at]);
        rest = rest[at..]
            .find("</script>")
            .map_or("", |end| &rest[at + end + "</script>".len()..]);
    }
    out.push_str(rest);
    out
}
