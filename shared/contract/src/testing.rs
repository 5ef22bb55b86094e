//! Helpers for tests of this crate and of the crates that implement its traits.

use std::future::Future;
use std::task::{Context, Poll, Waker};

/// Runs a future that never waits on I/O (the in-process store and caches) to completion
/// without a runtime: the pure crate has none.
pub fn block_on<F: Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::yield_now();
    }
}
