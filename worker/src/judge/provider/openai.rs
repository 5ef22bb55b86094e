//! OpenAI Chat Completions (`POST {base_url}/chat/completions`) — and every OpenAI-compatible
//! server behind a `base_url` (vLLM, Ollama, LiteLLM, gateways) — as pure request/response
//! functions, so the wire format is tested without a server.
//!
//! The reply is asked for as a `json_object` at temperature 0. Parsing is lenient where
//! compatible servers differ (a `null` content with a `refusal`, content as an array of parts,
//! missing usage = 0 tokens) and strict only where the shape is unusable (no `choices[0].message`).

use serde::Serialize;
use serde_json::Value;

use super::{ChatRequest, Message, TokenUsage};

/// The request body, serialised straight from borrowed fields (no intermediate JSON tree).
#[derive(Serialize)]
pub(super) struct RequestBody<'a> {
    model: &'a str,
    messages: [Message<'a>; 2],
    max_tokens: u32,
    temperature: u8,
    response_format: ResponseFormat,
}

#[derive(Serialize)]
struct ResponseFormat {
    #[serde(rename = "type")]
    kind: &'static str,
}

pub(super) fn request_body<'a>(req: &ChatRequest<'a>) -> RequestBody<'a> {
    RequestBody {
        model: req.model,
        messages: [
            Message {
                role: "system",
                content: &req.prompt.system,
            },
            Message {
                role: "user",
                content: &req.prompt.user,
            },
        ],
        max_tokens: req.max_tokens,
        temperature: 0,
        response_format: ResponseFormat {
            kind: "json_object",
        },
    }
}

/// The reply text (`choices[0].message.content`) and the usage of a 2xx body.
pub(super) fn parse_response(body: &str) -> Result<(String, TokenUsage), String> {
    let value: Value = serde_json::from_str(body).map_err(|e| format!("body is not JSON: {e}"))?;
    let message = value
        .get("choices")
        .and_then(Value::as_array)
        .ok_or("no 'choices' array")?
        .first()
        .ok_or("'choices' is empty")?
        .get("message")
        .filter(|m| m.is_object())
        .ok_or("choices[0] has no 'message' object")?;
    let text = match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        None | Some(Value::Null) => message
            .get("refusal")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        Some(_) => return Err("choices[0].message.content is not a string".into()),
    };
    let count = |key: &str| {
        value
            .pointer(&format!("/usage/{key}"))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    let usage = TokenUsage {
        input: count("prompt_tokens"),
        output: count("completion_tokens"),
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
            model: "gpt-4o-mini",
            prompt: &prompt,
            max_tokens: 300,
        };
        assert_eq!(
            serde_json::to_value(request_body(&req)).expect("serialises"),
            json!({
                "model": "gpt-4o-mini",
                "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": "usr"}],
                "max_tokens": 300,
                "temperature": 0,
                "response_format": {"type": "json_object"},
            })
        );
    }

    #[test]
    fn parses_content_and_usage() {
        let body = r#"{"id":"x","object":"chat.completion","choices":[{"index":0,
            "message":{"role":"assistant","content":"{\"score\": 4}"},"finish_reason":"stop"}],
            "usage":{"prompt_tokens":120,"completion_tokens":15,"total_tokens":135}}"#;
        assert_eq!(
            parse_response(body),
            Ok((
                "{\"score\": 4}".to_owned(),
                TokenUsage {
                    input: 120,
                    output: 15
                }
            ))
        );
    }

    #[test]
    fn lenient_variants() {
        let refusal = r#"{"choices":[{"message":{"content":null,"refusal":"I can't."}}]}"#;
        assert_eq!(
            parse_response(refusal),
            Ok(("I can't.".to_owned(), TokenUsage::default()))
        );
        let no_content =
            r#"{"choices":[{"message":{"role":"assistant"}}],"usage":{"prompt_tokens":3}}"#;
        assert_eq!(
            parse_response(no_content),
            Ok((
                String::new(),
                TokenUsage {
                    input: 3,
                    output: 0
                }
            ))
        );
        let parts = r#"{"choices":[{"message":{"content":[{"type":"text","text":"{\"sc"},{"type":"text","text":"ore\": 2}"}]}}]}"#;
        assert_eq!(parse_response(parts).unwrap().0, "{\"score\": 2}");
    }

    #[test]
    fn malformed_bodies() {
        assert!(parse_response("<html>")
            .unwrap_err()
            .starts_with("body is not JSON: "));
        assert_eq!(parse_response("{}").unwrap_err(), "no 'choices' array");
        assert_eq!(
            parse_response(r#"{"choices":[]}"#).unwrap_err(),
            "'choices' is empty"
        );
        assert_eq!(
            parse_response(r#"{"choices":[{"text":"x"}]}"#).unwrap_err(),
            "choices[0] has no 'message' object"
        );
        assert_eq!(
            parse_response(r#"{"choices":[{"message":{"content":5}}]}"#).unwrap_err(),
            "choices[0].message.content is not a string"
        );
    }
}
