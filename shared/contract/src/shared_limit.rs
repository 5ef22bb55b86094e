//! Fleet-wide admission for judge and target calls: one provider's (or an http target's) quota
//! shared by every worker (a GCRA in Redis), and one 429 slowing the whole fleet. A trait here so the worker's judge can take it
//! without depending on Redis.

use std::time::Duration;

use async_trait::async_trait;

#[async_trait]
pub trait SharedLimiter: Send + Sync {
    /// Waits until the fleet may send one more request of about `tokens` tokens to `provider`.
    /// A limiter that cannot be reached lets the call through (the local limits still hold).
    async fn acquire(&self, provider: &str, tokens: u32);
    /// `provider` answered 429 or is overloaded: every worker waits `retry_after` (or a short
    /// default) before its next call there.
    async fn throttled(&self, provider: &str, retry_after: Option<Duration>);
    /// A quota this limiter's configuration does not name (an http target's, from a run's
    /// spec): `rpm` and `tpm` (0 = none) from now on. A quota already known is kept.
    fn declare(&self, name: &str, rpm: u32, tpm: u32);
}
