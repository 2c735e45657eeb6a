//! The customer channel over HTTP: open routes reached with a
//! conversation's link token (no staff sign-in), each one call on
//! `Console`, plus the staff route that mints a link.
//!
//! - `POST /api/channel/start` — a customer opens a conversation with name
//!   and email; answers its link.
//! - `GET /api/channel/{token}` — the customer's view of the conversation.
//! - `POST /api/channel/{token}/messages` — a customer's message (the same
//!   input rules and body limit as the staff API; rate-limited).
//! - `GET /api/channel/{token}/events` — the live events a customer may
//!   see (tokens, replies, handling), never tool calls, traces or notes;
//!   open streams capped per conversation and per client address.
//! - `POST /api/conversations/{id}/chat-link` (staff) — a new link.
//! - `GET /widget.js` — the embed script (an iframe of `/chat`).

use std::convert::Infallible;

use aics_service::{ClientAddr, Console, OpenStreamGuard};
use aics_types::{ChatLink, ChatStart, CustomerChat, MessageAccepted, UserInfo};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Extension, Router};
use futures::StreamExt;
use serde::Deserialize;
use tokio::sync::watch;

use crate::error::HttpError;
use crate::extract::{Json, Path};
use crate::routes::last_event_id;
use crate::state::AppState;

/// The customer's routes: open, the token is the key.
pub fn open_router() -> Router<AppState> {
    Router::new()
        .route("/api/channel/start", post(start))
        .route("/api/channel/{token}", get(view))
        .route("/api/channel/{token}/messages", post(send))
        .route("/api/channel/{token}/events", get(events))
        .route(crate::headers::WIDGET_PATH, get(widget))
}

/// The embed script (`/widget.js`): one script tag on a shop page adds the
/// chat button and its iframe.
async fn widget() -> impl IntoResponse {
    (
        [
            (
                axum::http::header::CONTENT_TYPE,
                "text/javascript; charset=utf-8",
            ),
            (axum::http::header::CACHE_CONTROL, "public, max-age=300"),
        ],
        include_str!("../../assets/widget.js"),
    )
}

/// Staff: minting a customer link.
pub fn protected_router() -> Router<AppState> {
    Router::new().route("/api/conversations/{session_id}/chat-link", post(link))
}

async fn start(
    State(console): State<Console>,
    Extension(client): Extension<ClientAddr>,
    Json(body): Json<ChatStart>,
) -> Result<(StatusCode, Json<ChatLink>), HttpError> {
    Ok((
        StatusCode::CREATED,
        Json(console.start_customer_chat(&body, &client).await?),
    ))
}

async fn view(
    State(console): State<Console>,
    Path(token): Path<String>,
) -> Result<Json<CustomerChat>, HttpError> {
    Ok(Json(console.customer_chat(&token).await?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CustomerText {
    message: String,
}

async fn send(
    State(console): State<Console>,
    Path(token): Path<String>,
    Json(body): Json<CustomerText>,
) -> Result<(StatusCode, Json<MessageAccepted>), HttpError> {
    Ok((
        StatusCode::ACCEPTED,
        Json(console.customer_send(&token, &body.message).await?),
    ))
}

async fn events(
    State(console): State<Console>,
    State(mut shutdown): State<watch::Receiver<bool>>,
    Extension(client): Extension<ClientAddr>,
    Path(token): Path<String>,
    headers: axum::http::HeaderMap,
) -> Result<impl IntoResponse, HttpError> {
    let last = last_event_id(&headers);
    let events = console
        .customer_events(&token, last.as_deref(), &client)
        .await?;
    let guard = OpenStreamGuard::new();
    let stopped = async move {
        let _ = shutdown.wait_for(|down| *down).await;
    };
    let stream = events
        .filter_map(move |(id, event)| {
            let _alive = &guard;
            let out = serde_json::to_string(&event).ok().map(|data| {
                let sse = Event::default().event(event.kind()).data(data);
                Ok::<_, Infallible>(match id {
                    Some(id) => sse.id(id.to_string()),
                    None => sse,
                })
            });
            futures::future::ready(out)
        })
        .take_until(Box::pin(stopped));
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

async fn link(
    State(console): State<Console>,
    Extension(user): Extension<UserInfo>,
    Path(session_id): Path<String>,
) -> Result<(StatusCode, Json<ChatLink>), HttpError> {
    Ok((
        StatusCode::CREATED,
        Json(console.chat_link(&user, &session_id).await?),
    ))
}
