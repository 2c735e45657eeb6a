//! [`SupportAgent`]: the compiled support graph and what it runs with, and
//! the calls the service makes on it (run a turn, resume it, trace it, fork
//! it, list its checkpoints).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use aics_graph::{
    Checkpoint, CheckpointError, Checkpointer, Encoded, Graph, GraphError, Observer, RunOutcome,
    RunStatus,
};
use aics_types::{ChatTurnTraceResult, StopReason};

use super::config::SupportConfig;
use super::graph::build_graph;
use super::heuristics::is_chinese;
use super::replies::explanatory_reply;
use super::state::{Channel, Decision, SupportState};
use super::trace::build_trace;
use crate::memory::MemoryStore;
use crate::model::{ChatModel, Message};
use crate::tool::ToolRegistry;

/// One customer message to answer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnInput {
    pub session_id: String,
    pub customer_id: Option<String>,
    /// Where the message came from.
    pub channel: Channel,
    pub message: String,
    /// Earlier turns of the conversation (user and assistant messages).
    pub history: Vec<Message>,
}

impl TurnInput {
    pub fn new(session_id: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            session_id: session_id.into(),
            message: message.into(),
            ..Self::default()
        }
    }
}

/// What can go wrong running a turn (a failing model is not an error: it
/// ends the turn with stop reason `error`).
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// No turn with this graph execution id was ever checkpointed (HTTP 404).
    #[error("unknown graph execution: {0}")]
    UnknownRun(String),
    /// The checkpoint store failed (HTTP 500).
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// The graph itself is broken, or a checkpoint does not decode (HTTP 500).
    #[error(transparent)]
    Graph(GraphError),
}

impl From<GraphError> for AgentError {
    fn from(e: GraphError) -> Self {
        match e {
            GraphError::UnknownThread(t) => Self::UnknownRun(t),
            GraphError::UnknownCheckpoint {
                thread_id,
                checkpoint_id,
            } => Self::UnknownRun(format!("{thread_id}/{checkpoint_id}")),
            GraphError::Checkpoint(e) => Self::Checkpoint(e),
            other => Self::Graph(other),
        }
    }
}

/// What the nodes share: the model, the tools, the memory store, the config.
pub(crate) struct Shared {
    pub(crate) model: Arc<dyn ChatModel>,
    pub(crate) tools: ToolRegistry,
    pub(crate) memory: Arc<dyn MemoryStore>,
    pub(crate) config: SupportConfig,
}

/// The support agent: the compiled support graph and what it runs with.
/// Cheap to clone; one instance serves every conversation.
#[derive(Clone)]
pub struct SupportAgent {
    shared: Arc<Shared>,
    graph: Arc<Graph<SupportState>>,
    checkpointer: Arc<dyn Checkpointer>,
}

impl std::fmt::Debug for SupportAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SupportAgent")
            .field("model", &self.shared.model.name())
            .field("tools", &self.shared.tools)
            .field("config", &self.shared.config)
            .finish()
    }
}

impl SupportAgent {
    pub fn new(
        model: Arc<dyn ChatModel>,
        tools: ToolRegistry,
        checkpointer: Arc<dyn Checkpointer>,
        memory: Arc<dyn MemoryStore>,
        config: SupportConfig,
    ) -> Self {
        let shared = Arc::new(Shared {
            model,
            tools,
            memory,
            config,
        });
        let graph = match build_graph(shared.clone()) {
            Ok(g) => g,
            // The wiring is static and covered by every test; a failure here
            // is a programming error, not a runtime condition.
            Err(e) => unreachable!("the support graph is wired wrongly: {e}"),
        };
        Self {
            shared,
            graph: Arc::new(graph),
            checkpointer,
        }
    }

    pub fn config(&self) -> &SupportConfig {
        &self.shared.config
    }

    /// The provider and model that answers (`demo`, `openai:gpt-4o-mini`).
    pub fn model_name(&self) -> String {
        self.shared.model.name()
    }

    pub fn tools(&self) -> &ToolRegistry {
        &self.shared.tools
    }

    /// Runs one chat turn as run `graph_execution_id` (the caller mints it
    /// and owns the turn): the observer hears node starts and ends, tokens
    /// and tool calls; the trace says how it ended (paused for approval,
    /// answered, or failed with stop reason `error`).
    #[tracing::instrument(skip_all, fields(session_id = %input.session_id, graph_execution_id))]
    pub async fn run_turn(
        &self,
        graph_execution_id: &str,
        input: TurnInput,
        observer: &dyn Observer<SupportState>,
    ) -> Result<ChatTurnTraceResult, AgentError> {
        tracing::Span::current().record("graph_execution_id", graph_execution_id);
        let cfg = &self.shared.config;
        let turn_start = input.history.len();
        let mut messages: Vec<Encoded<Message>> =
            input.history.into_iter().map(Encoded::new).collect();
        messages.push(Message::user(input.message.clone()).into());
        let state = SupportState {
            session_id: input.session_id,
            customer_id: input.customer_id,
            channel: input.channel,
            graph_execution_id: graph_execution_id.to_owned(),
            user_message: input.message,
            messages,
            turn_start,
            engine: cfg.engine,
            protocol: cfg.protocol,
            max_steps: cfg.max_tool_loops,
            model: self.shared.model.name(),
            started_at: chrono::Utc::now(),
            ..SupportState::default()
        };
        let started = Instant::now();
        let result = self
            .graph
            .invoke(
                graph_execution_id,
                state,
                self.checkpointer.as_ref(),
                observer,
            )
            .await;
        self.conclude(graph_execution_id, result, started).await
    }

    /// Continues a run from its newest checkpoint: a turn paused for
    /// approval with decisions keyed by tool-call id (calls left undecided
    /// pause it again), or a turn that a crash cut short (it continues where
    /// its last checkpoint stands; decisions of calls already decided are
    /// ignored). Resuming a finished run runs nothing and returns its trace.
    #[tracing::instrument(skip_all, fields(graph_execution_id))]
    pub async fn resume(
        &self,
        graph_execution_id: &str,
        decisions: HashMap<String, Decision>,
        observer: &dyn Observer<SupportState>,
    ) -> Result<ChatTurnTraceResult, AgentError> {
        tracing::Span::current().record("graph_execution_id", graph_execution_id);
        let started = Instant::now();
        let result = self
            .graph
            .resume(
                graph_execution_id,
                decisions,
                self.checkpointer.as_ref(),
                observer,
            )
            .await;
        self.conclude(graph_execution_id, result, started).await
    }

    /// The trace of a turn as its newest checkpoint shows it.
    pub async fn trace(&self, graph_execution_id: &str) -> Result<ChatTurnTraceResult, AgentError> {
        let latest = self
            .graph
            .snapshot(self.checkpointer.as_ref(), graph_execution_id)
            .await?
            .ok_or_else(|| AgentError::UnknownRun(graph_execution_id.to_owned()))?;
        let status = match (&latest.next, latest.interrupts.is_empty()) {
            (None, _) => RunStatus::AlreadyFinished,
            (Some(_), false) => RunStatus::Interrupted(latest.interrupts.clone()),
            (Some(_), true) => RunStatus::Finished,
        };
        Ok(build_trace(latest.state, &latest.path, &status))
    }

    /// Copies checkpoint `checkpoint_id` of a turn into a new turn and
    /// returns the new graph execution id; [`SupportAgent::resume`] on it
    /// continues from that step (with other decisions, say) while the
    /// original turn stays as it was.
    pub async fn fork(
        &self,
        graph_execution_id: &str,
        checkpoint_id: &str,
    ) -> Result<String, AgentError> {
        let new_id = aics_graph::new_id();
        self.graph
            .fork(
                self.checkpointer.as_ref(),
                graph_execution_id,
                checkpoint_id,
                &new_id,
                // The copied state still names the old run; the fork is a run of its own.
                |s| s.graph_execution_id = new_id.clone(),
            )
            .await?;
        Ok(new_id)
    }

    /// Every checkpoint of a turn, oldest first (the trace view).
    pub async fn checkpoints(
        &self,
        graph_execution_id: &str,
    ) -> Result<Vec<Checkpoint>, AgentError> {
        Ok(self.checkpointer.list(graph_execution_id).await?)
    }

    async fn conclude(
        &self,
        id: &str,
        result: Result<RunOutcome<SupportState>, GraphError>,
        started: Instant,
    ) -> Result<ChatTurnTraceResult, AgentError> {
        match result {
            Ok(outcome) => Ok(build_trace(outcome.state, &outcome.path, &outcome.status)),
            Err(e @ (GraphError::UnknownThread(_) | GraphError::Checkpoint(_))) => Err(e.into()),
            // The run broke off (step limit, a node failed): report it as an
            // error turn, built from the last step that was saved.
            Err(e) => {
                tracing::error!(graph_execution_id = id, error = %e, "turn failed");
                let latest = self.graph.snapshot(self.checkpointer.as_ref(), id).await;
                let Ok(Some(latest)) = latest else {
                    return Err(AgentError::Graph(e));
                };
                let mut state = latest.state;
                state.stop_reason = Some(StopReason::Error);
                // The stored and shown text is short; the detail is logged above.
                state.error = Some(short_error(&e));
                state.elapsed_ms += started.elapsed().as_millis() as u64;
                if state.final_reply.is_empty() {
                    state.final_reply =
                        explanatory_reply(StopReason::Error, is_chinese(&state.user_message));
                }
                Ok(build_trace(state, &latest.path, &RunStatus::Finished))
            }
        }
    }
}

/// What a trace says about a run that broke off: clear and short, with no
/// internals (a node's error may carry SQL or provider detail, which the
/// log line of [`SupportAgent`]'s `conclude` keeps).
fn short_error(e: &GraphError) -> String {
    match e {
        GraphError::StepLimit { limit, .. } => {
            format!("the turn stopped after {limit} steps without an answer")
        }
        GraphError::Node { node, .. } => format!("the turn stopped: its {node} step failed"),
        _ => "the turn stopped unexpectedly".into(),
    }
}
