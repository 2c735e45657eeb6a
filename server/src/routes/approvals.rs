//! The approvals queue, its live events and decisions (supervisors only).

use aics_service::{Console, ServiceError};
use aics_types::{Approval, ApprovalDecision, UserInfo};
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Router};
use serde::Deserialize;
use tokio::sync::watch;

use crate::error::HttpError;
use crate::extract::{Json, Path, Query};
use crate::routes::{last_event_id, sse};
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/approvals", get(list))
        .route("/api/approvals/events", get(events))
        .route("/api/approvals/export.csv", get(export_csv))
        .route("/api/approvals/{id}", get(one))
        .route("/api/approvals/{id}/decision", post(decide))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListQuery {
    #[serde(default)]
    status: Option<String>,
}

async fn list(
    State(console): State<Console>,
    Query(query): Query<ListQuery>,
) -> Result<Json<Vec<Approval>>, HttpError> {
    let pending = match query.status.as_deref() {
        None | Some("pending") => true,
        Some("decided") => false,
        Some(other) => {
            return Err(ServiceError::Invalid(format!(
                "status must be pending or decided, not {other:?}"
            ))
            .into())
        }
    };
    Ok(Json(console.list_approvals(pending).await?))
}

/// Every conversation's `approval_required` and `approval_decided`; a
/// reconnecting client is told to `resync` (reload the queue).
async fn events(
    State(console): State<Console>,
    State(shutdown): State<watch::Receiver<bool>>,
    headers: axum::http::HeaderMap,
) -> impl IntoResponse {
    let reconnected = last_event_id(&headers).is_some();
    sse(console.approval_events(reconnected), shutdown)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExportQuery {
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    from: Option<String>,
    #[serde(default)]
    to: Option<String>,
}

/// Supervisors: decided approvals as a CSV download.
async fn export_csv(
    State(console): State<Console>,
    Extension(user): Extension<UserInfo>,
    Query(q): Query<ExportQuery>,
) -> Result<Response, HttpError> {
    let csv = console
        .approvals_csv(
            &user,
            q.status.as_deref(),
            q.from.as_deref(),
            q.to.as_deref(),
        )
        .await?;
    Ok(crate::routes::csv_download("approvals", csv))
}

async fn one(
    State(console): State<Console>,
    Path(id): Path<String>,
) -> Result<Json<Approval>, HttpError> {
    Ok(Json(console.approval(&id).await?))
}

async fn decide(
    State(console): State<Console>,
    Extension(user): Extension<UserInfo>,
    Path(id): Path<String>,
    Json(decision): Json<ApprovalDecision>,
) -> Result<Json<Approval>, HttpError> {
    Ok(Json(console.decide(&user, &id, decision).await?))
}
