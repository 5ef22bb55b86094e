//! Shared helpers for the socket-level tests: start a provider on an ephemeral port, build
//! realistic judge requests for both dialects, and read a judge score out of a reply.
#![allow(dead_code)]

use evalfleet_fake_provider::{spawn, FakeProviderArgs};
use serde_json::{json, Value};
use tokio::task::JoinHandle;

pub const KEY: &str = "sk-test-fake-provider-key";

/// A running provider; aborted on drop.
pub struct Fake {
    pub base: String,
    pub http: reqwest::Client,
    handle: JoinHandle<()>,
}

impl Drop for Fake {
    fn drop(&mut self) {
        self.handle.abort();
    }
}

/// Starts a provider with `args` (port forced to 0).
pub async fn start(args: FakeProviderArgs) -> Fake {
    let (addr, handle) = spawn(FakeProviderArgs { port: 0, ..args })
        .await
        .expect("spawn fake provider");
    assert!(addr.ip().is_loopback());
    Fake {
        base: format!("http://{addr}"),
        http: reqwest::Client::new(),
        handle,
    }
}

/// Defaults with no wrapping, so content is bare JSON unless a test asks otherwise.
pub fn plain() -> FakeProviderArgs {
    FakeProviderArgs {
        wrap_rate: 0.0,
        ..FakeProviderArgs::default()
    }
}

pub fn judge_prompt(case: &str, min: i64, max: i64) -> String {
    format!(
        "You are grading a support reply. Return JSON {{\"score\": <int>, \"reasoning\": <str>}} \
         where score is an integer from {min} to {max}.\n<response>\n{case}\n</response>"
    )
}

pub fn openai_body(prompt: &str, json_mode: bool) -> Value {
    let mut body = json!({
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "system", "content": "You are a strict evaluator."},
            {"role": "user", "content": prompt}
        ],
        "temperature": 0
    });
    if json_mode {
        body["response_format"] = json!({"type": "json_object"});
    }
    body
}

pub fn anthropic_body(prompt: &str) -> Value {
    json!({
        "model": "claude-3-5-haiku-latest",
        "max_tokens": 256,
        "system": "You are a strict evaluator.",
        "messages": [{"role": "user", "content": prompt}]
    })
}

impl Fake {
    pub async fn openai(&self, key: Option<&str>, body: &Value) -> reqwest::Response {
        let mut req = self
            .http
            .post(format!("{}/v1/chat/completions", self.base))
            .json(body);
        if let Some(key) = key {
            req = req.bearer_auth(key);
        }
        req.send().await.expect("openai request")
    }

    pub async fn anthropic(&self, key: Option<&str>, body: &Value) -> reqwest::Response {
        let mut req = self
            .http
            .post(format!("{}/v1/messages", self.base))
            .header("anthropic-version", "2023-06-01")
            .json(body);
        if let Some(key) = key {
            req = req.header("x-api-key", key);
        }
        req.send().await.expect("anthropic request")
    }

    /// `POST /agent` (the demo agent) with `body`.
    pub async fn agent(&self, body: &Value) -> reqwest::Response {
        self.http
            .post(format!("{}/agent", self.base))
            .json(body)
            .send()
            .await
            .expect("agent request")
    }

    pub async fn get_json(&self, path: &str) -> Value {
        let resp = self.http.get(format!("{}{path}", self.base)).send().await;
        resp.expect("get").json().await.expect("json")
    }

    pub async fn admin(&self, patch: Value) -> reqwest::Response {
        self.http
            .post(format!("{}/admin/config", self.base))
            .json(&patch)
            .send()
            .await
            .expect("admin config")
    }
}

/// The message text of a 200 reply of either dialect.
pub fn content_of(body: &Value) -> String {
    let text = body["choices"][0]["message"]["content"]
        .as_str()
        .or_else(|| body["content"][0]["text"].as_str());
    text.expect("reply content").to_owned()
}

/// The score in a reply's content: the outermost `{...}`, as a tolerant judge parser reads it.
pub fn score_in(content: &str) -> Option<i64> {
    let start = content.find('{')?;
    let end = content.rfind('}')?;
    let value: Value = serde_json::from_str(&content[start..=end]).ok()?;
    value["score"].as_i64()
}
