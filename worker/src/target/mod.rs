//! Calling the system under test: a target's request for one record, sent with retries, and
//! what a call that failed for good means. The pure half (templates, what a record needs, the
//! completed record) is `evalfleet_suites::target`.
//!
//! Built so far: the calls of both kinds. Not yet: the road from a target run's message to its
//! result (docs/DECISIONS.md, "Targets").

mod chat;
mod http;

pub use chat::{ChatTarget, Generated};
pub use http::{Called, HttpTarget, TargetFailure};
