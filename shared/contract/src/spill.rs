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

use evalfleet_model::record::{Outcome, ResultRecord};
use evalfleet_report::{ItemSource, ReportError};

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

    fn lock(&self) -> io::Result<MutexGuard<'_, Index>> {
        self.index
            .lock()
            .map_err(|_| io::Error::other("spill file lock poisoned"))
    }

    /// Keeps the record JSON `json` of `index` unless that index is kept already; whether it
    /// was new.
    pub fn put(&self, index: u64, outcome: Outcome, json: &[u8]) -> io::Result<bool> {
        self.keep(index, outcome, json, false)
    }

    /// Keeps the record JSON `json` of `index`, replacing the one kept before if any (a result
    /// stored again after `retry`: the latest is the run's).
    pub fn put_latest(&self, index: u64, outcome: Outcome, json: &[u8]) -> io::Result<()> {
        self.keep(index, outcome, json, true).map(drop)
    }

    fn keep(&self, index: u64, outcome: Outcome, json: &[u8], replace: bool) -> io::Result<bool> {
        let mut spill = self.lock()?;
        let i = index as usize;
        if !replace && spill.slots.get(i).is_some_and(|s| s.len > 0) {
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

    /// How many indexes are kept.
    pub fn count(&self) -> io::Result<u64> {
        Ok(self.lock()?.slots.iter().filter(|s| s.len > 0).count() as u64)
    }

    /// Which of `indices` are kept.
    pub fn stored(&self, indices: &[u64]) -> io::Result<Vec<bool>> {
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
            let mut spill = self.lock().map_err(source)?;
            spill.writer.flush().map_err(source)?;
            spill.slots.clone()
        };
        let mut block = Block::default();
        let mut first = 0;
        while first < slots.len() {
            let end = block_end(&slots, first);
            block
                .read(&self.file, &slots, first..end, only)
                .map_err(source)?;
            for (index, bytes) in block.records() {
                let unreadable = |e: &dyn std::fmt::Display| {
                    ReportError::Source(format!(
                        "stored result {index} of run '{}' does not parse: {e}",
                        self.run_id
                    ))
                };
                // One UTF-8 check of the whole record, then a parse that trusts it: from bytes,
                // serde_json checks each string on its own, a sixth of a report's time.
                let text = std::str::from_utf8(bytes).map_err(|e| unreadable(&e))?;
                let rec: ResultRecord = serde_json::from_str(text).map_err(|e| unreadable(&e))?;
                f(&rec)?;
            }
            first = end;
        }
        Ok(())
    }
}

/// Bytes of records read back at once: bounds the memory of streaming a run back. (Small in
/// tests, so that they cross blocks.)
const BLOCK_BYTES: u64 = if cfg!(test) { 16 << 10 } else { 8 << 20 };
/// A gap between two wanted records up to which one read takes both (and the gap).
const COALESCE_GAP: u64 = 64 << 10;

/// Where the block of indices starting at `first` ends: after [`BLOCK_BYTES`] of records.
fn block_end(slots: &[Slot], first: usize) -> usize {
    let mut bytes = 0;
    let mut end = first;
    while end < slots.len() && (bytes < BLOCK_BYTES || end == first) {
        bytes += u64::from(slots[end].len);
        end += 1;
    }
    end
}

/// One block of indices' records, read in file order and handed out in index order.
///
/// Records sit in the file in the order they were stored. That is nearly the index order in a
/// live run, but not in batch mode, where examples complete batch by batch: reading in index
/// order through a window would then read the file again for nearly every record. Sorting a
/// block's records by offset and reading runs of neighbours with one `pread` each reads every
/// byte about once whatever the order.
#[derive(Default)]
struct Block {
    buf: Vec<u8>,
    /// (index, start in `buf`, length), in index order.
    placed: Vec<(usize, usize, usize)>,
}

impl Block {
    fn read(
        &mut self,
        file: &File,
        slots: &[Slot],
        indices: std::ops::Range<usize>,
        only: Option<Outcome>,
    ) -> io::Result<()> {
        self.buf.clear();
        self.placed.clear();
        let mut wanted: Vec<usize> = indices
            .filter(|&i| {
                let slot = &slots[i];
                slot.len > 0 && only.is_none_or(|o| o as u8 == slot.outcome)
            })
            .collect();
        wanted.sort_unstable_by_key(|&i| slots[i].offset);
        let mut k = 0;
        while k < wanted.len() {
            // A run of records close enough to read together.
            let from = slots[wanted[k]].offset;
            let mut to = from + u64::from(slots[wanted[k]].len);
            let mut j = k + 1;
            while j < wanted.len() && slots[wanted[j]].offset <= to + COALESCE_GAP {
                to = to.max(slots[wanted[j]].offset + u64::from(slots[wanted[j]].len));
                j += 1;
            }
            let base = self.buf.len();
            self.buf.resize(base + (to - from) as usize, 0);
            file.read_exact_at(&mut self.buf[base..], from)?;
            for &i in &wanted[k..j] {
                let start = base + (slots[i].offset - from) as usize;
                self.placed.push((i, start, slots[i].len as usize));
            }
            k = j;
        }
        self.placed.sort_unstable_by_key(|&(i, _, _)| i);
        Ok(())
    }

    /// The block's records, in index order.
    fn records(&self) -> impl Iterator<Item = (usize, &[u8])> {
        self.placed
            .iter()
            .map(|&(i, start, len)| (i, &self.buf[start..start + len]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use evalfleet_model::record::ResultRecord;

    fn record(index: u64) -> ResultRecord {
        let reason = "x".repeat(index as usize % 50);
        ResultRecord::failed(
            "r",
            "s",
            index,
            Some(index + 1),
            format!("ex{index}"),
            reason,
        )
    }

    fn read_back(spill: &Spill, only: Option<Outcome>) -> Vec<u64> {
        let mut seen = Vec::new();
        spill
            .for_each_item(only, &mut |rec| {
                seen.push(rec.index);
                Ok(())
            })
            .unwrap();
        seen
    }

    #[test]
    fn records_stored_in_any_order_stream_back_in_index_order_once_each() {
        let spill = Spill::new("r").unwrap();
        // Batch-like order: interleaved runs, one backwards; index 8 is never stored.
        let mut order: Vec<u64> = (0..3000).filter(|i| i % 3 == 0).collect();
        order.extend((0..3000).rev().filter(|i| i % 3 == 1));
        order.extend((0..3000).filter(|i| i % 3 == 2 && *i != 8));
        for &i in &order {
            let json = serde_json::to_vec(&record(i)).unwrap();
            assert!(spill.put(i, Outcome::Failed, &json).unwrap());
        }
        assert!(!spill.put(0, Outcome::Failed, b"{}").unwrap(), "kept once");
        let want: Vec<u64> = (0..3000).filter(|&i| i != 8).collect();
        assert_eq!(read_back(&spill, None), want);
        assert_eq!(read_back(&spill, Some(Outcome::Ok)), Vec::<u64>::new());
    }

    #[test]
    fn blocks_end_after_their_bytes_and_always_hold_one_slot() {
        let slot = |len| Slot {
            offset: 0,
            len,
            outcome: 0,
        };
        let slots = vec![slot(BLOCK_BYTES as u32 + 1), slot(10), slot(10)];
        assert_eq!(block_end(&slots, 0), 1);
        assert_eq!(block_end(&slots, 1), 3);
        assert_eq!(block_end(&[], 0), 0);
    }
}
