//! The support graph of aics, built on [`crate::graph`]:
//!
//! ```text
//! START → init_state → memory_trigger → route → agent ─┬─(tool calls)──→ tools ─→ agent
//!                                                       ├─(sensitive call)→ approval (interrupt) ─→ tools
//!                                                       └─(no calls / stop)→ finalize → END
//! ```
//!
//! [`SupportAgent`] runs one chat turn ([`SupportAgent::run_turn`]) or
//! continues a turn paused for approval ([`SupportAgent::resume`]); both
//! stream [`aics_types::AgentEvent`]s into an [`EventSink`] and return the
//! turn's [`ChatTurnTraceResult`]. A failing model does not fail the call:
//! the turn ends with an `error` event and a trace whose stop reason is
//! `error`, so the server can store it like any other turn.
//!
//! ```
//! use std::sync::Arc;
//! use aics_agent::{checkpoint::MemoryCheckpointer, demo::DemoModel, memory::InMemoryMemoryStore,
//!     testing::fake_tools, EventSink, SupportAgent, SupportConfig, TurnInput};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let agent = SupportAgent::new(
//!     Arc::new(DemoModel::instant()),
//!     fake_tools(),
//!     Arc::new(MemoryCheckpointer::new()),
//!     Arc::new(InMemoryMemoryStore::default()),
//!     SupportConfig::default(),
//! );
//! let (events, mut rx) = EventSink::channel(256);
//! let forward = tokio::spawn(async move { while let Some(_ev) = rx.recv().await { /* → SSE */ } });
//! let trace = agent
//!     .run_turn(TurnInput::new("s1", "Where is my order ORD-123?"), events)
//!     .await
//!     .unwrap();
//! forward.await.unwrap();
//! assert!(trace.reply.contains("ORD-123"));
//! assert_eq!(trace.tool_calls[0].name, "order_query");
//! # });
//! ```

pub mod heuristics;
pub mod nodes;
pub mod prompt;
pub mod state;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use aics_types::{
    AgentEvent, ChatTurnTraceResult, Intent, PendingToolCall, StopReason, ToolCallStatus,
};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::checkpoint::{Checkpoint, CheckpointError, Checkpointer, Interrupt};
use crate::events::EventSink;
use crate::graph::{Graph, GraphBuilder, GraphError, RunOutcome, RunStatus, END, START};
use crate::memory::MemoryStore;
use crate::model::{ChatModel, Message};
use crate::tool::ToolRegistry;
use nodes::{
    Agent, Approval, Finalize, InitState, MemoryTrigger, Route, Tools, AGENT, APPROVAL, FINALIZE,
    INIT_STATE, MEMORY_TRIGGER, ROUTE, TOOLS,
};
pub use state::SupportState;

/// Which engine runs a turn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EngineKind {
    /// The ReAct loop: the model plans, tools run, the model plans again,
    /// up to `max_tool_loops` tool steps.
    #[default]
    Graph,
    /// Seed 004's linear pipeline: one routed tool call, then respond.
    Linear,
}

impl EngineKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Graph => "graph",
            Self::Linear => "linear",
        }
    }

    /// Reads `graph` / `linear` (as in `AICS_ENGINE`).
    pub fn parse(name: &str) -> Option<Self> {
        match name.trim().to_ascii_lowercase().as_str() {
            "graph" => Some(Self::Graph),
            "linear" => Some(Self::Linear),
            _ => None,
        }
    }
}

/// How the model asks for tools.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanProtocol {
    /// Native tool calling (OpenAI `tools`).
    #[default]
    Native,
    /// Seed 004's JSON plan in the reply text; an unparsable plan means respond.
    JsonPlan,
}

impl PlanProtocol {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Native => "native",
            Self::JsonPlan => "json_plan",
        }
    }

    /// Reads `native` / `json_plan` (`json` and `json-plan` too).
    pub fn parse(name: &str) -> Option<Self> {
        match name.trim().to_ascii_lowercase().as_str() {
            "native" | "tools" => Some(Self::Native),
            "json_plan" | "json-plan" | "json" => Some(Self::JsonPlan),
            _ => None,
        }
    }
}

/// The persona of the demo company, the default system prompt.
pub const DEFAULT_PERSONA: &str =
    "You are the customer-support agent of Northwind Gadgets (北风数码), an online electronics shop. \
Answer in the customer's language, briefly and precisely. Use the tools to look up orders, \
logistics, tickets and policy articles; never invent order data. Open a ticket for complaints \
about late or lost orders. Hand the conversation to a human when the customer asks for one.";

/// How the support agent behaves.
#[derive(Debug, Clone)]
pub struct SupportConfig {
    pub engine: EngineKind,
    /// Tool steps per turn before the model must answer without tools (`max-tool-loops`).
    pub max_tool_loops: u32,
    pub protocol: PlanProtocol,
    /// How long one tool call may take before it becomes a timeout error.
    pub tool_timeout: Duration,
    /// How long the model may stay silent (before its stream, between chunks).
    pub model_timeout: Duration,
    /// The system prompt's persona; memories are appended to it.
    pub persona: String,
    /// Loop detection: arguments and results at least this similar (0..=1)
    /// count as a repetition.
    pub loop_similarity: f64,
}

impl Default for SupportConfig {
    fn default() -> Self {
        Self {
            engine: EngineKind::Graph,
            max_tool_loops: 5,
            protocol: PlanProtocol::Native,
            tool_timeout: Duration::from_secs(15),
            model_timeout: Duration::from_secs(60),
            persona: DEFAULT_PERSONA.to_owned(),
            loop_similarity: 0.9,
        }
    }
}

/// One customer message to answer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnInput {
    pub session_id: String,
    pub customer_id: Option<String>,
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

/// A supervisor's decision on one pending tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    /// Run the call, with these arguments instead of the proposed ones when given.
    Approve {
        #[serde(default)]
        args: Option<Value>,
    },
    /// Do not run it; the model sees `denied by supervisor: <reason>`.
    Reject { reason: String },
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
    /// The graph itself is broken (HTTP 500).
    #[error(transparent)]
    Graph(GraphError),
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

/// Builds the support graph over `shared`.
pub(crate) fn build_graph(shared: Arc<Shared>) -> Result<Graph<SupportState>, GraphError> {
    let tools = shared.tools.clone();
    // Enough room for every tool step, its approval and the forced answer.
    let limit = 8 + 3 * shared.config.max_tool_loops;
    GraphBuilder::new()
        .add_node(INIT_STATE, InitState(shared.clone()))
        .add_node(MEMORY_TRIGGER, MemoryTrigger(shared.clone()))
        .add_node(ROUTE, Route)
        .add_node(AGENT, Agent(shared.clone()))
        .add_node(APPROVAL, Approval(shared.clone()))
        .add_node(TOOLS, Tools(shared))
        .add_node(FINALIZE, Finalize)
        .add_edge(START, INIT_STATE)
        .add_edge(INIT_STATE, MEMORY_TRIGGER)
        .add_edge(MEMORY_TRIGGER, ROUTE)
        .add_edge(ROUTE, AGENT)
        .add_conditional_edges(AGENT, move |s: &SupportState| {
            nodes::route_after_agent(&tools, s).to_owned()
        })
        .add_edge(APPROVAL, TOOLS)
        .add_edge(TOOLS, AGENT)
        .add_edge(FINALIZE, END)
        .step_limit(limit)
        .compile()
}

/// A fresh single-use approval token: 256 random bits from a CSPRNG, hex.
fn new_approval_token() -> String {
    let mut bytes = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
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

    /// Runs one chat turn: `turn_start`, node and tool events, tokens,
    /// `approval_required` when it pauses, then `final` with the trace
    /// (preceded by `error` when the model failed).
    #[tracing::instrument(skip_all, fields(session_id = %input.session_id))]
    pub async fn run_turn(
        &self,
        input: TurnInput,
        events: EventSink,
    ) -> Result<ChatTurnTraceResult, AgentError> {
        let id = uuid::Uuid::new_v4().to_string();
        events
            .emit(AgentEvent::TurnStart {
                session_id: input.session_id.clone(),
                graph_execution_id: id.clone(),
                resumed: false,
            })
            .await;
        let cfg = &self.shared.config;
        let turn_start = input.history.len();
        let mut messages = input.history;
        messages.push(Message::user(input.message.clone()));
        let state = SupportState {
            session_id: input.session_id,
            customer_id: input.customer_id,
            graph_execution_id: id.clone(),
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
            .invoke(&id, state, self.checkpointer.as_ref(), &events)
            .await;
        self.conclude(&id, result, started, &events).await
    }

    /// Continues a turn paused for approval with decisions keyed by
    /// tool-call id. Calls left undecided pause it again (with a new token);
    /// resuming a finished turn runs nothing and returns its trace.
    #[tracing::instrument(skip_all, fields(graph_execution_id))]
    pub async fn resume(
        &self,
        graph_execution_id: &str,
        decisions: HashMap<String, Decision>,
        events: EventSink,
    ) -> Result<ChatTurnTraceResult, AgentError> {
        let latest = self
            .checkpointer
            .latest(graph_execution_id)
            .await?
            .ok_or_else(|| AgentError::UnknownRun(graph_execution_id.to_owned()))?;
        let session_id = latest
            .state
            .get("session_id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        events
            .emit(AgentEvent::TurnStart {
                session_id,
                graph_execution_id: graph_execution_id.to_owned(),
                resumed: true,
            })
            .await;
        let decisions = decisions
            .into_iter()
            .filter_map(|(id, d)| Some((id, serde_json::to_value(d).ok()?)))
            .collect();
        let started = Instant::now();
        let result = self
            .graph
            .resume(
                graph_execution_id,
                decisions,
                self.checkpointer.as_ref(),
                &events,
            )
            .await;
        self.conclude(graph_execution_id, result, started, &events)
            .await
    }

    /// The trace of a turn as its newest checkpoint shows it (a paused turn
    /// gets no token here: tokens are only handed out when a turn pauses).
    pub async fn trace(&self, graph_execution_id: &str) -> Result<ChatTurnTraceResult, AgentError> {
        let latest = self
            .checkpointer
            .latest(graph_execution_id)
            .await?
            .ok_or_else(|| AgentError::UnknownRun(graph_execution_id.to_owned()))?;
        let state: SupportState = serde_json::from_value(latest.state)
            .map_err(|e| AgentError::Checkpoint(CheckpointError::Corrupt(e.to_string())))?;
        let status = match (latest.next, latest.pending_interrupts.is_empty()) {
            (None, _) => RunStatus::AlreadyFinished,
            (Some(_), false) => RunStatus::Interrupted(latest.pending_interrupts),
            (Some(_), true) => RunStatus::Finished,
        };
        let mut trace = build_trace(&state, &status);
        trace.approval_token = None;
        Ok(trace)
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
        let source = self
            .checkpointer
            .get(graph_execution_id, checkpoint_id)
            .await?
            .ok_or_else(|| {
                AgentError::UnknownRun(format!("{graph_execution_id}/{checkpoint_id}"))
            })?;
        let new_id = uuid::Uuid::new_v4().to_string();
        let mut state = source.state;
        // The copied state still names the old run; the fork is a run of its own.
        if let Some(map) = state.as_object_mut() {
            map.insert("graph_execution_id".into(), Value::String(new_id.clone()));
        }
        let fork = Checkpoint {
            thread_id: new_id.clone(),
            checkpoint_id: uuid::Uuid::new_v4().to_string(),
            parent_id: Some(source.checkpoint_id),
            state,
            created_at: chrono::Utc::now(),
            ..source
        };
        self.checkpointer.put(&fork).await?;
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
        events: &EventSink,
    ) -> Result<ChatTurnTraceResult, AgentError> {
        let trace = match result {
            Ok(outcome) => build_trace(&outcome.state, &outcome.status),
            Err(GraphError::UnknownThread(t)) => return Err(AgentError::UnknownRun(t)),
            Err(GraphError::Checkpoint(e)) => {
                events
                    .emit(AgentEvent::Error {
                        message: "the turn could not be saved".into(),
                    })
                    .await;
                return Err(AgentError::Checkpoint(e));
            }
            // The run broke off (step limit, a node failed): report it as an
            // error turn, built from the last step that was saved.
            Err(e) => {
                tracing::error!(graph_execution_id = id, error = %e, "turn failed");
                events
                    .emit(AgentEvent::Error {
                        message: e.to_string(),
                    })
                    .await;
                let latest = self.checkpointer.latest(id).await?;
                let Some(mut state) =
                    latest.and_then(|c| serde_json::from_value::<SupportState>(c.state).ok())
                else {
                    return Err(AgentError::Graph(e));
                };
                state.stop_reason = Some(StopReason::Error);
                state.error = Some(e.to_string());
                state.elapsed_ms += started.elapsed().as_millis() as u64;
                if state.final_reply.is_empty() {
                    state.final_reply = nodes::explanatory_reply(
                        StopReason::Error,
                        heuristics::is_chinese(&state.user_message),
                    );
                }
                build_trace(&state, &RunStatus::Finished)
            }
        };
        events
            .emit(AgentEvent::Final {
                trace: Box::new(trace.clone()),
            })
            .await;
        Ok(trace)
    }
}

fn pending_of(interrupts: &[Interrupt]) -> Vec<PendingToolCall> {
    interrupts
        .iter()
        .map(|i| PendingToolCall {
            id: i.id.clone(),
            tool: i
                .value
                .get("tool")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            args: i.value.get("args").cloned().unwrap_or(Value::Null),
            reason: i
                .value
                .get("reason")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        })
        .collect()
}

/// The trace of a turn from its state and how the invocation ended.
pub fn build_trace(s: &SupportState, status: &RunStatus) -> ChatTurnTraceResult {
    let (pending, token, stop_reason) = match status {
        RunStatus::Interrupted(list) => (
            pending_of(list),
            Some(new_approval_token()),
            Some(StopReason::AwaitingApproval),
        ),
        _ => (Vec::new(), None, s.stop_reason),
    };
    let mut tools_used: Vec<String> = Vec::new();
    for r in s.finished_records() {
        if !tools_used.contains(&r.name) {
            tools_used.push(r.name.clone());
        }
    }
    let finished: Vec<_> = s.finished_records().collect();
    let tool_result = match finished.as_slice() {
        [only] => Some(match &only.output {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        }),
        _ => None,
    };
    ChatTurnTraceResult {
        graph_execution_id: s.graph_execution_id.clone(),
        session_id: s.session_id.clone(),
        reply: if token.is_some() {
            String::new()
        } else {
            s.final_reply.clone()
        },
        intent: s.intent.unwrap_or(Intent::Consult),
        tool_calls: s.tool_records.clone(),
        executed_nodes: s.executed_nodes.clone(),
        duration_ms: s.elapsed_ms,
        llm_calls: s.llm_calls,
        steps_taken: s.current_step,
        stop_reason,
        pending_approval: token.is_some(),
        approval_token: token,
        pending_tool_calls: pending,
        usage: s.usage,
        tools_used,
        tool_result,
        engine: s.engine.as_str().to_owned(),
        model: s.model.clone(),
        cost_usd: None,
        error: s.error.clone(),
        started_at: s.started_at,
    }
}

/// Whether any call of the trace is still waiting for a supervisor.
pub fn has_pending(trace: &ChatTurnTraceResult) -> bool {
    trace
        .tool_calls
        .iter()
        .any(|c| c.status == ToolCallStatus::Pending)
}
