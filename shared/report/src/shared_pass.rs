//! One reading of a run's items for every report writer.
//!
//! [`crate::write_all`] writes its files on threads of their own, and each streams the items in
//! dataset order. From a spill file, a pass is a parse of every stored record: at 10^7 items
//! `junit.xml`, `report.html` and `items.parquet` each parsed ~10 GB of JSON, three times the
//! work on two cores. Here one thread reads and parses the items once and hands the same
//! records to every writer, in chunks, through a bounded channel per writer: the writers go at
//! the pace of the slowest, and memory holds a few chunks per writer, never the run.
//!
//! A writer's first full pass (`for_each_item(None, …)`) is served from the shared reading;
//! anything else (a pass over one outcome, a second pass, a few wanted records) reads the
//! source itself, as before.
//! A writer that ends without taking its shared pass drops its channel, and the reader stops
//! feeding it; a reading that fails ends every writer's shared pass with the error, so no file
//! is written from part of the items.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};

use evalfleet_model::record::{Outcome, ResultRecord};

use crate::{ItemSource, ReportError};

/// Records handed over at once.
const CHUNK: usize = 256;
/// Chunks a writer may fall behind the reading before the reading waits for it.
const AHEAD: usize = 8;

/// What the reading sends: a chunk of records in dataset order, or why it stopped.
type Message = Result<Arc<Vec<ResultRecord>>, String>;

/// One writer's view of the items: its first full pass from the shared reading.
pub(crate) struct Tap<'a> {
    source: &'a (dyn ItemSource + Sync),
    shared: Mutex<Option<Receiver<Message>>>,
}

impl ItemSource for Tap<'_> {
    fn for_each_item(
        &self,
        only: Option<Outcome>,
        f: &mut dyn FnMut(&ResultRecord) -> Result<(), ReportError>,
    ) -> Result<(), ReportError> {
        let shared = match only {
            None => self.shared.lock().ok().and_then(|mut s| s.take()),
            Some(_) => None,
        };
        let Some(chunks) = shared else {
            return self.source.for_each_item(only, f);
        };
        // The channel closes when the reading has sent everything.
        for chunk in chunks {
            for rec in chunk.map_err(ReportError::Source)?.iter() {
                f(rec)?;
            }
        }
        Ok(())
    }

    /// A few records of a large run: read from the source, which finds them without parsing
    /// the rest. The shared reading is let go first, so it never waits for this writer.
    fn for_each_where(
        &self,
        wanted: &(dyn Fn(u64) -> bool + Sync),
        f: &mut dyn FnMut(&ResultRecord) -> Result<(), ReportError>,
    ) -> Result<(), ReportError> {
        drop(self.shared.lock().ok().and_then(|mut s| s.take()));
        self.source.for_each_where(wanted, f)
    }
}

/// The reading's end of the taps.
pub(crate) struct Feed<'a> {
    source: &'a (dyn ItemSource + Sync),
    senders: Vec<SyncSender<Message>>,
}

/// A reading of `source` and `n` taps on it.
pub(crate) fn split<'a>(source: &'a (dyn ItemSource + Sync), n: usize) -> (Feed<'a>, Vec<Tap<'a>>) {
    let (senders, taps) = (0..n)
        .map(|_| {
            let (tx, rx) = sync_channel(AHEAD);
            let tap = Tap {
                source,
                shared: Mutex::new(Some(rx)),
            };
            (tx, tap)
        })
        .unzip();
    (Feed { source, senders }, taps)
}

impl Feed<'_> {
    /// Reads every item once and sends it to each tap still listening. Returns when every tap
    /// has had everything or has gone.
    pub(crate) fn run(self) {
        let Feed {
            source,
            mut senders,
        } = self;
        let mut chunk = Vec::with_capacity(CHUNK);
        let read = source.for_each_item(None, &mut |rec| {
            chunk.push(rec.clone());
            if chunk.len() == CHUNK {
                let full = std::mem::replace(&mut chunk, Vec::with_capacity(CHUNK));
                broadcast(&mut senders, Ok(Arc::new(full)));
                if senders.is_empty() {
                    return Err(ReportError::Source("no writer is reading".into()));
                }
            }
            Ok(())
        });
        match read {
            Ok(()) if !chunk.is_empty() => broadcast(&mut senders, Ok(Arc::new(chunk))),
            Ok(()) => {}
            // Stopped because every tap has gone: nobody to tell.
            Err(_) if senders.is_empty() => {}
            Err(e) => broadcast(&mut senders, Err(e.to_string())),
        }
        // Dropping the senders closes the channels: the taps' passes end.
    }
}

/// Sends `message` to every tap still listening, and forgets the ones that have gone.
fn broadcast(senders: &mut Vec<SyncSender<Message>>, message: Message) {
    senders.retain(|s| s.send(message.clone()).is_ok());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(n: u64) -> Vec<ResultRecord> {
        (0..n)
            .map(|i| {
                let mut r =
                    ResultRecord::skipped("r", "s", i, Some(i + 1), format!("id-{i}"), "x".into());
                if i % 3 == 0 {
                    r.outcome = Outcome::Failed;
                }
                r
            })
            .collect()
    }

    fn ids(items: &dyn ItemSource, only: Option<Outcome>) -> Result<Vec<u64>, ReportError> {
        let mut seen = Vec::new();
        items.for_each_item(only, &mut |r| {
            seen.push(r.index);
            Ok(())
        })?;
        Ok(seen)
    }

    #[test]
    fn every_tap_sees_every_item_once_in_order_and_other_passes_read_the_source() {
        let source = records(1000);
        let (feed, taps) = split(&source, 3);
        let all: Vec<u64> = (0..1000).collect();
        std::thread::scope(|s| {
            s.spawn(move || feed.run());
            let mut running = Vec::new();
            for (i, tap) in taps.into_iter().enumerate() {
                let all = &all;
                running.push(s.spawn(move || {
                    // One writer passes over one outcome first, one never takes its shared
                    // pass, and one takes it twice: the second reads the source.
                    if i == 0 {
                        let failed = ids(&tap, Some(Outcome::Failed)).unwrap();
                        assert_eq!(failed.len(), 334);
                    }
                    if i == 1 {
                        return;
                    }
                    assert_eq!(&ids(&tap, None).unwrap(), all);
                    assert_eq!(&ids(&tap, None).unwrap(), all);
                }));
            }
            for r in running {
                r.join().unwrap();
            }
        });
    }

    /// A source that fails after some items.
    struct Broken;

    impl ItemSource for Broken {
        fn for_each_item(
            &self,
            _: Option<Outcome>,
            f: &mut dyn FnMut(&ResultRecord) -> Result<(), ReportError>,
        ) -> Result<(), ReportError> {
            for r in records(600) {
                f(&r)?;
            }
            Err(ReportError::Source("disk on fire".into()))
        }
    }

    #[test]
    fn a_reading_that_fails_fails_every_shared_pass() {
        let (feed, taps) = split(&Broken, 2);
        std::thread::scope(|s| {
            s.spawn(move || feed.run());
            for tap in taps {
                s.spawn(move || {
                    let err = ids(&tap, None).unwrap_err();
                    assert!(err.to_string().contains("disk on fire"), "{err}");
                });
            }
        });
    }

    #[test]
    fn the_reading_stops_when_nobody_listens() {
        let source = records(100_000);
        let (feed, taps) = split(&source, 2);
        drop(taps);
        // Returns (rather than blocking on full channels) although nobody reads.
        feed.run();
    }
}
