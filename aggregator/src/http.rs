//! The aggregator's HTTP API: `GET /runs`, `/runs/{id}`, `/runs/{id}/report`,
//! `/runs/{id}/items` (+ `/items/facets`, [`items`]), `/runs/{id}/view` ([`view`]),
//! `/runs/{a}/compare/{b}`, `/metrics`, `/healthz`, `/readyz`. Everything is read from the run
//! registry and the result store (Redis in the fleet) and the report and items from the reports
//! directory, so any aggregator answers for any run, and a restarted one answers at once.
//!
//! With an [`ApiToken`] the run routes require `Authorization: Bearer <token>` ([`auth`]); the
//! probes and `/metrics` stay open (orchestrators and Prometheus call them without credentials,
//! and they reveal no user data), and so does the viewer's page, which holds no data and asks
//! for the token itself.

pub mod auth;
mod items;
mod view;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Json, Router};
use evalfleet_contract::registry::{RunMeta, RunRegistry};
use evalfleet_contract::store::ResultStore;
use evalfleet_items::ItemsCache;
use serde_json::json;

use tokio_util::sync::CancellationToken;

pub use auth::ApiToken;

/// What the API reads: the run registry and the results' counts.
pub trait Runs: RunRegistry + ResultStore {}

impl<S: RunRegistry + ResultStore> Runs for S {}

/// The API; with `token`, every route but `/metrics`, `/healthz`, `/readyz` and the viewer's
/// page requires it.
pub fn router<S: Runs>(runs_of: Arc<S>, token: Option<ApiToken>) -> Router {
    let protected = Router::new()
        .route("/runs", get(runs::<S>))
        .route("/runs/{id}", get(run::<S>))
        .route("/runs/{id}/report", get(report::<S>))
        .route("/runs/{id}/items", get(items::items::<S>))
        .route("/runs/{id}/items/facets", get(items::facets::<S>))
        .route("/runs/{base}/compare/{new}", get(compare::<S>));
    let protected = match token {
        Some(token) => protected.route_layer(auth::layer(token)),
        None => protected,
    };
    let open = Router::new()
        .route("/metrics", get(prometheus_text))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(ready::<S>))
        .route("/runs/{id}/view", get(view::view));
    protected
        .merge(open)
        .layer(Extension(Arc::new(ItemsCache::default())))
        .with_state(runs_of)
}

/// Serves the API on the first of `addrs` that can be bound until `shutdown` is cancelled;
/// with `token`, as [`router`] says.
pub async fn serve<S: Runs>(
    addrs: Vec<SocketAddr>,
    runs_of: Arc<S>,
    token: Option<ApiToken>,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(addrs.as_slice()).await?;
    let addr = listener.local_addr()?;
    let auth = if token.is_some() {
        "bearer token"
    } else {
        "none"
    };
    tracing::info!(%addr, auth, "aggregator HTTP API listening");
    axum::serve(listener, router(runs_of, token))
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await
}

fn unavailable(e: impl std::fmt::Display) -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        Json(json!({"error": e.to_string()})),
    )
        .into_response()
}

async fn runs<S: Runs>(State(a): State<Arc<S>>) -> Response {
    match a.runs(100).await {
        Ok(runs) => Json(json!({"runs": runs})).into_response(),
        Err(e) => unavailable(e),
    }
}

/// The run's registry entry, or the response saying why there is none (400 for an id that
/// breaks the run-id rule, 404, or 503 when Redis cannot be read).
async fn registered<S: Runs>(a: &S, id: &str) -> Result<RunMeta, Response> {
    if let Err(e) = evalfleet_model::run_id::check(id) {
        return Err((
            StatusCode::BAD_REQUEST,
            Json(json!({"error": e.to_string(), "rule": evalfleet_model::run_id::RULE})),
        )
            .into_response());
    }
    match a.run(id).await {
        Ok(Some(meta)) => Ok(meta),
        Ok(None) => Err((
            StatusCode::NOT_FOUND,
            Json(json!({"error": format!("no run '{id}'")})),
        )
            .into_response()),
        Err(e) => Err(unavailable(e)),
    }
}

async fn run<S: Runs>(State(a): State<Arc<S>>, Path(id): Path<String>) -> Response {
    let meta = match registered(a.as_ref(), &id).await {
        Ok(meta) => meta,
        Err(response) => return response,
    };
    let counts = match a.counts(&id).await {
        Ok(c) => c,
        Err(e) => return unavailable(e),
    };
    let progress = meta
        .total
        .filter(|t| *t > 0)
        .map(|t| counts.done() as f64 / t as f64);
    Json(json!({"run": meta, "counts": counts, "done": counts.done(), "progress": progress}))
        .into_response()
}

async fn report<S: Runs>(State(a): State<Arc<S>>, Path(id): Path<String>) -> Response {
    let meta = match registered(a.as_ref(), &id).await {
        Ok(meta) => meta,
        Err(response) => return response,
    };
    let dir = match a.report_dir(&id).await {
        Ok(dir) => dir,
        Err(e) => return unavailable(e),
    };
    let Some(dir) = dir else {
        return (
            StatusCode::CONFLICT,
            Json(json!({"error": "the run is not complete yet", "status": meta.status})),
        )
            .into_response();
    };
    match tokio::fs::read(std::path::Path::new(&dir).join("report.json")).await {
        Ok(body) => (
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response(),
        Err(e) => (
            StatusCode::NOT_FOUND,
            Json(json!({"error": format!("report.json of run '{id}' is not readable here: {e}")})),
        )
            .into_response(),
    }
}

/// Where a registered run's report.json is, or the response saying why there is none: 404 for
/// an unknown run, 409 for a run whose report is not written yet.
async fn report_path<S: Runs>(a: &S, id: &str) -> Result<std::path::PathBuf, Response> {
    let meta = registered(a, id).await?;
    match a.report_dir(id).await {
        Ok(Some(dir)) => Ok(std::path::Path::new(&dir).join("report.json")),
        Ok(None) => Err((
            StatusCode::CONFLICT,
            Json(json!({"error": format!("run '{id}' is not complete yet: it has no report to compare"), "status": meta.status})),
        )
            .into_response()),
        Err(e) => Err(unavailable(e)),
    }
}

/// `?alpha=&max_drop=`: the gate's settings, as `evalfleet compare`'s flags.
#[derive(serde::Deserialize)]
struct GateQuery {
    alpha: Option<f64>,
    max_drop: Option<f64>,
}

/// compare.json of two finished runs (BASE `base`, NEW `new`): 404 for an unknown run, 409 for
/// a run without a report yet, 422 when the reports cannot be compared (different suites, no
/// common items, an unreadable report).
async fn compare<S: Runs>(
    State(a): State<Arc<S>>,
    Path((base, new)): Path<(String, String)>,
    Query(q): Query<GateQuery>,
) -> Response {
    let base = match report_path(a.as_ref(), &base).await {
        Ok(p) => p,
        Err(response) => return response,
    };
    let new = match report_path(a.as_ref(), &new).await {
        Ok(p) => p,
        Err(response) => return response,
    };
    let defaults = evalfleet_compare::Options::default();
    let opts = evalfleet_compare::Options {
        alpha: q.alpha.unwrap_or(defaults.alpha),
        max_drop: q.max_drop.unwrap_or(defaults.max_drop),
    };
    let done =
        tokio::task::spawn_blocking(move || evalfleet_compare::compare(&base, &new, &opts)).await;
    match done {
        Ok(Ok(c)) => Json(c).into_response(),
        Ok(Err(e)) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            Json(json!({"error": e.to_string()})),
        )
            .into_response(),
        Err(e) => unavailable(e),
    }
}

async fn prometheus_text() -> Response {
    let body = evalfleet_metrics::render(&[&crate::metrics::metrics().registry]);
    (
        [(
            axum::http::header::CONTENT_TYPE,
            evalfleet_metrics::CONTENT_TYPE,
        )],
        body,
    )
        .into_response()
}

async fn ready<S: Runs>(State(a): State<Arc<S>>) -> Response {
    match a.runs(1).await {
        Ok(_) => "ready".into_response(),
        Err(e) => unavailable(e),
    }
}
