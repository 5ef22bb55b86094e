//! One live judge call: admission (the adaptive in-flight slot, the provider's quotas, the
//! fleet-wide limiter), the HTTP request retried with backoff and full jitter, its outcome fed
//! back to the limits, its tokens and cost billed, and the metrics' bounded labels for it.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use backon::Retryable;

use super::{LiveJudge, ProviderRuntime, Reply, Tally};
use crate::judge::prompt::Prompt;
use crate::judge::provider::{CallError, Completion, TokenUsage};
use crate::judge::JudgeFailure;
use crate::metrics::metrics;

impl LiveJudge {
    /// Charges one reply's tokens and cost to the run, the example and the metrics.
    pub(super) fn bill(&self, rt: &ProviderRuntime, tally: &Tally, usage: TokenUsage, cost: f64) {
        self.charge(rt, usage, cost);
        tally.add(usage, cost);
    }

    /// Charges tokens and cost to the run (budget) and the metrics.
    pub(super) fn charge(&self, rt: &ProviderRuntime, usage: TokenUsage, cost: f64) {
        let m = metrics();
        self.accounting.charge(cost);
        m.judge_tokens
            .with_label_values(&[&rt.name, &rt.model, "input"])
            .inc_by(usage.input);
        m.judge_tokens
            .with_label_values(&[&rt.name, &rt.model, "output"])
            .inc_by(usage.output);
        m.judge_cost
            .with_label_values(&[&rt.name, &rt.model])
            .inc_by(cost);
    }

    /// One live judge call with admission control and retries; billed already.
    pub(super) async fn call_live(
        &self,
        rt: &ProviderRuntime,
        prompt: &Prompt,
        tally: &Tally,
    ) -> Result<Reply, JudgeFailure> {
        let request = rt.request(prompt);
        let estimate = ((prompt.system.len() + prompt.user.len()) / 4) as u32 + rt.max_tokens;
        let schedule = crate::judge::retry_schedule(&self.config.retry);
        let m = metrics();
        let attempt = || async {
            let _slot = rt.rate_limit.admit(estimate).await;
            tally.attempts.fetch_add(1, Ordering::Relaxed);
            let sent = Instant::now();
            let result = rt.client.complete(&request).await;
            m.judge_request(&rt.name, &rt.model, &status_label(&result), sent.elapsed());
            self.observe(rt, &result, tally);
            result
        };
        let result = attempt
            .retry(schedule)
            .when(CallError::retryable)
            // Full jitter (a uniform wait up to the backoff step), but never sooner than the
            // provider asked.
            .adjust(|e: &CallError, step: Option<Duration>| step.map(|d| d.mul_f64(rand::random::<f64>()).max(e.retry_after().unwrap_or_default())))
            .notify(|e: &CallError, wait: Duration| {
                m.judge_retries.with_label_values(&[&rt.name, &retry_reason(e)]).inc();
                tracing::debug!(provider = %rt.name, error = %e.reason(), ?wait, "judge call failed; retrying")
            })
            .await;
        match result {
            Ok(completion) => {
                let usage = completion.usage;
                let cost = self.accounting.cost(&rt.model, usage.input, usage.output);
                self.bill(rt, tally, usage, cost);
                Ok(Reply {
                    text: completion.text,
                    usage,
                })
            }
            Err(e) => {
                let reason = format!("{} (judge {}/{})", e.reason(), rt.name, rt.model);
                if e.is_auth() {
                    let _ = self.stop.set(format!(
                        "{reason} — the API key in {} was rejected; stopping the run",
                        self.config.providers[&rt.name].api_key_env
                    ));
                    return Err(JudgeFailure::new(
                        self.stopped().unwrap_or(&reason).to_owned(),
                        true,
                    ));
                }
                Err(JudgeFailure {
                    last_status: e.status(),
                    ..JudgeFailure::new(reason, false)
                })
            }
        }
    }

    /// Feeds the outcome of a call to the provider's rate limit.
    fn observe(&self, rt: &ProviderRuntime, result: &Result<Completion, CallError>, tally: &Tally) {
        let status = match result {
            Ok(c) => Some(c.status),
            Err(e) => e.status(),
        };
        if let Ok(mut s) = tally.last_status.lock() {
            *s = status.or(*s);
        }
        rt.rate_limit.observe(result.as_ref());
    }
}

/// The `status` label of a judge request: the HTTP status, or `timeout` / `error`.
fn status_label(result: &Result<Completion, CallError>) -> String {
    match result {
        Ok(c) => c.status.to_string(),
        Err(CallError::Timeout(_)) => "timeout".into(),
        Err(e) => e.status().map_or_else(|| "error".into(), |s| s.to_string()),
    }
}

/// The `reason` label of a retry: a bounded set.
fn retry_reason(e: &CallError) -> String {
    match e {
        CallError::RateLimited { .. } => "rate_limited".into(),
        CallError::Overloaded { .. } => "overloaded".into(),
        CallError::Server { status, .. } => format!("http_{status}"),
        CallError::Timeout(_) => "timeout".into(),
        CallError::Connect(_) => "connect".into(),
        CallError::Malformed { .. } => "malformed".into(),
        _ => "other".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::RETRY_REASONS;

    /// The metrics create a zero series for each fixed retry reason; a reason named here but
    /// missing there would only appear once it happened.
    #[test]
    fn every_fixed_retry_reason_has_a_zero_series() {
        let m = || "m".to_owned();
        let fixed = [
            CallError::RateLimited {
                retry_after: None,
                limits: Default::default(),
                message: m(),
            },
            CallError::QuotaExhausted { message: m() },
            CallError::Overloaded {
                status: 529,
                retry_after: None,
                message: m(),
            },
            CallError::Auth {
                status: 401,
                message: m(),
            },
            CallError::Rejected {
                status: 400,
                message: m(),
            },
            CallError::Timeout(m()),
            CallError::Connect(m()),
            CallError::Malformed {
                status: 200,
                message: m(),
            },
        ];
        for e in &fixed {
            let reason = retry_reason(e);
            assert!(RETRY_REASONS.contains(&reason.as_str()), "{reason}");
        }
        let server = CallError::Server {
            status: 503,
            retry_after: None,
            message: m(),
        };
        assert_eq!(retry_reason(&server), "http_503");
    }
}
