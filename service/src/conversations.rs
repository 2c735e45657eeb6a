//! Conversations: listing, creating and reading them, and their live events
//! as a stream that catches up after a reconnect.

use aics_types::{
    AgentEvent, ConversationDetail, ConversationSummary, Customer, CustomerPanel, CustomerProfile,
    UserInfo, INBOX_MAX, INBOX_PAGE,
};
use futures::stream::{self, BoxStream, StreamExt};
use tokio::sync::broadcast::error::RecvError;

use crate::error::ServiceError;
use crate::hub::{CatchUp, EventId, Received};
use crate::{check_session_id, Console};

/// How many past conversations the customer panel lists.
const PAST_CONVERSATIONS: u32 = 20;

/// One event of a live stream: its sequence number (none for the stream's
/// own `resync`), and the event.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveEvent {
    pub id: Option<EventId>,
    pub event: AgentEvent,
}

/// A conversation's live events, or the approvals queue's.
pub type EventStream = BoxStream<'static, LiveEvent>;

/// The id of a conversation the server makes (the console's, a customer's
/// from the start page): `c-` and a UUIDv7, so ids made later sort later.
///
/// A conversation's id keys its row, and its messages' and turns' index
/// entries (`messages_session`, `turns_session`). A random id puts each
/// of those writes into a random page of its index: on SQLite one more
/// 4 KB page in the turn's commit for each (BENCHMARKS.md, round 30
/// counts them), and a cold page to read once the index outgrows the
/// cache. Ids in creation order put a new conversation's entries at the
/// index's end, beside the other recent ones, which are also the ones
/// being written to. The 74 random bits of a v7 keep it unguessable; what
/// it shows is when the conversation was made.
pub(crate) fn new_session_id() -> String {
    format!("c-{}", uuid::Uuid::now_v7().simple())
}

fn resync(reason: &str) -> LiveEvent {
    LiveEvent {
        id: None,
        event: AgentEvent::Resync {
            reason: reason.to_owned(),
        },
    }
}

impl Console {
    /// The `limit` most recently active conversations, newest first
    /// (at least one, at most [`INBOX_MAX`]).
    pub async fn list_conversations(
        &self,
        limit: u32,
    ) -> Result<Vec<ConversationSummary>, ServiceError> {
        Ok(self
            .inner
            .db
            .list_conversations(limit.clamp(1, INBOX_MAX))
            .await?)
    }

    /// A new, empty conversation with a server-made id.
    #[tracing::instrument(skip_all)]
    pub async fn create_conversation(&self) -> Result<ConversationSummary, ServiceError> {
        let session_id = new_session_id();
        Ok(self
            .inner
            .db
            // Untitled until its first message names it.
            .ensure_conversation(&session_id, None, "")
            .await?)
    }

    /// A new conversation with a customer, named by id or email (404 for
    /// an unknown one, nothing created).
    #[tracing::instrument(skip_all)]
    pub async fn create_conversation_for(
        &self,
        user: &UserInfo,
        customer: Option<&str>,
    ) -> Result<ConversationSummary, ServiceError> {
        let Some(reference) = customer else {
            return self.create_conversation().await;
        };
        let customer = self.customer_by_ref(reference).await?;
        let session_id = new_session_id();
        let summary = self
            .inner
            .db
            .ensure_conversation(&session_id, Some(&customer.id), "")
            .await?;
        self.audit(
            &user.username,
            "conversation.customer",
            &session_id,
            &format!("customer {}", customer.id),
        )
        .await;
        Ok(summary)
    }

    /// The customer a reference (id or email) names; 404 otherwise.
    async fn customer_by_ref(&self, reference: &str) -> Result<Customer, ServiceError> {
        aics_types::validate_text("customer", reference).map_err(ServiceError::Invalid)?;
        if reference.trim().is_empty() || reference.len() > 254 {
            return Err(ServiceError::Invalid(
                "a customer is named by its id or email".into(),
            ));
        }
        self.inner
            .db
            .find_customer(reference)
            .await?
            .ok_or_else(|| ServiceError::NotFound(format!("customer {reference:?} does not exist")))
    }

    /// Sets or changes who a conversation is with (by id or email); one
    /// audit line. Later turns remember and recall for this customer.
    #[tracing::instrument(skip_all, fields(session_id, user = %user.username))]
    pub async fn set_customer(
        &self,
        user: &UserInfo,
        session_id: &str,
        reference: &str,
    ) -> Result<CustomerPanel, ServiceError> {
        check_session_id(session_id)?;
        let customer = self.customer_by_ref(reference).await?;
        self.inner
            .db
            .set_conversation_customer(session_id, &customer.id)
            .await?;
        self.audit(
            &user.username,
            "conversation.customer",
            session_id,
            &format!("customer {}", customer.id),
        )
        .await;
        self.customer_panel(session_id).await
    }

    /// The customer panel of a conversation: its customer's profile,
    /// orders, tickets, past conversations and remembered facts; or, when
    /// it has no customer, the one an order id in it belongs to.
    pub async fn customer_panel(&self, session_id: &str) -> Result<CustomerPanel, ServiceError> {
        check_session_id(session_id)?;
        let db = &self.inner.db;
        let summary = db.conversation(session_id).await?.ok_or_else(|| {
            ServiceError::NotFound(format!("conversation {session_id} does not exist"))
        })?;
        let customer = match &summary.customer_id {
            Some(id) => db.customer(id).await?,
            None => None,
        };
        let contact = db.conversation_contact(session_id).await?;
        let Some(customer) = customer else {
            // Proposals for staff to confirm: the customer with the
            // visitor's email, else the owner of an order named in it.
            let by_email = match &contact {
                Some(c) => db.customer_by_email(&c.email).await?,
                None => None,
            };
            let proposed = match by_email {
                Some(c) => Some(c),
                None => db.customer_of_mentioned_order(session_id).await?,
            };
            return Ok(CustomerPanel {
                profile: None,
                proposed,
                contact,
            });
        };
        let id = customer.id.clone();
        Ok(CustomerPanel {
            profile: Some(CustomerProfile {
                orders: db.orders_of_customer(&id).await?,
                tickets: db.tickets_of_customer(&id).await?,
                conversations: db
                    .conversations_of_customer(&id, PAST_CONVERSATIONS)
                    .await?
                    .into_iter()
                    .filter(|c| c.session_id != session_id)
                    .collect(),
                memories: db.memory_facts(&id).await?,
                customer,
            }),
            proposed: None,
            contact,
        })
    }

    /// [`Console::send_message`] with the conversation's customer named
    /// first (by id or email; 404 for an unknown one, nothing stored), so
    /// the turn remembers and recalls for them.
    pub async fn send_message_from(
        &self,
        user: &UserInfo,
        session_id: &str,
        message: &str,
        customer: Option<&str>,
    ) -> Result<aics_types::MessageAccepted, ServiceError> {
        if let Some(reference) = customer {
            check_session_id(session_id)?;
            aics_types::validate_message(message).map_err(ServiceError::Invalid)?;
            let customer = self.customer_by_ref(reference).await?;
            let db = &self.inner.db;
            let had = db.conversation_customer(session_id).await?;
            db.ensure_conversation(session_id, Some(&customer.id), "")
                .await?;
            if had.as_deref() != Some(customer.id.as_str()) {
                db.set_conversation_customer(session_id, &customer.id)
                    .await?;
                self.audit(
                    &user.username,
                    "conversation.customer",
                    session_id,
                    &format!("customer {}", customer.id),
                )
                .await;
            }
        }
        self.send_message(user, session_id, message).await
    }

    /// The inbox's search and filters, a page of 50 (400 for text with
    /// control characters or over 200 characters).
    pub async fn search_conversations(
        &self,
        query: &aics_types::InboxQuery,
    ) -> Result<Vec<ConversationSummary>, ServiceError> {
        for (field, value) in [
            ("q", &query.q),
            ("assignee", &query.assignee),
            ("customer", &query.customer),
        ] {
            if let Some(v) = value {
                aics_types::validate_text(field, v).map_err(ServiceError::Invalid)?;
                if v.chars().count() > 200 {
                    return Err(ServiceError::Invalid(format!(
                        "{field} has at most 200 characters"
                    )));
                }
            }
        }
        Ok(self
            .inner
            .db
            .search_conversations(query, INBOX_PAGE)
            .await?)
    }

    /// Every customer (the panel's picker).
    pub async fn list_customers(&self) -> Result<Vec<Customer>, ServiceError> {
        Ok(self.inner.db.list_customers().await?)
    }

    /// Forgets one remembered fact of a customer; one audit line. 404 when
    /// there is no such fact.
    #[tracing::instrument(skip_all, fields(user = %user.username))]
    pub async fn forget_memory(
        &self,
        user: &UserInfo,
        customer_id: &str,
        memory_id: i64,
    ) -> Result<(), ServiceError> {
        aics_types::validate_text("customer", customer_id).map_err(ServiceError::Invalid)?;
        let text = self
            .inner
            .db
            .forget_fact(customer_id, memory_id)
            .await?
            .ok_or_else(|| ServiceError::NotFound(format!("memory {memory_id} does not exist")))?;
        let shown: String = text.chars().take(80).collect();
        self.audit(
            &user.username,
            "customer.forget",
            customer_id,
            &format!("memory {memory_id}: {shown}"),
        )
        .await;
        Ok(())
    }

    /// A conversation with its messages, turn traces and active run.
    #[tracing::instrument(skip_all, fields(session_id))]
    pub async fn conversation(&self, session_id: &str) -> Result<ConversationDetail, ServiceError> {
        tracing::Span::current().record("session_id", session_id);
        check_session_id(session_id)?;
        self.inner
            .db
            .conversation_detail(session_id)
            .await?
            .ok_or_else(|| {
                ServiceError::NotFound(format!("conversation {session_id} does not exist"))
            })
    }

    /// A conversation's live events (of every instance), each with its
    /// sequence number. With `last_event_id` (the SSE `Last-Event-ID` of a
    /// reconnecting client) it first replays what the client missed, or
    /// says `resync` when that is no longer kept. A subscriber that falls
    /// behind catches up from the same buffer, or gets `resync` and goes on
    /// when even that no longer holds what it missed; it never slows a turn.
    pub fn conversation_events(
        &self,
        session_id: &str,
        last_event_id: Option<&str>,
    ) -> Result<EventStream, ServiceError> {
        check_session_id(session_id)?;
        let last = last_event_id.and_then(|l| l.parse::<EventId>().ok());
        let (catch_up, subscription) = self.inner.hub.subscribe(session_id, last);
        // The replay and the subscription were taken under one lock: the
        // live events are exactly those after the replay, none twice.
        let first: Vec<LiveEvent> = match catch_up {
            // An id we never handed out: the client must reload.
            CatchUp::Live if last_event_id.is_some() => vec![resync("unknown Last-Event-ID")],
            CatchUp::Live => Vec::new(),
            CatchUp::Resync => vec![resync("the missed events are no longer kept")],
            CatchUp::Replay(events) => events
                .into_iter()
                .map(|e| LiveEvent {
                    id: Some(e.id),
                    event: e.event.clone(),
                })
                .collect(),
        };
        let live = stream::unfold(subscription, |mut subscription| async move {
            let event = match subscription.recv().await {
                Received::Event(e) => LiveEvent {
                    id: Some(e.id),
                    event: e.event.clone(),
                },
                Received::FellBehind => resync("this stream fell behind"),
                Received::Closed => return None,
            };
            Some((event, subscription))
        });
        Ok(stream::iter(first).chain(live).boxed())
    }

    /// `approval_required` and `approval_decided` of every conversation. A
    /// client that reconnects (it names a `Last-Event-ID`) or falls behind
    /// is told to `resync`: it reloads the queue.
    pub fn approval_events(&self, reconnected: bool) -> EventStream {
        let rx = self.inner.hub.subscribe_approvals();
        let first = reconnected.then(|| resync("reconnected"));
        let live = stream::unfold(rx, |mut rx| async move {
            match rx.recv().await {
                Ok(event) => Some((LiveEvent { id: None, event }, rx)),
                Err(RecvError::Lagged(_)) => Some((resync("this stream fell behind"), rx)),
                Err(RecvError::Closed) => None,
            }
        });
        stream::iter(first).chain(live).boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::new_session_id;

    #[test]
    fn server_made_ids_sort_in_the_order_they_were_made() {
        let ids: Vec<String> = (0..1_000).map(|_| new_session_id()).collect();
        for id in &ids {
            let hex = id.strip_prefix("c-").expect("the c- prefix");
            assert_eq!(hex.len(), 32, "{id}");
            assert!(hex.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
            crate::check_session_id(id).expect("a valid session id");
        }
        let mut sorted = ids.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(
            sorted, ids,
            "ids made one after another sort in that order, none twice"
        );
    }
}
