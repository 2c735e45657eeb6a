//! The support graph of aics, built on the aics-graph engine:
//!
//! ```text
//! START → init_state → memory_trigger → route → agent ─┬─(tool calls)──→ tools ─→ agent
//!                                                       ├─(sensitive call)→ approval (interrupt) ─→ tools
//!                                                       └─(no calls / stop)→ finalize → END
//! ```
//!
//! [`SupportAgent`] runs one chat turn ([`SupportAgent::run_turn`]) or
//! continues a paused or interrupted one ([`SupportAgent::resume`]); both
//! report progress to an observer ([`EventSink`] turns it into
//! [`aics_types::AgentEvent`]s) and return the turn's
//! [`aics_types::ChatTurnTraceResult`]. The caller owns the turn: it names
//! the run, stores the outcome and announces it. A failing model does not
//! fail the call: the turn ends with a trace whose stop reason is `error`.
//!
//! ```
//! use std::sync::Arc;
//! use aics_agent::{demo::DemoModel, memory::InMemoryMemoryStore, testing::fake_tools,
//!     EventSink, SupportAgent, SupportConfig, TurnInput};
//! use aics_graph::MemoryCheckpointer;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let agent = SupportAgent::new(
//!     Arc::new(DemoModel::instant()),
//!     fake_tools(),
//!     Arc::new(MemoryCheckpointer::new()),
//!     Arc::new(InMemoryMemoryStore::default()),
//!     SupportConfig::default(),
//! );
//! let (events, mut rx) = EventSink::channel();
//! let trace = agent
//!     .run_turn("run-1", TurnInput::new("s1", "Where is my order ORD-123?"), &events)
//!     .await
//!     .unwrap();
//! assert!(rx.try_recv().is_ok(), "node, token and tool events arrived");
//! assert!(trace.reply.contains("ORD-123"));
//! assert_eq!(trace.tool_calls[0].name, "order_query");
//! # });
//! ```
//!
//! # Layout
//! - [`config`]: [`SupportConfig`], [`EngineKind`], [`PlanProtocol`] and
//!   every default.
//! - [`state`]: [`SupportState`] (what a turn knows, checkpointed) and
//!   [`Decision`] (what a paused turn resumes with).
//! - [`graph`]: the wiring and the edge rule after `agent`.
//! - [`nodes`]: one file per node.
//! - [`progress`]: [`Progress`], what nodes report while they run.
//! - [`events`]: [`EventSink`], the observer that turns a run into events.
//! - [`agent`]: [`SupportAgent`], the facade the service calls.
//! - [`trace`]: the turn's trace from its state and path.
//! - [`replies`]: the sentences the graph says itself.
//! - [`prompt`]: the system prompt, the numbered tool results, the JSON plan.
//! - [`heuristics`]: intent labels, memory instructions, language, similarity.
//! - [`normalize`]: the text as the keyword classifiers read it (NFKC, no
//!   invisible characters, diacritics or look-alike letters).

pub mod agent;
pub mod config;
pub mod events;
pub mod graph;
pub mod heuristics;
pub mod nodes;
pub mod normalize;
pub mod progress;
pub mod prompt;
pub mod replies;
pub mod state;
pub mod trace;

pub use agent::{AgentError, SupportAgent, TurnInput};
pub use config::{
    Durability, EngineKind, PlanProtocol, SupportConfig, DEFAULT_LOOP_SIMILARITY,
    DEFAULT_MAX_TOOL_LOOPS, DEFAULT_MODEL_TIMEOUT, DEFAULT_PERSONA, DEFAULT_TOOL_TIMEOUT,
};
pub use events::EventSink;
pub use progress::Progress;
pub use state::{Channel, Decision, SupportState};
pub use trace::{build_trace, has_pending};
