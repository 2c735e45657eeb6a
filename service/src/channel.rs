//! The customer channel: a customer reaches one conversation through its
//! link token (unguessable, stored as its hash), reads what they may see of
//! it, writes messages that start turns through [`Console::send_message`]
//! like every other message, and follows its live events filtered to what
//! a customer sees ([`CustomerEvent::of`]: tokens, replies, handling — never
//! tool calls, traces, approvals or notes). Messages and starts are
//! rate-limited per link and per client address.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use aics_agent::Channel;
use aics_types::{
    ChatLink, ChatStart, CustomerChat, CustomerEvent, CustomerMessage, HandlingState,
    MessageAccepted, Role, RunState, UserInfo,
};
use futures::stream::{BoxStream, StreamExt};

use crate::auth::ClientAddr;
use crate::error::ServiceError;
use crate::hub::EventId;
use crate::{check_session_id, Console};

/// Messages one customer link may send per window.
const MESSAGES_PER_WINDOW: usize = 20;
/// Conversations one client address may start per window.
const STARTS_PER_WINDOW: usize = 10;
const WINDOW: Duration = Duration::from_secs(300);

/// Sliding-window counts per key (a link's hash, a client address) on this
/// instance: a flood is slowed here; correctness never depends on it.
#[derive(Default)]
pub(crate) struct ChatLimits {
    seen: Mutex<HashMap<String, VecDeque<Instant>>>,
}

impl ChatLimits {
    fn check(&self, key: &str, limit: usize) -> Result<(), ServiceError> {
        let now = Instant::now();
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        if seen.len() > 10_000 {
            seen.retain(|_, times| times.back().is_some_and(|t| now - *t < WINDOW));
        }
        let times = seen.entry(key.to_owned()).or_default();
        while times.front().is_some_and(|t| now - *t >= WINDOW) {
            times.pop_front();
        }
        if times.len() >= limit {
            let retry_after = times
                .front()
                .map_or(WINDOW, |t| WINDOW.saturating_sub(now - *t))
                .max(Duration::from_secs(1));
            return Err(ServiceError::TooManyRequests {
                message: "Too many messages. Please wait a moment before writing again.".into(),
                retry_after,
            });
        }
        times.push_back(now);
        Ok(())
    }
}

/// A customer's live event with its sequence number.
pub type CustomerStream = BoxStream<'static, (Option<EventId>, CustomerEvent)>;

/// The user a customer's messages are sent as (for the logs: it carries no
/// staff right, and `send_message` checks none).
fn customer_user(session_id: &str) -> UserInfo {
    UserInfo {
        username: format!("customer:{session_id}"),
        role: Role::Agent,
    }
}

/// 404 for every token that opens nothing, whatever its shape.
fn no_such_link() -> ServiceError {
    ServiceError::NotFound("this chat link does not exist".into())
}

impl Console {
    /// The conversation a link token opens; 404 otherwise.
    async fn chat_session(&self, token: &str) -> Result<String, ServiceError> {
        if token.len() != 64 || !token.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(no_such_link());
        }
        self.inner
            .db
            .conversation_by_chat_token(token)
            .await?
            .ok_or_else(no_such_link)
    }

    /// Staff: a new customer link for a conversation (an earlier one stops
    /// working). The token is shown once; only its hash is stored.
    #[tracing::instrument(skip_all, fields(session_id, user = %user.username))]
    pub async fn chat_link(
        &self,
        user: &UserInfo,
        session_id: &str,
    ) -> Result<ChatLink, ServiceError> {
        check_session_id(session_id)?;
        let link = self.mint_link(session_id).await?;
        self.audit(
            &user.username,
            "conversation.chat_link",
            session_id,
            "a new customer link (the earlier one stops working)",
        )
        .await;
        Ok(link)
    }

    async fn mint_link(&self, session_id: &str) -> Result<ChatLink, ServiceError> {
        let token = aics_db::tokens::new_token();
        self.inner.db.set_chat_token(session_id, &token).await?;
        Ok(ChatLink {
            session_id: session_id.to_owned(),
            path: format!("/chat/{token}"),
            token,
        })
    }

    /// A visitor opens a conversation from the start page with a name and
    /// an email. Nothing proves the email is theirs, so the conversation
    /// gets them as its unverified contact and no customer: it shows the
    /// name they typed, reads no customer's orders or memory, and is linked
    /// to a customer only by staff. Its link is returned.
    #[tracing::instrument(skip_all)]
    pub async fn start_customer_chat(
        &self,
        start: &ChatStart,
        client: &ClientAddr,
    ) -> Result<ChatLink, ServiceError> {
        let name = start.name.trim();
        let email = start.email.trim();
        if name.is_empty() || name.chars().count() > 80 {
            return Err(ServiceError::Invalid(
                "a name has 1 to 80 characters".into(),
            ));
        }
        aics_types::validate_name("name", name).map_err(ServiceError::Invalid)?;
        let plausible = email.len() <= 254
            && !email.chars().any(|c| c.is_whitespace() || c.is_control())
            && email
                .split_once('@')
                .is_some_and(|(user, host)| !user.is_empty() && host.contains('.'));
        if !plausible {
            return Err(ServiceError::Invalid("that is not an email address".into()));
        }
        let lang = match start.lang.as_deref() {
            None => "en",
            Some(l @ ("en" | "zh")) => l,
            Some(_) => return Err(ServiceError::Invalid("lang is en or zh".into())),
        };
        let key = client
            .0
            .map_or_else(|| "start:unknown".to_owned(), |a| format!("start:{a}"));
        self.inner.chat_limits.check(&key, STARTS_PER_WINDOW)?;
        let contact = aics_types::Contact {
            name: name.to_owned(),
            email: email.to_owned(),
            lang: lang.to_owned(),
        };
        let session_id = crate::conversations::new_session_id();
        self.inner
            .db
            .start_visitor_conversation(&session_id, &contact)
            .await?;
        self.mint_link(&session_id).await
    }

    /// What the customer's page shows of its conversation.
    pub async fn customer_chat(&self, token: &str) -> Result<CustomerChat, ServiceError> {
        let session_id = self.chat_session(token).await?;
        let detail = self.conversation(&session_id).await?;
        let db = &self.inner.db;
        // The visitor sees the name they typed, never a stored customer's
        // (which would confirm whose email it is).
        let (name, lang) = match db.conversation_contact(&session_id).await? {
            Some(contact) => (Some(contact.name), contact.lang),
            None => match &detail.summary.customer_id {
                Some(id) => db
                    .customer(id)
                    .await?
                    .map_or((None, "en".to_owned()), |c| (Some(c.name), c.lang)),
                None => (None, "en".to_owned()),
            },
        };
        Ok(CustomerChat {
            title: detail.summary.title.clone(),
            lang,
            customer_name: name,
            with_human: detail.summary.handling == HandlingState::Human,
            answering: detail
                .active_run
                .is_some_and(|r| r.state != RunState::Paused),
            messages: detail
                .messages
                .iter()
                .filter_map(CustomerMessage::of)
                .collect(),
        })
    }

    /// A customer's message: the same path as every message (the same
    /// input rules; a turn starts unless a person holds the conversation).
    #[tracing::instrument(skip_all)]
    pub async fn customer_send(
        &self,
        token: &str,
        message: &str,
    ) -> Result<MessageAccepted, ServiceError> {
        let session_id = self.chat_session(token).await?;
        let key = format!("link:{}", aics_db::tokens::hash_token(token));
        self.inner.chat_limits.check(&key, MESSAGES_PER_WINDOW)?;
        self.send_message_on(
            &customer_user(&session_id),
            &session_id,
            message,
            Channel::Customer,
        )
        .await
    }

    /// The conversation's live events as the customer at `client` may see
    /// them.
    pub async fn customer_events(
        &self,
        token: &str,
        last_event_id: Option<&str>,
        client: &ClientAddr,
    ) -> Result<CustomerStream, ServiceError> {
        let session_id = self.chat_session(token).await?;
        // Open streams are capped per conversation like a user's, and per
        // client address across links (one client could mint many): 429.
        let permit = self.open_customer_stream(&customer_user(&session_id), client)?;
        let events = self.conversation_events(&session_id, last_event_id)?;
        Ok(events
            .filter_map(move |live| {
                let _open = &permit;
                let seen = CustomerEvent::of(&live.event).map(|e| (live.id, e));
                async move { seen }
            })
            .boxed())
    }
}
