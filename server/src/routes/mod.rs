//! The JSON and SSE API of docs/API.md, one module per area, each with its
//! `router()`; [`api_router`] merges them behind the auth layer.

pub mod approvals;
pub mod auth;
pub mod conversations;
pub mod ops;

use std::convert::Infallible;

use aics_service::OpenStreamGuard;
use aics_types::AgentEvent;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::Router;
use futures::{Stream, StreamExt};
use tokio::sync::watch;

use crate::middleware::{json_errors, require_user};
use crate::state::AppState;

/// Everything under `/api/`: login is open, the rest needs a user.
pub fn api_router(state: &AppState) -> Router<AppState> {
    let protected = Router::new()
        .merge(auth::protected_router())
        .merge(conversations::router())
        .merge(approvals::router())
        .merge(ops::api_router())
        .route_layer(axum::middleware::from_fn_with_state(
            state.console.clone(),
            require_user,
        ));
    Router::new()
        .merge(auth::open_router())
        .merge(protected)
        // An unknown API path is a JSON 404, not the app's HTML page (the
        // outer router's fallback would serve that).
        .route(
            "/api/{*rest}",
            axum::routing::any(|| async { axum::http::StatusCode::NOT_FOUND }),
        )
        .layer(axum::middleware::from_fn(json_errors))
}

/// Events as server-sent events named by their tag, counted as an open
/// stream while alive, ended when the server shuts down.
pub fn sse(
    events: impl Stream<Item = AgentEvent> + Send + 'static,
    mut shutdown: watch::Receiver<bool>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let guard = OpenStreamGuard::new();
    let stopped = async move {
        let _ = shutdown.wait_for(|down| *down).await;
    };
    let stream = events
        .filter_map(move |event| {
            // The guard lives as long as the stream.
            let _alive = &guard;
            let out = serde_json::to_string(&event)
                .ok()
                .map(|data| Ok(Event::default().event(event.kind()).data(data)));
            futures::future::ready(out)
        })
        .take_until(Box::pin(stopped));
    Sse::new(stream).keep_alive(KeepAlive::default())
}

/// A broadcast receiver as a stream; a lagging subscriber skips what it
/// missed (everything is stored; a reload shows it).
pub fn broadcast_events(
    rx: tokio::sync::broadcast::Receiver<AgentEvent>,
) -> impl Stream<Item = AgentEvent> + Send + 'static {
    tokio_stream::wrappers::BroadcastStream::new(rx).filter_map(|item| {
        futures::future::ready(match item {
            Ok(event) => Some(event),
            Err(e) => {
                tracing::warn!(error = %e, "an event stream fell behind");
                None
            }
        })
    })
}
