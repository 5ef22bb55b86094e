//! A run's result records in an anonymous temporary file, with a 16-byte slot per example
//! index: written in any order and at most once per index, streamed back in index order.
//!
//! The embedded store keeps its records here, so a 10^6-example run costs ~16 MB of memory
//! instead of the records themselves; the fleet aggregator keeps here the records it folds from
//! the events stream, so it writes a run's reports from local disk instead of reading every
//! record back from Redis.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::sync::{Mutex, MutexGuard};

use crate::record::{Outcome, ResultRecord};
use crate::report::{ItemSource, ReportError};
use crate::store::StoreError;

/// Where a stored record sits in the file.
#[derive(Clone, Copy, Default)]
struct Slot {
    offset: u64,
    /// 0 = not stored.
    len: u32,
    outcome: u8,
}

struct Index {
    writer: BufWriter<File>,
    end: u64,
    slots: Vec<Slot>,
}

pub struct Spill {
    run_id: String,
    /// The same file as the writer's, for positioned reads.
    file: File,
    index: Mutex<Index>,
}

impl Spill {
    pub fn new(run_id: &str) -> io::Result<Self> {
        let file = tempfile::tempfile()?;
        let writer = BufWriter::with_capacity(1 << 20, file.try_clone()?);
        Ok(Spill {
            run_id: run_id.to_owned(),
            file,
            index: Mutex::new(Index {
                writer,
                end: 0,
                slots: Vec::new(),
            }),
        })
    }

    fn lock(&self) -> Result<MutexGuard<'_, Index>, StoreError> {
        self.index
            .lock()
            .map_err(|_| StoreError::Backend("spill file lock poisoned".into()))
    }

    /// Keeps the record JSON `json` of `index` unless that index is kept already; whether it
    /// was new.
    pub fn put(&self, index: u64, outcome: Outcome, json: &[u8]) -> Result<bool, StoreError> {
        let mut spill = self.lock()?;
        let i = index as usize;
        if spill.slots.get(i).is_some_and(|s| s.len > 0) {
            return Ok(false);
        }
        if spill.slots.len() <= i {
            spill.slots.resize(i + 1, Slot::default());
        }
        spill.writer.write_all(json)?;
        let offset = spill.end;
        spill.end += json.len() as u64;
        spill.slots[i] = Slot {
            offset,
            len: json.len() as u32,
            outcome: outcome as u8,
        };
        Ok(true)
    }

    /// Which of `indices` are kept.
    pub fn stored(&self, indices: &[u64]) -> Result<Vec<bool>, StoreError> {
        let spill = self.lock()?;
        Ok(indices
            .iter()
            .map(|&i| spill.slots.get(i as usize).is_some_and(|s| s.len > 0))
            .collect())
    }
}

impl ItemSource for Spill {
    fn for_each_item(
        &self,
        only: Option<Outcome>,
        f: &mut dyn FnMut(&ResultRecord) -> Result<(), ReportError>,
    ) -> Result<(), ReportError> {
        let source = |e: io::Error| ReportError::Source(e.to_string());
        let slots: Vec<Slot> = {
            let mut spill = self
                .lock()
                .map_err(|e| ReportError::Source(e.to_string()))?;
            spill.writer.flush().map_err(source)?;
            spill.slots.clone()
        };
        let mut reader = ChunkReader {
            file: &self.file,
            buf: Vec::new(),
            start: 0,
        };
        for (index, slot) in slots.iter().enumerate() {
            if slot.len == 0 || only.is_some_and(|o| o as u8 != slot.outcome) {
                continue;
            }
            let bytes = reader.get(slot.offset, slot.len as usize).map_err(source)?;
            let rec: ResultRecord = serde_json::from_slice(bytes).map_err(|e| {
                ReportError::Source(
                    StoreError::Corrupt {
                        run: self.run_id.clone(),
                        index: index as u64,
                        message: e.to_string(),
                    }
                    .to_string(),
                )
            })?;
            f(&rec)?;
        }
        Ok(())
    }
}

/// Reads the file in 1 MiB windows: records arrive nearly in index order, so reading them in
/// index order is nearly sequential.
struct ChunkReader<'a> {
    file: &'a File,
    buf: Vec<u8>,
    start: u64,
}

impl ChunkReader<'_> {
    fn get(&mut self, offset: u64, len: usize) -> io::Result<&[u8]> {
        let end = offset + len as u64;
        if offset < self.start || end > self.start + self.buf.len() as u64 {
            let want = len.max(1 << 20);
            self.buf.resize(want, 0);
            let mut filled = 0;
            while filled < want {
                let n = self
                    .file
                    .read_at(&mut self.buf[filled..], offset + filled as u64)?;
                if n == 0 {
                    break;
                }
                filled += n;
            }
            if filled < len {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "spill file shorter than its index",
                ));
            }
            self.buf.truncate(filled);
            self.start = offset;
        }
        let from = (offset - self.start) as usize;
        Ok(&self.buf[from..from + len])
    }
}
