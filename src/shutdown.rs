//! How every long-running loop of a process learns that it should stop: one tree of
//! [`CancellationToken`]s, rooted here.
//!
//! The root is cancelled on SIGTERM or SIGINT. Each role takes a token and hands children to
//! what it runs beside itself: the worker's consumers and batch coordinator, the aggregator's
//! fold-and-sweep loop and its queue-depth poller, the HTTP and metrics servers. A child is
//! cancelled with its parent, and cancelling a child (a role that ends on its own) stops only
//! what hangs below it. Each loop checks its token between steps, so a step under way (an
//! example being stored, a batch being collected, a report being written) finishes first; the
//! deadline for that is the role's own (`fleet.shutdown_deadline_s` for a worker).

pub use tokio_util::sync::CancellationToken;

/// The root token, cancelled when the process receives SIGTERM or SIGINT. Must be called
/// inside the runtime.
pub fn on_signal() -> CancellationToken {
    let root = CancellationToken::new();
    let cancel = root.clone();
    tokio::spawn(async move {
        signalled().await;
        tracing::info!("shutdown requested");
        cancel.cancel();
    });
    root
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
