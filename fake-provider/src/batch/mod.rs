//! Provider batches, independent of the dialect: a batch's requests are judged when it is
//! created (the same deterministic verdicts as the live endpoints), and what a client sees of
//! it — its status, its counts, its results — is a pure function of the clock, so a test can
//! watch a batch go from `validating` through `in_progress` to its end without the server
//! running a timer per batch.
//!
//! The timeline of a batch with processing time P: validating for P/10, in progress until P
//! (requests finish in order, evenly), finalizing for P/10, then ended. A cancel ends the batch
//! P/10 after it was asked for; requests not processed by then are cancelled. Per-request
//! errors and expiries are drawn from (seed, batch, custom_id), so a request retried in a later
//! batch can succeed.
//!
//! [`openai`] and [`anthropic`] put this on the wire, [`Batches`] keeps the batches, and
//! [`BatchLedger`] counts every request ever accepted in a batch by `custom_id`, so a test can
//! prove nothing was paid for twice.

pub(crate) mod anthropic;
mod ledger;
pub(crate) mod openai;
pub(crate) mod openai_files;
mod registry;

use axum::response::Response;

use crate::answer;
use crate::args::FakeProviderArgs;
use crate::judge::{estimate_tokens, is_judge_prompt, stable_hash, wrap, Verdict};
use crate::stats::Provider;

pub(crate) use ledger::BatchLedger;
pub(crate) use registry::{jsonl_response, page, Batches};

/// One request of a batch, as parsed from the dialect's input.
#[derive(Debug, Clone)]
pub(crate) struct BatchRequest {
    pub custom_id: String,
    pub model: String,
    /// The verdict's input: every message's text joined with `\n`, as on the live endpoints.
    pub prompt: String,
    pub bare_json: bool,
    pub prefill: Option<String>,
}

/// How one request of a batch ends, decided when the batch is created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ItemOutcome {
    Reply {
        content: Box<str>,
        input_tokens: u32,
        output_tokens: u32,
    },
    /// A server error for this request alone.
    Error,
    /// Not reached within the completion window.
    Expired,
}

/// A request of a batch with its fate.
#[derive(Debug, Clone)]
pub(crate) struct Item {
    pub custom_id: Box<str>,
    pub model: Box<str>,
    pub outcome: ItemOutcome,
}

/// Where a batch is on its timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Validating,
    /// `done` requests (in order) are processed.
    InProgress {
        done: usize,
    },
    Finalizing,
    Cancelling {
        done: usize,
    },
    /// Results are ready; `done` requests were processed (all of them unless cancelled).
    Ended {
        at_ms: u64,
        done: usize,
        cancelled: bool,
    },
}

/// One batch.
#[derive(Debug)]
pub(crate) struct Batch {
    pub id: String,
    pub provider: Provider,
    pub created_ms: u64,
    pub processing_ms: u64,
    pub items: Vec<Item>,
    pub cancel_requested_ms: Option<u64>,
    /// Dialect-specific fields kept as given (OpenAI: endpoint, input file, metadata).
    pub meta: serde_json::Value,
    /// Ids of the result files, once the batch ended (OpenAI).
    pub output_file_id: Option<String>,
    pub error_file_id: Option<String>,
}

/// Requests counted by their outcome so far.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Counts {
    pub processing: usize,
    pub succeeded: usize,
    pub errored: usize,
    pub expired: usize,
    pub canceled: usize,
}

impl Batch {
    /// Judges every request now; what a client sees follows from the clock.
    pub fn new(
        id: String,
        provider: Provider,
        cfg: &FakeProviderArgs,
        requests: Vec<BatchRequest>,
        created_ms: u64,
    ) -> Self {
        let items = requests
            .into_iter()
            .map(|r| Item {
                outcome: judge(cfg, &id, &r),
                custom_id: r.custom_id.into(),
                model: r.model.into(),
            })
            .collect();
        Self {
            id,
            provider,
            created_ms,
            processing_ms: cfg.batch_processing_ms,
            items,
            cancel_requested_ms: None,
            meta: serde_json::Value::Null,
            output_file_id: None,
            error_file_id: None,
        }
    }

    fn step_ms(&self) -> u64 {
        self.processing_ms / 10
    }

    /// Requests processed by `at_ms` (in order, evenly over the in-progress stretch).
    fn done_at(&self, at_ms: u64) -> usize {
        let start = self.created_ms + self.step_ms();
        let end = self.created_ms + self.processing_ms;
        if at_ms >= end {
            return self.items.len();
        }
        if at_ms <= start {
            return 0;
        }
        let share = (at_ms - start) as f64 / (end - start) as f64;
        ((self.items.len() as f64) * share) as usize
    }

    /// Where the batch is at `now_ms`.
    pub fn phase(&self, now_ms: u64) -> Phase {
        if let Some(asked) = self.cancel_requested_ms {
            let done = self.done_at(asked);
            let at_ms = asked + self.step_ms();
            return if done == self.items.len() && asked >= self.end_ms() {
                Phase::Ended {
                    at_ms: self.end_ms(),
                    done,
                    cancelled: false,
                }
            } else if now_ms < at_ms {
                Phase::Cancelling { done }
            } else {
                Phase::Ended {
                    at_ms,
                    done,
                    cancelled: true,
                }
            };
        }
        let elapsed = now_ms.saturating_sub(self.created_ms);
        if elapsed < self.step_ms() {
            Phase::Validating
        } else if elapsed < self.processing_ms {
            Phase::InProgress {
                done: self.done_at(now_ms),
            }
        } else if now_ms < self.end_ms() {
            Phase::Finalizing
        } else {
            Phase::Ended {
                at_ms: self.end_ms(),
                done: self.items.len(),
                cancelled: false,
            }
        }
    }

    /// When an uncancelled batch ends.
    pub fn end_ms(&self) -> u64 {
        self.created_ms + self.processing_ms + self.step_ms()
    }

    /// Whether a cancel can still change anything.
    pub fn cancellable(&self, now_ms: u64) -> bool {
        !matches!(self.phase(now_ms), Phase::Ended { .. }) && self.cancel_requested_ms.is_none()
    }

    /// The counts at `now_ms`: expiries show only once the batch ended.
    pub fn counts(&self, now_ms: u64) -> Counts {
        let (done, ended) = match self.phase(now_ms) {
            Phase::Validating => (0, false),
            Phase::InProgress { done } | Phase::Cancelling { done } => (done, false),
            Phase::Finalizing => (self.items.len(), false),
            Phase::Ended { done, .. } => (done, true),
        };
        let mut counts = Counts::default();
        for i in 0..self.items.len() {
            match self.fate(i, done, ended) {
                Some(Fate::Reply) => counts.succeeded += 1,
                Some(Fate::Error) => counts.errored += 1,
                Some(Fate::Expired) => counts.expired += 1,
                Some(Fate::Canceled) => counts.canceled += 1,
                None => counts.processing += 1,
            }
        }
        counts
    }

    /// What became of request `i` given `done` processed requests (None: not yet known).
    pub fn fate(&self, i: usize, done: usize, ended: bool) -> Option<Fate> {
        let item = &self.items[i];
        if i < done {
            return Some(match item.outcome {
                ItemOutcome::Reply { .. } => Fate::Reply,
                ItemOutcome::Error => Fate::Error,
                ItemOutcome::Expired if ended => Fate::Expired,
                ItemOutcome::Expired => return None,
            });
        }
        ended.then_some(Fate::Canceled)
    }

    /// Every request's result, once the batch ended.
    pub fn results(&self, now_ms: u64) -> Option<impl Iterator<Item = (&Item, Final<'_>)> + '_> {
        let Phase::Ended { done, .. } = self.phase(now_ms) else {
            return None;
        };
        Some(self.items.iter().enumerate().map(move |(i, item)| {
            let fate = self.fate(i, done, true).unwrap_or(Fate::Canceled);
            let result = match (fate, &item.outcome) {
                (
                    Fate::Reply,
                    ItemOutcome::Reply {
                        content,
                        input_tokens,
                        output_tokens,
                    },
                ) => Final::Reply {
                    content,
                    input_tokens: *input_tokens,
                    output_tokens: *output_tokens,
                },
                (Fate::Reply | Fate::Error, _) => Final::Error,
                (Fate::Expired, _) => Final::Expired,
                (Fate::Canceled, _) => Final::Canceled,
            };
            (item, result)
        }))
    }

    /// Whether any request expired (an OpenAI batch then ends `expired`).
    pub fn has_expiries(&self) -> bool {
        self.items
            .iter()
            .any(|item| item.outcome == ItemOutcome::Expired)
    }
}

/// A request's result as an ended batch reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Final<'a> {
    Reply {
        content: &'a str,
        input_tokens: u32,
        output_tokens: u32,
    },
    Error,
    Expired,
    Canceled,
}

/// A request's final fate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fate {
    Reply,
    Error,
    Expired,
    Canceled,
}

/// What a live call would answer (the same verdict, a pure function of seed and prompt, dressed
/// the same way; or the same answer to a prompt that is not a judge's), with per-request errors and expiries drawn from (seed, batch, custom_id).
fn judge(cfg: &FakeProviderArgs, batch_id: &str, request: &BatchRequest) -> ItemOutcome {
    let draw = stable_hash(cfg.seed ^ stable_hash(0, batch_id), &request.custom_id);
    let u = (draw >> 11) as f64 / (1u64 << 53) as f64;
    if u < cfg.batch_expiry_rate {
        return ItemOutcome::Expired;
    }
    if u < cfg.batch_expiry_rate + cfg.batch_error_rate {
        return ItemOutcome::Error;
    }
    if !is_judge_prompt(&request.prompt) {
        let content = answer::for_prompt(cfg.seed, &request.prompt);
        return ItemOutcome::Reply {
            input_tokens: estimate_tokens(&request.prompt),
            output_tokens: estimate_tokens(&content),
            content: content.into(),
        };
    }
    let verdict = if crate::pairwise::is_pairwise_prompt(&request.prompt) {
        crate::pairwise::json(cfg.seed, &request.prompt, cfg.position_bias, false)
    } else {
        Verdict::for_prompt(cfg.seed, &request.prompt).json()
    };
    let style = stable_hash(cfg.seed ^ 0x77a9, &request.prompt);
    let wrap_draw = (style >> 11) as f64 / (1u64 << 53) as f64;
    let content = match request.prefill.as_deref() {
        Some(prefill) if verdict.starts_with(prefill) => verdict[prefill.len()..].to_owned(),
        Some(_) => verdict,
        None if !request.bare_json && wrap_draw < cfg.wrap_rate => wrap(&verdict, style as u32),
        None => verdict,
    };
    ItemOutcome::Reply {
        input_tokens: estimate_tokens(&request.prompt),
        output_tokens: estimate_tokens(&content),
        content: content.into(),
    }
}

/// Sends a create's reply after `batch_create_delay_ms`: the batch exists meanwhile, so a
/// client that timed out and asks again must find it rather than create it twice.
pub(crate) async fn reply_to_create(cfg: &FakeProviderArgs, reply: Response) -> Response {
    if cfg.batch_create_delay_ms > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(cfg.batch_create_delay_ms)).await;
    }
    reply
}

/// A stable id seed for the `n`th result of a batch (its message or completion id).
pub(crate) fn item_id(batch_id: &str, n: usize) -> u64 {
    stable_hash(n as u64, batch_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(n: usize, cfg: &FakeProviderArgs) -> Batch {
        let requests = (0..n)
            .map(|i| BatchRequest {
                custom_id: format!("req-{i}"),
                model: "m".into(),
                prompt: format!("Rate it as an integer from 1 to 5. Case {i}"),
                bare_json: true,
                prefill: None,
            })
            .collect();
        Batch::new("b1".into(), Provider::OpenAi, cfg, requests, 1_000)
    }

    #[test]
    fn a_batch_walks_its_timeline() {
        let cfg = FakeProviderArgs {
            batch_processing_ms: 1_000,
            ..FakeProviderArgs::default()
        };
        let b = batch(10, &cfg);
        assert_eq!(b.phase(1_050), Phase::Validating);
        assert_eq!(b.phase(1_550), Phase::InProgress { done: 5 });
        assert_eq!(b.counts(1_550).succeeded, 5);
        assert_eq!(b.phase(2_050), Phase::Finalizing);
        assert!(matches!(b.phase(2_100), Phase::Ended { done: 10, .. }));
        assert_eq!(b.results(2_100).unwrap().count(), 10);
        assert!(b.results(2_099).is_none());
    }

    #[test]
    fn verdicts_match_the_live_endpoints() {
        let b = batch(3, &FakeProviderArgs::default());
        for (i, item) in b.items.iter().enumerate() {
            let prompt = format!("Rate it as an integer from 1 to 5. Case {i}");
            let ItemOutcome::Reply { content, .. } = &item.outcome else {
                panic!("no reply");
            };
            assert_eq!(&**content, Verdict::for_prompt(7, &prompt).json());
        }
    }

    #[test]
    fn a_cancel_stops_what_was_not_processed() {
        let mut b = batch(10, &FakeProviderArgs::default());
        b.cancel_requested_ms = Some(1_550);
        assert_eq!(b.phase(1_600), Phase::Cancelling { done: 5 });
        let counts = b.counts(1_700);
        assert_eq!((counts.succeeded, counts.canceled), (5, 5));
        assert!(!b.cancellable(1_700));
    }

    #[test]
    fn errors_and_expiries_follow_their_rates() {
        let cfg = FakeProviderArgs {
            batch_error_rate: 0.2,
            batch_expiry_rate: 0.1,
            ..FakeProviderArgs::default()
        };
        let b = batch(2_000, &cfg);
        let counts = b.counts(u64::MAX / 2);
        assert!((300..500).contains(&counts.errored), "{counts:?}");
        assert!((120..280).contains(&counts.expired), "{counts:?}");
        assert!(b.has_expiries());
    }
}
