//! Named accounts and the audit log (supervisors only; the service checks
//! the role): list, create, disable/enable, reset a password, unlock; the
//! audit log as JSON or CSV.

use aics_service::{AuditQuery, Console};
use aics_types::{Account, AuditEntry, IssuedPassword, NewAccount, UserInfo};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use axum::{Extension, Router};
use serde::Deserialize;

use crate::error::HttpError;
use crate::extract::{Json, Path, Query};
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/accounts", get(list).post(create))
        .route("/api/accounts/{username}", get(one))
        .route("/api/accounts/{username}/disable", post(disable))
        .route("/api/accounts/{username}/enable", post(enable))
        .route("/api/accounts/{username}/password-reset", post(reset))
        .route("/api/accounts/{username}/unlock", post(unlock))
        .route("/api/audit", get(audit))
        .route("/api/audit.csv", get(audit_csv))
}

async fn list(
    State(console): State<Console>,
    Extension(user): Extension<UserInfo>,
) -> Result<Json<Vec<Account>>, HttpError> {
    Ok(Json(console.list_accounts(&user).await?))
}

async fn one(
    State(console): State<Console>,
    Extension(user): Extension<UserInfo>,
    Path(username): Path<String>,
) -> Result<Json<Account>, HttpError> {
    Ok(Json(console.account(&user, &username).await?))
}

/// 201 with the generated password, shown this once.
async fn create(
    State(console): State<Console>,
    Extension(user): Extension<UserInfo>,
    Json(body): Json<NewAccount>,
) -> Result<(StatusCode, Json<IssuedPassword>), HttpError> {
    Ok((
        StatusCode::CREATED,
        Json(console.create_account(&user, &body).await?),
    ))
}

async fn disable(
    State(console): State<Console>,
    Extension(user): Extension<UserInfo>,
    Path(username): Path<String>,
) -> Result<Json<Account>, HttpError> {
    Ok(Json(
        console.set_account_disabled(&user, &username, true).await?,
    ))
}

async fn enable(
    State(console): State<Console>,
    Extension(user): Extension<UserInfo>,
    Path(username): Path<String>,
) -> Result<Json<Account>, HttpError> {
    Ok(Json(
        console
            .set_account_disabled(&user, &username, false)
            .await?,
    ))
}

/// The new password, shown this once.
async fn reset(
    State(console): State<Console>,
    Extension(user): Extension<UserInfo>,
    Path(username): Path<String>,
) -> Result<Json<IssuedPassword>, HttpError> {
    Ok(Json(console.reset_password(&user, &username).await?))
}

async fn unlock(
    State(console): State<Console>,
    Extension(user): Extension<UserInfo>,
    Path(username): Path<String>,
) -> Result<Json<Account>, HttpError> {
    Ok(Json(console.unlock_account(&user, &username).await?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct AuditParams {
    #[serde(default)]
    limit: Option<u32>,
    #[serde(default)]
    before: Option<i64>,
    #[serde(default)]
    actor: Option<String>,
    #[serde(default)]
    action: Option<String>,
}

impl AuditParams {
    fn query(self, default_limit: u32) -> AuditQuery {
        AuditQuery {
            limit: self.limit.unwrap_or(default_limit),
            before_id: self.before,
            actor: self.actor.filter(|a| !a.is_empty()),
            action_prefix: self.action.filter(|a| !a.is_empty()),
        }
    }
}

async fn audit(
    State(console): State<Console>,
    Extension(user): Extension<UserInfo>,
    Query(params): Query<AuditParams>,
) -> Result<Json<Vec<AuditEntry>>, HttpError> {
    Ok(Json(console.list_audit(&user, &params.query(200)).await?))
}

/// The audit log as a CSV download (up to 10 000 lines, newest first).
async fn audit_csv(
    State(console): State<Console>,
    Extension(user): Extension<UserInfo>,
    Query(params): Query<AuditParams>,
) -> Result<Response, HttpError> {
    let csv = console
        .audit_csv(&user, &params.query(aics_service::audit::MAX_AUDIT_LINES))
        .await?;
    Ok(crate::routes::csv_download("audit", csv))
}
