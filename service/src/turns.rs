//! Running turns: one at a time per conversation (across instances, by the
//! `turn_locks` row), the customer's message stored before the model is
//! called, events forwarded to the conversation's hub, the trace stored
//! (failed ones too), approvals created when a turn pauses, and resuming.

use std::collections::{HashMap, HashSet};

use aics_agent::model::Message;
use aics_agent::{Decision, EventSink, TurnInput};
use aics_db::NewApproval;
use aics_types::{
    AgentEvent, ChatTurnTraceResult, HandlingState, MessageRole, StopReason, ToolCallStatus,
    UserInfo,
};
use tokio::sync::{mpsc, oneshot};

use crate::error::ServiceError;
use crate::hub::Topic;
use crate::{check_id, check_session_id, metrics, Console};

/// Room for events between the engine and the forwarder (backpressure beyond).
const EVENT_BUFFER: usize = 256;

/// What a background turn reports to whoever started it.
struct Started {
    graph_execution_id: oneshot::Receiver<String>,
    done: oneshot::Receiver<Result<ChatTurnTraceResult, ServiceError>>,
}

/// How a run is started: a new turn or a paused one resumed.
enum Run {
    New(TurnInput),
    Resume {
        graph_execution_id: String,
        decisions: HashMap<String, Decision>,
    },
}

impl Console {
    /// Stores the message, starts the turn in the background and returns its
    /// graph execution id; the events go to the conversation's hub.
    /// 409 while a turn of the conversation runs or waits for approval.
    #[tracing::instrument(skip_all, fields(session_id, user = %user.username))]
    pub async fn send_message(
        &self,
        user: &UserInfo,
        session_id: &str,
        message: &str,
    ) -> Result<String, ServiceError> {
        tracing::Span::current().record("session_id", session_id);
        let started = self.start_turn(session_id, message, None).await?;
        started
            .graph_execution_id
            .await
            .map_err(|_| ServiceError::Internal("the turn ended before it started".into()))
    }

    /// The same, waiting for the turn to end or pause; returns its trace
    /// (with the approval token when it paused).
    #[tracing::instrument(skip_all, fields(session_id, user = %user.username))]
    pub async fn chat(
        &self,
        user: &UserInfo,
        session_id: &str,
        message: &str,
    ) -> Result<ChatTurnTraceResult, ServiceError> {
        tracing::Span::current().record("session_id", session_id);
        let started = self.start_turn(session_id, message, None).await?;
        started
            .done
            .await
            .map_err(|_| ServiceError::Internal("the turn task ended without a result".into()))?
    }

    /// Starts a turn and returns a channel of this turn's events, ending with
    /// `final` (whose trace carries the approval token) or `error`.
    #[tracing::instrument(skip_all, fields(session_id, user = %user.username))]
    pub async fn chat_stream(
        &self,
        user: &UserInfo,
        session_id: &str,
        message: &str,
    ) -> Result<mpsc::Receiver<AgentEvent>, ServiceError> {
        tracing::Span::current().record("session_id", session_id);
        let (tx, rx) = mpsc::channel(EVENT_BUFFER);
        self.start_turn(session_id, message, Some(tx)).await?;
        Ok(rx)
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

    /// One turn with its checkpoints, oldest first.
    #[tracing::instrument(skip_all, fields(graph_execution_id))]
    pub async fn turn_detail(
        &self,
        graph_execution_id: &str,
    ) -> Result<aics_types::TurnDetail, ServiceError> {
        tracing::Span::current().record("graph_execution_id", graph_execution_id);
        check_id("graphExecutionId", graph_execution_id)?;
        self.inner
            .db
            .turn_detail(graph_execution_id)
            .await?
            .ok_or_else(|| {
                ServiceError::NotFound(format!("turn {graph_execution_id} does not exist"))
            })
    }

    /// Validates, takes the conversation's lock, stores the customer's
    /// message, then runs the turn in a background task.
    async fn start_turn(
        &self,
        session_id: &str,
        message: &str,
        tee: Option<mpsc::Sender<AgentEvent>>,
    ) -> Result<Started, ServiceError> {
        check_session_id(session_id)?;
        aics_types::validate_message(message).map_err(ServiceError::Invalid)?;
        let db = &self.inner.db;
        // The lock row names this attempt until the engine names the run.
        let lock_id = format!("turn-{}", uuid::Uuid::new_v4().simple());
        let stale_before = chrono::Utc::now()
            - chrono::Duration::from_std(self.inner.config.stale_lock_after)
                .unwrap_or(chrono::Duration::minutes(10));
        if !db
            .acquire_turn_lock(session_id, &lock_id, &self.inner.instance_id, stale_before)
            .await?
        {
            return Err(ServiceError::Conflict(
                "a turn of this conversation is running or waiting for approval; \
                 send the message when it has ended"
                    .into(),
            ));
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
                let _ = db.release_turn_lock(session_id, &lock_id).await;
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
        Ok(self.spawn_run(
            session_id.to_owned(),
            lock_id,
            Run::New(input),
            tee,
            HashSet::new(),
        ))
    }

    /// Resumes a paused run with its decisions (the caller holds its lock).
    pub(crate) fn spawn_resume(
        &self,
        session_id: String,
        graph_execution_id: String,
        decisions: HashMap<String, Decision>,
        counted: HashSet<String>,
    ) {
        let lock_id = graph_execution_id.clone();
        self.spawn_run(
            session_id,
            lock_id,
            Run::Resume {
                graph_execution_id,
                decisions,
            },
            None,
            counted,
        );
    }

    fn spawn_run(
        &self,
        session_id: String,
        lock_id: String,
        run: Run,
        tee: Option<mpsc::Sender<AgentEvent>>,
        counted: HashSet<String>,
    ) -> Started {
        let (id_tx, id_rx) = oneshot::channel();
        let (done_tx, done_rx) = oneshot::channel();
        let console = self.clone();
        let guard = self.track();
        tokio::spawn(async move {
            let _guard = guard;
            let (sink, rx) = EventSink::channel();
            let forward = tokio::spawn(forward_events(
                console.clone(),
                session_id.clone(),
                rx,
                id_tx,
                tee.clone(),
            ));
            let result = match run {
                Run::New(input) => console.inner.agent.run_turn(input, sink).await,
                Run::Resume {
                    graph_execution_id,
                    decisions,
                } => {
                    console
                        .inner
                        .agent
                        .resume(&graph_execution_id, decisions, sink)
                        .await
                }
            };
            // The sink is gone with the run: the forwarder drains and ends,
            // so every event precedes the final one published below.
            let _ = forward.await;
            let outcome = console
                .finish_run(&session_id, &lock_id, result, &counted)
                .await;
            if let Some(tee) = &tee {
                let last = match &outcome {
                    Ok(trace) => AgentEvent::Final {
                        trace: Box::new(trace.clone()),
                    },
                    Err(e) => AgentEvent::Error {
                        message: e.to_api_error().message,
                    },
                };
                let _ = tee.send(last).await;
            }
            let _ = done_tx.send(outcome);
        });
        Started {
            graph_execution_id: id_rx,
            done: done_rx,
        }
    }

    /// Stores what a run left and tells the streams: the trace, the reply
    /// or the approvals, the handling state, the lock, the metrics, `final`.
    #[tracing::instrument(skip_all, fields(session_id))]
    async fn finish_run(
        &self,
        session_id: &str,
        lock_id: &str,
        result: Result<ChatTurnTraceResult, aics_agent::AgentError>,
        counted: &HashSet<String>,
    ) -> Result<ChatTurnTraceResult, ServiceError> {
        tracing::Span::current().record("session_id", session_id);
        let db = &self.inner.db;
        let trace = match result {
            Ok(mut trace) => {
                // The price table lives with the provider's configuration.
                trace.cost_usd = self.inner.config.provider.cost_usd(&trace.usage);
                trace
            }
            Err(e) => {
                tracing::error!(error = %e, "turn failed without a trace");
                metrics::record_failed_turn();
                let _ = db
                    .append_message(
                        session_id,
                        MessageRole::System,
                        "The turn failed; the message above is kept. Please try again.",
                        None,
                    )
                    .await;
                let _ = db.set_handling(session_id, HandlingState::Ai).await;
                let _ = db.release_turn_lock(session_id, lock_id).await;
                self.inner.hub.publish(
                    Topic::Session(session_id.to_owned()),
                    AgentEvent::Error {
                        message: "the turn failed; please try again".into(),
                    },
                );
                return Err(e.into());
            }
        };
        let mut trace = trace;
        let stored = async {
            let public = trace.clone();
            db.save_turn(&public).await?;
            if trace.pending_approval {
                // The token is made here, stored as its hash and handed out
                // once, to the caller; never stored or broadcast in clear.
                let token = aics_db::tokens::new_token();
                trace.approval_token = Some(token.clone());
                for call in &trace.pending_tool_calls {
                    let approval = db
                        .create_approval(
                            &NewApproval {
                                id: call.id.clone(),
                                session_id: session_id.to_owned(),
                                graph_execution_id: trace.graph_execution_id.clone(),
                                tool: call.tool.clone(),
                                proposed_args: call.args.clone(),
                                policy_reason: call.reason.clone(),
                            },
                            &token,
                        )
                        .await?;
                    self.inner.hub.publish(
                        Topic::Approvals,
                        AgentEvent::ApprovalRequired {
                            tool: approval.tool,
                            args: approval.proposed_args,
                            id: approval.id,
                            session_id: session_id.to_owned(),
                            graph_execution_id: trace.graph_execution_id.clone(),
                            reason: approval.policy_reason,
                        },
                    );
                }
                db.set_handling(session_id, HandlingState::WaitingApproval)
                    .await?;
                db.pause_turn_lock(session_id, &trace.graph_execution_id)
                    .await?;
            } else {
                if !trace.reply.is_empty() {
                    let role = if trace.stop_reason == Some(StopReason::Error) {
                        MessageRole::System
                    } else {
                        MessageRole::Assistant
                    };
                    db.append_message(
                        session_id,
                        role,
                        &trace.reply,
                        Some(&trace.graph_execution_id),
                    )
                    .await?;
                }
                let escalated = trace
                    .tool_calls
                    .iter()
                    .any(|c| c.name == "escalate_to_human" && c.status == ToolCallStatus::Ok);
                // Once handed to a person, the conversation stays theirs
                // until someone changes it: an AI reply does not take it back.
                let was_human = db
                    .conversation(session_id)
                    .await?
                    .is_some_and(|c| c.handling == HandlingState::WaitingHuman);
                let handling = if escalated || was_human {
                    HandlingState::WaitingHuman
                } else {
                    HandlingState::Ai
                };
                db.set_handling(session_id, handling).await?;
            }
            Ok::<_, ServiceError>(public)
        }
        .await;
        if !trace.pending_approval {
            // Free the conversation whatever happened above: a stuck lock
            // would refuse every later message.
            if let Err(e) = db.release_turn_lock(session_id, lock_id).await {
                tracing::error!(error = %e, "could not release the turn lock");
            }
        }
        metrics::record_turn(&trace, counted);
        self.refresh_pending_gauge().await;
        match stored {
            Ok(public) => {
                self.inner.hub.publish(
                    Topic::Session(session_id.to_owned()),
                    AgentEvent::Final {
                        trace: Box::new(public),
                    },
                );
                Ok(trace)
            }
            Err(e) => {
                tracing::error!(error = %e, "could not store the turn");
                self.inner.hub.publish(
                    Topic::Session(session_id.to_owned()),
                    AgentEvent::Error {
                        message: "the turn could not be saved".into(),
                    },
                );
                Err(e)
            }
        }
    }
}

/// Forwards a run's events to the conversation's hub (and to the caller's
/// own stream), reporting the run's id from its `turn_start`. `final` is held
/// back: it is published after the trace is stored, so a client that reloads
/// on `final` sees the stored turn. The engine's own `approval_decided` is
/// dropped: `decide` published a fuller one (with who decided) already.
async fn forward_events(
    console: Console,
    session_id: String,
    mut rx: mpsc::UnboundedReceiver<AgentEvent>,
    id_tx: oneshot::Sender<String>,
    tee: Option<mpsc::Sender<AgentEvent>>,
) {
    let mut id_tx = Some(id_tx);
    while let Some(event) = rx.recv().await {
        if let AgentEvent::TurnStart {
            graph_execution_id, ..
        } = &event
        {
            if let Some(tx) = id_tx.take() {
                let _ = tx.send(graph_execution_id.clone());
            }
        }
        // `final` comes after the trace is stored; `approval_decided` was
        // already published by `decide`, with who decided.
        if matches!(
            event,
            AgentEvent::Final { .. } | AgentEvent::ApprovalDecided { .. }
        ) {
            continue;
        }
        if let Some(tee) = &tee {
            // The caller left: the turn goes on and is stored.
            let _ = tee.send(event.clone()).await;
        }
        console
            .inner
            .hub
            .publish(Topic::Session(session_id.clone()), event);
    }
}
