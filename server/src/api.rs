//! The JSON and SSE API.

use std::convert::Infallible;
use std::time::Duration;

use aics_types::{AgentEvent, ApiError};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures::Stream;
use serde::Deserialize;
use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::StreamExt;

use crate::hub::Hub;
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/conversations/{session_id}/events", get(events))
        .route(
            "/api/conversations/{session_id}/messages",
            post(post_message),
        )
}

fn bad_request(message: String) -> Response {
    (
        StatusCode::BAD_REQUEST,
        Json(ApiError {
            error: "invalid_request".into(),
            message,
        }),
    )
        .into_response()
}

/// The conversation's live events, as server-sent events named by their tag.
async fn events(
    State(hub): State<Hub>,
    Path(session_id): Path<String>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, Response> {
    aics_types::validate_session_id(&session_id).map_err(bad_request)?;
    let stream = BroadcastStream::new(hub.subscribe(&session_id)).filter_map(|item| {
        let event = item.ok()?;
        let data = serde_json::to_string(&event).ok()?;
        Some(Ok(Event::default().event(event.kind()).data(data)))
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

#[derive(Deserialize)]
struct NewMessage {
    message: String,
}

/// Starts a turn on the customer's message; its events go to the stream.
async fn post_message(
    State(hub): State<Hub>,
    Path(session_id): Path<String>,
    Json(body): Json<NewMessage>,
) -> Response {
    if let Err(message) = aics_types::validate_session_id(&session_id)
        .and_then(|()| aics_types::validate_message(&body.message))
    {
        return bad_request(message);
    }
    tokio::spawn(skeleton_turn(hub, session_id, body.message));
    StatusCode::ACCEPTED.into_response()
}

/// Streams a short acknowledgement word by word (the walking skeleton's turn).
async fn skeleton_turn(hub: Hub, session_id: String, message: String) {
    let reply = format!(
        "Thanks — I am looking into \"{}\" for you now.",
        message.trim()
    );
    for word in reply.split_inclusive(' ') {
        hub.publish(
            &session_id,
            AgentEvent::LlmToken {
                token: word.to_owned(),
                reasoning_token: None,
            },
        );
        tokio::time::sleep(Duration::from_millis(60)).await;
    }
    let started_at = chrono::Utc::now();
    let trace = aics_types::ChatTurnTraceResult {
        graph_execution_id: uuid::Uuid::new_v4().to_string(),
        session_id: session_id.clone(),
        reply,
        intent: aics_types::Intent::Consult,
        tool_calls: Vec::new(),
        executed_nodes: vec!["agent".into()],
        duration_ms: 0,
        llm_calls: 1,
        steps_taken: 0,
        stop_reason: Some(aics_types::StopReason::FinalAnswer),
        pending_approval: false,
        approval_token: None,
        pending_tool_calls: Vec::new(),
        usage: Default::default(),
        tools_used: Vec::new(),
        tool_result: None,
        engine: "graph".into(),
        model: "demo".into(),
        cost_usd: None,
        error: None,
        started_at,
    };
    hub.publish(
        &session_id,
        AgentEvent::Final {
            trace: Box::new(trace),
        },
    );
}
