//! Pages of a run's item table: which rows of `items.parquet` match a filter (`status`, `tag`,
//! `group`, `q`), in which order (`sort`), and the page `offset..offset+limit` of them as row
//! objects keyed by column name — the rows `evalfleet export --format jsonl` writes. What
//! `GET /runs/{id}/items` of the aggregator serves (`docs/ITEMS.md`, "API").
//!
//! A page never needs the file in memory, and most need little of it on disk:
//! - no filter, dataset order: the page's rows are found from the row groups' row counts and
//!   read alone (no scan);
//! - otherwise a first pass reads only the columns the filter and the sort need
//!   ([`scan`]), keeping the matching rows' positions (the first [`CACHED_POSITIONS`]) or, for a
//!   sort, the best `offset + limit` of them in a bounded heap ([`sort`]); a second read takes
//!   the page's rows from their row groups ([`rows`]).
//!
//! [`ItemsCache`] keeps each file's footer and the last result's positions of each file, so
//! paging through a filtered or sorted result does not scan again.

mod bounds;
mod cache;
mod facets;
mod filter;
mod rows;
mod scan;
mod sort;
mod table;

use std::path::Path;

use serde_json::Value;

pub use cache::{ItemsCache, DEFAULT_BUDGET, TABLES, TABLE_BYTES};
pub use facets::{Facets, MAX_FACET_VALUES};

use crate::ItemsError;

/// Rows a page holds unless `limit` says otherwise.
pub const DEFAULT_LIMIT: usize = 100;

/// The most rows one page may hold.
pub const MAX_LIMIT: usize = 1000;

/// Matching positions kept for a filtered result in dataset order: 2,000,000 (8 MB), so that
/// paging through the first two million matches of a filter reads only the page's rows.
pub const CACHED_POSITIONS: usize = 2_000_000;

/// The deepest a sorted page may reach from either end of its result: the bounded heap holds
/// at most this many candidates (about 32 MB, more with string keys).
pub const SORT_WINDOW: u64 = 1_000_000;

/// How long the first page of a filter in dataset order waits for its result's count before it
/// answers with the rows it found and a lower bound of the count ([`ItemPage::total_exact`]).
pub const COUNT_WAIT: std::time::Duration = std::time::Duration::from_millis(100);

/// The deepest rank such a first page finds by reading from the start (below it, the count's
/// scan finds the page).
pub const QUICK_RANKS: u64 = 10_000;

/// What a page asks for. Build it with [`ItemQuery::from_params`] (the API's query string) or
/// field by field; `Default` is the first page of 100 rows in dataset order.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemQuery {
    /// `ok`, `failed` or `skipped`.
    pub status: Option<String>,
    /// Rows whose `fail_tags` contain it.
    pub tag: Option<String>,
    /// `group.<key>` = value, every pair (AND).
    pub group: Vec<(String, String)>,
    /// Case-insensitive substring of the id, the reason, a reasoning, the outputs or the
    /// metadata.
    pub q: Option<String>,
    /// A column name, `-` before it for descending; `None` is dataset order.
    pub sort: Option<String>,
    pub offset: u64,
    pub limit: usize,
}

impl Default for ItemQuery {
    fn default() -> Self {
        ItemQuery {
            status: None,
            tag: None,
            group: Vec::new(),
            q: None,
            sort: None,
            offset: 0,
            limit: DEFAULT_LIMIT,
        }
    }
}

/// A page: how many rows match in all, and the page's rows in order.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ItemPage {
    pub total: u64,
    /// False when `total` is a lower bound: the first page of a filter answers once its rows
    /// are found and the count has not finished within [`COUNT_WAIT`]; the count goes on and
    /// the next request of the same filter has it.
    pub total_exact: bool,
    pub offset: u64,
    pub limit: usize,
    /// Each row as an object keyed by column name, in the file's column order, nulls as `null`.
    pub items: Vec<Value>,
}

fn bad(param: &'static str, message: impl Into<String>) -> ItemsError {
    ItemsError::Query {
        param,
        message: message.into(),
    }
}

impl ItemQuery {
    /// The query of `GET /runs/{id}/items?...`: `status`, `tag`, `group` (`key=value`,
    /// comma-separated for several), `q`, `sort`, `offset`, `limit`. An empty value is no value
    /// (what a form sends for an unset field). A parameter this API does not know, a repeated
    /// one, or a malformed value is an [`ItemsError::Query`] naming it; whether `sort` and the
    /// group keys name columns is known only against the file ([`query`]).
    pub fn from_params<'a>(
        params: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<ItemQuery, ItemsError> {
        let mut query = ItemQuery::default();
        let mut seen: Vec<&str> = Vec::new();
        for (name, value) in params {
            if seen.contains(&name) {
                return Err(bad(param_name(name), format!("'{name}' is given twice")));
            }
            seen.push(name);
            if value.is_empty() {
                continue;
            }
            let text = Some(value.to_owned());
            match name {
                "status" => {
                    if !matches!(value, "ok" | "failed" | "skipped") {
                        return Err(bad(
                            "status",
                            format!("'{value}' is not a status (ok, failed, skipped)"),
                        ));
                    }
                    query.status = text;
                }
                "tag" => query.tag = text,
                "group" => query.group = parse_group(value)?,
                "q" => query.q = text,
                "sort" => {
                    if value.trim_start_matches('-').is_empty() {
                        return Err(bad("sort", "names no column"));
                    }
                    query.sort = text;
                }
                "offset" => {
                    query.offset = value.parse().map_err(|_| {
                        bad(
                            "offset",
                            format!("'{value}' is not a row count (0 or more)"),
                        )
                    })?;
                }
                "limit" => {
                    let limit: usize = value.parse().map_err(|_| {
                        bad(
                            "limit",
                            format!("'{value}' is not a row count (0 to {MAX_LIMIT})"),
                        )
                    })?;
                    if limit > MAX_LIMIT {
                        return Err(bad(
                            "limit",
                            format!("{limit} is more than {MAX_LIMIT} rows a page"),
                        ));
                    }
                    query.limit = limit;
                }
                other => {
                    let known = "status, tag, group, q, sort, offset, limit";
                    let message = format!("unknown parameter '{other}' ({known})");
                    return Err(bad("query", message));
                }
            }
        }
        Ok(query)
    }

    /// Whether any filter is set.
    pub(crate) fn filtered(&self) -> bool {
        self.status.is_some() || self.tag.is_some() || !self.group.is_empty() || self.q.is_some()
    }
}

/// The name a repeated parameter is reported under.
fn param_name(name: &str) -> &'static str {
    match name {
        "status" => "status",
        "tag" => "tag",
        "group" => "group",
        "q" => "q",
        "sort" => "sort",
        "offset" => "offset",
        "limit" => "limit",
        _ => "query",
    }
}

/// `key=value[,key=value...]`.
fn parse_group(value: &str) -> Result<Vec<(String, String)>, ItemsError> {
    value
        .split(',')
        .map(|pair| match pair.split_once('=') {
            Some((key, v)) if !key.trim().is_empty() => Ok((key.trim().to_owned(), v.to_owned())),
            _ => Err(bad(
                "group",
                format!("'{pair}' is not key=value (several: key=value,key=value)"),
            )),
        })
        .collect()
}

/// The page `query` asks for of the item table at `path`, read without a cache (each call
/// reads the footer again, and scans again when it filters or sorts) and with an exact count;
/// the aggregator keeps an [`ItemsCache`] instead.
pub fn query(path: &Path, query: &ItemQuery) -> Result<ItemPage, ItemsError> {
    (ItemsCache::new(0).with_count_wait(std::time::Duration::MAX)).query(path, query)
}

#[cfg(test)]
mod tests;
