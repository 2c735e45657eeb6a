//! Operations: health, readiness, Prometheus metrics, the model shown in the console.

use aics_service::Console;
use aics_types::ModelInfo;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Router};
use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::ConnectInfo;
use axum::http::HeaderMap;

use crate::web::{metrics_allowed, WebConfig};
use metrics_exporter_prometheus::PrometheusHandle;

use crate::error::HttpError;
use crate::extract::Json;
use crate::state::AppState;

/// `/healthz`, `/readyz`, `/metrics`: open, outside `/api/`.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(ready))
        .route("/metrics", get(render_metrics))
}

/// `GET /api/config`.
pub fn api_router() -> Router<AppState> {
    Router::new().route("/api/config", get(config))
}

async fn ready(State(console): State<Console>) -> Response {
    match console.ready().await {
        Ok(()) => "ready".into_response(),
        Err(e) => {
            tracing::warn!(error = %e, "not ready: the database does not answer");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(aics_types::ApiError {
                    error: "unavailable".into(),
                    message: "the database does not answer".into(),
                }),
            )
                .into_response()
        }
    }
}

/// The Prometheus text, to whom `http.metrics-access` allows (404 to
/// others, so the endpoint is not advertised).
async fn render_metrics(
    State(handle): State<Option<PrometheusHandle>>,
    Extension(web): Extension<Arc<WebConfig>>,
    connect: Option<Extension<ConnectInfo<SocketAddr>>>,
    headers: HeaderMap,
) -> Response {
    if !metrics_allowed(
        &web.metrics,
        connect.map(|Extension(ConnectInfo(peer))| peer),
        &headers,
    ) {
        return StatusCode::NOT_FOUND.into_response();
    }
    match handle {
        Some(handle) => {
            handle.run_upkeep();
            (
                [(CONTENT_TYPE, "text/plain; version=0.0.4")],
                handle.render(),
            )
                .into_response()
        }
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn config(State(console): State<Console>) -> Result<Json<ModelInfo>, HttpError> {
    Ok(Json(console.model_info()))
}
