//! Conversations, their live events, messages, the chat endpoints and turns.

use aics_service::Console;
use aics_types::{
    ChatMessage, ChatRequest, ChatTurnTraceResult, ConversationDetail, ConversationSummary,
    Customer, CustomerPanel, CustomerRef, HandlingRequest, MessageAccepted, TurnDetail, UserInfo,
};
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Router};
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use crate::error::HttpError;
use crate::extract::{Json, Path, Query};
use crate::routes::{last_event_id, sse};
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/conversations", get(list).post(create))
        .route("/api/conversations/search", get(search))
        .route("/api/conversations/{session_id}", get(detail))
        .route("/api/conversations/{session_id}/events", get(events))
        .route(
            "/api/conversations/{session_id}/messages",
            post(post_message),
        )
        .route("/api/conversations/{session_id}/turns", get(turns))
        .route(
            "/api/conversations/{session_id}/handling",
            post(change_handling),
        )
        .route("/api/conversations/{session_id}/replies", post(reply))
        .route("/api/conversations/{session_id}/notes", post(note))
        .route("/api/conversations/{session_id}/draft", post(draft))
        .route("/api/handling/waiting", get(waiting))
        .route(
            "/api/conversations/{session_id}/customer",
            get(customer_panel).put(set_customer),
        )
        .route("/api/customers", get(customers))
        .route(
            "/api/customers/{customer_id}/memories/{memory_id}",
            axum::routing::delete(forget),
        )
        .route("/api/chat", post(chat))
        .route("/api/chat/stream", post(chat_stream))
        .route("/api/turns/{graph_execution_id}", get(turn))
        .route("/api/turns/{graph_execution_id}/cancel", post(cancel))
}

/// `GET /api/conversations?limit=N`: the N most recently active (200 when
/// not given, at most 1,000).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListQuery {
    #[serde(default = "default_list_limit")]
    limit: u32,
}

fn default_list_limit() -> u32 {
    200
}

async fn list(
    State(console): State<Console>,
    Query(query): Query<ListQuery>,
) -> Result<Json<Vec<ConversationSummary>>, HttpError> {
    Ok(Json(console.list_conversations(query.limit).await?))
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct NewConversation {
    /// A customer id or email.
    #[serde(default)]
    customer: Option<String>,
}

/// A new conversation, with a customer when the optional body names one.
async fn create(
    State(console): State<Console>,
    Extension(user): Extension<UserInfo>,
    body: axum::body::Bytes,
) -> Result<(StatusCode, Json<ConversationSummary>), HttpError> {
    let request: NewConversation = if body.iter().all(u8::is_ascii_whitespace) {
        NewConversation::default()
    } else {
        serde_json::from_slice(&body).map_err(|e| {
            aics_service::ServiceError::Invalid(format!("the body is not a new conversation: {e}"))
        })?
    };
    Ok((
        StatusCode::CREATED,
        Json(
            console
                .create_conversation_for(&user, request.customer.as_deref())
                .await?,
        ),
    ))
}

async fn detail(
    State(console): State<Console>,
    Path(session_id): Path<String>,
) -> Result<Json<ConversationDetail>, HttpError> {
    Ok(Json(console.conversation(&session_id).await?))
}

/// The conversation's live events (of every instance) as they happen; a
/// client that reconnects with `Last-Event-ID` first gets what it missed.
async fn events(
    State(console): State<Console>,
    State(shutdown): State<watch::Receiver<bool>>,
    Path(session_id): Path<String>,
    headers: axum::http::HeaderMap,
) -> Result<impl IntoResponse, HttpError> {
    let last = last_event_id(&headers);
    let events = console.conversation_events(&session_id, last.as_deref())?;
    Ok(sse(events, shutdown))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewMessage {
    message: String,
    /// The customer (id or email) the conversation is with.
    #[serde(default)]
    customer: Option<String>,
}

/// Stores the message and starts the turn; 202 with the run's id (none,
/// and `heldBy`, while a person holds the conversation).
async fn post_message(
    State(console): State<Console>,
    Extension(user): Extension<UserInfo>,
    Path(session_id): Path<String>,
    Json(body): Json<NewMessage>,
) -> Result<(StatusCode, Json<MessageAccepted>), HttpError> {
    let accepted = console
        .send_message_from(&user, &session_id, &body.message, body.customer.as_deref())
        .await?;
    Ok((StatusCode::ACCEPTED, Json(accepted)))
}

/// Take over, hand back, resolve or reopen (409 when not allowed now).
async fn change_handling(
    State(console): State<Console>,
    Extension(user): Extension<UserInfo>,
    Path(session_id): Path<String>,
    Json(body): Json<HandlingRequest>,
) -> Result<Json<ConversationSummary>, HttpError> {
    Ok(Json(
        console
            .change_handling(&user, &session_id, body.action)
            .await?,
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StaffText {
    text: String,
}

/// The holder's reply to the customer (409 unless they hold it).
async fn reply(
    State(console): State<Console>,
    Extension(user): Extension<UserInfo>,
    Path(session_id): Path<String>,
    Json(body): Json<StaffText>,
) -> Result<(StatusCode, Json<ChatMessage>), HttpError> {
    let message = console
        .reply_as_agent(&user, &session_id, &body.text)
        .await?;
    Ok((StatusCode::CREATED, Json(message)))
}

/// An internal note (never shown to the customer).
async fn note(
    State(console): State<Console>,
    Extension(user): Extension<UserInfo>,
    Path(session_id): Path<String>,
    Json(body): Json<StaffText>,
) -> Result<(StatusCode, Json<ChatMessage>), HttpError> {
    let message = console.add_note(&user, &session_id, &body.text).await?;
    Ok((StatusCode::CREATED, Json(message)))
}

#[derive(Serialize)]
struct Waiting {
    count: u64,
}

/// How many conversations wait for a person.
async fn waiting(State(console): State<Console>) -> Result<Json<Waiting>, HttpError> {
    Ok(Json(Waiting {
        count: console.waiting_for_human().await?,
    }))
}

/// `POST /api/chat`: the trace once the turn ends or pauses (the same
/// trace as the turn's `final` event holds). Its JSON is the text the
/// database stored when it has it, else written here, by sonic-rs: the
/// same JSON as serde_json's, its strings escaped faster.
async fn chat(
    State(console): State<Console>,
    Extension(user): Extension<UserInfo>,
    Json(body): Json<ChatRequest>,
) -> Result<Response, HttpError> {
    let outcome = console.chat(&user, &body.session_id, &body.message).await?;
    let body = match outcome.json {
        Some(json) => json.into_bytes(),
        None => sonic_rs::to_vec(&*outcome.trace).map_err(|e| {
            HttpError::from(aics_service::ServiceError::Internal(format!(
                "unserialisable trace: {e}"
            )))
        })?,
    };
    Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response())
}

/// This turn's events, ending with `final` (or `error`).
async fn chat_stream(
    State(console): State<Console>,
    State(shutdown): State<watch::Receiver<bool>>,
    Extension(user): Extension<UserInfo>,
    Json(body): Json<ChatRequest>,
) -> Result<impl IntoResponse, HttpError> {
    let events = console
        .chat_stream(&user, &body.session_id, &body.message)
        .await?;
    Ok(sse(
        events.map(|event| aics_service::LiveEvent { id: None, event }),
        shutdown,
    ))
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct CancelRequest {
    #[serde(default)]
    reason: Option<String>,
}

/// Supervisors: stops a running or paused turn; the conversation accepts
/// messages again.
async fn cancel(
    State(console): State<Console>,
    Extension(user): Extension<UserInfo>,
    Path(graph_execution_id): Path<String>,
    body: axum::body::Bytes,
) -> Result<Json<ChatTurnTraceResult>, HttpError> {
    // The body is optional: none, or `{"reason": "…"}`.
    let request: CancelRequest = if body.iter().all(u8::is_ascii_whitespace) {
        CancelRequest::default()
    } else {
        serde_json::from_slice(&body).map_err(|e| {
            aics_service::ServiceError::Invalid(format!("the body is not a cancel request: {e}"))
        })?
    };
    let reason = request.reason;
    Ok(Json(
        console
            .cancel_turn(&user, &graph_execution_id, reason.as_deref())
            .await?,
    ))
}

async fn turns(
    State(console): State<Console>,
    Path(session_id): Path<String>,
) -> Result<Json<Vec<ChatTurnTraceResult>>, HttpError> {
    Ok(Json(console.list_turns(&session_id).await?))
}

async fn turn(
    State(console): State<Console>,
    Path(graph_execution_id): Path<String>,
) -> Result<Json<TurnDetail>, HttpError> {
    Ok(Json(console.turn_detail(&graph_execution_id).await?))
}

/// The conversation's customer panel (or the proposed customer).
async fn customer_panel(
    State(console): State<Console>,
    Path(session_id): Path<String>,
) -> Result<Json<CustomerPanel>, HttpError> {
    Ok(Json(console.customer_panel(&session_id).await?))
}

/// Sets or changes who the conversation is with (id or email).
async fn set_customer(
    State(console): State<Console>,
    Extension(user): Extension<UserInfo>,
    Path(session_id): Path<String>,
    Json(body): Json<CustomerRef>,
) -> Result<Json<CustomerPanel>, HttpError> {
    Ok(Json(
        console
            .set_customer(&user, &session_id, &body.customer)
            .await?,
    ))
}

async fn customers(State(console): State<Console>) -> Result<Json<Vec<Customer>>, HttpError> {
    Ok(Json(console.list_customers().await?))
}

/// Forgets one remembered fact (audited).
async fn forget(
    State(console): State<Console>,
    Extension(user): Extension<UserInfo>,
    Path((customer_id, memory_id)): Path<(String, i64)>,
) -> Result<StatusCode, HttpError> {
    console
        .forget_memory(&user, &customer_id, memory_id)
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The inbox: `?q=&handling=&assignee=&customer=&offset=`.
async fn search(
    State(console): State<Console>,
    axum::extract::Query(query): axum::extract::Query<aics_types::InboxQuery>,
) -> Result<Json<Vec<ConversationSummary>>, HttpError> {
    Ok(Json(console.search_conversations(&query).await?))
}

#[derive(Serialize)]
struct Draft {
    text: String,
}

/// A draft reply from the model for the holder to edit (nothing stored).
async fn draft(
    State(console): State<Console>,
    Extension(user): Extension<UserInfo>,
    Path(session_id): Path<String>,
) -> Result<Json<Draft>, HttpError> {
    Ok(Json(Draft {
        text: console.draft_reply(&user, &session_id).await?,
    }))
}
