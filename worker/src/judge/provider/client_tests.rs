//! The client over a loopback socket (a one-shot std server, no fake provider): the wire
//! format of both APIs, header-borne auth, key scrubbing, and the mapping of refused and silent
//! connections; plus `new`'s validation and the redacted `Debug`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;

use super::*;

fn config(api: Api, base_url: &str) -> ProviderConfig {
    let mut c = evalfleet_config::JudgeConfig::default().providers[match api {
        Api::Openai => "openai",
        Api::Anthropic => "anthropic",
    }]
    .clone();
    c.base_url = base_url.into();
    c.timeout_s = 2.0;
    c.connect_timeout_s = 1.0;
    c
}

#[test]
fn new_validates_and_debug_redacts() {
    let c = ProviderClient::new(
        &config(Api::Openai, "https://api.openai.com/v1/"),
        " sk-secret-123\n".into(),
    )
    .unwrap();
    assert_eq!(c.endpoint(), "https://api.openai.com/v1/chat/completions");
    let debug = format!("{c:?}");
    assert!(
        debug.contains("<redacted>") && !debug.contains("secret"),
        "{debug}"
    );
    let a = ProviderClient::new(
        &config(Api::Anthropic, "https://api.anthropic.com"),
        "k".into(),
    )
    .unwrap();
    assert_eq!(a.endpoint(), "https://api.anthropic.com/v1/messages");
    let a =
        ProviderClient::new(&config(Api::Anthropic, "http://127.0.0.1:9/v1"), "k".into()).unwrap();
    assert_eq!(a.endpoint(), "http://127.0.0.1:9/v1/messages");

    let err =
        |c: ProviderConfig, key: &str| ProviderClient::new(&c, key.into()).unwrap_err().to_string();
    assert_eq!(
        err(config(Api::Openai, "http://x"), "  "),
        "the API key in OPENAI_API_KEY is empty"
    );
    assert_eq!(
        err(config(Api::Openai, "http://x"), "a\u{7}b"),
        "the API key in OPENAI_API_KEY has characters not allowed in an HTTP header"
    );
    assert!(err(config(Api::Openai, "api.openai.com"), "k")
        .starts_with("base_url 'api.openai.com' is not a URL"));
    assert_eq!(
        err(config(Api::Openai, "ftp://x"), "k"),
        "base_url 'ftp://x' must be http:// or https://"
    );
    let mut zero = config(Api::Openai, "http://x");
    zero.timeout_s = 0.0;
    assert_eq!(
        err(zero, "k"),
        "timeout_s must be a positive number of seconds, not 0"
    );
}

/// Serves one canned HTTP response (`head` = status line and headers) on a loopback port and
/// hands back the raw request.
fn one_shot(head: &str, body: &str) -> (String, std::thread::JoinHandle<String>) {
    let response = format!(
        "{head}\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream);
        let mut head = String::new();
        let mut length = 0;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap();
            }
            head.push_str(&line);
            if line == "\r\n" {
                break;
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        reader.get_mut().write_all(response.as_bytes()).unwrap();
        head + &String::from_utf8(body).unwrap()
    });
    (url, handle)
}

fn prompt() -> Prompt {
    Prompt {
        system: "sys".into(),
        user: "usr".into(),
    }
}

#[tokio::test]
async fn openai_call_over_a_socket() {
    let (url, server) = one_shot(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-ratelimit-remaining-requests: 7",
        r#"{"choices":[{"message":{"content":"{}"}}],"usage":{"prompt_tokens":9,"completion_tokens":2}}"#,
    );
    let client =
        ProviderClient::new(&config(Api::Openai, &format!("{url}/v1")), "sk-test".into()).unwrap();
    let p = prompt();
    let done = client
        .complete(&ChatRequest {
            model: "m",
            prompt: &p,
            max_tokens: 50,
        })
        .await
        .unwrap();
    assert_eq!(
        (done.text.as_str(), done.usage, done.status),
        (
            "{}",
            TokenUsage {
                input: 9,
                output: 2
            },
            200
        )
    );
    assert_eq!(done.limits.remaining_requests, Some(7));
    let request = server.join().unwrap();
    assert!(
        request.starts_with("POST /v1/chat/completions HTTP/1.1\r\n"),
        "{request}"
    );
    assert!(
        request.contains("authorization: Bearer sk-test\r\n"),
        "{request}"
    );
    assert!(
        request.contains(r#""response_format":{"type":"json_object"}"#),
        "{request}"
    );
}

#[tokio::test]
async fn anthropic_error_over_a_socket_scrubs_the_key() {
    let (url, server) = one_shot(
        "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json",
        r#"{"type":"error","error":{"type":"authentication_error","message":"bad key: key-123456"}}"#,
    );
    let client = ProviderClient::new(&config(Api::Anthropic, &url), "key-123456".into()).unwrap();
    let p = prompt();
    let e = client
        .complete(&ChatRequest {
            model: "m",
            prompt: &p,
            max_tokens: 50,
        })
        .await
        .unwrap_err();
    assert_eq!(
        e.reason(),
        "HTTP 401 authentication_error: bad key: <redacted>"
    );
    let request = server.join().unwrap();
    assert!(
        request.starts_with("POST /v1/messages HTTP/1.1\r\n"),
        "{request}"
    );
    assert!(
        request.contains("x-api-key: key-123456\r\n")
            && request.contains("anthropic-version: 2023-06-01\r\n"),
        "{request}"
    );
    assert!(request.contains(r#""system":"sys""#), "{request}");
}

#[tokio::test]
async fn refused_connection_and_silent_server() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let client = ProviderClient::new(
        &config(Api::Openai, &format!("http://127.0.0.1:{port}")),
        "k".into(),
    )
    .unwrap();
    let p = prompt();
    let req = ChatRequest {
        model: "m",
        prompt: &p,
        max_tokens: 5,
    };
    let e = client.complete(&req).await.unwrap_err();
    assert!(matches!(e, CallError::Connect(_)), "{e:?}");
    assert!(
        e.reason().starts_with("connection error: "),
        "{}",
        e.reason()
    );

    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut c = config(
        Api::Openai,
        &format!("http://{}", silent.local_addr().unwrap()),
    );
    c.timeout_s = 0.3;
    let e = ProviderClient::new(&c, "k".into())
        .unwrap()
        .complete(&req)
        .await
        .unwrap_err();
    assert_eq!(e.reason(), "timeout: no complete response within 0.3s");
    drop(silent);
}
