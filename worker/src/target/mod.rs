//! Calling the system under test: a target's request for one record, sent with retries, and
//! what a call that failed for good means. The pure half (templates, what a record needs, the
//! completed record) is `evalfleet_suites::target`.
//!
//! `run.rs` is the road from a record waiting for its outputs to an example the suite
//! validated; `chat.rs` and `http.rs` are the two kinds of call, `batched.rs` a chat target's
//! generations through its provider's batches; `hosts.rs` where a shared worker's http target
//! may connect; `keep.rs` which replies are kept in the cache, under which key; `estimate.rs`
//! counts a target run's calls for `--estimate`.

mod batched;
mod chat;
mod estimate;
pub(crate) mod hosts;
mod http;
mod keep;
mod run;

pub use chat::{ChatTarget, Generated};
pub use estimate::{ReplyTokens, TargetEstimate, TargetEstimator, TYPICAL_TARGET_REPLY_TOKENS};
pub use http::{Called, HttpTarget, TargetFailure};
pub use run::{Generation, NotGenerated, RunTarget, TargetParts};
