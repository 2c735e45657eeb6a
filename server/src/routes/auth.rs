//! Sign-in, sign-out (here or everywhere), changing one's own password,
//! and who am I.

use aics_types::UserInfo;
use axum::extract::State;
use axum::http::header::SET_COOKIE;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Router};
use serde::Deserialize;

use aics_service::{ClientAddr, Console};
use aics_types::PasswordChange;

use crate::error::HttpError;
use crate::extract::Json;
use crate::state::AppState;

/// `POST /api/auth/login`: open to everyone.
pub fn open_router() -> Router<AppState> {
    Router::new().route("/api/auth/login", post(login))
}

/// Logout, logout everywhere, password and me: signed-in users.
pub fn protected_router() -> Router<AppState> {
    Router::new()
        .route("/api/auth/logout", post(logout))
        .route("/api/auth/logout-all", post(logout_all))
        .route("/api/auth/password", post(change_password))
        .route("/api/auth/me", get(me))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Credentials {
    username: String,
    password: String,
}

/// 200 with the user and the cookie; 401 for a wrong name or password;
/// 429 with `Retry-After` while the name or the address is throttled.
async fn login(
    State(console): State<Console>,
    Extension(client): Extension<ClientAddr>,
    Json(body): Json<Credentials>,
) -> Result<Response, HttpError> {
    let signed_in = console
        .sign_in(&body.username, &body.password, client)
        .await?;
    Ok(([(SET_COOKIE, signed_in.set_cookie)], Json(signed_in.user)).into_response())
}

/// Ends every session of the user (this one too) and their live streams.
async fn logout_all(
    State(console): State<Console>,
    Extension(user): Extension<UserInfo>,
) -> Result<Response, HttpError> {
    let cookie = console.sign_out_everywhere(&user).await?;
    Ok((StatusCode::NO_CONTENT, [(SET_COOKIE, cookie)]).into_response())
}

/// 204; the user's other sessions end, this one stays.
async fn change_password(
    State(console): State<Console>,
    Extension(user): Extension<UserInfo>,
    headers: HeaderMap,
    Json(body): Json<PasswordChange>,
) -> Result<StatusCode, HttpError> {
    console.change_own_password(&user, &headers, &body).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn logout(State(console): State<Console>, headers: HeaderMap) -> Result<Response, HttpError> {
    let cookie = console.logout(&headers).await?;
    Ok((StatusCode::NO_CONTENT, [(SET_COOKIE, cookie)]).into_response())
}

async fn me(Extension(user): Extension<UserInfo>) -> Json<UserInfo> {
    Json(user)
}
