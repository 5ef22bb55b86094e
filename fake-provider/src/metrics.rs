//! `GET /metrics`: the provider's request counters in the Prometheus text format, so the
//! Prometheus that watches a demo or load-test fleet sees the provider's side too (what it
//! answered, not what the workers think they sent). Rendered from the same counters as
//! `/stats`; no metrics library, the format is a few lines.

use std::fmt::Write;

use serde_json::Value;

use crate::stats::Provider;

/// The statuses every provider reports from the start (at 0), so `rate()` sees their first
/// increment: success and rate limiting.
const KNOWN_STATUSES: [&str; 2] = ["200", "429"];

/// The exposition of a `/stats` document.
pub fn render(stats: &Value) -> String {
    let mut out = String::new();
    out.push_str(
        "# HELP evalfleet_fake_provider_requests_total API requests answered, by provider and HTTP status.\n\
         # TYPE evalfleet_fake_provider_requests_total counter\n",
    );
    for provider in Provider::ALL {
        let name = provider.name();
        let statuses = stats["by_provider_status"][name].as_object();
        let mut rows: Vec<(String, u64)> = KNOWN_STATUSES
            .iter()
            .filter(|s| statuses.is_none_or(|m| !m.contains_key(**s)))
            .map(|s| ((*s).to_owned(), 0))
            .collect();
        rows.extend(
            statuses
                .into_iter()
                .flatten()
                .map(|(status, n)| (status.clone(), n.as_u64().unwrap_or(0))),
        );
        rows.sort();
        for (status, n) in rows {
            let _ = writeln!(
                out,
                "evalfleet_fake_provider_requests_total{{provider=\"{name}\",status=\"{}\"}} {n}",
                escape(&status)
            );
        }
    }
    out.push_str(
        "# HELP evalfleet_fake_provider_model_requests_total API requests that named a model, by provider and model.\n\
         # TYPE evalfleet_fake_provider_model_requests_total counter\n",
    );
    if let Some(models) = stats["by_model"].as_object() {
        for (key, n) in models {
            let (provider, model) = key.split_once('/').unwrap_or(("", key));
            let _ = writeln!(
                out,
                "evalfleet_fake_provider_model_requests_total{{provider=\"{}\",model=\"{}\"}} {}",
                escape(provider),
                escape(model),
                n.as_u64().unwrap_or(0)
            );
        }
    }
    out
}

/// A label value as the text format wants it: `\`, `"` and newlines escaped.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn known_statuses_start_at_zero_and_counts_follow_stats() {
        let empty = render(&json!({}));
        for p in ["openai", "anthropic"] {
            for s in KNOWN_STATUSES {
                let line = format!(
                    "evalfleet_fake_provider_requests_total{{provider=\"{p}\",status=\"{s}\"}} 0\n"
                );
                assert!(empty.contains(&line), "{empty}");
            }
        }
        let text = render(&json!({
            "by_provider_status": {"openai": {"200": 7, "503": 1}},
            "by_model": {"openai/gpt-4o-mini": 8, "anthropic/we\"ird\\model\n": 1},
        }));
        assert!(text.contains(
            "evalfleet_fake_provider_requests_total{provider=\"openai\",status=\"200\"} 7\n"
        ));
        assert!(text.contains(
            "evalfleet_fake_provider_requests_total{provider=\"openai\",status=\"503\"} 1\n"
        ));
        assert!(text.contains(
            "evalfleet_fake_provider_requests_total{provider=\"openai\",status=\"429\"} 0\n"
        ));
        assert_eq!(
            text.matches("status=\"200\"").count(),
            2,
            "no duplicate series"
        );
        assert!(text.contains(
            "evalfleet_fake_provider_model_requests_total{provider=\"openai\",model=\"gpt-4o-mini\"} 8\n"
        ));
        assert!(
            text.contains("model=\"we\\\"ird\\\\model\\n\"} 1\n"),
            "{text}"
        );
    }
}
