//! Sign-in, sign-out and who am I.

use aics_types::UserInfo;
use axum::extract::State;
use axum::http::header::SET_COOKIE;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Router};
use serde::Deserialize;

use aics_service::Console;

use crate::error::HttpError;
use crate::extract::Json;
use crate::state::AppState;

/// `POST /api/auth/login`: open to everyone.
pub fn open_router() -> Router<AppState> {
    Router::new().route("/api/auth/login", post(login))
}

/// Logout and me: signed-in users.
pub fn protected_router() -> Router<AppState> {
    Router::new()
        .route("/api/auth/logout", post(logout))
        .route("/api/auth/me", get(me))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Credentials {
    username: String,
    password: String,
}

async fn login(
    State(console): State<Console>,
    Json(body): Json<Credentials>,
) -> Result<Response, HttpError> {
    let (user, cookie) = console.login(&body.username, &body.password).await?;
    Ok(([(SET_COOKIE, cookie)], Json(user)).into_response())
}

async fn logout(State(console): State<Console>, headers: HeaderMap) -> Result<Response, HttpError> {
    let cookie = console.logout(&headers).await?;
    Ok((StatusCode::NO_CONTENT, [(SET_COOKIE, cookie)]).into_response())
}

async fn me(Extension(user): Extension<UserInfo>) -> Json<UserInfo> {
    Json(user)
}
