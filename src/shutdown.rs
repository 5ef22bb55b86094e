//! How every long-running loop of a process learns that it should stop: one tree of
//! [`CancellationToken`]s, rooted here.
//!
//! The root stands for the process; its child, the work, is cancelled on SIGTERM or SIGINT.
//! What does the work takes the work token (or a child of it): the worker's consumers and batch
//! coordinator, the aggregator's fold-and-sweep loop and its queue-depth poller. The HTTP and
//! metrics servers take a child of the root instead, so that they stop last, when [`Shutdown`]
//! is dropped: a draining worker still answers `/metrics` and `/healthz` while it finishes the
//! examples it holds. Each loop checks its token between steps, so a step under way (an example
//! being stored, a batch being collected, a report being written) finishes first; the deadline
//! for that is the role's own (`fleet.shutdown_deadline_s` for a worker).

pub use tokio_util::sync::CancellationToken;

/// The stop tree of one process: the root (the process) and the work under it.
pub struct Shutdown {
    process: CancellationToken,
    work: CancellationToken,
}

impl Shutdown {
    /// A tree whose work is cancelled when the process receives SIGTERM or SIGINT. Must be
    /// called inside the runtime.
    pub fn on_signal() -> Shutdown {
        let process = CancellationToken::new();
        let work = process.child_token();
        let cancel = work.clone();
        tokio::spawn(async move {
            signalled().await;
            tracing::info!("shutdown requested");
            cancel.cancel();
        });
        Shutdown { process, work }
    }

    /// For what does the work: cancelled by a signal (or when the process ends).
    pub fn work(&self) -> CancellationToken {
        self.work.clone()
    }

    /// For a server: cancelled when this tree is dropped, after the work is done.
    pub fn server(&self) -> CancellationToken {
        self.process.child_token()
    }
}

impl Drop for Shutdown {
    fn drop(&mut self) {
        self.process.cancel();
    }
}

/// Resolves on SIGTERM or SIGINT.
async fn signalled() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate => {}
    }
}
