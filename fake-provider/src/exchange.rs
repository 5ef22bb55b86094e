//! One call, independent of the API dialect: compute the deterministic verdict (or, for a prompt
//! that is not a judge's, the answer), draw the
//! request's fault, ask the provider's limiter, wait out the latency, and say what the dialect
//! (`openai.rs`, `anthropic.rs`) should put on the wire.

use std::time::{Duration, Instant};

use crate::answer;
use crate::clock::now_unix_ms;
use crate::faults::Fault;
use crate::judge::{estimate_tokens, is_judge_prompt, wrap, Verdict, NON_JSON_PROSE};
use crate::limiter::{Decision, LimitKind, Snapshot};
use crate::pairwise::{self, is_pairwise_prompt};
use crate::state::FakeProvider;
use crate::stats::Provider;

/// What a dialect parsed out of a request.
#[derive(Debug)]
pub struct Ask<'a> {
    pub provider: Provider,
    /// All message contents, joined with newlines.
    pub prompt: &'a str,
    /// The client asked for bare JSON (OpenAI `response_format` json_object / json_schema).
    pub bare_json: bool,
    /// Text of a final assistant message (Anthropic prefill): the reply continues it.
    pub prefill: Option<&'a str>,
}

/// How the request ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// 200 with this content (`malformed`: cut the serialized body short).
    Reply {
        content: String,
        malformed: bool,
    },
    /// Over a rate limit, real or injected.
    RateLimited {
        kind: LimitKind,
        limit: u32,
        requested: u32,
        too_large: bool,
        retry_after: Duration,
        injected: bool,
    },
    Quota,
    ServerError,
    Overloaded,
}

/// Everything a dialect needs to render the response.
#[derive(Debug)]
pub struct Exchange {
    pub outcome: Outcome,
    pub input_tokens: u32,
    pub output_tokens: u32,
    /// Limiter state for the rate-limit headers (empty when unlimited or not consulted).
    pub snapshot: Snapshot,
    pub arrived_unix_ms: u64,
    pub started: Instant,
    /// Seed for this response's ids.
    pub id: u64,
}

impl FakeProvider {
    /// Runs one call through faults, limits and latency.
    pub(crate) async fn exchange(&self, ask: Ask<'_>) -> Exchange {
        let started = Instant::now();
        let arrived_unix_ms = now_unix_ms();
        let cfg = self.config();
        let draws = self.draws();
        let id = self.next_id(cfg.seed);
        let fault = Fault::pick(&cfg, draws.fault);
        let content = if is_judge_prompt(ask.prompt) {
            let verdict = Verdict::for_prompt(cfg.seed, ask.prompt);
            let pairwise = is_pairwise_prompt(ask.prompt);
            let content = match fault {
                Fault::NonJson => NON_JSON_PROSE.to_owned(),
                Fault::OutOfRange if pairwise => {
                    pairwise::json(cfg.seed, ask.prompt, cfg.position_bias, true)
                }
                _ if pairwise => pairwise::json(cfg.seed, ask.prompt, cfg.position_bias, false),
                Fault::OutOfRange => verdict.out_of_range().json(),
                _ => verdict.json(),
            };
            match ask.prefill {
                Some(prefill) if content.starts_with(prefill) => {
                    content[prefill.len()..].to_owned()
                }
                Some(_) => content,
                None if fault != Fault::NonJson && !ask.bare_json && draws.wrap < cfg.wrap_rate => {
                    wrap(&content, draws.wrap_style)
                }
                None => content,
            }
        } else {
            // The system under test: the reply's faults are the transport's, below.
            answer::for_prompt(cfg.seed, ask.prompt)
        };
        let input_tokens = estimate_tokens(ask.prompt);
        let output_tokens = estimate_tokens(&content);
        let mut exchange = Exchange {
            outcome: Outcome::ServerError,
            input_tokens,
            output_tokens,
            snapshot: Snapshot::default(),
            arrived_unix_ms,
            started,
            id,
        };

        // Injected rejections answer at once and consume no quota, like a real front door.
        match fault {
            Fault::RateLimit => {
                exchange.outcome = Outcome::RateLimited {
                    kind: LimitKind::Requests,
                    limit: 0,
                    requested: 1,
                    too_large: false,
                    retry_after: Duration::from_millis(cfg.fault_retry_after_ms),
                    injected: true,
                };
                return exchange;
            }
            Fault::Quota => {
                exchange.outcome = Outcome::Quota;
                return exchange;
            }
            _ => {}
        }

        let tokens = input_tokens.saturating_add(output_tokens);
        match self.limiter(ask.provider).check(started, tokens) {
            Decision::Admitted(snapshot) => exchange.snapshot = snapshot,
            Decision::Rejected {
                kind,
                limit,
                requested,
                too_large,
                retry_after,
                snapshot,
            } => {
                exchange.snapshot = snapshot;
                exchange.outcome = Outcome::RateLimited {
                    kind,
                    limit,
                    requested,
                    too_large,
                    retry_after,
                    injected: false,
                };
                return exchange;
            }
        }

        let mut delay = cfg
            .latency_ms
            .saturating_add(draws.jitter % cfg.jitter_ms.saturating_add(1));
        if fault == Fault::Hang {
            delay = delay.saturating_add(cfg.hang_ms);
        }
        if delay > 0 {
            self.sleep(Duration::from_millis(delay)).await;
        }

        exchange.outcome = match fault {
            Fault::ServerError => Outcome::ServerError,
            Fault::Overloaded => Outcome::Overloaded,
            _ => Outcome::Reply {
                content,
                malformed: fault == Fault::Malformed,
            },
        };
        exchange
    }

    /// Sleeps, unless shutdown begins first.
    pub(crate) async fn sleep(&self, duration: Duration) {
        let mut stop = self.shutdown_signal();
        tokio::select! {
            () = tokio::time::sleep(duration) => {}
            _ = stop.wait_for(|stopping| *stopping) => {}
        }
    }
}

/// A serialized body cut in half: what a dropped connection or a buggy proxy delivers.
pub fn truncate_body(mut body: Vec<u8>) -> Vec<u8> {
    body.truncate(body.len() / 2);
    body
}
