//! # evalfleet-suites
//! Owns: what an evaluation computes. A [`suite`] says how examples are validated, which metrics
//! and judge dimensions run and which gates apply; [`evaluate`] turns one raw record into an
//! [`evaluate::Example`], its judge tasks, and — with the judges' verdicts — its result record.
//! The suites themselves: [`support`] (support-judge), [`rag`] (rag-layers), [`loganalysis`]
//! (log-analysis) and [`custom`] (user-defined), with [`delimit`] fencing judged text. [`spec`]
//! is the run spec every worker evaluates with. [`bounded`] bounds what rendering one of a
//! run's templates may cost.
//!
//! Depends on `evalfleet-model`, `evalfleet-dataset` and `evalfleet-config`; must not depend on
//! reports, contracts or any role, and does no network I/O, so the embedded `run` and the fleet
//! compute the same numbers.

pub mod bounded;
pub mod custom;
pub mod delimit;
pub mod evaluate;
pub mod loganalysis;
pub mod rag;
pub mod spec;
pub mod suite;
pub mod support;
pub mod target;
