//! `items.parquet` written while the run goes on.
//!
//! Written after the last result, the table meant reading and parsing every record back and
//! encoding every row then: about 7 µs an item, over a minute at 10^7 items on two cores, all of
//! it between the last result and the report. Here a thread follows the run instead: every
//! [`TICK`] it appends, as rows in index order, the records kept since, up to the first index
//! not kept yet; the report then writes only the rest and the footer.
//!
//! The rows written ahead make the run's table only if its columns stayed the same (a metric
//! first carried by a late record adds a column): the table starts again when they change
//! ([`ItemsAhead::keep_up`]), and [`ItemsAhead::finish`] compares the columns the run
//! ended with, throwing the file away when they differ so the report writes it from the start.
//! The file is a temporary one beside the report, renamed to `items.parquet` once complete: a
//! crash leaves no partial table under that name.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use evalfleet_items::{ItemsLayout, ItemsWriter};
use evalfleet_model::record::ResultRecord;
use tempfile::NamedTempFile;

use crate::aggregate::RunAggregator;
use crate::items::layout;
use crate::ReportError;

/// How often the thread appends what was kept since.
const TICK: Duration = Duration::from_millis(200);

/// A run's records while they are still being kept, in any order.
pub trait GrowingItems: Send + Sync {
    /// Streams the records from index `first` on, in index order; with `until_gap`, stopping at
    /// the first index not kept yet. Returns the index after the last one looked at.
    fn for_each_from(
        &self,
        first: u64,
        until_gap: bool,
        f: &mut dyn FnMut(&ResultRecord) -> Result<(), ReportError>,
    ) -> Result<u64, ReportError>;
}

/// The table so far: the rows of indexes `0..next`.
struct Table {
    file: NamedTempFile,
    writer: ItemsWriter<BufWriter<File>>,
    next: u64,
}

impl Table {
    /// Appends the rows from `next` on (up to the first index not kept, with `until_gap`);
    /// gives up between two rows once `stop` is set.
    fn append(
        &mut self,
        items: &dyn GrowingItems,
        until_gap: bool,
        stop: &AtomicBool,
    ) -> Result<(), ReportError> {
        let path = self.file.path().to_owned();
        let writer = &mut self.writer;
        self.next = items.for_each_from(self.next, until_gap, &mut |rec| {
            if stop.load(Ordering::Relaxed) {
                return Err(ReportError::Source("the table was abandoned".into()));
            }
            writer.push(rec).map_err(|source| ReportError::Items {
                path: path.clone(),
                source,
            })
        })?;
        Ok(())
    }
}

/// `items.parquet` of a run, written by a thread of its own as the run's records are kept.
pub struct ItemsAhead {
    /// Where the table is written until it is complete: on the report directory's file system.
    dir: PathBuf,
    items: Arc<dyn GrowingItems>,
    /// The table with the columns known so far; None before the first record.
    started: Option<Started>,
    /// The table could not be started: not tried again (the report writes it whole).
    off: bool,
}

/// One table being written: its columns, and its thread. Dropped, it stops the thread and
/// waits for it, so that the thread's file is deleted before the process may end.
struct Started {
    layout: ItemsLayout,
    stop: Arc<AtomicBool>,
    /// Tells the thread to write the rest and stop; dropping it stops the thread, which then
    /// deletes its file.
    thread: Mutex<Option<Writing>>,
}

/// The thread's stop signal and its end: the table, or why it stopped.
type Writing = (Sender<()>, JoinHandle<Result<Table, ReportError>>);

impl ItemsAhead {
    /// A table of `items` to be written in `dir` (a temporary file there, moved into the report
    /// directory when complete), started by [`Self::keep_up`].
    pub fn new(dir: &Path, items: Arc<dyn GrowingItems>) -> Self {
        ItemsAhead {
            dir: dir.to_owned(),
            items,
            started: None,
            off: false,
        }
    }

    /// Keeps the table's columns those of `agg`, called as records are folded: starts it on the
    /// first call, and again from its first row when a column was added. Err (once: it is not
    /// tried again) when it cannot be started.
    pub fn keep_up(&mut self, agg: &RunAggregator) -> Result<(), ReportError> {
        // Only the metrics grow as records arrive; the other columns come from the suite.
        let same = |s: &Started| agg.metric_names().len() == s.layout.metrics.len();
        if self.off || self.started.as_ref().is_some_and(same) {
            return Ok(());
        }
        self.started = None;
        let started = Started::start(&self.dir, layout(agg), self.items.clone());
        self.off = started.is_err();
        self.started = Some(started?);
        Ok(())
    }

    /// Writes the rest of the rows and the footer, and moves the file to `path`, if the run
    /// ended with the columns the table has; Ok(false) when it did not, or was never started
    /// (the file is deleted, and `path` must be written from the start).
    pub fn finish(&self, path: &Path, agg: &RunAggregator) -> Result<bool, ReportError> {
        match &self.started {
            Some(started) => started.finish(path, &layout(agg)),
            None => Ok(false),
        }
    }
}

impl Started {
    fn start(
        dir: &Path,
        layout: ItemsLayout,
        items: Arc<dyn GrowingItems>,
    ) -> Result<Self, ReportError> {
        let write_err = |source| ReportError::Write {
            path: dir.to_owned(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(write_err)?;
        // Readable as any file the report writes (the umask applies), not only by its owner.
        let file = tempfile::Builder::new()
            .prefix(".items-")
            .suffix(".parquet.partial")
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
            .tempfile_in(dir)
            .map_err(write_err)?;
        let out = BufWriter::with_capacity(1 << 20, file.reopen().map_err(write_err)?);
        let writer = ItemsWriter::new(out, &layout).map_err(|source| ReportError::Items {
            path: file.path().to_owned(),
            source,
        })?;
        let mut table = Table {
            file,
            writer,
            next: 0,
        };
        let (tx, rx) = channel::<()>();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::Builder::new()
            .name("items-ahead".into())
            .spawn(move || loop {
                match rx.recv_timeout(TICK) {
                    Err(RecvTimeoutError::Timeout) => table.append(&*items, true, &stopped)?,
                    Ok(()) => {
                        table.append(&*items, false, &stopped)?;
                        return Ok(table);
                    }
                    Err(RecvTimeoutError::Disconnected) => {
                        return Err(ReportError::Source("the table was abandoned".into()))
                    }
                }
            })
            .map_err(write_err)?;
        Ok(Started {
            layout,
            stop,
            thread: Mutex::new(Some((tx, thread))),
        })
    }

    fn finish(&self, path: &Path, layout: &ItemsLayout) -> Result<bool, ReportError> {
        let Some((tx, thread)) = self.thread.lock().ok().and_then(|mut t| t.take()) else {
            return Ok(false);
        };
        let same = *layout == self.layout;
        if same {
            // A thread that has ended already has its error waiting in `join`.
            let _ = tx.send(());
        } else {
            self.stop.store(true, Ordering::Relaxed);
        }
        drop(tx);
        let ended = thread.join().unwrap_or_else(|_| {
            Err(ReportError::Source(
                "the items table's thread panicked".into(),
            ))
        });
        if !same {
            return Ok(false);
        }
        let Table { file, writer, .. } = ended?;
        let mut out = writer.finish().map_err(|source| ReportError::Items {
            path: path.to_owned(),
            source,
        })?;
        let write_err = |source| ReportError::Write {
            path: path.to_owned(),
            source,
        };
        out.flush().map_err(write_err)?;
        file.persist(path).map_err(|e| write_err(e.error))?;
        Ok(true)
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some((tx, thread)) = self.thread.get_mut().ok().and_then(Option::take) {
            drop(tx);
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use evalfleet_items::read_rows;
    use evalfleet_model::record::Metrics;

    use super::*;

    /// Records kept in any order, like a spill file.
    #[derive(Default)]
    struct Kept {
        records: Mutex<std::collections::BTreeMap<u64, ResultRecord>>,
        /// Records handed out, to see what was written ahead.
        read: AtomicU64,
    }

    impl GrowingItems for Kept {
        fn for_each_from(
            &self,
            first: u64,
            until_gap: bool,
            f: &mut dyn FnMut(&ResultRecord) -> Result<(), ReportError>,
        ) -> Result<u64, ReportError> {
            let records = self.records.lock().unwrap().clone();
            let mut next = first;
            for (&i, rec) in records.range(first..) {
                if until_gap && i != next {
                    break;
                }
                self.read.fetch_add(1, Ordering::Relaxed);
                f(rec)?;
                next = i + 1;
            }
            Ok(next)
        }
    }

    fn record(index: u64, metric: Option<&str>) -> ResultRecord {
        let mut rec = ResultRecord::skipped("r", "s", index, None, format!("e{index}"), "x".into());
        if let Some(name) = metric {
            rec.outcome = evalfleet_model::record::Outcome::Ok;
            rec.metrics = Metrics(vec![(name.to_owned(), Some(index as f64))]);
        }
        rec
    }

    fn suite() -> evalfleet_suites::suite::Suite {
        evalfleet_suites::suite::Suite::builtin(evalfleet_model::suite::SuiteKind::SupportJudge)
    }

    fn ids(path: &Path) -> Vec<String> {
        let mut ids = Vec::new();
        read_rows(path, false, &mut |row| {
            ids.push(row.id);
            Ok(())
        })
        .unwrap();
        ids
    }

    fn partial_files(dir: &Path) -> usize {
        std::fs::read_dir(dir)
            .unwrap()
            .filter(|e| {
                let name = e.as_ref().unwrap().file_name();
                name.to_string_lossy().ends_with(".partial")
            })
            .count()
    }

    #[test]
    fn rows_are_written_as_records_arrive_and_the_rest_at_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let kept = Arc::new(Kept::default());
        let mut agg = RunAggregator::new(&suite());
        let mut ahead = ItemsAhead::new(dir.path(), kept.clone());
        // 0..50 arrive, then 60..80: 50..60 is a gap until the end.
        for i in (0..50).chain(60..80) {
            let rec = record(i, Some("m"));
            agg.observe(&rec);
            kept.records.lock().unwrap().insert(i, rec);
            ahead.keep_up(&agg).unwrap();
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while kept.read.load(Ordering::Relaxed) < 50 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(TICK * 2);
        assert_eq!(
            kept.read.load(Ordering::Relaxed),
            50,
            "written ahead up to the gap, and no further"
        );
        for i in 50..60 {
            let rec = record(i, Some("m"));
            agg.observe(&rec);
            kept.records.lock().unwrap().insert(i, rec);
        }
        let path = dir.path().join("items.parquet");
        assert!(ahead.finish(&path, &agg).unwrap());
        let want: Vec<String> = (0..80).map(|i| format!("e{i}")).collect();
        assert_eq!(ids(&path), want, "every row once, in index order");
        assert_eq!(partial_files(dir.path()), 0);
        assert!(!ahead.finish(&path, &agg).unwrap(), "finished once");
    }

    #[test]
    fn a_column_added_late_starts_the_table_again_or_refuses_it_at_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let kept = Arc::new(Kept::default());
        let mut agg = RunAggregator::new(&suite());
        let mut ahead = ItemsAhead::new(dir.path(), kept.clone());
        let add = |i: u64, metric: Option<&str>, agg: &mut RunAggregator| {
            let rec = record(i, metric);
            agg.observe(&rec);
            kept.records.lock().unwrap().insert(i, rec);
        };
        add(0, None, &mut agg);
        ahead.keep_up(&agg).unwrap();
        add(1, Some("m"), &mut agg);
        ahead.keep_up(&agg).unwrap();
        assert_eq!(partial_files(dir.path()), 1, "the first table was dropped");
        // A metric the table has not seen when the run ends: written whole by the report.
        add(2, Some("late"), &mut agg);
        let path = dir.path().join("items.parquet");
        assert!(!ahead.finish(&path, &agg).unwrap());
        assert!(!path.exists());
        assert_eq!(partial_files(dir.path()), 0, "its file is deleted");
        // A run given up (cancelled, or its process ending): its table is deleted at once.
        let mut other = ItemsAhead::new(dir.path(), kept.clone());
        other.keep_up(&agg).unwrap();
        assert_eq!(partial_files(dir.path()), 1);
        drop(other);
        assert_eq!(partial_files(dir.path()), 0);
    }
}
