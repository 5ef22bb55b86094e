//! Which provider produced a response, from its model name.
//!
//! Cross-provider judging (OpenAI answers judged by Anthropic and the reverse) starts here. The
//! rules are prefixes, matched case-insensitively on the trimmed name (docs/DESIGN.md §9); the model
//! string itself is kept as given everywhere else.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrefixRule {
    pub prefix: String,
    pub provider: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ProviderRules(pub Vec<PrefixRule>);

impl Default for ProviderRules {
    fn default() -> Self {
        let rule = |prefix: &str, provider: &str| PrefixRule {
            prefix: prefix.into(),
            provider: provider.into(),
        };
        ProviderRules(vec![
            rule("gpt-", "openai"),
            rule("o1-", "openai"),
            rule("o3-", "openai"),
            rule("o4-", "openai"),
            rule("chatgpt-", "openai"),
            rule("claude-", "anthropic"),
        ])
    }
}

impl ProviderRules {
    /// The provider of `model`, or None when no rule matches (the example is then skipped with
    /// `Unknown model provider for: <model>`).
    pub fn provider_of(&self, model: &str) -> Option<&str> {
        let model = model.trim().to_lowercase();
        self.0
            .iter()
            .find(|r| model.starts_with(&r.prefix.trim().to_lowercase()))
            .map(|r| r.provider.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_prefixes_ignore_case_and_whitespace() {
        let rules = ProviderRules::default();
        assert_eq!(rules.provider_of("gpt-4o"), Some("openai"));
        assert_eq!(rules.provider_of("  GPT-4o-mini "), Some("openai"));
        assert_eq!(rules.provider_of("o3-mini"), Some("openai"));
        assert_eq!(
            rules.provider_of("Claude-Sonnet-4-20250514"),
            Some("anthropic")
        );
        assert_eq!(rules.provider_of("llama-3-70b"), None);
        assert_eq!(rules.provider_of("o1"), None);
    }
}
