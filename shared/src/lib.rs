//! evalfleet's pure core: everything that decides *what* an evaluation computes, with no network
//! I/O, so the embedded `run` and the fleet produce the same numbers.
//!
//! Flow: [`dataset`] streams raw records → [`evaluate`] validates them per [`suite`] and turns an
//! example plus its judge verdicts into a [`record::ResultRecord`] (metrics from [`rag`],
//! [`loganalysis`] or the judge dimensions of [`support`], tags from [`gate`]) → [`aggregate`]
//! folds records → [`report`] renders the files.

pub mod aggregate;
pub mod batch_store;
pub mod config;
/// The `WorkQueue`/`ResultStore` contract suite, for implementations' tests.
#[cfg(any(test, feature = "testing"))]
pub mod contract;
pub mod custom;
pub mod dataset;
pub mod delimit;
pub mod evaluate;
pub mod field;
pub mod gate;
pub mod generate;
pub mod judge_cache;
pub mod loganalysis;
pub mod num;
pub mod queue;
pub mod rag;
pub mod record;
pub mod report;
pub mod routing;
pub mod runs;
pub mod shared_limit;
pub mod spec;
pub mod spill;
pub mod stats;
pub mod store;
pub mod suite;
pub mod support;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod text;
