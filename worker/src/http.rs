//! The worker's HTTP endpoints: `/metrics` (Prometheus), `/healthz` (the process is alive),
//! `/readyz` (ready to take messages) for Kubernetes probes, and `/stats` (counters as JSON).

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;

use crate::WorkerStats;
use tokio_util::sync::CancellationToken;

pub fn router(stats: Arc<WorkerStats>) -> Router {
    Router::new()
        .route("/metrics", get(prometheus_text))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(|| async { "ready" }))
        .route("/stats", get(stats_json))
        .with_state(stats)
}

/// The worker's metrics in the Prometheus text format.
async fn prometheus_text() -> impl axum::response::IntoResponse {
    let m = crate::metrics::metrics();
    let body = evalfleet_metrics::render(&[&m.registry]);
    (
        [(
            axum::http::header::CONTENT_TYPE,
            evalfleet_metrics::CONTENT_TYPE,
        )],
        body,
    )
}

async fn stats_json(State(s): State<Arc<WorkerStats>>) -> Json<serde_json::Value> {
    Json(json!({
        "processed": s.processed.load(Ordering::Relaxed),
        "redelivered": s.redelivered.load(Ordering::Relaxed),
        "duplicates": s.duplicates.load(Ordering::Relaxed),
        "requeued": s.requeued.load(Ordering::Relaxed),
    }))
}

/// Serves `/metrics`, `/healthz` and `/readyz` on `addr` until `shutdown` is cancelled.
pub async fn serve(
    addr: SocketAddr,
    stats: Arc<WorkerStats>,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    axum::serve(listener, router(stats))
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await
}
