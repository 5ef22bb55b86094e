//! A run's result records in an anonymous temporary file, with an 8-byte slot per example
//! index: written in any order and at most once per index, streamed back in index order.
//!
//! The embedded store keeps its records here, so a 10^7-example run costs ~80 MB of memory
//! instead of the records themselves; the fleet aggregator keeps here the records it folds from
//! the events stream, so it writes a run's reports from local disk instead of reading every
//! record back from Redis.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::sync::{Mutex, MutexGuard};

use evalfleet_model::record::{Outcome, ResultRecord};
use evalfleet_report::{GrowingItems, ItemSource, ReportError};

/// Where a stored record sits in the file.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Place {
    offset: u64,
    len: u32,
    outcome: Outcome,
}

/// Bits of a [`Slot`]: the offset's (256 GiB of records), the length's (16 MiB; a longer
/// record's length is kept beside the slots), and the outcome's.
const OFFSET_BITS: u32 = 38;
const LEN_BITS: u32 = 24;
/// The length field of a record whose length is kept in [`Slots::long`].
const LONG: u64 = (1 << LEN_BITS) - 1;

/// A [`Place`] packed in 8 bytes (0 = not stored): the outcome + 1 in the top 2 bits, then
/// the length, then the offset. Packed because a run's index is one slot per example: 16
/// bytes a slot would be 160 MB at 10^7 examples, most of an aggregator's budget.
#[derive(Clone, Copy, Default)]
struct Slot(u64);

fn outcome_code(outcome: Outcome) -> u64 {
    match outcome {
        Outcome::Ok => 1,
        Outcome::Failed => 2,
        Outcome::Skipped => 3,
    }
}

/// Slots in chunks of [`CHUNK`], allocated as indexes reach them: no doubling of one vector
/// (which would hold twice the index for a moment) and no slot before the first stored index's
/// chunk is wasted beyond it.
const CHUNK: usize = 1 << 16;

#[derive(Default)]
struct Slots {
    chunks: Vec<Option<Box<[Slot]>>>,
    /// Lengths of records of [`LONG`] bytes or more, by index.
    long: HashMap<usize, u32>,
    /// One past the highest index stored.
    end: usize,
    /// Indexes stored.
    stored: u64,
}

impl Slots {
    fn get(&self, i: usize) -> Option<Place> {
        let slot = self.chunks.get(i / CHUNK)?.as_ref()?[i % CHUNK].0;
        let outcome = match slot >> (OFFSET_BITS + LEN_BITS) {
            1 => Outcome::Ok,
            2 => Outcome::Failed,
            3 => Outcome::Skipped,
            _ => return None,
        };
        let len = (slot >> OFFSET_BITS) & LONG;
        let len = if len == LONG {
            *self.long.get(&i)?
        } else {
            len as u32
        };
        Some(Place {
            offset: slot & ((1 << OFFSET_BITS) - 1),
            len,
            outcome,
        })
    }

    fn set(&mut self, i: usize, place: Place) -> io::Result<()> {
        if place.offset >> OFFSET_BITS != 0 {
            return Err(io::Error::other(
                "the spill file of stored results passed 256 GiB",
            ));
        }
        self.stored += u64::from(self.get(i).is_none());
        let len = if u64::from(place.len) >= LONG {
            self.long.insert(i, place.len);
            LONG
        } else {
            self.long.remove(&i);
            u64::from(place.len)
        };
        let packed = outcome_code(place.outcome) << (OFFSET_BITS + LEN_BITS)
            | len << OFFSET_BITS
            | place.offset;
        if self.chunks.len() <= i / CHUNK {
            self.chunks.resize_with(i / CHUNK + 1, || None);
        }
        let chunk = self.chunks[i / CHUNK]
            .get_or_insert_with(|| vec![Slot::default(); CHUNK].into_boxed_slice());
        chunk[i % CHUNK] = Slot(packed);
        self.end = self.end.max(i + 1);
        Ok(())
    }

    /// The stored indexes from `first` on that `walk` takes, and where they are, up to
    /// [`BLOCK_BYTES`] of records (at least one); and the index after the last one looked at
    /// (under [`Walk::UntilGap`], the first index not stored, when the block ends at it).
    fn block(&self, first: usize, walk: Walk<'_>) -> (Vec<(usize, Place)>, usize) {
        let (mut placed, mut bytes, mut i) = (Vec::new(), 0u64, first);
        while i < self.end && (bytes < BLOCK_BYTES || placed.is_empty()) {
            if let Walk::Where(wanted) = walk {
                if !wanted(i as u64) {
                    i += 1;
                    continue;
                }
            }
            match self.get(i) {
                Some(place) => {
                    bytes += u64::from(place.len);
                    placed.push((i, place));
                }
                None if matches!(walk, Walk::UntilGap) => break,
                None => {}
            }
            i += 1;
        }
        (placed, i)
    }
}

/// Which stored indexes a pass over the spill reads.
#[derive(Clone, Copy)]
enum Walk<'a> {
    /// Every one.
    All,
    /// Every one up to the first index not stored (the part of a run that is complete so far).
    UntilGap,
    /// The ones a predicate on the index holds for; the others are never read.
    Where(&'a (dyn Fn(u64) -> bool + Sync)),
}

struct Index {
    writer: BufWriter<File>,
    end: u64,
    slots: Slots,
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
                slots: Slots::default(),
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
        if !replace && spill.slots.get(i).is_some() {
            return Ok(false);
        }
        let len = u32::try_from(json.len())
            .map_err(|_| io::Error::other(format!("result {index} is 4 GiB or more")))?;
        let offset = spill.end;
        spill.writer.write_all(json)?;
        spill.end += json.len() as u64;
        let place = Place {
            offset,
            len,
            outcome,
        };
        spill.slots.set(i, place)?;
        Ok(true)
    }

    /// How many indexes are kept.
    pub fn count(&self) -> io::Result<u64> {
        Ok(self.lock()?.slots.stored)
    }

    /// Which of `indices` are kept.
    pub fn stored(&self, indices: &[u64]) -> io::Result<Vec<bool>> {
        let spill = self.lock()?;
        Ok(indices
            .iter()
            .map(|&i| spill.slots.get(i as usize).is_some())
            .collect())
    }
}

impl Spill {
    /// Streams the records `walk` takes from index `first` on, in index order, parsed; returns
    /// the index after the last one looked at. Safe while records are still being kept: each
    /// block's places are copied, and the writer flushed, under one lock, never the whole index.
    fn stream(
        &self,
        first: u64,
        walk: Walk<'_>,
        only: Option<Outcome>,
        f: &mut dyn FnMut(&ResultRecord) -> Result<(), ReportError>,
    ) -> Result<u64, ReportError> {
        let source = |e: io::Error| ReportError::Source(e.to_string());
        let mut block = Block::default();
        let mut first = first as usize;
        loop {
            let (placed, next) = {
                let mut spill = self.lock().map_err(source)?;
                spill.writer.flush().map_err(source)?;
                spill.slots.block(first, walk)
            };
            if placed.is_empty() {
                return Ok(next as u64);
            }
            // A few wanted records far apart are read one by one, not with the run between them.
            let gap = match walk {
                Walk::Where(_) => 0,
                _ => COALESCE_GAP,
            };
            block.read(&self.file, &placed, only, gap).map_err(source)?;
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
            first = next;
        }
    }
}

impl ItemSource for Spill {
    fn for_each_item(
        &self,
        only: Option<Outcome>,
        f: &mut dyn FnMut(&ResultRecord) -> Result<(), ReportError>,
    ) -> Result<(), ReportError> {
        self.stream(0, Walk::All, only, f).map(drop)
    }

    /// Only the wanted records are read and parsed: a page's sample of a 10^7-item run costs
    /// its own records, not the run's.
    fn for_each_where(
        &self,
        wanted: &(dyn Fn(u64) -> bool + Sync),
        f: &mut dyn FnMut(&ResultRecord) -> Result<(), ReportError>,
    ) -> Result<(), ReportError> {
        self.stream(0, Walk::Where(wanted), None, f).map(drop)
    }
}

impl GrowingItems for Spill {
    fn for_each_from(
        &self,
        first: u64,
        until_gap: bool,
        f: &mut dyn FnMut(&ResultRecord) -> Result<(), ReportError>,
    ) -> Result<u64, ReportError> {
        let walk = if until_gap { Walk::UntilGap } else { Walk::All };
        self.stream(first, walk, None, f)
    }
}

/// Bytes of records read back at once: bounds the memory of streaming a run back. (Small in
/// tests, so that they cross blocks.)
const BLOCK_BYTES: u64 = if cfg!(test) { 16 << 10 } else { 8 << 20 };
/// A gap between two wanted records up to which one read takes both (and the gap), in a pass
/// over every record.
const COALESCE_GAP: u64 = 64 << 10;

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
        placed: &[(usize, Place)],
        only: Option<Outcome>,
        gap: u64,
    ) -> io::Result<()> {
        self.buf.clear();
        self.placed.clear();
        let mut wanted: Vec<(usize, Place)> = (placed.iter().copied())
            .filter(|(_, p)| only.is_none_or(|o| o == p.outcome))
            .collect();
        wanted.sort_unstable_by_key(|(_, p)| p.offset);
        let end = |p: &Place| p.offset + u64::from(p.len);
        let mut k = 0;
        while k < wanted.len() {
            // A run of records close enough to read together.
            let from = wanted[k].1.offset;
            let mut to = end(&wanted[k].1);
            let mut j = k + 1;
            while j < wanted.len() && wanted[j].1.offset <= to + gap {
                to = to.max(end(&wanted[j].1));
                j += 1;
            }
            let base = self.buf.len();
            self.buf.resize(base + (to - from) as usize, 0);
            file.read_exact_at(&mut self.buf[base..], from)?;
            for (i, p) in &wanted[k..j] {
                let start = base + (p.offset - from) as usize;
                self.placed.push((*i, start, p.len as usize));
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
    fn a_growing_run_streams_up_to_its_first_gap_and_a_selection_reads_only_its_own() {
        let spill = Spill::new("r").unwrap();
        let put = |i: u64| {
            let json = serde_json::to_vec(&record(i)).unwrap();
            spill.put(i, Outcome::Failed, &json).unwrap();
        };
        // The indexes a pass hands out, and where it stopped.
        let from = |first: u64, until_gap: bool| {
            let mut seen = Vec::new();
            let next = spill
                .for_each_from(first, until_gap, &mut |rec| {
                    seen.push(rec.index);
                    Ok(())
                })
                .unwrap();
            (seen, next)
        };
        (0..2000).filter(|i| *i != 1500).for_each(put);
        // Kept but not flushed yet: the stream flushes what it reads.
        assert_eq!(from(0, true), ((0..1500).collect(), 1500));
        put(1500);
        assert_eq!(from(1500, true), ((1500..2000).collect(), 2000));
        put(2500);
        assert_eq!(
            from(1990, false),
            ((1990..2000).chain([2500]).collect(), 2501)
        );
        let mut seen = Vec::new();
        spill
            .for_each_where(&|i| i % 500 == 0 || i == 7, &mut |rec| {
                seen.push(rec.index);
                Ok(())
            })
            .unwrap();
        assert_eq!(seen, [0, 7, 500, 1000, 1500, 2500]);
    }

    #[test]
    fn blocks_end_after_their_bytes_and_always_hold_one_record() {
        let mut slots = Slots::default();
        let place = |offset, len| Place {
            offset,
            len,
            outcome: Outcome::Ok,
        };
        slots.set(0, place(0, BLOCK_BYTES as u32 + 1)).unwrap();
        slots.set(2, place(100, 10)).unwrap();
        slots.set(3, place(110, 10)).unwrap();
        assert_eq!(slots.block(0, Walk::All).0.len(), 1);
        assert_eq!(slots.block(0, Walk::All).1, 1);
        let (placed, next) = slots.block(1, Walk::All);
        assert_eq!(placed.iter().map(|(i, _)| *i).collect::<Vec<_>>(), [2, 3]);
        assert_eq!(next, 4);
        assert!(slots.block(4, Walk::All).0.is_empty());
    }

    #[test]
    fn a_slot_keeps_every_offset_length_and_outcome_it_can_hold() {
        let mut slots = Slots::default();
        let cases = [
            (0, 0, 1, Outcome::Ok),
            (7, (1 << 38) - 1, (1 << 24) - 2, Outcome::Failed),
            // A length of 16 MiB or more is kept beside the slot.
            (CHUNK * 3 + 5, 12, (1 << 24) - 1, Outcome::Skipped),
            (CHUNK * 3 + 6, 99, u32::MAX, Outcome::Ok),
        ];
        for (i, offset, len, outcome) in cases {
            let place = Place {
                offset,
                len,
                outcome,
            };
            slots.set(i, place).unwrap();
            assert_eq!(slots.get(i), Some(place));
        }
        assert_eq!(slots.get(1), None);
        assert_eq!(slots.get(CHUNK), None, "a chunk never reached");
        assert_eq!(slots.get(CHUNK * 9), None, "past the end");
        // A record stored again with a short length forgets the long one.
        let short = Place {
            offset: 5,
            len: 3,
            outcome: Outcome::Ok,
        };
        slots.set(CHUNK * 3 + 5, short).unwrap();
        assert_eq!(slots.get(CHUNK * 3 + 5), Some(short));
        assert!(slots.long.len() == 1);
        assert_eq!(slots.stored, 4, "stored again is not stored twice");
        let beyond = Place {
            offset: 1 << 38,
            len: 1,
            outcome: Outcome::Ok,
        };
        assert!(
            slots.set(0, beyond).is_err(),
            "past 256 GiB is an error, not a wrap"
        );
    }
}
