//! The aics agent engine: a small typed graph runner in the style of
//! LangGraph, the support graph of the product built on it, and the seams
//! (chat models, tools, checkpoints, memory) that the rest of aics plugs into.
//!
//! This crate knows nothing of Leptos, HTTP or SQL: it compiles and is tested
//! on its own. The database crate implements [`checkpoint::Checkpointer`],
//! [`memory::MemoryStore`] and the support [`tool::Tool`]s; the server wires
//! them together.
//!
//! # Layout
//! - [`model`]: the [`model::ChatModel`] trait, the messages it reads and the
//!   streamed chunks it returns.
//! - [`tool`]: the [`tool::Tool`] trait, typed tools with schemas derived by
//!   schemars, and the registry the graph calls them through.
//! - [`checkpoint`]: the [`checkpoint::Checkpointer`] trait and an in-memory one.
//! - [`memory`]: the [`memory::MemoryStore`] trait and an in-memory one.
//! - [`events`]: [`events::EventSink`], the bounded channel a turn reports
//!   its [`aics_types::AgentEvent`]s through (the server forwards it to SSE).
//! - [`llm`]: one streamed model call, its tokens forwarded as events.
//! - [`graph`]: the generic engine — nodes, plain and conditional edges,
//!   checkpoints after every node, interrupts, resume, fork, step limit.
//! - [`support`]: the support graph of the product ([`support::SupportAgent`]):
//!   init_state → memory_trigger → route → agent ⇄ tools (with approval) →
//!   finalize, both planning protocols and both engines.
//! - [`demo`]: [`demo::DemoModel`], the deterministic offline model.
//! - [`testing`]: in-memory fakes of the support tools and a scripted model,
//!   for this crate's tests and the server's.
#![forbid(unsafe_code)]
// Tests may unwrap: a panic is how they fail.
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod checkpoint;
pub mod demo;
pub mod events;
pub mod graph;
pub mod llm;
pub mod memory;
pub mod model;
pub mod support;
pub mod testing;
pub mod tool;

pub use events::EventSink;
pub use support::{
    AgentError, Decision, EngineKind, PlanProtocol, SupportAgent, SupportConfig, TurnInput,
};
