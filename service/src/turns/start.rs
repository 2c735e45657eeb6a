//! A new turn: the checks, the run that holds the conversation, the
//! customer's message stored before any model is called, the history the
//! turn reads. Then the run's task takes over.

use aics_agent::model::Message;
use aics_agent::TurnInput;
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
    /// another holds it), stores the customer's message and spawns the run.
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
        if !db
            .start_run(
                &graph_execution_id,
                session_id,
                &self.inner.instance_id,
                self.inner.config.lease,
            )
            .await?
        {
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
        }
        let prepared = async {
            db.ensure_conversation(
                session_id,
                None,
                &aics_db::conversations::title_from(message),
            )
            .await?;
            // Earlier messages first: the new one is stored right after.
            let earlier = db
                .recent_messages(session_id, self.inner.config.history_messages)
                .await?;
            db.append_message(session_id, MessageRole::Customer, message, None)
                .await?;
            let customer_id = db.conversation_customer(session_id).await?;
            Ok::<_, aics_db::DbError>((earlier, customer_id))
        }
        .await;
        let (earlier, customer_id) = match prepared {
            Ok(p) => p,
            Err(e) => {
                // Nothing of the turn happened: free the conversation again.
                let note = "the message could not be stored";
                if let Err(release) = self
                    .fail_unstarted(&graph_execution_id, session_id, note)
                    .await
                {
                    tracing::error!(error = %release, "could not free the conversation");
                }
                return Err(e.into());
            }
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
            Job::New(input),
        );
        Ok(Started {
            graph_execution_id,
            done: Some(done),
        })
    }
}
