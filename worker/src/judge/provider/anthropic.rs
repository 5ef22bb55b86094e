//! Anthropic Messages (`POST {base_url}/v1/messages`) as pure request/response functions, so
//! the wire format is tested without a server.
//!
//! The system prompt goes in the top-level `system` field, the data in the one user message,
//! at temperature 0. The reply text is every `text` content block joined (other block types are
//! skipped). Input usage includes prompt-cache reads and writes, since they are input tokens too.

use serde::Serialize;
use serde_json::Value;

use super::{ChatRequest, Message, TokenUsage};

/// The request body, serialised straight from borrowed fields (no intermediate JSON tree).
#[derive(Serialize)]
pub(super) struct RequestBody<'a> {
    model: &'a str,
    system: &'a str,
    messages: [Message<'a>; 1],
    max_tokens: u32,
    temperature: u8,
}

pub(super) fn request_body<'a>(req: &ChatRequest<'a>) -> RequestBody<'a> {
    RequestBody {
        model: req.model,
        system: &req.prompt.system,
        messages: [Message {
            role: "user",
            content: &req.prompt.user,
        }],
        max_tokens: req.max_tokens,
        temperature: 0,
    }
}

/// The reply text and the usage of a 2xx body.
pub(super) fn parse_response(body: &str) -> Result<(String, TokenUsage), String> {
    let value: Value = serde_json::from_str(body).map_err(|e| format!("body is not JSON: {e}"))?;
    if value.get("type").and_then(Value::as_str) == Some("error") {
        let message = value
            .pointer("/error/message")
            .and_then(Value::as_str)
            .unwrap_or("no message");
        return Err(format!("an error object in a success response: {message}"));
    }
    let blocks = value
        .get("content")
        .and_then(Value::as_array)
        .ok_or("no 'content' array")?;
    let text = blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect();
    let count = |key: &str| {
        value
            .pointer(&format!("/usage/{key}"))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    let usage = TokenUsage {
        input: count("input_tokens")
            + count("cache_creation_input_tokens")
            + count("cache_read_input_tokens"),
        output: count("output_tokens"),
    };
    Ok((text, usage))
}

#[cfg(test)]
mod tests {
    use super::super::Prompt;
    use super::*;
    use serde_json::json;

    #[test]
    fn request_body_shape() {
        let prompt = Prompt {
            system: "sys".into(),
            user: "usr".into(),
        };
        let req = ChatRequest {
            model: "claude-sonnet-4-20250514",
            prompt: &prompt,
            max_tokens: 300,
        };
        assert_eq!(
            serde_json::to_value(request_body(&req)).expect("serialises"),
            json!({
                "model": "claude-sonnet-4-20250514",
                "system": "sys",
                "messages": [{"role": "user", "content": "usr"}],
                "max_tokens": 300,
                "temperature": 0,
            })
        );
    }

    #[test]
    fn joins_text_blocks_and_sums_input_usage() {
        let body = r#"{"id":"msg_1","type":"message","role":"assistant","model":"m",
            "content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":"Sure: "},
                       {"type":"text","text":"{\"score\": 5}"}],
            "stop_reason":"end_turn",
            "usage":{"input_tokens":100,"cache_creation_input_tokens":20,"cache_read_input_tokens":5,"output_tokens":12}}"#;
        assert_eq!(
            parse_response(body),
            Ok((
                "Sure: {\"score\": 5}".to_owned(),
                TokenUsage {
                    input: 125,
                    output: 12
                }
            ))
        );
        let empty = r#"{"type":"message","content":[],"stop_reason":"max_tokens"}"#;
        assert_eq!(
            parse_response(empty),
            Ok((String::new(), TokenUsage::default()))
        );
    }

    #[test]
    fn malformed_bodies() {
        assert!(parse_response("")
            .unwrap_err()
            .starts_with("body is not JSON: "));
        assert_eq!(
            parse_response(r#"{"type":"message"}"#).unwrap_err(),
            "no 'content' array"
        );
        assert_eq!(
            parse_response(r#"{"content":"hi"}"#).unwrap_err(),
            "no 'content' array"
        );
        assert_eq!(
            parse_response(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            )
            .unwrap_err(),
            "an error object in a success response: Overloaded"
        );
    }
}
