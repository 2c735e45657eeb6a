//! The aics support agent: the support graph of the product on the
//! [`aics_graph`] engine, the five support tools defined once, and the seams
//! (chat models, tools, memory) that the rest of aics plugs into.
//!
//! This crate knows nothing of Leptos, HTTP or SQL: it compiles and is tested
//! on its own. aics-db implements [`tools::SupportBackend`],
//! [`memory::MemoryStore`] and the engine's checkpointer; the service wires
//! them together (docs/ARCHITECTURE.md).
//!
//! # Layout
//! - [`model`]: the [`model::ChatModel`] trait, the messages it reads and the
//!   streamed chunks it returns.
//! - [`llm`]: one streamed model call, its text handed on as it arrives.
//! - [`tool`]: the [`tool::Tool`] trait, typed tools with schemas derived by
//!   schemars, and the registry the graph calls them through.
//! - [`tools`]: the five support tools over one [`tools::SupportBackend`].
//! - [`memory`]: the [`memory::MemoryStore`] trait and an in-memory one.
//! - [`support`]: the support graph ([`support::SupportAgent`]):
//!   init_state → memory_trigger → route → agent ⇄ tools (with approval) →
//!   finalize, both planning protocols and both engines, one file per node.
//! - [`policy`]: the approval policy: which calls wait for a supervisor,
//!   which are refused, their deadlines; the rule language.
//! - [`demo`]: [`demo::DemoModel`], the deterministic offline model.
//! - [`testing`]: a fixed shop for the support tools, failing and slow tools
//!   and a scripted model, for this crate's tests and the server's.
#![forbid(unsafe_code)]
// Tests may unwrap: a panic is how they fail.
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod demo;
pub mod llm;
pub mod memory;
pub mod model;
pub mod policy;
pub mod support;
pub mod testing;
pub mod tool;
pub mod tools;

pub use support::{
    AgentError, Channel, Decision, Durability, EngineKind, EventSink, PlanProtocol, Progress,
    SupportAgent, SupportConfig, SupportState, TurnInput,
};
