//! Per-provider admission: requests/minute and tokens/minute (governor's GCRA), plus an
//! adaptive cap on requests in flight.
//!
//! The cap moves AIMD-style, like TCP's congestion window: every success adds `1/limit`
//! (about +1 per round of requests). What a throttle does depends on what it means:
//!
//! - **The quota is used up** — a `remaining` header at 0, or 429s making up more than
//!   [`QUOTA_SHARE`] of recent answers: the cap halves (at most once a second, so one burst of
//!   429s from requests already in flight counts once) and every caller of the provider pauses
//!   until the reset or `Retry-After`. Hammering on would only collect more 429s.
//! - **A sporadic 429, a 529 or a 503** during an incident: only the throttled request waits
//!   (its own retry honours its `Retry-After`), and the cap shrinks gently (×0.9, at most once a
//!   second, never below a quarter of `max_in_flight`). Pausing everyone for a few percent of
//!   throttled calls would cut throughput by an order of magnitude for nothing, which is what
//!   the official SDKs' per-request retry avoids too.

use std::num::NonZeroU32;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};
use tokio::sync::Notify;

/// Requests/minute and tokens/minute, spread evenly: the burst is one second's worth, and the
/// steady rate leaves room for it, so that no 60-second window ever holds more than the quota.
pub struct Quotas {
    requests: Option<DefaultDirectRateLimiter>,
    tokens: Option<(DefaultDirectRateLimiter, u32)>,
}

impl Quotas {
    pub fn new(rpm: u32, tpm: u32) -> Self {
        Quotas {
            requests: per_minute(rpm).map(RateLimiter::direct),
            tokens: per_minute(tpm).map(|q| (RateLimiter::direct(q), burst(tpm))),
        }
    }

    /// Waits until one more request of about `tokens` tokens fits both quotas.
    pub async fn admit(&self, tokens: u32) {
        if let Some(r) = &self.requests {
            r.until_ready().await;
        }
        if let Some((t, burst)) = &self.tokens {
            // A request larger than the burst could never fit at once: it is charged in
            // burst-sized parts, one after another, so that every token counts.
            let mut left = tokens.max(1);
            while left > 0 {
                let part = left.min(*burst);
                let n = NonZeroU32::new(part).unwrap_or(NonZeroU32::MIN);
                let _ = t.until_n_ready(n).await;
                left -= part;
            }
        }
    }
}

fn burst(per_minute: u32) -> u32 {
    (per_minute / 60).max(1)
}

/// A quota whose worst 60-second window, burst included, stays within `per_minute`.
fn per_minute(per_minute: u32) -> Option<Quota> {
    let limit = NonZeroU32::new(per_minute)?;
    let burst = NonZeroU32::new(burst(per_minute))?;
    let steady = limit.get().saturating_sub(burst.get()).max(1);
    let period = Duration::from_secs(60).checked_div(steady)?;
    Quota::with_period(period)
        .map(|q| q.allow_burst(burst))
        .or(Some(Quota::per_minute(limit)))
}

/// The share of 429s among recent answers above which the quota counts as exceeded.
pub const QUOTA_SHARE: f64 = 0.2;

/// The weight of the latest answer in the moving share of 429s: about the last 32 answers count.
const SHARE_WEIGHT: f64 = 1.0 / 32.0;

/// The gentle decrease of a sporadic throttle.
const GENTLE: f64 = 0.9;

/// When no header says how long an exceeded quota lasts.
const DEFAULT_QUOTA_PAUSE: Duration = Duration::from_secs(1);

/// The adaptive in-flight cap of one provider.
pub struct Adaptive {
    max: f64,
    state: Mutex<State>,
    changed: Notify,
}

struct State {
    limit: f64,
    in_flight: u32,
    last_decrease: Option<Instant>,
    paused_until: Option<Instant>,
    /// Exponentially weighted share of 429s among recent answers.
    share_429: f64,
}

/// What the provider said about the last call.
pub enum Signal {
    Success,
    /// A 429. `exhausted`: its headers say a quota bucket is used up until then.
    RateLimited {
        retry_after: Option<Duration>,
        exhausted: Option<Duration>,
    },
    /// A 529 or 503: the provider is overloaded, not our quota.
    Overloaded,
    /// A successful response whose headers say the quota is used up until `reset`.
    Exhausted {
        reset: Duration,
    },
}

/// What the limiter concluded from a signal, for the caller to pass on (to the fleet).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing beyond this process's cap.
    Local,
    /// The quota is exceeded: every caller, fleet-wide, should pause this long.
    PauseAll(Duration),
}

impl Adaptive {
    pub fn new(max_in_flight: u32) -> Self {
        let max = f64::from(max_in_flight.max(1));
        Adaptive {
            max,
            state: Mutex::new(State {
                limit: max,
                in_flight: 0,
                last_decrease: None,
                paused_until: None,
                share_429: 0.0,
            }),
            changed: Notify::new(),
        }
    }

    /// Waits for a slot (and for any pause to end); the slot is freed when the permit drops.
    pub async fn acquire(&self) -> Permit<'_> {
        loop {
            let notified = self.changed.notified();
            let wait = {
                let mut s = self.lock();
                match s.paused_until {
                    Some(until) if until > Instant::now() => Some(until),
                    _ => {
                        if f64::from(s.in_flight) < s.limit.floor().max(1.0) {
                            s.in_flight += 1;
                            return Permit { owner: self };
                        }
                        None
                    }
                }
            };
            match wait {
                Some(until) => tokio::time::sleep_until(until.into()).await,
                None => notified.await,
            }
        }
    }

    /// Adjusts the cap to what the provider said, and says whether the quota is exceeded.
    pub fn signal(&self, signal: Signal) -> Verdict {
        let now = Instant::now();
        let mut s = self.lock();
        let answered_429 = matches!(signal, Signal::RateLimited { .. });
        if !matches!(signal, Signal::Exhausted { .. }) {
            let x = if answered_429 { 1.0 } else { 0.0 };
            s.share_429 += SHARE_WEIGHT * (x - s.share_429);
        }
        let mut verdict = Verdict::Local;
        match signal {
            Signal::Success => s.limit = (s.limit + 1.0 / s.limit).min(self.max),
            Signal::RateLimited {
                retry_after,
                exhausted,
            } => {
                let quota = exhausted.or_else(|| {
                    (s.share_429 > QUOTA_SHARE).then(|| retry_after.unwrap_or(DEFAULT_QUOTA_PAUSE))
                });
                match quota {
                    Some(wait) => {
                        self.decrease(&mut s, now, 0.5, 1.0);
                        let wait = wait.max(retry_after.unwrap_or_default());
                        s.paused_until = s.paused_until.max(Some(now + wait));
                        verdict = Verdict::PauseAll(wait);
                    }
                    None => self.decrease(&mut s, now, GENTLE, self.floor()),
                }
            }
            Signal::Overloaded => self.decrease(&mut s, now, GENTLE, self.floor()),
            Signal::Exhausted { reset } => s.paused_until = s.paused_until.max(Some(now + reset)),
        }
        drop(s);
        self.changed.notify_waiters();
        verdict
    }

    /// Multiplies the cap by `factor`, not below `floor`, at most once a second.
    fn decrease(&self, s: &mut State, now: Instant, factor: f64, floor: f64) {
        if s.last_decrease
            .is_none_or(|t| now.duration_since(t) >= Duration::from_secs(1))
        {
            s.limit = (s.limit * factor).max(floor.min(s.limit)).max(1.0);
            s.last_decrease = Some(now);
        }
    }

    /// The lowest cap a sporadic throttle leaves.
    fn floor(&self) -> f64 {
        (self.max / 4.0).max(1.0)
    }

    /// The moving share of 429s among recent answers (for tests).
    pub fn share_429(&self) -> f64 {
        self.lock().share_429
    }

    /// The current cap (for metrics and tests).
    pub fn limit(&self) -> f64 {
        self.lock().limit
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // The state stays consistent under any panic (plain numbers), so a poisoned lock is fine.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

pub struct Permit<'a> {
    owner: &'a Adaptive,
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        self.owner.lock().in_flight -= 1;
        self.owner.changed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate_limited(retry_after_ms: u64, exhausted: Option<Duration>) -> Signal {
        Signal::RateLimited {
            retry_after: Some(Duration::from_millis(retry_after_ms)),
            exhausted,
        }
    }

    #[tokio::test]
    async fn an_exhausted_quota_halves_once_per_second_and_success_recovers_additively() {
        let a = Adaptive::new(16);
        let gone = Some(Duration::from_millis(1));
        assert_eq!(
            a.signal(rate_limited(1, gone)),
            Verdict::PauseAll(Duration::from_millis(1))
        );
        assert_eq!(a.limit(), 8.0);
        a.signal(rate_limited(1, gone));
        assert_eq!(a.limit(), 8.0, "a burst of 429s counts once");
        a.signal(Signal::Success);
        assert!((a.limit() - 8.125).abs() < 1e-9);
        for _ in 0..1000 {
            a.signal(Signal::Success);
        }
        assert_eq!(a.limit(), 16.0, "never above max_in_flight");
    }

    #[tokio::test]
    async fn a_sporadic_429_or_overload_shrinks_gently_and_pauses_nobody() {
        let a = Adaptive::new(100);
        for _ in 0..40 {
            a.signal(Signal::Success);
        }
        assert_eq!(a.signal(rate_limited(1000, None)), Verdict::Local);
        assert_eq!(a.limit(), 90.0);
        let started = Instant::now();
        drop(a.acquire().await);
        assert!(started.elapsed() < Duration::from_millis(100), "no pause");
        a.signal(Signal::Overloaded);
        assert_eq!(a.limit(), 90.0, "at most once a second");
        // The floor: a quarter of max_in_flight.
        let b = Adaptive::new(8);
        for _ in 0..30 {
            b.lock().last_decrease = None;
            b.signal(Signal::Overloaded);
        }
        assert_eq!(b.limit(), 2.0);
    }

    #[tokio::test]
    async fn a_high_share_of_429s_means_the_quota_is_exceeded() {
        let a = Adaptive::new(64);
        // 3% of answers throttled: always sporadic.
        for i in 0..3000 {
            let verdict = if i % 33 == 0 {
                a.signal(rate_limited(1000, None))
            } else {
                a.signal(Signal::Success)
            };
            assert_eq!(verdict, Verdict::Local, "answer {i}");
        }
        // Every answer a 429 without headers: within a few answers the share crosses the line.
        let mut verdicts = Vec::new();
        for _ in 0..10 {
            verdicts.push(a.signal(rate_limited(300, None)));
        }
        let first = verdicts
            .iter()
            .position(|v| *v != Verdict::Local)
            .expect("the quota is exceeded");
        assert!(first < 8, "{verdicts:?}");
        assert_eq!(
            verdicts[first],
            Verdict::PauseAll(Duration::from_millis(300))
        );
        assert!(a.share_429() > QUOTA_SHARE);
    }

    #[tokio::test]
    async fn in_flight_never_exceeds_the_cap() {
        let a = std::sync::Arc::new(Adaptive::new(3));
        let peak = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
        let now = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
        let mut tasks = Vec::new();
        for _ in 0..20 {
            let (a, peak, now) = (a.clone(), peak.clone(), now.clone());
            tasks.push(tokio::spawn(async move {
                let _p = a.acquire().await;
                let n = now.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                peak.fetch_max(n, std::sync::atomic::Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(5)).await;
                now.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(peak.load(std::sync::atomic::Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn retry_after_pauses_every_caller() {
        let a = Adaptive::new(4);
        a.signal(rate_limited(300, Some(Duration::from_millis(300))));
        let started = Instant::now();
        drop(a.acquire().await);
        assert!(
            started.elapsed() >= Duration::from_millis(290),
            "{:?}",
            started.elapsed()
        );
    }

    #[tokio::test]
    async fn tokens_of_a_request_larger_than_the_burst_are_all_charged() {
        // 60 000/min: burst 1 000, then ~983/s. A 2 500-token request needs 1.5 s of accrual
        // beyond the burst; charging it only the burst would let the next one in at once.
        let q = Quotas::new(0, 60_000);
        let started = Instant::now();
        q.admit(2_500).await;
        q.admit(1).await;
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(1_450) && took < Duration::from_millis(2_500),
            "{took:?}"
        );
    }

    #[tokio::test]
    async fn quota_spreads_requests_evenly() {
        // 120/min: burst 2, then one every 60/118 s; 6 requests take at least ~2 s.
        let q = Quotas::new(120, 0);
        let started = Instant::now();
        for _ in 0..6 {
            q.admit(10).await;
        }
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(1900) && took < Duration::from_millis(2600),
            "{took:?}"
        );
    }
}
