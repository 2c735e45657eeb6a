//! A supervisor stops a run: whatever holds it (a task on this instance or
//! another, a pause waiting for approval, a run nobody owns any more), the
//! run ends as cancelled with its pending approvals, the conversation shows
//! who cancelled it and why, and accepts messages again.

use aics_types::{AgentEvent, ChatTurnTraceResult, StopReason, ToolCallStatus, UserInfo};

use super::finish::close_trace;
use crate::error::ServiceError;
use crate::{check_id, Console};

impl Console {
    /// Supervisors only: cancels run `graph_execution_id` while it runs or
    /// waits for approval; returns its final trace (stop reason
    /// `cancelled`). 404 for an unknown run, 409 when it already ended.
    #[tracing::instrument(skip_all, fields(graph_execution_id, user = %user.username))]
    pub async fn cancel_turn(
        &self,
        user: &UserInfo,
        graph_execution_id: &str,
        reason: Option<&str>,
    ) -> Result<ChatTurnTraceResult, ServiceError> {
        tracing::Span::current().record("graph_execution_id", graph_execution_id);
        self.require_supervisor(user)?;
        check_id("graphExecutionId", graph_execution_id)?;
        let reason = reason.map(str::trim).filter(|r| !r.is_empty());
        if let Some(reason) = reason {
            aics_types::validate_message(reason).map_err(ServiceError::Invalid)?;
        }
        let run = self
            .inner
            .db
            .run(graph_execution_id)
            .await?
            .ok_or_else(|| {
                ServiceError::NotFound(format!("turn {graph_execution_id} does not exist"))
            })?;
        if !run.state.is_active() {
            return Err(ServiceError::Conflict(format!(
                "the turn has already ended ({})",
                run.state.as_str()
            )));
        }
        let note = match reason {
            Some(reason) => format!(
                "{} cancelled this turn: {reason}. The conversation accepts messages again.",
                user.username
            ),
            None => format!(
                "{} cancelled this turn. The conversation accepts messages again.",
                user.username
            ),
        };
        let mut trace = self.last_trace(graph_execution_id).await?;
        close_trace(
            &mut trace,
            StopReason::Cancelled,
            ToolCallStatus::Denied,
            "cancelled by a supervisor",
        );
        trace.reply.clear();
        let Some((_, cancelled_calls)) = self
            .inner
            .db
            .cancel_run(&trace, &user.username, &note)
            .await?
        else {
            return Err(ServiceError::Conflict("the turn has already ended".into()));
        };
        // Our own task stops now; another instance's at its next heartbeat.
        let local = self
            .inner
            .tasks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(graph_execution_id);
        if let Some(task) = local {
            task.abort();
        }
        tracing::info!(calls = cancelled_calls.len(), "turn cancelled");
        self.audit(
            &user.username,
            "turn.cancel",
            graph_execution_id,
            reason.unwrap_or(""),
        )
        .await;
        let publisher = self
            .inner
            .hub
            .publisher(&run.session_id, Some(graph_execution_id))
            .await;
        for id in cancelled_calls {
            let event = AgentEvent::ApprovalDecided(Box::new(aics_types::ApprovalDecided {
                id,
                approved: false,
                reason: Some(note.clone()),
                decided_by: Some(user.username.clone()),
            }));
            publisher.publish(event.clone());
            self.inner.hub.publish_approvals(event);
        }
        publisher.publish(AgentEvent::Final {
            trace: std::sync::Arc::new(trace.clone()),
        });
        self.refresh_pending_gauge().await;
        Ok(trace)
    }
}
