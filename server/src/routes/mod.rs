//! The JSON and SSE API of docs/API.md, one module per area, each with its
//! `router()`; [`api_router`] merges them behind the auth layer.

pub mod accounts;
pub mod approvals;
pub mod auth;
pub mod chat;
pub mod conversations;
pub mod forks;
pub mod ops;
pub mod overview;
pub mod providers;
pub mod replays;

use std::convert::Infallible;

use aics_service::{LiveEvent, OpenStreamGuard};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::Router;
use futures::{Stream, StreamExt};
use tokio::sync::watch;

use crate::middleware::{json_errors, require_user, stream_cap};
use crate::state::AppState;

/// Everything under `/api/`: login is open, the rest needs a user.
pub fn api_router(state: &AppState) -> Router<AppState> {
    let protected = Router::new()
        .merge(auth::protected_router())
        .merge(conversations::router())
        .merge(approvals::router())
        .merge(ops::api_router())
        .merge(accounts::router())
        .merge(overview::router())
        .merge(forks::router())
        .merge(providers::router())
        .merge(replays::router())
        .merge(chat::protected_router())
        // Inner: needs the user that `require_user` (outer) found.
        .route_layer(axum::middleware::from_fn_with_state(
            state.console.clone(),
            stream_cap,
        ))
        .route_layer(axum::middleware::from_fn_with_state(
            state.console.clone(),
            require_user,
        ));
    Router::new()
        .merge(auth::open_router())
        .merge(chat::open_router())
        .merge(protected)
        // An unknown API path is a JSON 404, not the app's HTML page (the
        // outer router's fallback would serve that).
        .route(
            "/api/{*rest}",
            axum::routing::any(|| async { axum::http::StatusCode::NOT_FOUND }),
        )
        .layer(axum::middleware::from_fn(json_errors))
}

/// Events as server-sent events named by their tag (with their sequence
/// number as the SSE `id`, which a reconnecting `EventSource` sends back as
/// `Last-Event-ID`), counted as an open stream while alive, ended when the
/// server shuts down.
pub fn sse(
    events: impl Stream<Item = LiveEvent> + Send + 'static,
    mut shutdown: watch::Receiver<bool>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let guard = OpenStreamGuard::new();
    let stopped = async move {
        let _ = shutdown.wait_for(|down| *down).await;
    };
    let stream = events
        .filter_map(move |live| {
            // The guard lives as long as the stream.
            let _alive = &guard;
            let out = serde_json::to_string(&live.event).ok().map(|data| {
                let event = Event::default().event(live.event.kind()).data(data);
                Ok(match live.id {
                    Some(id) => event.id(id.to_string()),
                    None => event,
                })
            });
            futures::future::ready(out)
        })
        .take_until(Box::pin(stopped));
    Sse::new(stream).keep_alive(KeepAlive::default())
}

/// The `Last-Event-ID` a reconnecting client sent, if any.
pub fn last_event_id(headers: &axum::http::HeaderMap) -> Option<String> {
    headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// A CSV export as a download named `aics-{stem}-{UTC time}.csv`.
pub fn csv_download(stem: &str, csv: String) -> axum::response::Response {
    use axum::http::header::{CONTENT_DISPOSITION, CONTENT_TYPE};
    use axum::response::IntoResponse;
    let name = format!(
        "attachment; filename=\"aics-{stem}-{}.csv\"",
        chrono::Utc::now().format("%Y%m%d-%H%M%S")
    );
    (
        [
            (CONTENT_TYPE, "text/csv; charset=utf-8".to_owned()),
            (CONTENT_DISPOSITION, name),
        ],
        csv,
    )
        .into_response()
}
