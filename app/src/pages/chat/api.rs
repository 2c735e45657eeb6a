//! The customer pages' server functions: no staff sign-in — the link token
//! is the key, and each makes one call on `Console`.

use aics_types::{ChatLink, CustomerChat, MessageAccepted, WithHtml};
use leptos::prelude::*;

use crate::error::AppError;
use crate::remote::{JsonArgs, UrlArgs};

/// What the customer's page shows of its conversation (404 for a wrong
/// token), and its replies' HTML (rendered here: the browser has no
/// Markdown parser).
#[server(prefix = "/fn", protocol = UrlArgs)]
pub async fn load_customer_chat(token: String) -> Result<WithHtml<CustomerChat>, AppError> {
    let console = expect_context::<aics_service::Console>();
    let chat = console.customer_chat(&token).await?;
    let html = crate::components::markdown::replies_html(
        chat.messages
            .iter()
            .map(|m| (m.id, m.role, m.content.as_str())),
    );
    Ok(WithHtml { data: chat, html })
}

/// A customer's message; the reply streams on the customer's events.
#[server(prefix = "/fn", protocol = JsonArgs)]
pub async fn customer_send(token: String, message: String) -> Result<MessageAccepted, AppError> {
    let console = expect_context::<aics_service::Console>();
    Ok(console.customer_send(&token, &message).await?)
}

/// The start page: finds or creates the customer, opens a conversation and
/// sends the browser to its link (a 302 for a plain form post).
#[server(prefix = "/fn", protocol = UrlArgs)]
pub async fn start_chat(name: String, email: String, lang: String) -> Result<ChatLink, AppError> {
    let console = expect_context::<aics_service::Console>();
    let client = leptos_axum::extract::<axum::Extension<aics_service::ClientAddr>>()
        .await
        .map(|axum::Extension(client)| client)
        .unwrap_or_default();
    let start = aics_types::ChatStart {
        name,
        email,
        lang: Some(lang),
    };
    let link = console.start_customer_chat(&start, &client).await?;
    leptos_axum::redirect(&link.path);
    Ok(link)
}
