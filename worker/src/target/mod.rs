//! Calling the system under test: a target's request for one record, sent with retries, and
//! what a call that failed for good means. The pure half (templates, what a record needs, the
//! completed record) is `evalfleet_suites::target`.
//!
//! Built so far: the http target's call. Not yet: chat targets through the judges' provider
//! clients, and the road from a target run's message to its result (docs/DECISIONS.md,
//! "Targets").

mod http;

pub use http::{Called, HttpTarget, TargetFailure};
