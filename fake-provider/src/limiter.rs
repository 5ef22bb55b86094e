//! Per-provider requests/minute and tokens/minute limits, enforced for real: a request over
//! either limit is rejected (and consumes nothing), and the caller learns how long to wait and
//! what the `x-ratelimit-*` / `anthropic-ratelimit-*` headers should say.
//!
//! Two algorithms: a token bucket (GCRA, one minute of capacity, refilled continuously — what
//! OpenAI and Anthropic document, and what a `governor` client limiter matches) and a strict
//! sliding 60 s window (no 60 s interval ever holds more than the limit).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::args::RateLimitMode;

const WINDOW: Duration = Duration::from_secs(60);

/// The state of one limit after a decision, for the rate-limit headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    pub limit: u32,
    pub remaining: u64,
    /// Time until the limit is back to its full capacity.
    pub reset: Duration,
}

/// Both limits of a provider; `None` where unlimited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub requests: Option<Quota>,
    pub tokens: Option<Quota>,
}

/// Which limit refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitKind {
    Requests,
    Tokens,
}

/// The limiter's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Admitted(Snapshot),
    Rejected {
        kind: LimitKind,
        limit: u32,
        requested: u32,
        /// The request can never pass (it alone needs more than the whole limit).
        too_large: bool,
        retry_after: Duration,
        snapshot: Snapshot,
    },
}

/// One provider's limiter. Cheap when unlimited: no lock is taken.
#[derive(Debug)]
pub struct ProviderLimiter {
    active: AtomicBool,
    epoch: Instant,
    inner: Mutex<Buckets>,
}

#[derive(Debug, Default)]
struct Buckets {
    /// The latest instant seen: time never runs backwards for the buckets, even when a caller
    /// that read the clock earlier takes the lock later.
    last: Duration,
    requests: Option<Bucket>,
    tokens: Option<Bucket>,
}

impl ProviderLimiter {
    pub fn new(rpm: u32, tpm: u32, mode: RateLimitMode) -> Self {
        let limiter = Self {
            active: AtomicBool::new(false),
            epoch: Instant::now(),
            inner: Mutex::new(Buckets::default()),
        };
        limiter.set_limits(rpm, tpm, mode);
        limiter
    }

    /// Replaces the limits (0 = unlimited); the buckets start full.
    pub fn set_limits(&self, rpm: u32, tpm: u32, mode: RateLimitMode) {
        let mut buckets = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        buckets.requests = (rpm > 0).then(|| Bucket::new(rpm, mode));
        buckets.tokens = (tpm > 0).then(|| Bucket::new(tpm, mode));
        self.active.store(rpm > 0 || tpm > 0, Ordering::Release);
    }

    /// Admits one request costing `tokens`, or says why not.
    pub fn check(&self, now: Instant, tokens: u32) -> Decision {
        if !self.active.load(Ordering::Acquire) {
            return Decision::Admitted(Snapshot::default());
        }
        let mut guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let buckets = &mut *guard;
        let now = now.saturating_duration_since(self.epoch).max(buckets.last);
        buckets.last = now;
        let mut refusal: Option<(LimitKind, u32, u32, bool, Duration)> = None;
        for (kind, bucket, cost) in [
            (LimitKind::Requests, buckets.requests.as_mut(), 1),
            (LimitKind::Tokens, buckets.tokens.as_mut(), tokens),
        ] {
            let Some(bucket) = bucket else { continue };
            if let Err(wait) = bucket.check(now, cost) {
                let too_large = cost > bucket.limit;
                let wait = if too_large { WINDOW } else { wait };
                match &mut refusal {
                    None => refusal = Some((kind, bucket.limit, cost, too_large, wait)),
                    Some(r) => r.4 = r.4.max(wait),
                }
            }
        }
        if refusal.is_none() {
            if let Some(b) = buckets.requests.as_mut() {
                b.commit(now, 1);
            }
            if let Some(b) = buckets.tokens.as_mut() {
                b.commit(now, tokens);
            }
        }
        let snapshot = Snapshot {
            requests: buckets.requests.as_ref().map(|b| b.quota(now)),
            tokens: buckets.tokens.as_ref().map(|b| b.quota(now)),
        };
        match refusal {
            None => Decision::Admitted(snapshot),
            Some((kind, limit, requested, too_large, retry_after)) => Decision::Rejected {
                kind,
                limit,
                requested,
                too_large,
                retry_after,
                snapshot,
            },
        }
    }
}

#[derive(Debug)]
struct Bucket {
    limit: u32,
    algo: Algo,
}

#[derive(Debug)]
enum Algo {
    /// GCRA: the theoretical arrival time, in nanoseconds since the limiter's epoch.
    Gcra { tat: f64, interval: f64 },
    /// The admitted (time, cost) pairs of the last 60 s and their total cost.
    Window {
        log: VecDeque<(Duration, u32)>,
        used: u64,
    },
}

impl Bucket {
    fn new(limit: u32, mode: RateLimitMode) -> Self {
        let algo = match mode {
            RateLimitMode::TokenBucket => Algo::Gcra {
                tat: 0.0,
                interval: WINDOW.as_nanos() as f64 / f64::from(limit),
            },
            RateLimitMode::SlidingWindow => Algo::Window {
                log: VecDeque::new(),
                used: 0,
            },
        };
        Self { limit, algo }
    }

    /// Ok if `cost` fits now; otherwise how long until it would.
    fn check(&mut self, now: Duration, cost: u32) -> Result<(), Duration> {
        let limit = u64::from(self.limit);
        match &mut self.algo {
            Algo::Gcra { tat, interval } => {
                let now_ns = now.as_nanos() as f64;
                let tolerance = WINDOW.as_nanos() as f64;
                let next = tat.max(now_ns) + f64::from(cost) * *interval;
                let excess = next - now_ns - tolerance;
                // One nanosecond of slack absorbs float rounding of exactly-full buckets.
                if excess <= 1.0 {
                    Ok(())
                } else {
                    Err(Duration::from_nanos(excess.ceil() as u64))
                }
            }
            Algo::Window { log, used } => {
                prune(log, used, now);
                if *used + u64::from(cost) <= limit {
                    return Ok(());
                }
                let mut freed = 0u64;
                for (at, c) in log.iter() {
                    freed += u64::from(*c);
                    if *used - freed + u64::from(cost) <= limit {
                        return Err((*at + WINDOW).saturating_sub(now));
                    }
                }
                Err(WINDOW)
            }
        }
    }

    fn commit(&mut self, now: Duration, cost: u32) {
        match &mut self.algo {
            Algo::Gcra { tat, interval } => {
                *tat = tat.max(now.as_nanos() as f64) + f64::from(cost) * *interval;
            }
            Algo::Window { log, used } => {
                if cost > 0 {
                    log.push_back((now, cost));
                    *used += u64::from(cost);
                }
            }
        }
    }

    fn quota(&self, now: Duration) -> Quota {
        let limit = self.limit;
        match &self.algo {
            Algo::Gcra { tat, interval } => {
                let backlog = (tat - now.as_nanos() as f64).max(0.0);
                let free = (WINDOW.as_nanos() as f64 - backlog) / interval;
                Quota {
                    limit,
                    remaining: free.clamp(0.0, f64::from(limit)).floor() as u64,
                    reset: Duration::from_nanos(backlog.ceil() as u64),
                }
            }
            // `check` pruned the log at this same instant, so it holds only live entries.
            Algo::Window { log, used } => Quota {
                limit,
                remaining: u64::from(limit).saturating_sub(*used),
                reset: log
                    .back()
                    .map_or(Duration::ZERO, |(at, _)| (*at + WINDOW).saturating_sub(now)),
            },
        }
    }
}

fn prune(log: &mut VecDeque<(Duration, u32)>, used: &mut u64, now: Duration) {
    while let Some(&(at, cost)) = log.front() {
        if at + WINDOW > now {
            break;
        }
        log.pop_front();
        *used -= u64::from(cost);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admitted(d: Decision) -> bool {
        matches!(d, Decision::Admitted(_))
    }

    #[test]
    fn unlimited_admits_everything() {
        let l = ProviderLimiter::new(0, 0, RateLimitMode::TokenBucket);
        assert!((0..10_000).all(|_| admitted(l.check(Instant::now(), 1_000_000))));
    }

    #[test]
    fn token_bucket_bursts_then_refills() {
        let l = ProviderLimiter::new(60, 0, RateLimitMode::TokenBucket);
        let t0 = l.epoch + Duration::from_secs(1);
        assert_eq!((0..100).filter(|_| admitted(l.check(t0, 1))).count(), 60);
        match l.check(t0, 1) {
            Decision::Rejected {
                kind, retry_after, ..
            } => {
                assert_eq!(kind, LimitKind::Requests);
                assert!(retry_after <= Duration::from_secs(1), "{retry_after:?}");
            }
            d => panic!("{d:?}"),
        }
        assert!(admitted(l.check(t0 + Duration::from_secs(1), 1)));
        assert!(!admitted(l.check(t0 + Duration::from_secs(1), 1)));
    }

    #[test]
    fn sliding_window_is_strict() {
        let l = ProviderLimiter::new(10, 0, RateLimitMode::SlidingWindow);
        let t0 = l.epoch;
        assert_eq!((0..20).filter(|_| admitted(l.check(t0, 1))).count(), 10);
        assert!(!admitted(l.check(t0 + Duration::from_secs(59), 1)));
        assert!(admitted(l.check(t0 + Duration::from_secs(60), 1)));
    }

    #[test]
    fn tokens_are_limited_and_refusal_consumes_nothing() {
        let l = ProviderLimiter::new(1000, 100, RateLimitMode::TokenBucket);
        let t0 = l.epoch;
        assert!(admitted(l.check(t0, 60)));
        match l.check(t0, 60) {
            Decision::Rejected { kind, snapshot, .. } => {
                assert_eq!(kind, LimitKind::Tokens);
                assert_eq!(snapshot.requests.unwrap().remaining, 999);
            }
            d => panic!("{d:?}"),
        }
        assert!(admitted(l.check(t0, 40)));
        match l.check(t0, 101) {
            Decision::Rejected { too_large, .. } => assert!(too_large),
            d => panic!("{d:?}"),
        }
    }
}
