//! What queries keep between calls, and how a query is answered with it. Per file (known by
//! path, length and modification time, so a rewritten file is read afresh): its footer (the
//! last [`TABLES`] files, [`TABLE_BYTES`] at most) and its facets; per result (a file, a filter, an order): what the last
//! scan found — the count and the positions at the first ranks — within a budget of positions
//! over all results, least recently used dropped first. Paging through a filtered or sorted
//! result then reads only each page's rows.

use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use super::facets::{self, Facets};
use super::filter::Filter;
use super::scan::{self, Ranked, Segment};
use super::sort::Order;
use super::table::Table;
use super::{bad, ItemPage, ItemQuery, CACHED_POSITIONS, COUNT_WAIT, QUICK_RANKS, SORT_WINDOW};
use crate::ItemsError;

/// Files whose footer and facets are kept, at most.
pub const TABLES: usize = 4;

/// Bytes of footers kept, at most (a 10^7-row file's footer with its offset index is about
/// 30 MB in memory): beyond it the least recently used go, all but the one in use.
pub const TABLE_BYTES: usize = 64 << 20;

/// Positions kept over all results by [`ItemsCache::default`]: 4,000,000 (16 MB).
pub const DEFAULT_BUDGET: usize = 4_000_000;

/// Rows a sort keeps beyond the page asked for, so that the next pages come from the cache.
const SORT_PREFETCH: usize = 10_000;

#[derive(Debug, Clone, PartialEq)]
struct FileId {
    path: PathBuf,
    len: u64,
    modified: Option<SystemTime>,
}

impl FileId {
    fn of(path: &Path) -> Result<FileId, ItemsError> {
        let meta = std::fs::metadata(path).map_err(|e| ItemsError::io(path, e))?;
        Ok(FileId {
            path: path.to_owned(),
            len: meta.len(),
            modified: meta.modified().ok(),
        })
    }
}

struct Held {
    file: FileId,
    filter: String,
    order: String,
    ranked: Arc<Ranked>,
}

#[derive(Default)]
struct Inner {
    /// Most recently used last.
    tables: Vec<(FileId, Arc<Table>)>,
    facets: Vec<(FileId, Arc<Facets>)>,
    results: Vec<Held>,
    /// Filters (file and filter key) whose count runs in the background.
    counting: Vec<(FileId, String)>,
}

impl Inner {
    /// Keeps `ranked` as the result of (file, filter, order) within `budget` positions over all
    /// results, dropping the least recently used first.
    fn keep(
        &mut self,
        budget: usize,
        file: &FileId,
        filter: &str,
        order: &str,
        ranked: Arc<Ranked>,
    ) {
        let size = ranked.held();
        if budget == 0 || size > budget {
            return;
        }
        self.results
            .retain(|h| !(h.file == *file && h.filter == filter && h.order == order));
        self.results
            .retain(|h| h.file.path != file.path || h.file == *file);
        while self.results.iter().map(|h| h.ranked.held()).sum::<usize>() + size > budget {
            self.results.remove(0);
        }
        self.results.push(Held {
            file: file.clone(),
            filter: filter.to_owned(),
            order: order.to_owned(),
            ranked,
        });
    }
}

/// A result's count: exact, or (a first page that did not wait for it) a lower bound.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Total {
    rows: u64,
    exact: bool,
}

impl Total {
    fn exact(rows: u64) -> Total {
        Total { rows, exact: true }
    }
}

fn lock(inner: &Mutex<Inner>) -> MutexGuard<'_, Inner> {
    inner.lock().unwrap_or_else(|e| e.into_inner())
}

/// The page's positions: those from rank `offset` on of the first ranks found.
fn page_of(positions: &[u32], offset: u64) -> Vec<u64> {
    (positions.iter().skip(offset as usize))
        .map(|p| u64::from(*p))
        .collect()
}

/// Queries over item tables with what they keep between calls; shared by threads.
pub struct ItemsCache {
    budget: usize,
    /// Positions a filtered result in dataset order keeps at each end ([`CACHED_POSITIONS`]).
    head: usize,
    /// How deep a sorted page may start from either end ([`SORT_WINDOW`]).
    window: u64,
    /// How long the first page of a filter waits for its count ([`COUNT_WAIT`]).
    count_wait: Duration,
    /// Shared with the background counts, which keep their result here when they finish.
    inner: Arc<Mutex<Inner>>,
}

impl Default for ItemsCache {
    fn default() -> Self {
        ItemsCache::new(DEFAULT_BUDGET)
    }
}

impl ItemsCache {
    /// A cache keeping at most `positions` row positions of results (0: none).
    pub fn new(positions: usize) -> ItemsCache {
        ItemsCache {
            budget: positions,
            head: CACHED_POSITIONS,
            window: SORT_WINDOW,
            count_wait: COUNT_WAIT,
            inner: Arc::new(Mutex::new(Inner::default())),
        }
    }

    /// The same cache, its first pages waiting `wait` for their result's count
    /// (`Duration::MAX`: always exact).
    pub fn with_count_wait(self, wait: Duration) -> ItemsCache {
        ItemsCache {
            count_wait: wait,
            ..self
        }
    }

    /// A cache with smaller bounds, so that tests reach them.
    #[cfg(test)]
    pub(crate) fn bounded(positions: usize, head: usize, window: u64) -> ItemsCache {
        ItemsCache {
            head,
            window,
            ..ItemsCache::new(positions)
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        lock(&self.inner)
    }

    fn table(&self, path: &Path) -> Result<(FileId, Arc<Table>), ItemsError> {
        let file = FileId::of(path)?;
        {
            let mut inner = self.lock();
            if let Some(i) = inner.tables.iter().position(|(f, _)| *f == file) {
                let entry = inner.tables.remove(i);
                let table = entry.1.clone();
                inner.tables.push(entry);
                return Ok((file, table));
            }
        }
        let table = Arc::new(Table::open(path)?);
        let mut inner = self.lock();
        inner.tables.retain(|(f, _)| f.path != file.path);
        inner.tables.push((file.clone(), table.clone()));
        while inner.tables.len() > TABLES
            || (inner.tables.len() > 1
                && inner.tables.iter().map(|(_, t)| t.bytes()).sum::<usize>() > TABLE_BYTES)
        {
            inner.tables.remove(0);
        }
        Ok((file, table))
    }

    /// The columns, fail tags and group values of the item table at `path`.
    pub fn facets(&self, path: &Path) -> Result<Arc<Facets>, ItemsError> {
        let (file, table) = self.table(path)?;
        if let Some((_, f)) = self.lock().facets.iter().find(|(f, _)| *f == file) {
            return Ok(f.clone());
        }
        let found = Arc::new(facets::facets(&table, path)?);
        let mut inner = self.lock();
        inner.facets.retain(|(f, _)| f.path != file.path);
        inner.facets.push((file, found.clone()));
        if inner.facets.len() > TABLES {
            inner.facets.remove(0);
        }
        Ok(found)
    }

    fn held(&self, file: &FileId, filter: &str, order: Option<&str>) -> Option<Arc<Ranked>> {
        let inner = self.lock();
        (inner.results.iter().rev())
            .find(|h| h.file == *file && h.filter == filter && order.is_none_or(|o| h.order == o))
            .map(|h| h.ranked.clone())
    }

    fn keep(&self, file: &FileId, filter: &str, order: &str, ranked: Ranked) -> Arc<Ranked> {
        let ranked = Arc::new(ranked);
        (self.lock()).keep(self.budget, file, filter, order, ranked.clone());
        ranked
    }

    /// The page `q` asks for of the item table at `path`.
    pub fn query(&self, path: &Path, q: &ItemQuery) -> Result<ItemPage, ItemsError> {
        let (file, table) = self.table(path)?;
        let filter = Filter::resolve(q, table.schema())?;
        let order = Order::resolve(q.sort.as_deref(), table.schema())?;
        let rows = table.rows();
        let end = q.offset.saturating_add(q.limit as u64).min(rows);
        let (total, positions) = match order {
            Order::Index { desc } if !q.filtered() => {
                let ranks = q.offset.min(end)..end;
                let positions = if desc {
                    ranks.map(|r| rows - 1 - r).collect()
                } else {
                    ranks.collect()
                };
                (Total::exact(rows), positions)
            }
            _ => self.ranked(&file, &table, path, q, filter, &order)?,
        };
        Ok(ItemPage {
            total: total.rows,
            total_exact: total.exact,
            offset: q.offset,
            limit: q.limit,
            items: super::rows::read(&table, path, &positions)?,
        })
    }

    /// A filtered or sorted page: the result's count and the page's positions, from the cache,
    /// a first page's read or a scan.
    fn ranked(
        &self,
        file: &FileId,
        table: &Arc<Table>,
        path: &Path,
        q: &ItemQuery,
        filter: Filter,
        order: &Order,
    ) -> Result<(Total, Vec<u64>), ItemsError> {
        let (fkey, okey) = (filter.key(), order.key());
        if let Some(p) = (self.held(file, &fkey, Some(&okey))).and_then(|r| {
            r.page(q.offset, q.limit)
                .map(|p| (Total::exact(r.total), p))
        }) {
            return Ok(p);
        }
        let end = q.offset.saturating_add(q.limit as u64);
        if q.limit > 0 && end <= QUICK_RANKS.min(self.window) {
            let filter = Arc::new(filter);
            let quick = match order {
                Order::Index { desc: false } => {
                    Some(self.first_page(file, table, path, q, &filter)?)
                }
                Order::Column { name, desc } => {
                    self.sorted_page(file, table, path, q, &filter, name, *desc)?
                }
                Order::Index { desc: true } => None,
            };
            if let Some(page) = quick {
                return Ok(page);
            }
            let (total, positions) = self.ranked_by_scan(file, table, path, q, &filter, order)?;
            return Ok((Total::exact(total), positions));
        }
        let (total, positions) = self.ranked_by_scan(file, table, path, q, &filter, order)?;
        Ok((Total::exact(total), positions))
    }

    /// A page near the start of a filter in dataset order: its rows read from the first row
    /// group on, while the result's count runs beside it (in the background, kept in the
    /// cache when it ends); the page waits for the count [`COUNT_WAIT`] at most, so a filter
    /// whose count scans a 10^7-row file answers its first page in the time its rows take.
    fn first_page(
        &self,
        file: &FileId,
        table: &Arc<Table>,
        path: &Path,
        q: &ItemQuery,
        filter: &Arc<Filter>,
    ) -> Result<(Total, Vec<u64>), ItemsError> {
        let started = Instant::now();
        let counted = self.count_in_background(file, table, path, filter);
        let end = q.offset + q.limit as u64;
        let (positions, seen, complete) = scan::first(table, path, filter, end)?;
        let total = self.total_of(file, filter, started, counted, seen, complete);
        Ok((total, page_of(&positions, q.offset)))
    }

    /// The first page of a sort by a number column: its rows from the row groups that can hold
    /// them ([`scan::sorted_pruned`]), the count of a filter as for [`Self::first_page`]. None
    /// when the column's statistics cannot bound its row groups.
    #[allow(clippy::too_many_arguments)]
    fn sorted_page(
        &self,
        file: &FileId,
        table: &Arc<Table>,
        path: &Path,
        q: &ItemQuery,
        filter: &Arc<Filter>,
        column: &str,
        desc: bool,
    ) -> Result<Option<(Total, Vec<u64>)>, ItemsError> {
        let started = Instant::now();
        let end = q.offset + q.limit as u64;
        let Some((positions, seen, complete)) =
            scan::sorted_pruned(table, path, filter, (column, desc), end as usize, false)?
        else {
            return Ok(None);
        };
        let total = if q.filtered() {
            let counted = self.count_in_background(file, table, path, filter);
            self.total_of(file, filter, started, counted, seen, complete)
        } else {
            Total::exact(table.rows())
        };
        if total.exact {
            let ranked = Ranked {
                total: total.rows,
                segments: vec![Segment {
                    start: 0,
                    positions: positions.clone(),
                }],
            };
            let order = Order::Column {
                name: column.to_owned(),
                desc,
            };
            self.keep(file, &filter.key(), &order.key(), ranked);
        }
        Ok(Some((total, page_of(&positions, q.offset))))
    }

    /// A first page's count: the rows seen when they were all, else the background count if it
    /// ends within the wait (or ended before), else the rows seen as a lower bound.
    fn total_of(
        &self,
        file: &FileId,
        filter: &Filter,
        started: Instant,
        counted: Option<mpsc::Receiver<Option<u64>>>,
        seen: u64,
        complete: bool,
    ) -> Total {
        if complete {
            return Total::exact(seen);
        }
        let wait = self.count_wait.saturating_sub(started.elapsed());
        let counted = counted.and_then(|done| done.recv_timeout(wait).ok().flatten());
        match counted.or_else(|| self.held(file, &filter.key(), None).map(|r| r.total)) {
            Some(rows) => Total::exact(rows),
            None => Total {
                rows: seen,
                exact: false,
            },
        }
    }

    /// Starts counting `filter`'s rows (and keeping its first positions, as a scan in dataset
    /// order does) on a thread of its own, unless that count already runs; the receiver hears
    /// the count when it ends (None if it failed).
    fn count_in_background(
        &self,
        file: &FileId,
        table: &Arc<Table>,
        path: &Path,
        filter: &Arc<Filter>,
    ) -> Option<mpsc::Receiver<Option<u64>>> {
        let okey = Order::Index { desc: false }.key();
        let fkey = filter.key();
        {
            let mut inner = self.lock();
            if inner.counting.iter().any(|(f, k)| f == file && *k == fkey) {
                return None;
            }
            inner.counting.push((file.clone(), fkey.clone()));
        }
        let (tx, rx) = mpsc::channel();
        let (inner, budget, head) = (self.inner.clone(), self.budget, self.budget.min(self.head));
        let (file, table, path, filter, okey) = (
            file.clone(),
            table.clone(),
            path.to_owned(),
            filter.clone(),
            okey,
        );
        std::thread::spawn(move || {
            // A failed count keeps nothing: the next request of the filter counts again.
            let ranked = scan::in_order(&table, &path, &filter, head, 0, 0..0).ok();
            let total = ranked.as_ref().map(|r| r.total);
            let mut held = lock(&inner);
            if let Some(ranked) = ranked {
                held.keep(budget, &file, &fkey, &okey, Arc::new(ranked));
            }
            held.counting.retain(|(f, k)| !(*f == file && *k == fkey));
            drop(held);
            let _ = tx.send(total);
        });
        Some(rx)
    }

    /// A filtered or sorted page found by a scan of the whole result.
    fn ranked_by_scan(
        &self,
        file: &FileId,
        table: &Table,
        path: &Path,
        q: &ItemQuery,
        filter: &Filter,
        order: &Order,
    ) -> Result<(u64, Vec<u64>), ItemsError> {
        let (fkey, okey) = (filter.key(), order.key());
        // The result's count, from the cache, the file, or a scan of the filter's columns.
        let total = |this: &Self| -> Result<u64, ItemsError> {
            if !q.filtered() {
                return Ok(table.rows());
            }
            match this.held(file, &fkey, None) {
                Some(r) => Ok(r.total),
                None => scan::count(table, path, filter),
            }
        };
        if q.limit == 0 {
            return Ok((total(self)?, Vec::new()));
        }
        let caching = self.budget.min(self.head);
        let end = q.offset.saturating_add(q.limit as u64);
        let ranked = match order {
            Order::Index { desc: false } => {
                scan::in_order(table, path, filter, caching, 0, q.offset..end)?
            }
            Order::Index { desc: true } => {
                let tail = caching.max(end.min(self.head as u64) as usize);
                let ranked = scan::in_order(table, path, filter, caching, tail, 0..0)?.reversed();
                if ranked.page(q.offset, q.limit).is_none() {
                    // Deeper than the last positions kept: the page's ranks in dataset order.
                    let t = ranked.total;
                    let window = t.saturating_sub(end)..t.saturating_sub(q.offset);
                    let deep = scan::in_order(table, path, filter, 0, 0, window)?.reversed();
                    let page = deep.page(q.offset, q.limit).unwrap_or_default();
                    return Ok((deep.total, page));
                }
                ranked
            }
            Order::Column { name, desc } if end <= self.window => {
                let k = if caching > 0 {
                    (end as usize).max(SORT_PREFETCH).min(self.window as usize)
                } else {
                    end as usize
                };
                scan::sorted(table, path, filter, name, *desc, k, false)?
            }
            Order::Column { name, desc } => {
                let t = total(self)?;
                if q.offset >= t {
                    return Ok((t, Vec::new()));
                }
                if t - q.offset > self.window {
                    return Err(bad(
                        "offset",
                        format!(
                            "a sorted page starts within the first or the last {} rows of its result; {} is {} rows from its end",
                            self.window,
                            q.offset,
                            t - q.offset
                        ),
                    ));
                }
                // The last `k` rows, by the row groups that can hold them when the
                // statistics tell, else by a scan of the column.
                let k = (t - q.offset) as usize;
                match scan::sorted_pruned(table, path, filter, (name, *desc), k, true)? {
                    Some((positions, _, _)) => Ranked {
                        total: t,
                        segments: vec![Segment {
                            start: t - positions.len() as u64,
                            positions,
                        }],
                    },
                    None => scan::sorted(table, path, filter, name, *desc, k, true)?,
                }
            }
        };
        let ranked = self.keep(file, &fkey, &okey, ranked);
        let page = ranked.page(q.offset, q.limit).unwrap_or_default();
        Ok((ranked.total, page))
    }
}
