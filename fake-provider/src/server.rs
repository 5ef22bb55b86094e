//! The HTTP surface: both API dialects, the stats, metrics and admin endpoints, and the two ways
//! to run it — `serve` for the `evalfleet fake-provider` command (graceful on SIGINT/SIGTERM)
//! and `spawn` for tests (ephemeral port, runs until the handle is aborted). It binds
//! 127.0.0.1 unless `--host` says otherwise, which is meant for a container on a private
//! network only: the admin endpoints have no auth, so the server must never face a shared
//! network.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Query, State};
use axum::http::{Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::serve::ListenerExt;
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::args::{ConfigPatch, FakeProviderArgs};
use crate::clock::now_unix_ms;
use crate::error::ConfigError;
use crate::state::FakeProvider;
use crate::stats::{Provider, TIMELINE_WINDOW_MS};
use crate::{agent, anthropic, openai};

/// Every endpoint, over the given state.
pub fn router(state: Arc<FakeProvider>) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(openai::chat_completions))
        .route("/v1/messages", post(anthropic::messages))
        .route("/agent", post(agent::ask))
        .merge(batch_routes())
        .route("/stats", get(stats))
        .route("/stats/timeline", get(timeline))
        .route("/metrics", get(prometheus_metrics))
        .route("/admin/config", get(get_config).post(post_config))
        .route("/admin/reset", post(reset))
        .route("/healthz", get(healthz))
        .fallback(not_found)
        .with_state(state)
}

/// The two batch APIs. Their bodies may be as large as the providers allow (the batch size
/// limits are checked by the handlers, so an oversized batch is refused the way the provider
/// refuses it), so axum's 2 MB default body limit is lifted here.
fn batch_routes() -> Router<Arc<FakeProvider>> {
    use crate::batch::{anthropic as ab, openai as ob, openai_files as of};
    Router::new()
        .route("/v1/files", post(of::upload_file))
        .route("/v1/files/{id}", get(of::retrieve_file))
        .route("/v1/files/{id}/content", get(of::file_content))
        .route("/v1/batches", post(ob::create).get(ob::list))
        .route("/v1/batches/{id}", get(ob::retrieve))
        .route("/v1/batches/{id}/cancel", post(ob::cancel))
        .route("/v1/messages/batches", post(ab::create).get(ab::list))
        .route("/v1/messages/batches/{id}", get(ab::retrieve))
        .route("/v1/messages/batches/{id}/cancel", post(ab::cancel))
        .route("/v1/messages/batches/{id}/results", get(ab::results))
        .layer(DefaultBodyLimit::disable())
}

/// Runs the provider on 127.0.0.1:`port` until SIGINT or SIGTERM, then drains in-flight
/// requests (cutting hangs and latency sleeps short).
pub async fn serve(args: FakeProviderArgs) -> io::Result<()> {
    let (state, listener) = bind(args).await?;
    let addr = listener.local_addr()?;
    tracing::info!(%addr, "fake provider listening on http://{addr}");
    let app = router(Arc::clone(&state));
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            shutdown_signal().await;
            tracing::info!("fake provider shutting down");
            state.shutdown();
        })
        .await
}

/// Starts the provider in the background (port 0 = ephemeral) and returns its address.
pub async fn spawn(args: FakeProviderArgs) -> io::Result<(SocketAddr, JoinHandle<()>)> {
    let (state, listener) = bind(args).await?;
    let addr = listener.local_addr()?;
    tracing::debug!(%addr, "fake provider listening on http://{addr}");
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    let handle = tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, router(state)).await {
            tracing::error!(error = %e, "fake provider stopped");
        }
    });
    Ok((addr, handle))
}

async fn bind(args: FakeProviderArgs) -> io::Result<(Arc<FakeProvider>, TcpListener)> {
    let (host, port) = (args.host, args.port);
    let state =
        FakeProvider::new(args).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let listener = TcpListener::bind((host, port))
        .await
        .map_err(|e| io::Error::new(e.kind(), format!("binding {host}:{port}: {e}")))?;
    if !host.is_loopback() {
        tracing::warn!(%host, "listening beyond loopback: the admin endpoints have no auth, keep this network private");
    }
    Ok((Arc::new(state), listener))
}

async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                term.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {}
        () = terminate => {}
    }
}

async fn healthz() -> &'static str {
    "ok"
}

async fn stats(State(fp): State<Arc<FakeProvider>>) -> Json<Value> {
    Json(fp.stats_json())
}

async fn prometheus_metrics(State(fp): State<Arc<FakeProvider>>) -> Response {
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        crate::metrics::render(&fp.stats().to_json()),
    )
        .into_response()
}

async fn timeline(
    State(fp): State<Arc<FakeProvider>>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let name = query.get("provider").map_or("", String::as_str);
    let Some(provider) = Provider::from_name(name) else {
        let message = format!("provider must be 'openai' or 'anthropic', got '{name}'");
        return admin_error(StatusCode::BAD_REQUEST, &message);
    };
    let (accepted, truncated) = fp.stats().timeline(provider, now_unix_ms());
    Json(json!({
        "provider": provider.name(),
        "window_ms": TIMELINE_WINDOW_MS,
        "truncated": truncated,
        "accepted_unix_ms": accepted,
    }))
    .into_response()
}

async fn get_config(State(fp): State<Arc<FakeProvider>>) -> Response {
    config_response(&fp.config())
}

async fn post_config(State(fp): State<Arc<FakeProvider>>, body: Bytes) -> Response {
    let applied = serde_json::from_slice::<ConfigPatch>(&body)
        .map_err(|e| ConfigError::Body(e.to_string()))
        .and_then(|patch| fp.apply(&patch));
    match applied {
        Ok(config) => {
            tracing::info!(?config, "fake provider reconfigured");
            config_response(&config)
        }
        Err(e) => admin_error(StatusCode::BAD_REQUEST, &e.to_string()),
    }
}

async fn reset(State(fp): State<Arc<FakeProvider>>) -> Response {
    fp.stats().reset();
    fp.batches().ledger().reset();
    Json(json!({"reset": true})).into_response()
}

/// Unknown routes answer like OpenAI does, so a wrong base URL is easy to diagnose.
async fn not_found(method: Method, uri: Uri) -> Response {
    let message = format!("Invalid URL ({method} {})", uri.path());
    let body = openai::error_body(&message, "invalid_request_error", None, None);
    crate::wire::json_response(StatusCode::NOT_FOUND, Default::default(), body)
}

fn config_response(config: &FakeProviderArgs) -> Response {
    // `api_key` is never serialized; say whether one is required instead.
    let mut value = serde_json::to_value(config).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut value {
        map.insert("api_key_required".into(), json!(config.api_key.is_some()));
    }
    Json(value).into_response()
}

fn admin_error(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({"error": message}))).into_response()
}
