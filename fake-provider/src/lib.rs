//! `evalfleet fake-provider`: one local server that speaks the OpenAI Chat Completions API and
//! the Anthropic Messages API faithfully enough (status codes, headers, JSON bodies) that the
//! judge clients, their tests and fleet load tests can run without API credits.
//!
//! Judge replies are deterministic — `{"score": N, "reasoning": "..."}` with N derived from
//! (seed, prompt) inside the rubric range the prompt names ("an integer from MIN to MAX") —
//! and everything that makes real providers hard is available on demand: latency and jitter,
//! real per-provider requests/minute and tokens/minute limits, and injected faults (429,
//! quota, 500, 529, hangs, malformed bodies, out-of-range scores, prose instead of JSON).
//!
//! The prompt a verdict is derived from is every message's text joined with `\n` (Anthropic:
//! the `system` text first; an array of content parts contributes its `text` parts joined with
//! `\n`), so a test can predict a score with [`Verdict::for_prompt`].
//!
//! Both providers' batch APIs are served too (OpenAI Files + Batches, Anthropic Message
//! Batches; see `batch/`), with the same verdicts as the live endpoints.
//!
//! Endpoints: `POST /v1/chat/completions`, `POST /v1/messages`, the batch endpoints, `GET /stats`,
//! `GET /stats/timeline?provider=openai`, `GET /metrics` (Prometheus), `GET|POST /admin/config`,
//! `POST /admin/reset`, `GET /healthz`.

mod agent;
mod answer;
mod anthropic;
mod args;
mod batch;
mod clock;
mod error;
mod exchange;
mod faults;
mod judge;
mod limiter;
mod metrics;
mod openai;
mod pairwise;
mod server;
mod state;
mod stats;
mod wire;

pub use args::{ConfigPatch, FakeProviderArgs, RateLimitMode};
pub use error::ConfigError;
pub use judge::{rubric_range, Verdict};
pub use server::{router, serve, spawn};
pub use state::FakeProvider;
