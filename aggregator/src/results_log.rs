//! Results written durably before their events are acknowledged. In the fleet an event is its
//! result's only copy (Redis keeps a bit per stored index, not the record), so an aggregator
//! appends every record it folds to its own log in the run's report directory,
//! `<reports_dir>/<run>/.results/<started>-<consumer>.log`, and syncs it to disk before it
//! acknowledges the events: an aggregator killed at any point leaves each result either in a
//! log or still in the stream (claimed again later), never nowhere.
//!
//! A log line is `<index>\t<outcome>\t<record JSON>\n`. A run's report is written from the
//! logs when this aggregator did not fold the run whole by itself (it restarted, or others
//! folded part of it): [`replay`] reads every log of the run in the order they were started,
//! the latest line of an index winning (a result stored again after `retry` comes later), a
//! torn last line (a crash mid-write, never acknowledged) left out. The logs stay after the
//! report: a `retry` reopens the run, and its report is written again from them, the retried
//! results' lines coming last.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use evalfleet_contract::spill::Spill;
use evalfleet_model::record::Outcome;

/// The directory of a run's result logs, in the run's directory (`run_dir::resolve`).
pub(crate) fn dir(run_dir: &Path) -> PathBuf {
    run_dir.join(".results")
}

/// One aggregator's log of one run.
pub(crate) struct ResultLog {
    path: PathBuf,
    writer: BufWriter<File>,
    /// Lines written since the last sync.
    unsynced: bool,
}

impl ResultLog {
    /// A new log in `dir` (created if missing) for `consumer`, named so that logs sort by when
    /// they were started.
    pub(crate) fn create(dir: &Path, consumer: &str) -> io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let started = jiff::Timestamp::now().as_nanosecond();
        let name: String = consumer
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let path = dir.join(format!("{started:020}-{name}.log"));
        let file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(&path)?;
        Ok(ResultLog {
            path,
            writer: BufWriter::with_capacity(1 << 20, file),
            unsynced: false,
        })
    }

    /// Appends one record (its JSON as stored, which holds no newline).
    pub(crate) fn append(&mut self, index: u64, outcome: Outcome, json: &[u8]) -> io::Result<()> {
        let line = |w: &mut BufWriter<File>| {
            write!(w, "{index}\t{}\t", outcome as u8)?;
            w.write_all(json)?;
            w.write_all(b"\n")
        };
        line(&mut self.writer).map_err(|e| self.error(e))?;
        self.unsynced = true;
        Ok(())
    }

    /// Flushes and syncs what was appended: after this, the records survive a crash.
    pub(crate) fn sync(&mut self) -> io::Result<()> {
        if !self.unsynced {
            return Ok(());
        }
        self.writer.flush().map_err(|e| self.error(e))?;
        self.writer
            .get_ref()
            .sync_data()
            .map_err(|e| self.error(e))?;
        self.unsynced = false;
        Ok(())
    }

    /// `e`, naming the log.
    fn error(&self, e: io::Error) -> io::Error {
        io::Error::new(e.kind(), format!("{}: {e}", self.path.display()))
    }

    #[cfg(test)]
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

/// The run's logs, oldest first.
pub(crate) fn logs(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut logs: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "log"))
            .collect(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e),
    };
    logs.sort();
    Ok(logs)
}

/// Every result in the run's logs, each index once (the latest), for the report writers.
pub(crate) fn replay(run_id: &str, dir: &Path) -> io::Result<Spill> {
    let spill = Spill::new(run_id)?;
    for log in logs(dir)? {
        let mut reader = BufReader::with_capacity(1 << 20, File::open(&log)?);
        let mut line = Vec::new();
        loop {
            line.clear();
            if reader.read_until(b'\n', &mut line)? == 0 {
                break;
            }
            // A line without its newline is the torn end of a crash: never acknowledged, its
            // event was read again.
            let Some(line) = line.strip_suffix(b"\n") else {
                break;
            };
            match parse(line) {
                Some((index, outcome, json)) => spill.put_latest(index, outcome, json)?,
                None => {
                    return Err(io::Error::other(format!(
                        "{}: a line that is not `<index>\\t<outcome>\\t<record>`",
                        log.display()
                    )))
                }
            }
        }
    }
    Ok(spill)
}

fn parse(line: &[u8]) -> Option<(u64, Outcome, &[u8])> {
    let mut parts = line.splitn(3, |&b| b == b'\t');
    let index = std::str::from_utf8(parts.next()?).ok()?.parse().ok()?;
    let outcome = match parts.next()? {
        b"0" => Outcome::Ok,
        b"1" => Outcome::Failed,
        b"2" => Outcome::Skipped,
        _ => return None,
    };
    Some((index, outcome, parts.next()?))
}

#[cfg(test)]
mod tests {
    use evalfleet_model::record::ResultRecord;
    use evalfleet_report::ItemSource;

    use super::*;

    fn json(index: u64, outcome: Outcome) -> Vec<u8> {
        let mut r = ResultRecord::failed("r", "s", index, None, format!("e{index}"), "x".into());
        r.outcome = outcome;
        serde_json::to_vec(&r).unwrap()
    }

    fn replayed(dir: &Path) -> Vec<(u64, Outcome)> {
        let mut seen = Vec::new();
        replay("r", dir)
            .unwrap()
            .for_each_item(None, &mut |r| {
                seen.push((r.index, r.outcome));
                Ok(())
            })
            .unwrap();
        seen
    }

    #[test]
    fn logs_replay_in_index_order_the_latest_line_of_an_index_winning() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = dir(&tmp.path().join("r"));
        let mut first = ResultLog::create(&dir, "agg:1").unwrap();
        for (i, o) in [(2, Outcome::Ok), (0, Outcome::Failed), (1, Outcome::Ok)] {
            first.append(i, o, &json(i, o)).unwrap();
        }
        first.sync().unwrap();
        // A later log (a restart, or `retry`): index 0 stored again, now ok.
        let mut second = ResultLog::create(&dir, "agg:2").unwrap();
        second
            .append(0, Outcome::Ok, &json(0, Outcome::Ok))
            .unwrap();
        second
            .append(3, Outcome::Skipped, &json(3, Outcome::Skipped))
            .unwrap();
        second.sync().unwrap();
        assert!(second.path().starts_with(&dir));
        assert_eq!(logs(&dir).unwrap().len(), 2);
        assert_eq!(
            replayed(&dir),
            [
                (0, Outcome::Ok),
                (1, Outcome::Ok),
                (2, Outcome::Ok),
                (3, Outcome::Skipped)
            ]
        );
    }

    #[test]
    fn a_torn_last_line_is_left_out_and_a_bad_line_is_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = dir(&tmp.path().join("r"));
        let mut log = ResultLog::create(&dir, "agg").unwrap();
        log.append(0, Outcome::Ok, &json(0, Outcome::Ok)).unwrap();
        log.sync().unwrap();
        let torn = json(1, Outcome::Ok);
        let mut file = OpenOptions::new().append(true).open(log.path()).unwrap();
        file.write_all(b"1\t0\t").unwrap();
        file.write_all(&torn[..torn.len() / 2]).unwrap();
        assert_eq!(replayed(&dir), [(0, Outcome::Ok)]);

        std::fs::write(dir.join("00-bad.log"), "not a line\n").unwrap();
        let err = replay("r", &dir).err().unwrap().to_string();
        assert!(err.contains("00-bad.log"), "{err}");
    }
}
