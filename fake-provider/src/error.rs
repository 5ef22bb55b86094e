//! The errors the fake provider reports to its operator (not to API clients: those get the
//! provider's own error bodies, built in `openai.rs` and `anthropic.rs`).

/// A configuration the provider refuses, from the CLI, a config file or `POST /admin/config`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    #[error("{name} must be a rate in [0, 1], got {value}")]
    RateOutOfRange { name: &'static str, value: f64 },
    #[error("invalid config body: {0}")]
    Body(String),
}
