//! Conversations: listing, creating and reading them, and their live events
//! as a stream that catches up after a reconnect.

use aics_types::{AgentEvent, ConversationDetail, ConversationSummary};
use futures::stream::{self, BoxStream, StreamExt};
use tokio::sync::broadcast::error::RecvError;

use crate::error::ServiceError;
use crate::hub::{CatchUp, EventId};
use crate::{check_session_id, Console};

/// How many conversations the list shows.
const CONVERSATION_LIST_LIMIT: u32 = 200;

/// One event of a live stream: its sequence number (none for the stream's
/// own `resync`), and the event.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveEvent {
    pub id: Option<EventId>,
    pub event: AgentEvent,
}

/// A conversation's live events, or the approvals queue's.
pub type EventStream = BoxStream<'static, LiveEvent>;

fn resync(reason: &str) -> LiveEvent {
    LiveEvent {
        id: None,
        event: AgentEvent::Resync {
            reason: reason.to_owned(),
        },
    }
}

impl Console {
    /// Conversations, most recently active first.
    pub async fn list_conversations(&self) -> Result<Vec<ConversationSummary>, ServiceError> {
        Ok(self
            .inner
            .db
            .list_conversations(CONVERSATION_LIST_LIMIT)
            .await?)
    }

    /// A new, empty conversation with a server-made id.
    #[tracing::instrument(skip_all)]
    pub async fn create_conversation(&self) -> Result<ConversationSummary, ServiceError> {
        let session_id = format!("c-{}", uuid::Uuid::new_v4().simple());
        Ok(self
            .inner
            .db
            // Untitled until its first message names it.
            .ensure_conversation(&session_id, None, "")
            .await?)
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
    /// behind gets `resync` and goes on; it never slows a turn.
    pub fn conversation_events(
        &self,
        session_id: &str,
        last_event_id: Option<&str>,
    ) -> Result<EventStream, ServiceError> {
        check_session_id(session_id)?;
        let last = last_event_id.and_then(|l| l.parse::<EventId>().ok());
        let (catch_up, rx) = self.inner.hub.subscribe(session_id, last);
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
        let live = stream::unfold(rx, |mut rx| async move {
            match rx.recv().await {
                Ok(e) => Some((
                    LiveEvent {
                        id: Some(e.id),
                        event: e.event.clone(),
                    },
                    rx,
                )),
                Err(RecvError::Lagged(missed)) => {
                    tracing::warn!(missed, "an event stream fell behind; it resyncs");
                    Some((resync("this stream fell behind"), rx))
                }
                Err(RecvError::Closed) => None,
            }
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
