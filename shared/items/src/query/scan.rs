//! The first pass of a filtered or sorted query: one read of only the columns the filter and
//! the sort need, row group by row group, keeping what the page (and the next pages) need of
//! the matching rows — never all of them: their count, the first and last positions in dataset
//! order up to a bound, or the best `k` for a sort ([`TopK`]).

use std::collections::VecDeque;
use std::ops::Range;
use std::path::Path;

use arrow_array::RecordBatch;

use parquet::arrow::arrow_reader::RowSelector;

use super::bounds::{self, Bound, Unit};
use super::filter::Filter;
use super::sort::{KeyColumn, KeyRef, TopK};
use super::table::Table;
use crate::ItemsError;

/// Some ranks of a result and the row positions at them: `positions[i]` is the row at rank
/// `start + i` of the result's order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Segment {
    pub(crate) start: u64,
    pub(crate) positions: Vec<u32>,
}

/// What is known of a result: how many rows match, and the positions at some of its ranks.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Ranked {
    pub(crate) total: u64,
    pub(crate) segments: Vec<Segment>,
}

impl Ranked {
    /// Positions held, in all.
    pub(crate) fn held(&self) -> usize {
        self.segments.iter().map(|s| s.positions.len()).sum()
    }

    /// The positions at ranks `offset..offset + limit` (fewer at the end of the result), or
    /// None when a rank of them is not held.
    pub(crate) fn page(&self, offset: u64, limit: usize) -> Option<Vec<u64>> {
        let end = offset.saturating_add(limit as u64).min(self.total);
        (offset..end.max(offset))
            .map(|rank| {
                self.segments.iter().find_map(|s| {
                    let i = rank.checked_sub(s.start)?;
                    s.positions.get(i as usize).map(|p| u64::from(*p))
                })
            })
            .collect()
    }

    /// The same ranks in the opposite order (rank r becomes total - 1 - r).
    pub(crate) fn reversed(self) -> Ranked {
        let total = self.total;
        let segments = (self.segments.into_iter())
            .map(|mut s| {
                let len = s.positions.len() as u64;
                s.positions.reverse();
                Segment {
                    start: total - s.start - len,
                    positions: s.positions,
                }
            })
            .collect();
        Ranked { total, segments }
    }
}

/// Threads a scan runs on: the machine's cores, at most four.
fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(4))
}

/// Runs `part` on each run of row groups of [`Table::parts`], in parallel; the results in file
/// order.
fn parallel<R: Send>(
    table: &Table,
    part: &(dyn Fn(Range<usize>) -> Result<R, ItemsError> + Sync),
) -> Result<Vec<R>, ItemsError> {
    let parts = table.parts(threads());
    if parts.len() == 1 {
        return parts.into_iter().map(part).collect();
    }
    std::thread::scope(|s| {
        let running: Vec<_> = (parts.into_iter())
            .map(|groups| s.spawn(move || part(groups)))
            .collect();
        running
            .into_iter()
            .map(|t| t.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    })
}

/// Calls `visit` with each batch of the row groups `groups` (the filter's columns and
/// `sort_column`), which of its rows `filter` keeps, and the position of its first row;
/// returns the rows kept in all.
fn scan(
    table: &Table,
    path: &Path,
    filter: &Filter,
    sort_column: Option<&str>,
    groups: Range<usize>,
    visit: &mut dyn FnMut(&RecordBatch, &[bool], u32),
) -> Result<u64, ItemsError> {
    let mut columns = filter.columns();
    if let Some(c) = sort_column {
        columns.push(c.to_owned());
    }
    let mut pos = table.starts[groups.start] as u32;
    let reader = table.scan(path, &columns, groups)?;
    let mut total = 0u64;
    let mut keep = Vec::new();
    for batch in reader {
        let batch = batch?;
        keep.clear();
        keep.resize(batch.num_rows(), true);
        filter.apply(&batch, &mut keep);
        total += keep.iter().filter(|k| **k).count() as u64;
        visit(&batch, &keep, pos);
        pos += batch.num_rows() as u32;
    }
    Ok(total)
}

/// How many rows `filter` keeps.
pub(crate) fn count(table: &Table, path: &Path, filter: &Filter) -> Result<u64, ItemsError> {
    let counts = parallel(table, &|groups| {
        scan(table, path, filter, None, groups, &mut |_, _, _| {})
    })?;
    Ok(counts.into_iter().sum())
}

/// The first `need` rows `filter` keeps in dataset order, read row group by row group from the
/// first and no further than they take: their positions, how many rows matched in the groups
/// read, and whether those were all the groups (the count is then the result's count, else a
/// lower bound of it). What a first page of a filter reads when its matches are not rare.
pub(crate) fn first(
    table: &Table,
    path: &Path,
    filter: &Filter,
    need: u64,
) -> Result<(Vec<u32>, u64, bool), ItemsError> {
    let groups = table.starts.len() - 1;
    let mut positions: Vec<u32> = Vec::new();
    let mut count = 0;
    for g in 0..groups {
        count += scan(table, path, filter, None, g..g + 1, &mut |_, keep, base| {
            let room = need.saturating_sub(positions.len() as u64) as usize;
            let kept = keep.iter().enumerate().filter(|(_, k)| **k);
            positions.extend(kept.take(room).map(|(r, _)| base + r as u32));
        })?;
        if positions.len() as u64 >= need {
            return Ok((positions, count, g + 1 == groups));
        }
    }
    Ok((positions, count, true))
}

/// What one run of row groups holds of a result in dataset order.
struct Part {
    groups: Range<usize>,
    count: u64,
    first: Vec<u32>,
    last: VecDeque<u32>,
}

/// The rows `filter` keeps in dataset order: their count, the first `head` and the last `tail`
/// positions, and those at the ranks of `window`.
pub(crate) fn in_order(
    table: &Table,
    path: &Path,
    filter: &Filter,
    head: usize,
    tail: usize,
    window: Range<u64>,
) -> Result<Ranked, ItemsError> {
    let parts = parallel(table, &|groups| {
        let mut first = Vec::with_capacity(head.min(1 << 16));
        let mut last: VecDeque<u32> = VecDeque::with_capacity(tail.min(1 << 16));
        let count = scan(
            table,
            path,
            filter,
            None,
            groups.clone(),
            &mut |_, keep, base| {
                for (r, _) in keep.iter().enumerate().filter(|(_, k)| **k) {
                    let pos = base + r as u32;
                    if first.len() < head {
                        first.push(pos);
                    }
                    if tail > 0 {
                        if last.len() == tail {
                            last.pop_front();
                        }
                        last.push_back(pos);
                    }
                }
            },
        )?;
        Ok(Part {
            groups,
            count,
            first,
            last,
        })
    })?;
    let total: u64 = parts.iter().map(|p| p.count).sum();
    // A part's first positions continue the ones before only while those held every match of
    // their parts, which is so until `head` are held; the same from the end for `tail`.
    let mut first: Vec<u32> = Vec::new();
    for p in &parts {
        let room = head - first.len();
        first.extend(p.first.iter().take(room));
    }
    let mut last: VecDeque<u32> = VecDeque::new();
    for p in parts.iter().rev() {
        let room = tail - last.len();
        for pos in p.last.iter().rev().take(room) {
            last.push_front(*pos);
        }
    }
    let mut segments = vec![Segment {
        start: 0,
        positions: first,
    }];
    if !last.is_empty() {
        segments.push(Segment {
            start: total - last.len() as u64,
            positions: last.into(),
        });
    }
    let mut ranked = Ranked { total, segments };
    let window = window.start..window.end.min(total);
    if !window.is_empty()
        && ranked
            .page(window.start, (window.end - window.start) as usize)
            .is_none()
    {
        ranked
            .segments
            .push(deep(table, path, filter, &parts, window)?);
    }
    Ok(ranked)
}

/// The positions at the ranks `window` of a result in dataset order, from the parts that hold
/// them (their counts known).
fn deep(
    table: &Table,
    path: &Path,
    filter: &Filter,
    parts: &[Part],
    window: Range<u64>,
) -> Result<Segment, ItemsError> {
    let mut positions = Vec::new();
    let mut base = 0u64;
    for p in parts {
        let (from, to) = (base, base + p.count);
        base = to;
        if to <= window.start || from >= window.end {
            continue;
        }
        let mut rank = from;
        scan(
            table,
            path,
            filter,
            None,
            p.groups.clone(),
            &mut |_, keep, at| {
                for (r, _) in keep.iter().enumerate().filter(|(_, k)| **k) {
                    if window.contains(&rank) {
                        positions.push(at + r as u32);
                    }
                    rank += 1;
                }
            },
        )?;
    }
    Ok(Segment {
        start: window.start,
        positions,
    })
}

/// The rows `filter` keeps ordered by `column` (descending with `desc`; nulls last, ties in
/// dataset order): their count and the first `k` positions, or with `flip` the last `k`.
pub(crate) fn sorted(
    table: &Table,
    path: &Path,
    filter: &Filter,
    column: &str,
    desc: bool,
    k: usize,
    flip: bool,
) -> Result<Ranked, ItemsError> {
    let parts = parallel(table, &|groups| {
        let mut top = TopK::new(k, desc, flip);
        let count = scan(
            table,
            path,
            filter,
            Some(column),
            groups,
            &mut |batch, keep, base| {
                let key = KeyColumn::of(batch, column);
                for (r, _) in keep.iter().enumerate().filter(|(_, k)| **k) {
                    top.offer(key.key(r), base + r as u32);
                }
            },
        )?;
        Ok((count, top))
    })?;
    let mut total = 0;
    let mut top = TopK::new(k, desc, flip);
    for (count, part) in parts {
        total += count;
        top.merge(part);
    }
    let positions = top.into_positions();
    let start = if flip {
        total - positions.len() as u64
    } else {
        0
    };
    Ok(Ranked {
        total,
        segments: vec![Segment { start, positions }],
    })
}

/// Units read at once by [`sorted_pruned`]: enough to share a reader's set-up, few enough that
/// little is read that the first of them would have ruled out.
const ROUND: usize = 8;

/// The first `k` rows `filter` keeps ordered by the number column `column` (with `flip`, the
/// last `k`), reading only the pages (or row groups) whose best key (from the footer's
/// statistics, [`bounds::units`]) could still enter them, best first: their positions in the
/// page's order, how many rows matched in the units read, and whether every unit was read (that
/// count is then the result's count, else a lower bound). None when the column has no usable
/// statistics: [`sorted`] scans then.
pub(crate) fn sorted_pruned(
    table: &Table,
    path: &Path,
    filter: &Filter,
    (column, desc): (&str, bool),
    k: usize,
    flip: bool,
) -> Result<Option<(Vec<u32>, u64, bool)>, ItemsError> {
    let Some(units) = bounds::units(table, column, desc, flip) else {
        return Ok(None);
    };
    let key = |b: Bound| match b {
        Bound::Num(n) => KeyRef::Num(n),
        Bound::Nulls => KeyRef::Null,
    };
    // A unit's best position: its first row, or flipped (later rows first) its last.
    let best_row = |u: &Unit| {
        if flip {
            u.rows.end.saturating_sub(1) as u32
        } else {
            u.rows.start as u32
        }
    };
    // Best bound first. Units order as their rows do, so their numbers stand for the rows.
    let mut probe = TopK::new(units.len(), desc, flip);
    for (i, u) in units.iter().enumerate() {
        if !u.rows.is_empty() {
            probe.offer(key(u.bound), i as u32);
        }
    }
    let mut order = probe.into_positions();
    if flip {
        // `into_positions` gives the page's order, where a flipped probe's best come last.
        order.reverse();
    }
    let mut top = TopK::new(k, desc, flip);
    let (mut count, mut read) = (0u64, 0usize);
    let mut next = order.iter().map(|&i| &units[i as usize]).peekable();
    while next.peek().is_some() {
        // The next units that could still enter the page, read together.
        let round: Vec<&Unit> = (&mut next)
            .filter(|u| top.could_take(key(u.bound), best_row(u)))
            .take(ROUND)
            .collect();
        read += round.len();
        count += scan_units(table, path, filter, column, &round, &mut |k, pos| {
            top.offer(k, pos)
        })?;
    }
    let all = read == order.len() || top.len() < k;
    Ok(Some((top.into_positions(), count, all)))
}

/// Calls `visit` with the key of `column` and the position of every row of `units` that
/// `filter` keeps, in file order; returns how many it kept.
fn scan_units(
    table: &Table,
    path: &Path,
    filter: &Filter,
    column: &str,
    units: &[&Unit],
    visit: &mut dyn FnMut(KeyRef<'_>, u32),
) -> Result<u64, ItemsError> {
    if units.is_empty() {
        return Ok(0);
    }
    let mut ranges: Vec<&Range<u64>> = units.iter().map(|u| &u.rows).collect();
    ranges.sort_unstable_by_key(|r| r.start);
    let mut groups: Vec<usize> = units.iter().map(|u| u.group).collect();
    groups.sort_unstable();
    groups.dedup();
    // Within the groups read, select the units' rows and skip the rest.
    let (mut selectors, mut positions) = (Vec::new(), Vec::new());
    for &g in &groups {
        let mut at = table.starts[g];
        for r in ranges.iter().filter(|r| table.group_of(r.start) == g) {
            if r.start > at {
                selectors.push(RowSelector::skip((r.start - at) as usize));
            }
            selectors.push(RowSelector::select((r.end - r.start) as usize));
            positions.extend(r.start as u32..r.end as u32);
            at = r.end;
        }
        if table.starts[g + 1] > at {
            selectors.push(RowSelector::skip((table.starts[g + 1] - at) as usize));
        }
    }
    let mut columns = filter.columns();
    columns.push(column.to_owned());
    let reader = table.scan_selected(path, &columns, groups, Some(selectors.into()))?;
    let (mut done, mut kept, mut keep) = (0usize, 0u64, Vec::new());
    for batch in reader {
        let batch = batch?;
        keep.clear();
        keep.resize(batch.num_rows(), true);
        filter.apply(&batch, &mut keep);
        let keys = KeyColumn::of(&batch, column);
        for (r, _) in keep.iter().enumerate().filter(|(_, k)| **k) {
            visit(keys.key(r), positions[done + r]);
            kept += 1;
        }
        done += batch.num_rows();
    }
    Ok(kept)
}
