//! A new turn: the checks, then in one transaction the run that holds the
//! conversation, the customer's message (stored before any model is
//! called), the history the turn reads and its event epoch. Then the run's
//! task takes over.

use aics_agent::model::Message;
use aics_agent::{Channel, TurnInput};
use aics_db::runs::{Begin, BegunTurn, Kept, WhenHeld};
use aics_types::{AgentEvent, ChatMessage, MessageRole};

use super::task::{Done, Job};
use crate::error::ServiceError;
use crate::{check_session_id, Console};

/// A turn that started: its id, and its outcome to come.
pub(crate) struct Started {
    pub(crate) graph_execution_id: String,
    pub(crate) done: Option<Done>,
}

/// What a customer's message led to.
pub(crate) enum Begun {
    /// The AI answers it.
    Turn(Started),
    /// A person holds the conversation: the message is stored for them
    /// (only with [`WhenHeld::Keep`]; otherwise this is a 409).
    Held {
        assignee: Option<String>,
        message: ChatMessage,
    },
}

impl Console {
    /// Checks the input, takes the conversation for a new run (409 while
    /// another holds it) with the customer's message, and spawns the run.
    /// While a person holds the conversation no run starts: the message is
    /// kept for them and announced (`when_held` = Keep), or refused (409).
    /// `answer_json`: the caller answers with the trace's JSON
    /// ([`super::TurnOutcome`]); `channel`: where the message came from.
    pub(crate) async fn start_turn(
        &self,
        session_id: &str,
        message: &str,
        when_held: WhenHeld,
        answer_json: bool,
        channel: Channel,
    ) -> Result<Begun, ServiceError> {
        check_session_id(session_id)?;
        aics_types::validate_message(message).map_err(ServiceError::Invalid)?;
        let db = &self.inner.db;
        // The service names the run (time-ordered, aics_graph::new_id); the
        // engine uses it as its thread id.
        let graph_execution_id = aics_graph::new_id();
        // The run, the conversation, the message and the event epoch in
        // one transaction: a turn never holds a conversation without its
        // message, and nothing of it exists if any of that failed.
        let begun = db
            .begin_turn(
                &graph_execution_id,
                session_id,
                &self.inner.instance_id,
                self.inner.config.lease,
                message,
                &aics_db::conversations::title_from(message),
                self.inner.config.history_messages,
                when_held,
            )
            .await?;
        let (earlier, customer_id, event_epoch, stored) = match begun {
            Begin::Started(BegunTurn {
                earlier,
                customer_id,
                event_epoch,
                stored,
            }) => (earlier, customer_id, event_epoch, stored),
            Begin::Held {
                assignee,
                kept:
                    Some(Kept {
                        message,
                        event_epoch,
                    }),
            } => {
                self.inner
                    .hub
                    .publisher_at(session_id, None, event_epoch)
                    .publish(AgentEvent::Message {
                        message: Box::new(message.clone()),
                    });
                return Ok(Begun::Held { assignee, message });
            }
            Begin::Held {
                assignee,
                kept: None,
            } => {
                return Err(ServiceError::Conflict(format!(
                    "{} handles this conversation; the AI does not answer until it is handed back",
                    assignee.as_deref().unwrap_or("a person")
                )));
            }
            Begin::Busy => {
                let waiting = db
                    .active_run(session_id)
                    .await?
                    .is_some_and(|r| r.state == aics_types::RunState::Paused);
                return Err(ServiceError::Conflict(if waiting {
                    "this conversation waits for a supervisor's approval; \
                 send the message once it has been decided"
                        .into()
                } else {
                    "a turn of this conversation is running; send the message when it has ended"
                        .into()
                }));
            }
        };
        let history = earlier
            .into_iter()
            .filter_map(|m| match m.role {
                MessageRole::Customer => Some(Message::user(m.content)),
                // What a person replied is the support side's words too.
                MessageRole::Assistant | MessageRole::Agent => Some(Message::assistant(m.content)),
                // Staff's notes and system lines never reach the model.
                MessageRole::System | MessageRole::Note => None,
            })
            .collect();
        let input = TurnInput {
            session_id: session_id.to_owned(),
            customer_id,
            channel,
            message: message.to_owned(),
            history,
        };
        let done = self.spawn_run(
            session_id.to_owned(),
            graph_execution_id.clone(),
            Job::New {
                input,
                event_epoch,
                message: stored,
                answer_json,
            },
        );
        Ok(Begun::Turn(Started {
            graph_execution_id,
            done: Some(done),
        }))
    }
}
