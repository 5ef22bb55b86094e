use serde_json::json;

use super::*;

fn chat() -> Target {
    Target::parse(
        r#"
name: bot
kind: chat
provider: openai
model: gpt-4o-mini
system: "Support for {{ metadata.domain }}."
prompt: "{{ ticket }}"
params: {temperature: 0}
output: response
model_field: model
set: {prompt_version: "v2.0"}
"#,
    )
    .unwrap()
}

fn http() -> Target {
    Target::parse(
        r#"
name: agent
kind: http
url: "http://127.0.0.1:9/ask?k=${AGENT_KEY}"
headers: {X-Agent-Key: "${AGENT_KEY}"}
body: {query: "{{ question }}", conversation: {id: "{{ id }}"}, n: 3}
outputs:
  trace: /data/trace
  trace.answer: /data/reply/text
"#,
    )
    .unwrap()
}

fn object(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

#[test]
fn a_record_without_what_the_templates_use_is_skipped_before_any_call() {
    let plan = TargetPlan::compile(chat(), Secrets::Keep).unwrap();
    let ok = json!({"id": "t1", "ticket": "VPN drops", "metadata": {"domain": "it"}});
    assert_eq!(plan.check(&ok).unwrap().id, "t1");
    let err = plan
        .check(&json!({"id": "t1", "metadata": {}}))
        .unwrap_err();
    assert_eq!(
        err,
        "target bot: the record has no 'ticket', which its templates use"
    );
    let err = plan
        .check(&json!({"ticket": "x", "metadata": {}}))
        .unwrap_err();
    assert_eq!(err, "missing required field 'id'");
}

#[test]
fn a_chat_request_renders_the_record_and_its_reply_fills_the_fields() {
    let plan = TargetPlan::compile(chat(), Secrets::Keep).unwrap();
    let record = object(
        json!({"id": "t1", "ticket": "VPN drops", "metadata": {"domain": "it"}, "response": "old"}),
    );
    let call = plan.chat(&record, None).unwrap();
    assert_eq!(call.system.as_deref(), Some("Support for it."));
    assert_eq!(
        (call.prompt.as_str(), call.model.as_str()),
        ("VPN drops", "gpt-4o-mini")
    );
    assert_eq!(plan.chat(&record, Some("gpt-4o")).unwrap().model, "gpt-4o");
    let done = plan
        .complete(
            record,
            Reply::Chat {
                text: "Renew the lease.".into(),
                model: "gpt-4o-mini-2024".into(),
            },
        )
        .unwrap();
    assert_eq!(done.record["response"], "Renew the lease.", "replaced");
    assert_eq!(done.record["model"], "gpt-4o-mini-2024");
    assert_eq!(done.record["prompt_version"], "v2.0");
    assert_eq!(done.outputs.len(), 3);
}

#[test]
fn an_http_reply_fills_dotted_fields_by_pointer_or_says_what_is_missing() {
    let lookup = |name: &str| (name == "AGENT_KEY").then(|| "s3cr\"et {{ x }}".to_owned());
    let plan = TargetPlan::compile(http(), Secrets::Resolve(&lookup)).unwrap();
    let record = object(json!({"id": "q1", "question": "What is ${AGENT_KEY}?"}));
    let call = plan.http(&record).unwrap();
    assert_eq!(
        call.url, "http://127.0.0.1:9/ask?k=s3cr\"et {{ x }}",
        "literal, not a template"
    );
    assert_eq!(
        call.headers,
        [("X-Agent-Key".to_owned(), "s3cr\"et {{ x }}".to_owned())]
    );
    assert_eq!(
        call.body,
        json!({"query": "What is ${AGENT_KEY}?", "conversation": {"id": "q1"}, "n": 3}),
        "a record's text is never read as a variable"
    );
    assert!(
        !format!("{call:?}").contains("s3cr"),
        "Debug hides the values"
    );
    let reply = json!({"data": {"trace": {"steps": []}, "reply": {"text": "Forty-two."}}});
    let done = plan.complete(record.clone(), Reply::Http(reply)).unwrap();
    assert_eq!(
        done.record["trace"],
        json!({"steps": [], "answer": "Forty-two."})
    );
    let err = plan
        .complete(record, Reply::Http(json!({"data": {"trace": {}}})))
        .unwrap_err();
    assert_eq!(err, "target agent: /data/reply/text not found in the reply");
}

#[test]
fn a_secret_that_is_not_set_is_named() {
    let none = |_: &str| None;
    let err = TargetPlan::compile(http(), Secrets::Resolve(&none)).unwrap_err();
    assert!(err.contains("AGENT_KEY is not set"), "{err}");
    assert_eq!(secrets_of(&http()), ["AGENT_KEY"]);
    assert!(secrets_of(&chat()).is_empty());
}

#[test]
fn a_record_that_already_holds_what_the_target_fills_is_told_which_fields() {
    let plan = TargetPlan::compile(chat(), Secrets::Keep).unwrap();
    let fresh = json!({"id": "t1", "ticket": "x", "metadata": {"domain": "it"}, "response": null});
    assert!(plan.check(&fresh).unwrap().replaced.is_empty());
    let recorded = json!({"id": "t1", "ticket": "x", "metadata": {}, "response": "old", "prompt_version": "v1"});
    assert_eq!(
        plan.check(&recorded).unwrap().replaced,
        ["response", "prompt_version"]
    );
    let plan = TargetPlan::compile(http(), Secrets::Keep).unwrap();
    let nested = json!({"id": "q", "question": "?", "trace": {"answer": "old"}});
    assert_eq!(
        plan.check(&nested).unwrap().replaced,
        ["trace", "trace.answer"]
    );
}
