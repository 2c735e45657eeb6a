//! The console's server functions. Inline approvals use
//! [`crate::pages::approvals::api::decide_approval`].

use aics_types::{
    ChatLink, ChatMessage, ChatTurnTraceResult, ConversationDetail, ConversationSummary, Customer,
    CustomerPanel, HandlingAction, MessageAccepted, WithHtml,
};
use leptos::prelude::*;

use crate::error::AppError;
use crate::remote::{JsonArgs, UrlArgs};
#[cfg(feature = "ssr")]
use crate::session::api::signed_in;

/// The `limit` most recently active conversations, newest first.
#[server(prefix = "/fn", protocol = UrlArgs)]
pub async fn list_conversations(limit: u32) -> Result<Vec<ConversationSummary>, AppError> {
    let (console, _user) = signed_in().await?;
    Ok(console.list_conversations(limit).await?)
}

/// Starts a new, empty conversation and sends the browser to it. Posted by
/// the "New" form: as a plain form (before the page's script runs) this
/// answers a 302 to `/c/{id}`; from the hydrated page, a client-side
/// redirect to the same place.
#[server(prefix = "/fn", protocol = UrlArgs)]
pub async fn create_conversation() -> Result<ConversationSummary, AppError> {
    let (console, _user) = signed_in().await?;
    let summary = console.create_conversation().await?;
    leptos_axum::redirect(&format!("/c/{}", summary.session_id));
    Ok(summary)
}

/// The conversation `/` opens: the most recently active one, or a new one
/// when there is none yet (so a user who just signed in can type at once).
#[server(prefix = "/fn", protocol = UrlArgs)]
pub async fn open_conversation() -> Result<String, AppError> {
    let (console, _user) = signed_in().await?;
    match console.list_conversations(1).await?.into_iter().next() {
        Some(latest) => Ok(latest.session_id),
        None => Ok(console.create_conversation().await?.session_id),
    }
}

/// One conversation with its messages and turn traces, and its replies'
/// HTML (rendered here: the browser has no Markdown parser).
#[server(prefix = "/fn", protocol = UrlArgs)]
pub async fn get_conversation(
    session_id: String,
) -> Result<WithHtml<ConversationDetail>, AppError> {
    let (console, _user) = signed_in().await?;
    let mut detail = console.conversation(&session_id).await?;
    // The browser does not read a trace's LLM call records (see
    // `ChatTurnTraceResult::llm_call_records`): they are not sent, and the
    // page's hydration data is that much smaller.
    for turn in &mut detail.turns {
        turn.llm_call_records = Vec::new();
    }
    let html = crate::components::markdown::replies_html(
        detail
            .messages
            .iter()
            .map(|m| (m.id, m.role, m.content.as_str())),
    );
    Ok(WithHtml { data: detail, html })
}

/// Stores the customer's message and starts the turn; its events arrive on
/// the conversation's event stream. Answers the graph execution id (none
/// while a person holds the conversation: the message is kept for them).
#[server(prefix = "/fn", protocol = JsonArgs)]
pub async fn send_message(
    session_id: String,
    message: String,
) -> Result<MessageAccepted, AppError> {
    let (console, user) = signed_in().await?;
    Ok(console.send_message(&user, &session_id, &message).await?)
}

/// Supervisors: stops the turn that holds a conversation (running or
/// waiting for approval); the conversation then takes messages again.
#[server(prefix = "/fn", protocol = JsonArgs)]
pub async fn cancel_turn(
    graph_execution_id: String,
    reason: Option<String>,
) -> Result<ChatTurnTraceResult, AppError> {
    let (console, user) = signed_in().await?;
    Ok(console
        .cancel_turn(&user, &graph_execution_id, reason.as_deref())
        .await?)
}

/// Takes over, hands back, resolves or reopens a conversation (409 when its
/// state does not allow it, e.g. someone took it first).
#[server(prefix = "/fn", protocol = JsonArgs)]
pub async fn change_handling(
    session_id: String,
    action: HandlingAction,
) -> Result<ConversationSummary, AppError> {
    let (console, user) = signed_in().await?;
    Ok(console.change_handling(&user, &session_id, action).await?)
}

/// A reply to the customer from the staff member holding the conversation.
#[server(prefix = "/fn", protocol = JsonArgs)]
pub async fn reply_as_agent(session_id: String, text: String) -> Result<ChatMessage, AppError> {
    let (console, user) = signed_in().await?;
    Ok(console.reply_as_agent(&user, &session_id, &text).await?)
}

/// An internal note: never shown to the customer.
#[server(prefix = "/fn", protocol = JsonArgs)]
pub async fn add_note(session_id: String, text: String) -> Result<ChatMessage, AppError> {
    let (console, user) = signed_in().await?;
    Ok(console.add_note(&user, &session_id, &text).await?)
}

/// How many conversations wait for a person (the header's count).
#[server(prefix = "/fn", protocol = UrlArgs)]
pub async fn waiting_for_human() -> Result<u64, AppError> {
    let (console, _user) = signed_in().await?;
    Ok(console.waiting_for_human().await?)
}

/// A new customer link for the conversation (the earlier one stops
/// working); the token is shown once.
#[server(prefix = "/fn", protocol = JsonArgs)]
pub async fn new_chat_link(session_id: String) -> Result<ChatLink, AppError> {
    let (console, user) = signed_in().await?;
    Ok(console.chat_link(&user, &session_id).await?)
}

/// The conversation's customer panel (or the customer an order id in it
/// proposes).
#[server(prefix = "/fn", protocol = UrlArgs)]
pub async fn load_customer_panel(session_id: String) -> Result<CustomerPanel, AppError> {
    let (console, _user) = signed_in().await?;
    Ok(console.customer_panel(&session_id).await?)
}

/// Sets or changes the conversation's customer (id or email).
#[server(prefix = "/fn", protocol = JsonArgs)]
pub async fn set_customer(session_id: String, customer: String) -> Result<CustomerPanel, AppError> {
    let (console, user) = signed_in().await?;
    Ok(console.set_customer(&user, &session_id, &customer).await?)
}

/// Every customer, for the panel's picker.
#[server(prefix = "/fn", protocol = UrlArgs)]
pub async fn list_customers() -> Result<Vec<Customer>, AppError> {
    let (console, _user) = signed_in().await?;
    Ok(console.list_customers().await?)
}

/// Forgets one remembered fact of a customer (audited).
#[server(prefix = "/fn", protocol = JsonArgs)]
pub async fn forget_memory(customer_id: String, memory_id: i64) -> Result<(), AppError> {
    let (console, user) = signed_in().await?;
    Ok(console
        .forget_memory(&user, &customer_id, memory_id)
        .await?)
}

/// The inbox: search across conversations and filter by handling.
#[server(prefix = "/fn", protocol = JsonArgs)]
pub async fn search_conversations(
    query: aics_types::InboxQuery,
) -> Result<Vec<ConversationSummary>, AppError> {
    let (console, _user) = signed_in().await?;
    Ok(console.search_conversations(&query).await?)
}

/// A draft reply from the model for the staff member holding the
/// conversation, to edit and send.
#[server(prefix = "/fn", protocol = JsonArgs)]
pub async fn draft_reply(session_id: String) -> Result<String, AppError> {
    let (console, user) = signed_in().await?;
    Ok(console.draft_reply(&user, &session_id).await?)
}
