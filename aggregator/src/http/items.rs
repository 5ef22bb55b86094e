//! `GET /runs/{id}/items`: a page of a finished run's item table, filtered and sorted, read
//! from its `items.parquet` (`evalfleet_items::query`; the parameters and the page's shape are
//! `docs/ITEMS.md`, "API"); and `GET /runs/{id}/items/facets`: what the table can be filtered
//! by (its columns, fail tags and group values), for the viewer's controls.
//!
//! One [`ItemsCache`] per API keeps each file's footer and the last results' row positions, so
//! paging through a filtered or sorted result reads only each page's rows. Queries read files:
//! they run on the blocking pool, never on the runtime's threads.

use std::path::PathBuf;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use evalfleet_items::{ItemQuery, ItemsCache, ItemsError};
use serde_json::json;

use super::{registered, unavailable, Runs};

/// The items of a run: its `items.parquet`, or the response saying why there is none: 404 for
/// an unknown run, 409 for a run whose report is not written yet.
async fn items_path<S: Runs>(a: &S, id: &str) -> Result<PathBuf, Response> {
    let meta = registered(a, id).await?;
    match a.report_dir(id).await {
        Ok(Some(dir)) => Ok(std::path::Path::new(&dir).join(evalfleet_items::FILE_NAME)),
        Ok(None) => Err((
            StatusCode::CONFLICT,
            Json(json!({
                "error": format!("run '{id}' is not complete yet: its items are written with its report"),
                "status": meta.status,
            })),
        )
            .into_response()),
        Err(e) => Err(unavailable(e)),
    }
}

/// The response for a query that failed: 400 naming the parameter, 404 when the run's file is
/// not there (a report written before `items.parquet` existed, or a reports directory this
/// aggregator does not see), 500 for a file that cannot be read.
fn failed(id: &str, e: ItemsError) -> Response {
    match e {
        ItemsError::Query { param, message } => (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": format!("{param}: {message}"), "parameter": param})),
        )
            .into_response(),
        ItemsError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => (
            StatusCode::NOT_FOUND,
            Json(json!({"error": format!("items.parquet of run '{id}' is not readable here: {source}")})),
        )
            .into_response(),
        other => (
            StatusCode::INTERNAL_SERVER_ERROR,
            Json(json!({"error": format!("items of run '{id}': {other}")})),
        )
            .into_response(),
    }
}

/// `GET /runs/{id}/items?status=&tag=&group=&q=&sort=&offset=&limit=`.
pub(super) async fn items<S: Runs>(
    State(a): State<Arc<S>>,
    Extension(cache): Extension<Arc<ItemsCache>>,
    Path(id): Path<String>,
    Query(params): Query<Vec<(String, String)>>,
) -> Response {
    let path = match items_path(a.as_ref(), &id).await {
        Ok(path) => path,
        Err(response) => return response,
    };
    let query = match ItemQuery::from_params(params.iter().map(|(k, v)| (k.as_str(), v.as_str()))) {
        Ok(q) => q,
        Err(e) => return failed(&id, e),
    };
    match tokio::task::spawn_blocking(move || cache.query(&path, &query)).await {
        Ok(Ok(page)) => Json(page).into_response(),
        Ok(Err(e)) => failed(&id, e),
        Err(e) => unavailable(e),
    }
}

/// `GET /runs/{id}/items/facets`: `{"columns", "tags", "groups": {key: [values]}, "truncated"}`.
pub(super) async fn facets<S: Runs>(
    State(a): State<Arc<S>>,
    Extension(cache): Extension<Arc<ItemsCache>>,
    Path(id): Path<String>,
) -> Response {
    let path = match items_path(a.as_ref(), &id).await {
        Ok(path) => path,
        Err(response) => return response,
    };
    match tokio::task::spawn_blocking(move || cache.facets(&path)).await {
        Ok(Ok(facets)) => Json(facets.as_ref()).into_response(),
        Ok(Err(e)) => failed(&id, e),
        Err(e) => unavailable(e),
    }
}
