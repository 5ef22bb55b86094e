//! # evalfleet-contract
//! Owns: the traits evalfleet's roles meet through, and their in-process adapters for the
//! embedded `run`: the work queue ([`queue`]), the result store ([`store`], kept in a [`spill`]
//! file), the run registry ([`registry`]), the batch store ([`batch_store`], kept in memory by
//! [`batch_memory`] so that `run` coordinates batches through the same contract as the fleet),
//! the judge cache ([`judge_cache`]) and the fleet-wide rate limit ([`shared_limit`]); and what
//! the fleet aggregator reads: the results' [`events`] and the [`depth`] of the queues. The
//! RabbitMQ and Redis adapters live in `evalfleet-fleet` and pass the same [`conformance`] suite.
//!
//! Depends on `evalfleet-model`, `evalfleet-suites` (a message carries an example, a run its
//! spec) and `evalfleet-report` (a store is a report's item source); must not depend on any role
//! or adapter, and does no network I/O.

pub mod batch_memory;
pub mod batch_store;
/// The `WorkQueue`/`ResultStore`/`RunRegistry`/`BatchStore` conformance suite, for
/// implementations' tests.
#[cfg(any(test, feature = "testing"))]
pub mod conformance;
pub mod depth;
pub mod events;
pub mod judge_cache;
pub mod queue;
pub mod registry;
pub mod shared_limit;
pub mod spill;
pub mod store;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

#[cfg(test)]
mod wire_tests;
