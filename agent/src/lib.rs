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
#![forbid(unsafe_code)]

pub mod checkpoint;
pub mod memory;
pub mod model;
pub mod tool;
