//! Packing waiting requests into one batch: at most the provider's request count and bytes
//! (both configurable below the provider's limits), and a partial batch goes once its oldest
//! request waited `max_wait_s` — or once no request arrived for a second, which is when a run
//! has handed over all it has (its other examples are waiting for this batch).

use std::time::{Duration, Instant};

use evalfleet_config::Api;

use super::Waiting;

/// How long without a new request before a partial batch goes anyway.
pub(crate) const IDLE: Duration = Duration::from_secs(1);

/// The batch being gathered.
pub(super) struct Pack {
    api: Api,
    max_requests: usize,
    max_bytes: usize,
    max_wait: Duration,
    pub waiting: Vec<Waiting>,
    bytes: usize,
    oldest: Option<Instant>,
    newest: Option<Instant>,
}

/// What to do with a request that arrived.
pub(super) enum Fit {
    /// It joins the batch being gathered.
    Fits,
    /// The batch is full: send it, then start the next one with this request.
    SendFirst,
    /// It is larger than a whole batch may be.
    TooLarge { bytes: usize, limit: usize },
}

impl Pack {
    pub fn new(api: Api, max_requests: usize, max_bytes: usize, max_wait: Duration) -> Self {
        Pack {
            api,
            max_requests,
            max_bytes,
            max_wait,
            waiting: Vec::new(),
            bytes: 0,
            oldest: None,
            newest: None,
        }
    }

    fn bytes_with(&self, line: usize, count: usize) -> usize {
        use crate::judge::provider::batch::framing_bytes;
        self.bytes + line + framing_bytes(self.api, count)
    }

    pub fn fit(&self, line: usize) -> Fit {
        let alone = self.bytes_with(line, 1) - self.bytes;
        if alone > self.max_bytes {
            return Fit::TooLarge {
                bytes: alone,
                limit: self.max_bytes,
            };
        }
        let count = self.waiting.len() + 1;
        if count > self.max_requests || self.bytes_with(line, count) > self.max_bytes {
            Fit::SendFirst
        } else {
            Fit::Fits
        }
    }

    pub fn push(&mut self, waiting: Waiting, now: Instant) {
        self.bytes += waiting.line.len();
        self.oldest.get_or_insert(now);
        self.newest = Some(now);
        self.waiting.push(waiting);
    }

    /// Whether no further request can join.
    pub fn full(&self) -> bool {
        self.waiting.len() >= self.max_requests
    }

    /// When the batch being gathered must go even if not full.
    pub fn deadline(&self) -> Option<Instant> {
        let oldest = self.oldest? + self.max_wait;
        let idle = self.newest? + IDLE.min(self.max_wait);
        Some(oldest.min(idle))
    }

    /// The gathered requests; the pack starts over empty.
    pub fn take(&mut self) -> Vec<Waiting> {
        self.bytes = 0;
        self.oldest = None;
        self.newest = None;
        std::mem::take(&mut self.waiting)
    }

    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use tokio::sync::oneshot;

    use super::*;

    fn waiting(bytes: usize) -> Waiting {
        Waiting {
            custom_id: "c".into(),
            line: vec![b'x'; bytes],
            answer: oneshot::channel().0,
        }
    }

    #[test]
    fn a_batch_never_exceeds_its_limits() {
        let now = Instant::now();
        let mut pack = Pack::new(Api::Openai, 3, 100, Duration::from_secs(60));
        assert!(matches!(
            pack.fit(120),
            Fit::TooLarge {
                bytes: 121,
                limit: 100
            }
        ));
        for _ in 0..2 {
            assert!(matches!(pack.fit(30), Fit::Fits));
            pack.push(waiting(30), now);
        }
        // 3 × 30 bytes + 3 newlines = 93: fits; a 4th request would not.
        assert!(matches!(pack.fit(30), Fit::Fits));
        pack.push(waiting(30), now);
        assert!(pack.full());
        assert!(matches!(pack.fit(1), Fit::SendFirst));
        assert_eq!(pack.take().len(), 3);
        assert!(pack.is_empty() && pack.deadline().is_none());
        pack.push(waiting(90), now);
        assert!(
            matches!(pack.fit(9), Fit::SendFirst),
            "91 + 9 + 2 newlines > 100"
        );
    }

    #[test]
    fn a_partial_batch_goes_after_max_wait_or_a_quiet_second() {
        let start = Instant::now();
        let mut pack = Pack::new(Api::Anthropic, 10, 1_000, Duration::from_secs(5));
        pack.push(waiting(1), start);
        assert_eq!(pack.deadline(), Some(start + IDLE));
        pack.push(waiting(1), start + Duration::from_millis(4_500));
        assert_eq!(pack.deadline(), Some(start + Duration::from_secs(5)));
    }
}
