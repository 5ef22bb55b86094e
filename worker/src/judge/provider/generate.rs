//! Generation calls: the provider as the system under test (a chat target), not as a judge.
//! The body is the target's: its system prompt if any, its rendered prompt, and its `params`
//! passed as they are (`temperature`, `max_tokens`, `top_p`, ...); no JSON mode. The reply's
//! text and usage are read as a judge reply's are, plus the model that answered.

use serde_json::{Map, Value};

use evalfleet_config::Api;

/// One generation call's input.
#[derive(Debug, Clone, Copy)]
pub struct GenerateRequest<'a> {
    pub model: &'a str,
    pub system: Option<&'a str>,
    pub prompt: &'a str,
    pub params: &'a Map<String, Value>,
    /// Anthropic requires `max_tokens`: used when `params` has none.
    pub default_max_tokens: u32,
}

/// The body of a generation call to an `api` provider: `params` first, then what the request
/// itself names (model, messages, Anthropic's system), which `params` cannot override.
pub(super) fn body(api: Api, req: &GenerateRequest<'_>) -> Value {
    let mut body = req.params.clone();
    let user = serde_json::json!({"role": "user", "content": req.prompt});
    match api {
        Api::Openai => {
            let mut messages = Vec::with_capacity(2);
            if let Some(system) = req.system {
                messages.push(serde_json::json!({"role": "system", "content": system}));
            }
            messages.push(user);
            body.insert("messages".into(), Value::Array(messages));
        }
        Api::Anthropic => {
            if let Some(system) = req.system {
                body.insert("system".into(), Value::String(system.to_owned()));
            }
            body.insert("messages".into(), Value::Array(vec![user]));
            body.entry("max_tokens")
                .or_insert_with(|| Value::from(req.default_max_tokens));
        }
    }
    body.insert("model".into(), Value::String(req.model.to_owned()));
    Value::Object(body)
}

/// The model a 2xx body says answered (both APIs put it in `model`).
pub(super) fn answering_model(body: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Model {
        model: Option<String>,
    }
    serde_json::from_str::<Model>(body).ok()?.model
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_generation_body_carries_the_targets_params_and_no_json_mode() {
        let params = json!({"temperature": 0.7, "top_p": 0.9, "model": "not-this"});
        let req = GenerateRequest {
            model: "gpt-4o-mini",
            system: Some("Be brief."),
            prompt: "VPN drops",
            params: params.as_object().unwrap(),
            default_max_tokens: 300,
        };
        assert_eq!(
            body(Api::Openai, &req),
            json!({"temperature": 0.7, "top_p": 0.9, "model": "gpt-4o-mini", "messages": [
                {"role": "system", "content": "Be brief."}, {"role": "user", "content": "VPN drops"}]})
        );
        assert_eq!(
            body(Api::Anthropic, &req),
            json!({"temperature": 0.7, "top_p": 0.9, "model": "gpt-4o-mini", "system": "Be brief.",
                   "max_tokens": 300, "messages": [{"role": "user", "content": "VPN drops"}]})
        );
        let own = json!({"max_tokens": 50});
        let req = GenerateRequest {
            system: None,
            params: own.as_object().unwrap(),
            ..req
        };
        assert_eq!(
            body(Api::Anthropic, &req)["max_tokens"],
            50,
            "the target's own wins"
        );
        assert!(body(Api::Openai, &req).get("system").is_none());
        assert_eq!(
            answering_model(r#"{"model": "gpt-4o-mini-2024-07-18"}"#).as_deref(),
            Some("gpt-4o-mini-2024-07-18")
        );
        assert_eq!(answering_model("not json"), None);
    }
}
