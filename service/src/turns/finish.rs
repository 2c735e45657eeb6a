//! Storing what a run ended with, then announcing it: a paused run's
//! approvals (with the single-use token minted here) or a finished run's
//! reply are written in one transaction with the trace and the run's state;
//! only after that commit do `approval_required`, `error` and `final` go
//! out, each exactly once.

use std::sync::Arc;

use aics_agent::AgentError;
use aics_db::runs::Ending;
use aics_db::{DbError, NewApproval};
use aics_types::{
    AgentEvent, ChatTurnTraceResult, MessageRole, RunState, StopReason, ToolCallStatus,
};

use super::TurnOutcome;
use crate::error::ServiceError;
use crate::hub::Publisher;
use crate::observe::SegmentStart;
use crate::{metrics, Console};

/// What the conversation shows for a turn a restart cut short for good.
pub(crate) const INTERRUPTED_NOTE: &str = "This turn was interrupted by a restart and could not \
     be continued. The customer's message above is kept; please send it again.";

/// What the streams are told when a turn fails; the detail is in its trace.
const FAILED_EVENT: &str = "the turn failed; the message is kept, please try again";

/// Ends a trace that will not go on: its stop reason, nothing pending any
/// more, and every call still open (running, or waiting for a decision)
/// closed with `status` and `why` as what the call produced.
pub(crate) fn close_trace(
    trace: &mut ChatTurnTraceResult,
    reason: StopReason,
    status: ToolCallStatus,
    why: &str,
) {
    trace.stop_reason = Some(reason);
    trace.pending_approval = false;
    trace.approval_token = None;
    trace.pending_tool_calls.clear();
    for call in &mut trace.tool_calls {
        if matches!(
            call.status,
            ToolCallStatus::Pending | ToolCallStatus::Running
        ) {
            call.status = status;
            call.output = serde_json::Value::String(why.to_owned()).into();
        }
    }
}

/// The observer's class of a failure without a trace.
fn error_type(e: &AgentError) -> &'static str {
    match e {
        AgentError::UnknownRun(_) => "unknown_run",
        AgentError::Checkpoint(_) => "checkpoint",
        AgentError::Graph(_) => "graph",
    }
}

/// How the run that ends got here.
pub(crate) struct Ended<'a> {
    pub(crate) session_id: &'a str,
    /// Taken over from an owner that died.
    pub(crate) recovering: bool,
    /// Its caller answers with the trace's JSON ([`TurnOutcome::json`]).
    pub(crate) answer_json: bool,
    /// Resumed after a pause (or recovered): it may end approvals' lives.
    pub(crate) resumed: bool,
    /// What the metrics counted before a pause.
    pub(crate) counted: &'a metrics::Counted,
    /// How this segment began, for the observer.
    pub(crate) start: &'a SegmentStart,
}

impl Console {
    /// Stores the outcome of run `graph_execution_id` and announces it.
    pub(crate) async fn finish_run(
        &self,
        publisher: &Publisher,
        graph_execution_id: &str,
        result: Result<ChatTurnTraceResult, AgentError>,
        ended: Ended<'_>,
    ) -> Result<TurnOutcome, ServiceError> {
        let Ended {
            session_id,
            recovering,
            answer_json,
            resumed,
            counted,
            start,
        } = ended;
        let mut trace = match result {
            Ok(trace) => trace,
            // Recovered, but nothing of it was ever checkpointed.
            Err(AgentError::UnknownRun(_)) if recovering => {
                return self
                    .fail_run(publisher, graph_execution_id, INTERRUPTED_NOTE)
                    .await;
            }
            Err(e) => {
                tracing::error!(error = %e, "turn failed without a trace");
                metrics::record_failed_turn();
                self.observe_failed(session_id, graph_execution_id, start, error_type(&e));
                publisher.publish(AgentEvent::Error {
                    message: FAILED_EVENT.into(),
                });
                // The run keeps its state; its lease runs out now that this
                // task ends, and recovery tries again from its checkpoint.
                return Err(e.into());
            }
        };
        // The price table lives with the provider's configuration.
        self.inner.providers.default_provider().price(&mut trace);
        let stored = if trace.pending_approval {
            self.pause(publisher, trace).await
        } else {
            self.end(publisher, trace, resumed, answer_json).await
        };
        match stored {
            Ok(outcome) => {
                metrics::record_turn(&outcome.trace, counted);
                self.observe_stored(&outcome.trace, counted, start).await;
                Ok(outcome)
            }
            Err(DbError::LeaseLost(_)) => {
                tracing::warn!("the run was cancelled or taken over; its outcome is not stored");
                Err(ServiceError::Conflict(
                    "the turn was stopped: it was cancelled or taken over".into(),
                ))
            }
            Err(e) => {
                tracing::error!(error = %e, "could not store the turn");
                publisher.publish(AgentEvent::Error {
                    message: "the turn could not be saved; it will be retried".into(),
                });
                Err(e.into())
            }
        }
    }

    /// Pauses the run: its approvals (one per pending call, one token for
    /// them all) and trace in one transaction, then `approval_required` for
    /// each and `final`. The token goes to the caller only: the trace
    /// returned carries it, the one announced does not.
    async fn pause(
        &self,
        publisher: &Publisher,
        mut trace: ChatTurnTraceResult,
    ) -> Result<TurnOutcome, DbError> {
        let token = aics_db::tokens::new_token();
        let approvals: Vec<NewApproval> = trace
            .pending_tool_calls
            .iter()
            .map(|call| self.new_approval(&trace, call))
            .collect();
        // The stored trace shows each call's deadline too.
        for (call, approval) in trace.pending_tool_calls.iter_mut().zip(&approvals) {
            call.expires_at = approval.expires_at;
        }
        let stored = self
            .inner
            .db
            .pause_run(&self.inner.instance_id, &trace, &approvals, &token)
            .await?;
        self.refresh_pending_gauge().await;
        for approval in stored {
            if let Some(hook) = &self.inner.webhook {
                hook.send(&approval);
            }
            let event = AgentEvent::ApprovalRequired(Box::new(aics_types::ApprovalRequired {
                tool: approval.tool,
                args: approval.proposed_args,
                id: approval.id,
                session_id: trace.session_id.clone(),
                graph_execution_id: trace.graph_execution_id.clone(),
                reason: approval.policy_reason,
                rule: approval.rule,
                expires_at: approval.expires_at,
            }));
            publisher.publish(event.clone());
            self.inner.hub.publish_approvals(event);
        }
        publisher.publish(AgentEvent::Final {
            trace: Arc::new(trace.clone()),
        });
        trace.approval_token = Some(token);
        // What was stored has no token: the caller's answer is written anew.
        Ok(TurnOutcome::of(Arc::new(trace)))
    }

    /// Ends the run: its trace, its reply (or, for a failed turn, its
    /// explanation as a note) and its state in one transaction, then
    /// `error` when it failed, and `final` with the trace it returns (and,
    /// for a caller that answers with it, the trace's JSON as stored).
    async fn end(
        &self,
        publisher: &Publisher,
        trace: ChatTurnTraceResult,
        resumed: bool,
        answer_json: bool,
    ) -> Result<TurnOutcome, DbError> {
        let failed = trace.stop_reason == Some(StopReason::Error);
        let role = if failed {
            MessageRole::System
        } else {
            MessageRole::Assistant
        };
        let ending = Ending {
            state: if failed {
                RunState::Failed
            } else {
                RunState::Finished
            },
            message: (!trace.reply.is_empty()).then_some((role, trace.reply.as_str())),
            note: trace.error.as_deref(),
            json_back: answer_json,
        };
        let ended = self
            .inner
            .db
            .end_run(&self.inner.instance_id, &trace, ending)
            .await?;
        // A resumed turn ends the last of its approvals' lives; a turn that
        // never paused changed no approval.
        if resumed {
            self.refresh_pending_gauge().await;
        }
        if failed {
            publisher.publish(AgentEvent::Error {
                message: FAILED_EVENT.into(),
            });
        }
        let trace = Arc::new(trace);
        publisher.publish(AgentEvent::Final {
            trace: trace.clone(),
        });
        Ok(TurnOutcome {
            trace,
            json: ended.trace_json,
        })
    }

    /// Ends a run this instance holds as failed with `note`: the trace of
    /// its last checkpoint (or a bare one), the note shown in the
    /// conversation, the conversation free again.
    pub(crate) async fn fail_run(
        &self,
        publisher: &Publisher,
        graph_execution_id: &str,
        note: &str,
    ) -> Result<TurnOutcome, ServiceError> {
        let mut trace = self.last_trace(graph_execution_id).await?;
        close_trace(&mut trace, StopReason::Error, ToolCallStatus::Error, note);
        trace.error = Some(note.to_owned());
        trace.reply = note.to_owned();
        self.inner
            .db
            .end_run(
                &self.inner.instance_id,
                &trace,
                Ending {
                    state: RunState::Failed,
                    message: Some((MessageRole::System, note)),
                    note: Some(note),
                    json_back: false,
                },
            )
            .await?;
        metrics::record_failed_turn();
        publisher.publish(AgentEvent::Error {
            message: note.to_owned(),
        });
        let trace = Arc::new(trace);
        publisher.publish(AgentEvent::Final {
            trace: trace.clone(),
        });
        // A run failed here (a restart cut it short) has no caller waiting.
        Ok(TurnOutcome::of(trace))
    }

    /// The trace of a run as its last checkpoint shows it, or a bare one
    /// when it has none (its run row says whose it is).
    pub(crate) async fn last_trace(
        &self,
        graph_execution_id: &str,
    ) -> Result<ChatTurnTraceResult, ServiceError> {
        match self.inner.agent.trace(graph_execution_id).await {
            Ok(trace) => Ok(trace),
            Err(AgentError::UnknownRun(_)) => {
                let run = self
                    .inner
                    .db
                    .run(graph_execution_id)
                    .await?
                    .ok_or_else(|| {
                        ServiceError::NotFound(format!("turn {graph_execution_id} does not exist"))
                    })?;
                Ok(ChatTurnTraceResult {
                    graph_execution_id: run.graph_execution_id,
                    session_id: run.session_id,
                    engine: self.inner.config.engine.as_str().to_owned(),
                    model: self.inner.model_info.model.clone(),
                    started_at: run.created_at,
                    ..ChatTurnTraceResult::default()
                })
            }
            Err(e) => Err(e.into()),
        }
    }
}
