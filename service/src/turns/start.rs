//! A new turn: the checks, then in one transaction the run that holds the
//! conversation, the customer's message (stored before any model is
//! called), the history the turn reads and its event epoch. Then the run's
//! task takes over.

use aics_agent::model::Message;
use aics_agent::TurnInput;
use aics_db::runs::BegunTurn;
use aics_types::MessageRole;

use super::task::{Done, Job};
use crate::error::ServiceError;
use crate::{check_session_id, Console};

/// A turn that started: its id, and its outcome to come.
pub(crate) struct Started {
    pub(crate) graph_execution_id: String,
    pub(crate) done: Option<Done>,
}

impl Console {
    /// Checks the input, takes the conversation for a new run (409 while
    /// another holds it) with the customer's message, and spawns the run.
    pub(crate) async fn start_turn(
        &self,
        session_id: &str,
        message: &str,
    ) -> Result<Started, ServiceError> {
        check_session_id(session_id)?;
        aics_types::validate_message(message).map_err(ServiceError::Invalid)?;
        let db = &self.inner.db;
        // The service names the run; the engine uses it as its thread id.
        let graph_execution_id = uuid::Uuid::new_v4().to_string();
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
            )
            .await?;
        let Some(BegunTurn {
            earlier,
            customer_id,
            event_epoch,
        }) = begun
        else {
            let waiting = db
                .active_run(session_id)
                .await?
                .is_some_and(|r| r.state == aics_types::RunState::Paused);
            return Err(ServiceError::Conflict(if waiting {
                "this conversation waits for a supervisor's approval; \
                 send the message once it has been decided"
                    .into()
            } else {
                "a turn of this conversation is running; send the message when it has ended".into()
            }));
        };
        let history = earlier
            .into_iter()
            .filter_map(|m| match m.role {
                MessageRole::Customer => Some(Message::user(m.content)),
                MessageRole::Assistant => Some(Message::assistant(m.content)),
                MessageRole::System => None,
            })
            .collect();
        let input = TurnInput {
            session_id: session_id.to_owned(),
            customer_id,
            message: message.to_owned(),
            history,
        };
        let done = self.spawn_run(
            session_id.to_owned(),
            graph_execution_id.clone(),
            Job::New { input, event_epoch },
        );
        Ok(Started {
            graph_execution_id,
            done: Some(done),
        })
    }
}
