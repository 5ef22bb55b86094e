//! # evalfleet-report
//! Owns: folding result records into run aggregates ([`aggregate`]) and rendering a finished
//! run's files. Depends on `evalfleet-model` and `evalfleet-suites` (a report is shaped by its
//! suite); must not depend on the contracts, the roles or any I/O but writing the report files.
//!
//! Report files of a finished run: `report.json`, `summary.md`, `report.html`, `junit.xml`,
//! `items.parquet` (every result as a row: `evalfleet-items`), and for a target run
//! `outputs.jsonl` (the completed records).
//!
//! Items are streamed from an [`ItemSource`] in dataset order (the in-process spill file or
//! Redis), and everything else comes from the run's aggregates, so writing the report of a
//! 10^6-example run needs memory for one item at a time.

pub mod aggregate;
mod heatmap;
mod html;
mod human_report;
mod items;
mod items_ahead;
mod json;
pub(crate) mod junit;
mod markdown;
pub mod outputs;
mod pairwise_report;
mod recommend;
mod shared_pass;
pub(crate) mod viewer;

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::aggregate::{RunAggregator, RunGateCheck};
use evalfleet_model::record::{Outcome, ResultRecord};
use evalfleet_suites::suite::Suite;

pub use items_ahead::{GrowingItems, ItemsAhead};
pub use json::group_key;
pub use recommend::recommendations;

/// The four files of a report directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportFile {
    Json,
    Summary,
    Html,
    Junit,
}

impl ReportFile {
    pub const ALL: [ReportFile; 4] = [
        ReportFile::Json,
        ReportFile::Summary,
        ReportFile::Html,
        ReportFile::Junit,
    ];

    pub fn file_name(self) -> &'static str {
        match self {
            ReportFile::Json => "report.json",
            ReportFile::Summary => "summary.md",
            ReportFile::Html => "report.html",
            ReportFile::Junit => "junit.xml",
        }
    }

    fn write(self, w: &mut Sink<'_>, input: &ReportInput<'_>) -> Result<(), ReportError> {
        match self {
            ReportFile::Json => json::write(w, input),
            ReportFile::Summary => markdown::write(w, input),
            ReportFile::Html => html::write(w, input),
            ReportFile::Junit => junit::write(w, input),
        }
    }
}

/// Streams a run's result records in dataset order, optionally only those of one outcome (so
/// the `skipped` list of a large run reads only the skipped records).
pub trait ItemSource {
    fn for_each_item(
        &self,
        only: Option<Outcome>,
        f: &mut dyn FnMut(&ResultRecord) -> Result<(), ReportError>,
    ) -> Result<(), ReportError>;

    /// The records whose index `wanted` holds for, in dataset order: a page's sample or the
    /// first failures of a large run. A source that can find a record without reading the
    /// others (the spill file) reads only these.
    fn for_each_where(
        &self,
        wanted: &(dyn Fn(u64) -> bool + Sync),
        f: &mut dyn FnMut(&ResultRecord) -> Result<(), ReportError>,
    ) -> Result<(), ReportError> {
        self.for_each_item(None, &mut |rec| {
            if wanted(rec.index) {
                f(rec)
            } else {
                Ok(())
            }
        })
    }
}

/// Records already in memory, in dataset order (tests, small runs).
impl ItemSource for Vec<ResultRecord> {
    fn for_each_item(
        &self,
        only: Option<Outcome>,
        f: &mut dyn FnMut(&ResultRecord) -> Result<(), ReportError>,
    ) -> Result<(), ReportError> {
        self.iter()
            .filter(|r| only.is_none_or(|o| r.outcome == o))
            .try_for_each(f)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("cannot write '{path}': {source}")]
    Write { path: PathBuf, source: io::Error },
    #[error("cannot write '{path}': {source}")]
    Items {
        path: PathBuf,
        source: evalfleet_items::ItemsError,
    },
    #[error("cannot read the run's results: {0}")]
    Source(String),
}

/// Who ran what, when: the report's `run` block.
#[derive(Debug, Clone, Serialize)]
pub struct RunInfo {
    pub id: String,
    pub suite: String,
    pub dataset: String,
    pub judge: evalfleet_suites::spec::JudgeMode,
    pub started_at: String,
    pub finished_at: String,
    pub duration_seconds: f64,
}

/// Everything a report renders.
pub struct ReportInput<'a> {
    pub info: &'a RunInfo,
    pub suite: &'a Suite,
    pub agg: &'a RunAggregator,
    pub items: &'a (dyn ItemSource + Sync),
    /// `reports.inline_items`: above this many results, `report.json` names `items.parquet`
    /// instead of listing them.
    pub inline_items: u64,
    /// `items.parquet` written while the run went on, to be finished rather than written.
    pub items_ahead: Option<&'a ItemsAhead>,
}

impl ReportInput<'_> {
    /// Whether `report.json` lists the items (else it names `items.parquet`).
    pub fn items_inline(&self) -> bool {
        self.agg.totals.examples <= self.inline_items
    }

    pub fn gate_checks(&self) -> Vec<RunGateCheck> {
        self.agg.run_gates(self.suite)
    }

    /// Whether every run-level gate held.
    pub fn gates_passed(&self) -> bool {
        self.gate_checks().iter().all(|c| c.passed)
    }
}

/// Writes the four report files and `items.parquet` into `dir` (created if missing), and
/// `outputs.jsonl` for a target run, and returns their paths.
pub fn write_all(dir: &Path, input: &ReportInput<'_>) -> Result<Vec<PathBuf>, ReportError> {
    std::fs::create_dir_all(dir).map_err(|source| ReportError::Write {
        path: dir.to_owned(),
        source,
    })?;
    // Each file is written on its own thread, so the slowest sets the pace, not their sum; and
    // the items are read and parsed once for all of them (`shared_pass`), not once per file.
    let mut paths: Vec<PathBuf> = ReportFile::ALL
        .iter()
        .map(|f| dir.join(f.file_name()))
        .collect();
    let outputs = input
        .agg
        .target
        .is_some()
        .then(|| dir.join(outputs::FILE_NAME));
    let items_path = dir.join(evalfleet_items::FILE_NAME);
    // items.parquet written ahead needs only its rest, read from the source itself.
    let ahead = input.items_ahead;
    let writers =
        ReportFile::ALL.len() + usize::from(ahead.is_none()) + usize::from(outputs.is_some());
    let (feed, mut taps) = shared_pass::split(input.items, writers);
    std::thread::scope(|scope| {
        let items_path = &items_path;
        scope.spawn(move || feed.run());
        // Each writer's input reads through its own tap, which it drops when it ends.
        let mut with_tap = || {
            let tap = taps.pop().expect("a tap per writer");
            move |f: &dyn Fn(&ReportInput<'_>) -> Result<(), ReportError>| {
                f(&ReportInput {
                    items: &tap,
                    ..*input
                })
            }
        };
        let mut writers: Vec<_> = ReportFile::ALL
            .into_iter()
            .zip(&paths)
            .map(|(file, path)| {
                let run = with_tap();
                scope.spawn(move || run(&|input| write_file(path, |w| file.write(w, input))))
            })
            .collect();
        if let Some(path) = &outputs {
            let run = with_tap();
            writers.push(
                scope.spawn(move || {
                    run(&|input| write_file(path, |w| outputs::write(w, input.items)))
                }),
            );
        }
        match ahead {
            None => {
                let run = with_tap();
                writers.push(scope.spawn(move || run(&|input| items::write(items_path, input))));
            }
            Some(ahead) => writers.push(scope.spawn(move || {
                if ahead.finish(items_path, input.agg)? {
                    return Ok(());
                }
                // Its columns changed at the end: written from the start after all.
                items::write(items_path, input)
            })),
        }
        writers.into_iter().try_for_each(|w| {
            w.join()
                .unwrap_or_else(|_| Err(ReportError::Source("a report writer panicked".into())))
        })
    })?;
    paths.push(dir.join(evalfleet_items::FILE_NAME));
    paths.extend(outputs);
    Ok(paths)
}

/// Renders one report into a string (for `evalfleet report` and the HTTP API).
pub fn render(file: ReportFile, input: &ReportInput<'_>) -> Result<String, ReportError> {
    let mut buf = Vec::new();
    let path = PathBuf::from(file.file_name());
    let mut w = Sink {
        inner: &mut buf,
        path: &path,
    };
    file.write(&mut w, input)?;
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

fn write_file(
    path: &Path,
    body: impl FnOnce(&mut Sink<'_>) -> Result<(), ReportError>,
) -> Result<(), ReportError> {
    let err = |source| ReportError::Write {
        path: path.to_owned(),
        source,
    };
    let file = File::create(path).map_err(err)?;
    let mut buf = BufWriter::with_capacity(1 << 20, file);
    let mut sink = Sink {
        inner: &mut buf,
        path,
    };
    body(&mut sink)?;
    buf.flush().map_err(err)
}

/// A writer that turns I/O errors into [`ReportError`]s naming the file.
pub(crate) struct Sink<'a> {
    inner: &'a mut dyn Write,
    path: &'a Path,
}

impl Sink<'_> {
    pub(crate) fn put(&mut self, s: &str) -> Result<(), ReportError> {
        self.inner
            .write_all(s.as_bytes())
            .map_err(|source| self.error(source))
    }

    pub(crate) fn json<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), ReportError> {
        serde_json::to_writer(&mut *self.inner, v).map_err(|e| self.error(e.into()))
    }

    /// Copies everything `from` holds into the file.
    pub(crate) fn copy_from(&mut self, from: &mut dyn io::Read) -> Result<(), ReportError> {
        io::copy(from, &mut *self.inner)
            .map(drop)
            .map_err(|source| self.error(source))
    }

    pub(crate) fn error(&self, source: io::Error) -> ReportError {
        ReportError::Write {
            path: self.path.to_owned(),
            source,
        }
    }
}

#[cfg(test)]
mod tests;
