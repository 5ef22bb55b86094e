//! Entry points for the fuzz targets in `fuzz/` at the repository root, not an API: the pure
//! parsers of what a provider sends back, reached as the client reaches them.

use reqwest::header::HeaderMap;

pub use super::batch::BatchItem;
pub use super::{CallError, TokenUsage};
pub use evalfleet_config::Api;

/// A 2xx reply body: the reply text and usage, or why the body is unusable (what
/// [`ProviderClient::complete`](super::ProviderClient::complete) does with it).
pub fn parse_response(api: Api, body: &str) -> Result<(String, TokenUsage), String> {
    match api {
        Api::Openai => super::openai::parse_response(body),
        Api::Anthropic => super::anthropic::parse_response(body),
    }
}

/// A non-2xx reply body, classified without headers.
pub fn classify_error(api: Api, status: u16, body: &str) -> CallError {
    super::classify_error(api, status, &HeaderMap::new(), body)
}

/// One line of a batch results file, as [`BatchResults`](super::batch::BatchResults) decodes
/// it: None for a blank line.
pub fn decode_batch_line(api: Api, line: &[u8]) -> Option<Result<(String, BatchItem), String>> {
    super::batch_results::decode_line(api, line)
}
