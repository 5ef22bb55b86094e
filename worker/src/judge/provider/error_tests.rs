//! Error classification for every status/body combination the providers and gateways send,
//! the `CallError` methods, and key hygiene in messages: all pure, no server.

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use super::error::{redact_key_like, MAX_KIND_CHARS, MAX_MESSAGE_CHARS};
use super::*;

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    pairs
        .iter()
        .map(|(k, v)| {
            (
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            )
        })
        .collect()
}

fn openai(status: u16, body: &str) -> CallError {
    classify_error(Api::Openai, status, &HeaderMap::new(), body)
}

fn anthropic(status: u16, body: &str) -> CallError {
    classify_error(Api::Anthropic, status, &HeaderMap::new(), body)
}

fn anthropic_body(kind: &str, message: &str) -> String {
    format!(r#"{{"type":"error","error":{{"type":"{kind}","message":"{message}"}}}}"#)
}

#[test]
fn openai_429_rate_limit_vs_quota() {
    let body = r#"{"error":{"message":"Rate limit reached for gpt-4o-mini on tokens per min (TPM). Please try again in 150ms.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}"#;
    let h = headers(&[
        ("x-ratelimit-remaining-tokens", "0"),
        ("x-ratelimit-reset-tokens", "150ms"),
        ("x-ratelimit-remaining-requests", "12"),
    ]);
    let e = classify_error(Api::Openai, 429, &h, body);
    let CallError::RateLimited {
        retry_after,
        limits,
        ..
    } = &e
    else {
        panic!("{e:?}")
    };
    // No retry-after header: the reset of the exhausted bucket stands in.
    assert_eq!(*retry_after, Some(Duration::from_millis(150)));
    assert_eq!(limits.remaining_requests, Some(12));
    assert!(e.retryable() && !e.is_auth());
    assert_eq!(e.status(), Some(429));
    assert_eq!(e.reason(), "HTTP 429 rate_limit_exceeded: Rate limit reached for gpt-4o-mini on tokens per min (TPM). Please try again in 150ms.");

    let h = headers(&[
        ("retry-after", "2"),
        ("x-ratelimit-remaining-tokens", "0"),
        ("x-ratelimit-reset-tokens", "150ms"),
    ]);
    assert_eq!(
        classify_error(Api::Openai, 429, &h, body).retry_after(),
        Some(Duration::from_secs(2))
    );

    let quota = r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#;
    let e = openai(429, quota);
    assert!(matches!(e, CallError::QuotaExhausted { .. }), "{e:?}");
    assert!(!e.retryable());
    assert_eq!(e.status(), Some(429));
    assert_eq!(e.reason(), "HTTP 429 insufficient_quota: You exceeded your current quota, please check your plan and billing details.");
    // Only `type` carrying it still counts.
    assert!(matches!(
        openai(
            429,
            r#"{"error":{"type":"insufficient_quota","message":"x"}}"#
        ),
        CallError::QuotaExhausted { .. }
    ));
}

#[test]
fn anthropic_429_and_overload() {
    let h = headers(&[
        ("retry-after", "30"),
        ("anthropic-ratelimit-requests-remaining", "0"),
    ]);
    let e = classify_error(
        Api::Anthropic,
        429,
        &h,
        &anthropic_body(
            "rate_limit_error",
            "Number of request tokens has exceeded your per-minute rate limit",
        ),
    );
    let CallError::RateLimited {
        retry_after,
        limits,
        ..
    } = &e
    else {
        panic!("{e:?}")
    };
    assert_eq!(*retry_after, Some(Duration::from_secs(30)));
    assert_eq!(limits.remaining_requests, Some(0));
    assert_eq!(e.reason(), "HTTP 429 rate_limit_error: Number of request tokens has exceeded your per-minute rate limit");
    // Anthropic has no insufficient_quota: a 429 there is always a rate limit.
    assert!(matches!(
        anthropic(429, r#"{"error":{"type":"insufficient_quota"}}"#),
        CallError::RateLimited { .. }
    ));

    let e = classify_error(
        Api::Anthropic,
        529,
        &headers(&[("retry-after", "5")]),
        &anthropic_body("overloaded_error", "Overloaded"),
    );
    assert!(
        matches!(e, CallError::Overloaded { status: 529, .. }),
        "{e:?}"
    );
    assert!(e.retryable());
    assert_eq!(e.retry_after(), Some(Duration::from_secs(5)));
    assert_eq!(e.status(), Some(529));
    assert_eq!(e.reason(), "HTTP 529 overloaded_error: Overloaded");
}

#[test]
fn server_errors_are_retryable() {
    let e = anthropic(500, &anthropic_body("api_error", "Internal server error"));
    assert!(
        matches!(
            e,
            CallError::Server {
                status: 500,
                retry_after: None,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.retryable());
    assert_eq!(e.reason(), "HTTP 500 api_error: Internal server error");

    let e = openai(503, "");
    assert!(
        matches!(e, CallError::Overloaded { status: 503, .. }),
        "{e:?}"
    );
    assert_eq!(e.reason(), "HTTP 503 Service Unavailable");

    let e = classify_error(
        Api::Openai,
        502,
        &headers(&[("retry-after", "1.5")]),
        "<html>\n<body><h1>502 Bad Gateway</h1></body>\n</html>\n",
    );
    assert!(matches!(e, CallError::Server { status: 502, .. }), "{e:?}");
    assert_eq!(e.retry_after(), Some(Duration::from_millis(1500)));
    assert_eq!(
        e.reason(),
        "HTTP 502 Bad Gateway: <html> <body><h1>502 Bad Gateway</h1></body> </html>"
    );

    for (status, reason) in [
        (408, "HTTP 408 Request Timeout: timed out"),
        (409, "HTTP 409 Conflict: timed out"),
    ] {
        let e = openai(status, "timed out");
        assert!(
            matches!(e, CallError::Server { .. }) && e.retryable(),
            "{e:?}"
        );
        assert_eq!(e.reason(), reason);
    }
    assert_eq!(anthropic(529, "").reason(), "HTTP 529 error");
}

#[test]
fn auth_errors_stop_and_never_show_keys() {
    let body = r#"{"error":{"message":"Incorrect API key provided: sk-proj-abc*****************wxyz. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#;
    let e = openai(401, body);
    assert!(e.is_auth() && !e.retryable(), "{e:?}");
    assert_eq!(e.status(), Some(401));
    assert_eq!(
        e.reason(),
        "HTTP 401 invalid_api_key: Incorrect API key provided: sk-<redacted>. You can find your API key at https://platform.openai.com/account/api-keys."
    );
    let e = anthropic(
        401,
        &anthropic_body("authentication_error", "invalid x-api-key"),
    );
    assert!(e.is_auth());
    assert_eq!(
        e.reason(),
        "HTTP 401 authentication_error: invalid x-api-key"
    );
    let e = anthropic(
        403,
        &anthropic_body(
            "permission_error",
            "Your API key does not have permission to use the specified resource.",
        ),
    );
    assert!(matches!(e, CallError::Auth { status: 403, .. }));
    // A raw key echoed by a gateway is scrubbed by the client (exact key) and by shape.
    let e = openai(
        403,
        "forbidden for key abc-SECRET-123 and sk-ant-api03-XYZ_9",
    )
    .scrub("abc-SECRET-123");
    assert_eq!(
        e.reason(),
        "HTTP 403 Forbidden: forbidden for key <redacted> and sk-<redacted>"
    );
    let short = openai(500, "the key x is wrong").scrub("x");
    assert_eq!(
        short.reason(),
        "HTTP 500 Internal Server Error: the key x is wrong"
    );
}

#[test]
fn client_errors_are_rejected() {
    let e = openai(
        400,
        r#"{"error":{"message":"Invalid 'max_tokens': integer below minimum value.","type":"invalid_request_error","param":"max_tokens","code":null}}"#,
    );
    assert!(
        matches!(e, CallError::Rejected { status: 400, .. }) && !e.retryable(),
        "{e:?}"
    );
    assert_eq!(
        e.reason(),
        "HTTP 400 invalid_request_error: Invalid 'max_tokens': integer below minimum value."
    );
    let e = anthropic(
        404,
        &anthropic_body("not_found_error", "model: claude-nope"),
    );
    assert!(matches!(e, CallError::Rejected { status: 404, .. }));
    assert_eq!(e.reason(), "HTTP 404 not_found_error: model: claude-nope");
    assert_eq!(
        openai(404, r#"{"error":"model 'x' not found"}"#).reason(),
        "HTTP 404 Not Found: model 'x' not found"
    );
    assert_eq!(
        openai(404, r#"{"detail":"Not Found"}"#).reason(),
        "HTTP 404 Not Found: Not Found"
    );
    assert_eq!(
        openai(422, r#"{"message":"bad field"}"#).reason(),
        "HTTP 422 Unprocessable Entity: bad field"
    );
    assert_eq!(
        openai(413, r#"{"odd":1}"#).reason(),
        r#"HTTP 413 Payload Too Large: {"odd":1}"#
    );
    assert!(matches!(
        openai(302, ""),
        CallError::Rejected { status: 302, .. }
    ));
    assert!(matches!(
        openai(200, "<html>"),
        CallError::Malformed { status: 200, .. }
    ));
}

#[test]
fn long_bodies_are_cut() {
    let e = openai(500, &"x".repeat(1000));
    assert_eq!(
        e.reason(),
        format!(
            "HTTP 500 Internal Server Error: {}…",
            "x".repeat(MAX_MESSAGE_CHARS)
        )
    );
}

/// Found by fuzzing (target `judge_reply_anthropic`): an error type of some 200 characters (here
/// replacement characters, from a body that is not UTF-8) was shown whole, uncut, in front of the
/// cut message.
#[test]
fn a_long_error_type_is_cut() {
    let body =
        b"{\"type\":\"error\",\"error\":{\"type\":\"overlo\xb8\xb8\xb8\xb8\xb8\xb8\xb8\xb8\xb8\
        \xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\
        \xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\
        \xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\
        \xff?\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\
        \xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\
        \xff\xff\xff\xff\xff\xff\xb8\xb8\xb8\xb8\xb8\xb8\xb8\xb8\xb8\xb8\xb8\xb8\xb8\xb8\xb8\
        \xb8\xb8\xb8\xb8\xb8\xb8\xb8\xb8\xb8\xb8\xb8\xb8\xb8\xb8\xb8\xb8\xb8;\xb8\xb8\xb8$\
        \xb8\xb8\xb8D\xb8\xb8\xb8\xb8\xb8\xb8\xb8\xb8\xb8aded_error\",\"\x9bessage\":\"Overl\
        oaded\"}}";
    // The client reads a body as lossy UTF-8.
    let reason = anthropic(400, &String::from_utf8_lossy(body)).reason();
    let kind = reason
        .strip_prefix("HTTP 400 ")
        .and_then(|r| r.split(": ").next())
        .unwrap_or_default();
    assert!(kind.starts_with("overlo\u{fffd}"), "{reason}");
    assert!(kind.ends_with('…'), "{reason}");
    assert_eq!(kind.chars().count(), MAX_KIND_CHARS + 1, "{reason}");
    let most = "HTTP 400 ".len() + MAX_KIND_CHARS + 1 + ": ".len() + MAX_MESSAGE_CHARS + 1;
    assert!(reason.chars().count() <= most, "{reason}");

    // A code is one line, without anything that looks like a key.
    let body = r#"{"error":{"code":"bad\nkey sk-abcdef123456","message":"No."}}"#;
    assert_eq!(
        openai(400, body).reason(),
        "HTTP 400 bad key sk-<redacted>: No."
    );
}

#[test]
fn key_like_redaction() {
    assert_eq!(redact_key_like("sk-abc"), "sk-<redacted>");
    assert_eq!(redact_key_like("key=sk-abc, ok"), "key=sk-<redacted>, ok");
    assert_eq!(
        redact_key_like("task-list disk-usage sk-"),
        "task-list disk-usage sk-"
    );
}

#[test]
fn timeouts_and_transport_are_retryable() {
    for e in [
        CallError::Timeout("t".into()),
        CallError::Connect("c".into()),
    ] {
        assert!(e.retryable() && e.status().is_none() && e.retry_after().is_none());
    }
    assert_eq!(
        CallError::Timeout("no complete response within 1s".into()).reason(),
        "timeout: no complete response within 1s"
    );
    // A cut or garbled 2xx body is a gateway glitch more often than not: worth another try.
    assert!(CallError::Malformed {
        status: 200,
        message: "m".into()
    }
    .retryable());
}
