//! The batch lines' framing and the decoding of result lines, without a server (the round trips
//! over sockets are in `worker/tests/batch_client.rs`).

use evalfleet_config::Api;
use serde_json::Value;

use super::batch::*;
use super::batch_results::decode_anthropic;
use super::ChatRequest;
use crate::judge::prompt::Prompt;

fn request(prompt: &Prompt) -> ChatRequest<'_> {
    ChatRequest {
        model: "m",
        prompt,
        max_tokens: 10,
    }
}

#[test]
fn lines_are_framed_as_each_api_wants() {
    let prompt = Prompt {
        system: "s".into(),
        user: "u".into(),
    };
    for api in [Api::Openai, Api::Anthropic] {
        let lines = vec![
            encode_line(api, "a", &request(&prompt)),
            encode_line(api, "b", &request(&prompt)),
        ];
        let spooled = BatchBody::of(api, &lines).unwrap();
        let body = spooled.bytes();
        let content: usize = lines.iter().map(Vec::len).sum();
        assert_eq!(body.len(), content + framing_bytes(api, 2));
        assert_eq!(spooled.len(), body.len() as u64);
        assert_eq!(spooled.requests(), 2);
        match api {
            Api::Openai => {
                let first: Value = serde_json::from_slice(&lines[0]).unwrap();
                assert_eq!(first["url"], OPENAI_LINE_URL);
                assert_eq!(first["body"]["response_format"]["type"], "json_object");
            }
            Api::Anthropic => {
                let whole: Value = serde_json::from_slice(&body).unwrap();
                assert_eq!(whole["requests"][1]["custom_id"], "b");
                assert_eq!(whole["requests"][0]["params"]["system"], "s");
            }
        }
    }
}

#[test]
fn anthropic_results_decode_every_type() {
    let ok = r#"{"custom_id":"a","result":{"type":"succeeded","message":{"model":"claude-x","content":[{"type":"text","text":"{\"score\":3}"}],"usage":{"input_tokens":5,"output_tokens":2}}}}"#;
    let (id, item) = decode_anthropic(ok).unwrap();
    assert_eq!(id, "a");
    assert!(matches!(item, BatchItem::Reply { ref text, ref model, .. }
        if text == "{\"score\":3}" && model.as_deref() == Some("claude-x")));
    let bad = r#"{"custom_id":"b","result":{"type":"errored","error":{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}}}}"#;
    assert!(matches!(
        decode_anthropic(bad).unwrap().1,
        BatchItem::Errored {
            retryable: false,
            ..
        }
    ));
    let expired = r#"{"custom_id":"c","result":{"type":"expired"}}"#;
    assert_eq!(decode_anthropic(expired).unwrap().1, BatchItem::Expired);
    assert!(decode_anthropic(r#"{"custom_id":"d","result":{"type":"?"}}"#).is_err());
}
