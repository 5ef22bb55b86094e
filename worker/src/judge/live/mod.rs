//! Live judges: real provider calls, with everything that makes them safe at fleet scale.
//!
//! One judge question goes: cache → budget → adaptive in-flight slot → requests/tokens quota →
//! HTTP call, retried (backon: exponential schedule, full jitter, never sooner than the
//! provider's `Retry-After`) on 408/409/429/5xx/529 and transport errors. A reply that does not
//! parse gets one re-ask with a reminder, then the dimension is `unscored`: a judge failure is
//! never a model failure. A 401/403 stops the whole run at once, so a bad key cannot burn the
//! dataset one failed example at a time. Questions to a provider in batch mode go through its
//! batches instead (`batched.rs`).

mod batched;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use backon::Retryable;
use evalfleet_config::{CallMode, JudgeConfig, ProviderConfig};
use evalfleet_contract::shared_limit::SharedLimiter;
use evalfleet_model::record::{JudgeId, PanelVerdict, Score, Scores, Usage};
use evalfleet_suites::evaluate::{Example, JudgeTask};

use super::accounting::Accounting;
use super::batch::{Batcher, BatcherOptions};
use super::cache::{CachedVerdict, JudgeCache};
use super::limit::{Adaptive, Quotas, Signal, Verdict};
use super::prompt::{self, Prompt};
use super::provider::{CallError, ChatRequest, Completion, ProviderClient, TokenUsage};
use super::reply::parse_verdict;
use super::{JudgeFailure, JudgeOutcome};
use crate::metrics::metrics;
use evalfleet_contract::batch_store::BatchStore;

/// One judge provider as the run uses it: its client, its model and its admission control.
pub struct ProviderRuntime {
    pub name: String,
    pub model: String,
    client: Arc<ProviderClient>,
    quotas: Quotas,
    pub adaptive: Adaptive,
    max_tokens: u32,
    /// Batch mode: the coordinator, started on the first question (inside the runtime).
    batch: Option<(BatcherOptions, OnceLock<Batcher>)>,
    batch_discount: f64,
}

impl ProviderRuntime {
    /// A question to this provider's judge model.
    fn request<'a>(&'a self, prompt: &'a Prompt) -> ChatRequest<'a> {
        ChatRequest {
            model: &self.model,
            prompt,
            max_tokens: self.max_tokens,
        }
    }

    fn batcher(&self) -> Option<&Batcher> {
        let (options, batcher) = self.batch.as_ref()?;
        Some(batcher.get_or_init(|| Batcher::spawn(self.client.clone(), options.clone())))
    }
}

pub struct LiveJudge {
    config: JudgeConfig,
    providers: BTreeMap<String, ProviderRuntime>,
    cache: Arc<dyn JudgeCache>,
    pub accounting: Accounting,
    /// Set on the first 401/403: every later call fails at once with this reason.
    stop: OnceLock<String>,
    /// In the fleet, batch-mode questions park their example here instead of waiting in
    /// memory (see `batched.rs`).
    parking: Option<Arc<dyn BatchStore>>,
    /// The fleet-wide quota and throttle, when workers share one (Redis GCRA).
    shared: Option<Arc<dyn SharedLimiter>>,
}

/// A judge's reply text and its tokens.
struct Reply {
    text: String,
    usage: TokenUsage,
}

/// A judge's answer to one question.
enum Asked {
    Scored {
        score: i64,
        reasoning: String,
        cached: bool,
    },
    Unscored(String),
}

/// What the calls of one example cost, accumulated across its questions.
#[derive(Default)]
struct Tally {
    /// The example's run, for the fleet's batch replies.
    run: String,
    /// The example's key, for batch custom_ids.
    key: String,
    attempts: AtomicU32,
    usage: Mutex<Usage>,
    last_status: Mutex<Option<u16>>,
    /// Fleet batch replies, charged to the run and the metrics once the example is complete
    /// (an example parked again would otherwise be charged at each evaluation).
    deferred: Mutex<Vec<(String, TokenUsage, f64)>>,
}

impl Tally {
    fn add(&self, usage: TokenUsage, cost: f64) {
        if let Ok(mut u) = self.usage.lock() {
            u.add(&Usage {
                input_tokens: usage.input,
                output_tokens: usage.output,
                cost_usd: cost,
            });
        }
    }
}

impl LiveJudge {
    /// Builds the clients of every provider the routing can reach, reading each API key from
    /// its environment variable.
    pub fn new(config: &JudgeConfig, cache: Arc<dyn JudgeCache>) -> Result<Self, String> {
        config.validate()?;
        let mut used: Vec<&String> = config
            .judge_mapping
            .values()
            .chain(&config.default_judges)
            .chain(&config.panel)
            .collect();
        used.sort();
        used.dedup();
        let mut providers = BTreeMap::new();
        for name in used {
            let pc: &ProviderConfig = &config.providers[name];
            let key = std::env::var(&pc.api_key_env).map_err(|_| {
                format!("the API key of judge provider '{name}' is not set: export {} (judges.providers.{name}.api_key_env)", pc.api_key_env)
            })?;
            let client = ProviderClient::new(pc, key)
                .map_err(|e| format!("judge provider '{name}': {e}"))?;
            let batch = (config.mode_of(name) == CallMode::Batch).then(|| {
                let options = BatcherOptions {
                    provider: name.clone(),
                    api: pc.api,
                    batch: config.batch.clone(),
                    retry: config.retry.clone(),
                    tag: format!("evalfleet-{name}"),
                };
                (options, OnceLock::new())
            });
            let runtime = ProviderRuntime {
                name: name.clone(),
                model: config.judge_models[name].clone(),
                client: Arc::new(client),
                quotas: Quotas::new(pc.rpm, pc.tpm),
                adaptive: Adaptive::new(pc.max_in_flight),
                max_tokens: pc.max_tokens,
                batch,
                batch_discount: pc.batch_discount,
            };
            providers.insert(name.clone(), runtime);
        }
        Ok(LiveJudge {
            config: config.clone(),
            providers,
            cache,
            accounting: Accounting::new(config.prices.clone(), config.budget_usd),
            stop: OnceLock::new(),
            parking: None,
            shared: None,
        })
    }

    /// Also admits every call through `limiter`, shared with the rest of the fleet.
    pub fn with_shared_limiter(mut self, limiter: Arc<dyn SharedLimiter>) -> Self {
        self.shared = Some(limiter);
        self
    }

    /// Fleet batch mode: questions of batch-mode providers park their example in `store`
    /// until the fleet's coordinator has their replies.
    pub fn with_parking(mut self, store: Arc<dyn BatchStore>) -> Self {
        self.parking = Some(store);
        self
    }

    /// The providers in batch mode, for a coordinator: name, client and options.
    pub fn batch_providers(&self) -> Vec<(Arc<ProviderClient>, BatcherOptions)> {
        self.providers
            .values()
            .filter_map(|rt| {
                let (options, _) = rt.batch.as_ref()?;
                Some((rt.client.clone(), options.clone()))
            })
            .collect()
    }

    /// Why the run must stop (a rejected API key), once that happened.
    pub fn stopped(&self) -> Option<&str> {
        self.stop.get().map(String::as_str)
    }

    pub fn provider(&self, name: &str) -> Option<&ProviderRuntime> {
        self.providers.get(name)
    }

    /// Scores every task of one example (example `index` of run `run_id`) with its judges
    /// (one, or the configured panel). In fleet batch mode, an example with questions still
    /// out fails with only [`JudgeFailure::awaiting`] set: it is parked, not failed.
    pub async fn judge(
        &self,
        example: &Example,
        tasks: &[JudgeTask<'_>],
        run_id: &str,
        index: u64,
    ) -> Result<JudgeOutcome, JudgeFailure> {
        let tally = Tally {
            run: run_id.to_owned(),
            key: super::batch::example_key(run_id, index),
            ..Tally::default()
        };
        let result = self.judge_all(example, tasks, &tally).await;
        if !matches!(&result, Err(f) if !f.awaiting.is_empty()) {
            self.charge_deferred(&tally);
        }
        let usage = tally.usage.into_inner().unwrap_or_default();
        let attempts = tally.attempts.into_inner();
        match result {
            Ok(scores) => Ok(JudgeOutcome {
                scores,
                usage,
                attempts,
            }),
            Err(mut failure) => {
                failure.attempts = attempts;
                failure.usage = usage;
                failure.last_status = tally
                    .last_status
                    .into_inner()
                    .unwrap_or(None)
                    .or(failure.last_status);
                Err(failure)
            }
        }
    }

    async fn judge_all(
        &self,
        example: &Example,
        tasks: &[JudgeTask<'_>],
        tally: &Tally,
    ) -> Result<Scores, JudgeFailure> {
        let judges = self
            .config
            .judges_for(example.response_provider())
            .map_err(|reason| JudgeFailure::new(reason, false))?;
        let mut scores = Vec::with_capacity(tasks.len());
        // Questions still waiting for a batch: the others are asked all the same, so that an
        // example's first questions all go into the same round of batches.
        let mut awaiting = Vec::new();
        for (t, task) in tasks.iter().enumerate() {
            let mut verdicts = Vec::with_capacity(judges.len());
            for (j, name) in judges.iter().enumerate() {
                let rt = self.providers.get(*name).ok_or_else(|| {
                    JudgeFailure::new(format!("judge provider '{name}' is not configured"), false)
                })?;
                let question = format!("{}-{t}-{j}", tally.key);
                let asked = match self.ask(rt, task, tally, &question).await {
                    Ok(asked) => asked,
                    Err(failure) if !failure.awaiting.is_empty() => {
                        awaiting.extend(failure.awaiting);
                        continue;
                    }
                    Err(failure) => return Err(failure),
                };
                verdicts.push((
                    JudgeId {
                        provider: rt.name.clone(),
                        model: rt.model.clone(),
                    },
                    asked,
                ));
            }
            if awaiting.is_empty() {
                scores.push((
                    task.dimension.name.clone(),
                    combine(task.dimension, verdicts),
                ));
            }
        }
        if !awaiting.is_empty() {
            return Err(JudgeFailure::awaiting(awaiting));
        }
        Ok(Scores(scores))
    }

    async fn ask(
        &self,
        rt: &ProviderRuntime,
        task: &JudgeTask<'_>,
        tally: &Tally,
        question: &str,
    ) -> Result<Asked, JudgeFailure> {
        let dim = task.dimension;
        let prompt = prompt::for_task(task).map_err(|reason| JudgeFailure::new(reason, false))?;
        let key = self
            .cache
            .enabled()
            .then(|| format!("{}:{}", rt.name, prompt::prompt_hash(&rt.model, &prompt)));
        if let Some(key) = &key {
            if let Some(hit) = self.cache.get(key).await {
                return Ok(Asked::Scored {
                    score: hit.score,
                    reasoning: hit.reasoning,
                    cached: true,
                });
            }
        }
        let first = self
            .call(rt, &prompt, tally, &format!("{question}-a"))
            .await?;
        let verdict = match parse_verdict(&first, dim.min, dim.max) {
            Ok(v) => v,
            Err(problem) => {
                let again = prompt::reask(&prompt, &first, &problem);
                let second = self
                    .call(rt, &again, tally, &format!("{question}-r"))
                    .await?;
                match parse_verdict(&second, dim.min, dim.max) {
                    Ok(v) => v,
                    Err(problem) => {
                        return Ok(Asked::Unscored(format!(
                            "invalid judge reply after a re-ask: {problem}"
                        )))
                    }
                }
            }
        };
        let cached = CachedVerdict {
            score: verdict.score,
            reasoning: verdict.reasoning,
        };
        if let Some(key) = &key {
            self.cache.put(key, &cached).await;
        }
        Ok(Asked::Scored {
            score: cached.score,
            reasoning: cached.reasoning,
            cached: false,
        })
    }

    /// One judge question, live or through the provider's batches; returns the reply text.
    /// `id` names the question (the example, dimension, judge, and first ask or re-ask).
    async fn call(
        &self,
        rt: &ProviderRuntime,
        prompt: &Prompt,
        tally: &Tally,
        id: &str,
    ) -> Result<String, JudgeFailure> {
        if let Some(reason) = self.stopped() {
            return Err(JudgeFailure::new(reason.to_owned(), true));
        }
        if !self.accounting.within_budget() {
            return Err(JudgeFailure::new("budget exhausted".into(), false));
        }
        if rt.batch.is_some() {
            self.call_batch(rt, prompt, tally, id).await
        } else {
            self.call_live(rt, prompt, tally).await.map(|r| r.text)
        }
    }

    /// Charges one reply's tokens and cost to the run, the example and the metrics.
    fn bill(&self, rt: &ProviderRuntime, tally: &Tally, usage: TokenUsage, cost: f64) {
        self.charge(rt, usage, cost);
        tally.add(usage, cost);
    }

    /// Charges tokens and cost to the run (budget) and the metrics.
    fn charge(&self, rt: &ProviderRuntime, usage: TokenUsage, cost: f64) {
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
    async fn call_live(
        &self,
        rt: &ProviderRuntime,
        prompt: &Prompt,
        tally: &Tally,
    ) -> Result<Reply, JudgeFailure> {
        let request = rt.request(prompt);
        let estimate = ((prompt.system.len() + prompt.user.len()) / 4) as u32 + rt.max_tokens;
        let schedule = super::retry_schedule(&self.config.retry);
        let m = metrics();
        let attempt = || async {
            let waiting = Instant::now();
            let _slot = rt.adaptive.acquire().await;
            rt.quotas.admit(estimate).await;
            if let Some(shared) = &self.shared {
                shared.acquire(&rt.name, estimate).await;
            }
            m.rate_limit_wait
                .with_label_values(&[&rt.name])
                .inc_by(waiting.elapsed().as_secs_f64());
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

    /// Feeds the outcome of a call to the provider's adaptive limit.
    fn observe(&self, rt: &ProviderRuntime, result: &Result<Completion, CallError>, tally: &Tally) {
        let status = match result {
            Ok(c) => Some(c.status),
            Err(e) => e.status(),
        };
        if let Ok(mut s) = tally.last_status.lock() {
            *s = status.or(*s);
        }
        match result {
            Ok(c) => {
                rt.adaptive.signal(Signal::Success);
                if let Some(reset) = c.limits.exhausted_reset() {
                    rt.adaptive.signal(Signal::Exhausted { reset });
                }
            }
            Err(CallError::RateLimited {
                retry_after,
                limits,
                ..
            }) => {
                let verdict = rt.adaptive.signal(Signal::RateLimited {
                    retry_after: *retry_after,
                    exhausted: limits.exhausted_reset(),
                });
                if let (Verdict::PauseAll(wait), Some(shared)) = (verdict, &self.shared) {
                    // Fire and forget: the fleet-wide pause must not delay this task's retry.
                    let (shared, name) = (shared.clone(), rt.name.clone());
                    tokio::spawn(async move { shared.throttled(&name, Some(wait)).await });
                }
            }
            Err(CallError::Overloaded { .. }) => {
                rt.adaptive.signal(Signal::Overloaded);
            }
            Err(_) => {}
        }
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

/// The dimension's score from its judges' verdicts: the single verdict, or with a panel the
/// mean of the scored ones (each judge's raw verdict kept for the agreement statistics).
fn combine(dim: &evalfleet_model::suite::Dimension, verdicts: Vec<(JudgeId, Asked)>) -> Score {
    let reported = |raw: i64| {
        if dim.unit {
            dim.to_unit(raw as f64)
        } else {
            raw as f64
        }
    };
    if verdicts.len() == 1 {
        let (judge, asked) = verdicts.into_iter().next().expect("one verdict");
        return match asked {
            Asked::Scored {
                score,
                reasoning,
                cached,
            } => Score {
                cached,
                ..Score::scored(reported(score), reasoning, judge)
            },
            Asked::Unscored(reason) => Score::unscored(judge, reason),
        };
    }
    let panel: Vec<PanelVerdict> = verdicts
        .iter()
        .map(|(judge, asked)| match asked {
            Asked::Scored {
                score, reasoning, ..
            } => PanelVerdict {
                judge: judge.clone(),
                score: Some(*score),
                reasoning: reasoning.clone(),
            },
            Asked::Unscored(reason) => PanelVerdict {
                judge: judge.clone(),
                score: None,
                reasoning: reason.clone(),
            },
        })
        .collect();
    let scored: Vec<f64> = panel.iter().filter_map(|p| p.score).map(reported).collect();
    let ensemble = JudgeId {
        provider: "ensemble".into(),
        model: verdicts
            .iter()
            .map(|(j, _)| format!("{}/{}", j.provider, j.model))
            .collect::<Vec<_>>()
            .join("+"),
    };
    let all_cached = verdicts
        .iter()
        .all(|(_, a)| matches!(a, Asked::Scored { cached: true, .. }));
    let mut score = if scored.is_empty() {
        Score::unscored(ensemble, "every judge of the panel stayed unscored".into())
    } else {
        let reasoning = format!("mean of {} of {} judges", scored.len(), panel.len());
        Score::scored(
            scored.iter().sum::<f64>() / scored.len() as f64,
            reasoning,
            ensemble,
        )
    };
    score.cached = all_cached;
    score.panel = panel;
    score
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
