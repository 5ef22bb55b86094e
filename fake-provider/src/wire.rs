//! The bits both dialects share on the wire: building a JSON response with headers, reading
//! the request's content parts, and masking an API key before it goes into an error message.

use axum::body::Body;
use axum::http::header::{HeaderName, HeaderValue, CONTENT_TYPE};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::Deserialize;

/// A message's `content`: a string or an array of typed parts (only `text` parts count).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Content {
    Text(String),
    Parts(Vec<Part>),
}

#[derive(Debug, Deserialize)]
pub struct Part {
    #[serde(default)]
    pub text: Option<String>,
}

impl Content {
    /// Appends the text of this content to `out`.
    pub fn append_to(&self, out: &mut String) {
        match self {
            Content::Text(text) => out.push_str(text),
            Content::Parts(parts) => {
                for (i, text) in parts.iter().filter_map(|p| p.text.as_deref()).enumerate() {
                    if i > 0 {
                        out.push('\n');
                    }
                    out.push_str(text);
                }
            }
        }
    }

    /// The text of this content alone.
    pub fn text(&self) -> String {
        let mut out = String::new();
        self.append_to(&mut out);
        out
    }
}

/// Joins texts with newlines, the prompt the verdict is derived from.
pub fn join_prompt<'a>(parts: impl Iterator<Item = &'a Content>) -> String {
    let mut prompt = String::with_capacity(2048);
    for (i, content) in parts.enumerate() {
        if i > 0 {
            prompt.push('\n');
        }
        content.append_to(&mut prompt);
    }
    prompt
}

/// A JSON response with extra headers.
pub fn json_response(status: StatusCode, mut headers: HeaderMap, body: Vec<u8>) -> Response {
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

/// Adds a header whose value is built from a string the server itself produced.
pub fn put(headers: &mut HeaderMap, name: &'static str, value: impl ToString) {
    if let Ok(value) = HeaderValue::from_str(&value.to_string()) {
        headers.insert(HeaderName::from_static(name), value);
    }
}

/// The key of an `Authorization: Bearer <key>` header (scheme case-insensitive, key trimmed).
pub fn bearer_key(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, key)| key.trim())
}

/// `sk-abc***********wxyz`: enough to recognise a key, never the key itself.
pub fn mask_key(key: &str) -> String {
    let chars: Vec<char> = key.chars().collect();
    if chars.len() <= 8 {
        return "*".repeat(chars.len());
    }
    let head: String = chars[..3].iter().collect();
    let tail: String = chars[chars.len() - 4..].iter().collect();
    format!("{head}{}{tail}", "*".repeat(chars.len() - 7))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_masked() {
        assert_eq!(mask_key("sk-test-123456789"), "sk-**********6789");
        assert_eq!(mask_key("short"), "*****");
    }

    #[test]
    fn content_parts_join() {
        let c: Content = serde_json::from_str(
            r#"[{"type":"text","text":"a"},{"type":"image_url"},{"type":"text","text":"b"}]"#,
        )
        .unwrap();
        assert_eq!(c.text(), "a\nb");
    }
}
