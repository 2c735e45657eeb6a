//! The turn lifecycle, owned here and nowhere else: the service names each
//! run (its graph execution id), holds the conversation for it (one active
//! run per conversation, across instances), runs it in a task that renews
//! its lease, stores its outcome in one transaction, and only then
//! announces it (`approval_required`, `error`, `final`). A run whose owner
//! died is taken over by the recovery sweep of any instance; a supervisor
//! can always cancel one. docs/ARCHITECTURE.md tells the whole story.
//!
//! # Layout
//! - this file: the calls the routes make (send, chat, stream, list, read).
//! - `start`: a new turn: checks, the run row, the customer's message.
//! - `task`: the run's task: its events, its lease, the engine call.
//! - `finish`: storing and announcing what a run ended with.
//! - `cancel`: a supervisor stops a run.
//! - `recovery`: the sweep that resumes runs whose owner died.

mod cancel;
mod finish;
mod recovery;
mod start;
mod task;

use std::sync::Arc;

use crate::hub::{Received, Subscription};
use aics_agent::Channel;
use aics_db::runs::WhenHeld;
use aics_types::{AgentEvent, ChatTurnTraceResult, MessageAccepted, UserInfo};
use futures::stream::{self, BoxStream, StreamExt};
use start::Begun;

use crate::error::ServiceError;
use crate::{check_id, check_session_id, Console};

pub(crate) use recovery::decisions_of;
pub(crate) use task::Job;

/// What a turn ended with, for the caller that started it: its trace
/// (with the single-use approval token when it paused) and, for a caller
/// that answers with it ([`Console::chat`]) when storing the trace wrote
/// its JSON (on SQLite, a turn that ended), that text: the same bytes
/// serde_json writes for the trace, so an HTTP answer sends them instead
/// of writing them again. It reads as its trace.
#[derive(Debug)]
pub struct TurnOutcome {
    pub trace: Arc<ChatTurnTraceResult>,
    pub json: Option<String>,
}

impl TurnOutcome {
    /// A trace whose JSON is not at hand.
    pub(crate) fn of(trace: Arc<ChatTurnTraceResult>) -> Self {
        Self { trace, json: None }
    }
}

impl std::ops::Deref for TurnOutcome {
    type Target = ChatTurnTraceResult;

    fn deref(&self) -> &ChatTurnTraceResult {
        &self.trace
    }
}

impl Console {
    /// Stores the message, starts the turn in the background and returns its
    /// graph execution id; its events go to the conversation's streams.
    /// 409 while a turn of the conversation runs or waits for approval.
    /// While a person holds the conversation the message is stored for them
    /// and announced, and no turn starts (`heldBy` names them).
    #[tracing::instrument(skip_all, fields(session_id, user = %user.username))]
    pub async fn send_message(
        &self,
        user: &UserInfo,
        session_id: &str,
        message: &str,
    ) -> Result<MessageAccepted, ServiceError> {
        self.send_message_on(user, session_id, message, Channel::Console)
            .await
    }

    /// [`Console::send_message`] for a message that came by `channel`: the
    /// customer channel's turns see only the orders of the conversation's
    /// verified customer ([`Channel`]).
    #[tracing::instrument(skip_all, fields(session_id, user = %user.username))]
    pub(crate) async fn send_message_on(
        &self,
        user: &UserInfo,
        session_id: &str,
        message: &str,
        channel: Channel,
    ) -> Result<MessageAccepted, ServiceError> {
        tracing::Span::current().record("session_id", session_id);
        Ok(
            match self
                .start_turn(session_id, message, WhenHeld::Keep, false, channel)
                .await?
            {
                Begun::Turn(started) => MessageAccepted {
                    graph_execution_id: Some(started.graph_execution_id),
                    held_by: None,
                    message: None,
                },
                Begun::Held { assignee, message } => MessageAccepted {
                    graph_execution_id: None,
                    held_by: assignee,
                    message: Some(message),
                },
            },
        )
    }

    /// A turn the AI answers: 409 while a person holds the conversation,
    /// with nothing stored. `answer_json` as [`Console::start_turn`] says.
    async fn start_answered_turn(
        &self,
        session_id: &str,
        message: &str,
        answer_json: bool,
    ) -> Result<start::Started, ServiceError> {
        match self
            .start_turn(
                session_id,
                message,
                WhenHeld::Refuse,
                answer_json,
                Channel::Console,
            )
            .await?
        {
            Begun::Turn(started) => Ok(started),
            Begun::Held { .. } => Err(ServiceError::Conflict(
                "a person handles this conversation".into(),
            )),
        }
    }

    /// The same, waiting for the turn to end or pause; returns its trace
    /// (with the single-use approval token when it paused), and its JSON
    /// when that is at hand ([`TurnOutcome`]).
    #[tracing::instrument(skip_all, fields(session_id, user = %user.username))]
    pub async fn chat(
        &self,
        user: &UserInfo,
        session_id: &str,
        message: &str,
    ) -> Result<TurnOutcome, ServiceError> {
        tracing::Span::current().record("session_id", session_id);
        let started = self.start_answered_turn(session_id, message, true).await?;
        self.outcome_of(&started.graph_execution_id, started.done)
            .await
    }

    /// Starts a turn and streams this turn's events, ending with `final`
    /// (whose trace carries the approval token when it paused) or `error`.
    /// The stream reads the conversation's hub like every other stream: a
    /// client that does not read falls behind alone (it catches up from the
    /// replay buffer, or gets `resync` past it);
    /// `final` comes from the turn's own outcome, so it is never lost.
    #[tracing::instrument(skip_all, fields(session_id, user = %user.username))]
    pub async fn chat_stream(
        &self,
        user: &UserInfo,
        session_id: &str,
        message: &str,
    ) -> Result<BoxStream<'static, AgentEvent>, ServiceError> {
        tracing::Span::current().record("session_id", session_id);
        check_session_id(session_id)?;
        // Subscribed before the turn starts, so its first event is seen.
        let (_, subscription) = self.inner.hub.subscribe(session_id, None);
        let started = self.start_answered_turn(session_id, message, false).await?;
        let run = started.graph_execution_id.clone();
        let console = self.clone();
        enum Step {
            Events(Subscription),
            Done,
        }
        let events = stream::unfold(
            (Step::Events(subscription), started.done),
            move |(step, done)| {
                let run = run.clone();
                let console = console.clone();
                async move {
                    match step {
                        Step::Events(mut subscription) => loop {
                            match subscription.recv().await {
                                Received::Event(e) if e.run.as_deref() == Some(run.as_str()) => {
                                    if let AgentEvent::Final { .. } = e.event {
                                        // The outcome follows, with its token.
                                        let last = console.outcome_event(&run, done).await;
                                        return Some((last, (Step::Done, None)));
                                    }
                                    return Some((
                                        e.event.clone(),
                                        (Step::Events(subscription), done),
                                    ));
                                }
                                Received::Event(_) => continue,
                                Received::FellBehind => {
                                    let resync = AgentEvent::Resync {
                                        reason: "this stream fell behind".into(),
                                    };
                                    return Some((resync, (Step::Events(subscription), done)));
                                }
                                Received::Closed => {
                                    let last = console.outcome_event(&run, done).await;
                                    return Some((last, (Step::Done, None)));
                                }
                            }
                        },
                        Step::Done => None,
                    }
                }
            },
        );
        Ok(events.boxed())
    }

    /// A conversation's turns, oldest first.
    pub async fn list_turns(
        &self,
        session_id: &str,
    ) -> Result<Vec<ChatTurnTraceResult>, ServiceError> {
        check_session_id(session_id)?;
        if self.inner.db.conversation(session_id).await?.is_none() {
            return Err(ServiceError::NotFound(format!(
                "conversation {session_id} does not exist"
            )));
        }
        Ok(self.inner.db.list_turns(session_id).await?)
    }

    /// One turn with its checkpoints, oldest first. A turn that has not
    /// paused or ended yet has no stored trace: its latest checkpoint says
    /// how far it got (the turn page follows it live).
    #[tracing::instrument(skip_all, fields(graph_execution_id))]
    pub async fn turn_detail(
        &self,
        graph_execution_id: &str,
    ) -> Result<aics_types::TurnDetail, ServiceError> {
        tracing::Span::current().record("graph_execution_id", graph_execution_id);
        check_id("graphExecutionId", graph_execution_id)?;
        let missing =
            || ServiceError::NotFound(format!("turn {graph_execution_id} does not exist"));
        if let Some(detail) = self.inner.db.turn_detail(graph_execution_id).await? {
            return Ok(detail);
        }
        if self.inner.db.run(graph_execution_id).await?.is_none() {
            return Err(missing());
        }
        let trace = self
            .inner
            .agent
            .trace(graph_execution_id)
            .await
            .map_err(|_| missing())?;
        let checkpoints = self.inner.db.checkpoint_views(graph_execution_id).await?;
        Ok(aics_types::TurnDetail { trace, checkpoints })
    }

    /// What a turn the caller started ended with. When its task is gone
    /// without a word (a cancellation stopped it), the stored trace says.
    async fn outcome_of(
        &self,
        graph_execution_id: &str,
        done: Option<task::Done>,
    ) -> Result<TurnOutcome, ServiceError> {
        if let Some(done) = done {
            if let Ok(outcome) = done.await {
                return outcome;
            }
        }
        self.inner
            .db
            .turn(graph_execution_id)
            .await?
            .map(|trace| TurnOutcome::of(Arc::new(trace)))
            .ok_or_else(|| ServiceError::Conflict("the turn was stopped before it ended".into()))
    }

    async fn outcome_event(
        &self,
        graph_execution_id: &str,
        done: Option<task::Done>,
    ) -> AgentEvent {
        match self.outcome_of(graph_execution_id, done).await {
            Ok(outcome) => AgentEvent::Final {
                trace: outcome.trace,
            },
            Err(e) => AgentEvent::Error {
                message: e.to_api_error().message,
            },
        }
    }
}
