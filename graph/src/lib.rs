//! aics-graph: a small typed graph engine in the style of LangGraph.
//!
//! A [`Graph`] is a set of named [`Node`]s over one [`State`] type, joined by
//! plain edges (`a → b`) and conditional edges (a function of the state picks
//! one of the targets the edge declares), from [`START`] to [`END`]. A run
//! checkpoints its input, then executes one node at a time; after every node
//! the whole state is checkpointed through a [`Checkpointer`] (thread id =
//! the run's id, with the parent checkpoint, the node, the next node, the
//! path so far and the pending interrupts), so a run can be listed step by
//! step, resumed by another process after an interrupt or a crash, or
//! forked from any checkpoint. The graph's [`Durability`] says when those
//! writes happen: before the next node (`sync`, the default), beside it
//! (`async`) or in one batch when the invocation returns (`exit`); in every
//! mode an invocation returns only once they are all written.
//!
//! A node says what happens next with [`Next`]. [`Next::Interrupt`] pauses
//! the run: the engine saves a checkpoint whose `next` is the same node and
//! returns [`RunStatus::Interrupted`]; [`Graph::resume`] later runs that node
//! again with typed resume values ([`State::Resume`]) keyed by interrupt id
//! in [`NodeContext::resume`]. A node that interrupts must therefore be
//! idempotent up to the point where it pauses.
//!
//! While it runs, the engine tells an [`Observer`] which node starts and
//! ends and which checkpoint was saved, and nodes report their own progress
//! ([`State::Progress`], e.g. streamed tokens) through
//! [`NodeContext::progress`]. Observer methods are synchronous and must not
//! block: a slow listener must never slow a run.
//!
//! The engine knows nothing of chat, HTTP or SQL; docs/ARCHITECTURE.md shows
//! where it sits in aics.
//!
//! ```
//! use aics_graph::{FnNode, GraphBuilder, MemoryCheckpointer, Next, NoObserver, RunStatus, State,
//!     END, START};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize)]
//! struct Count { n: u32 }
//!
//! impl State for Count {
//!     type Resume = ();
//!     type Progress = ();
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let graph = GraphBuilder::<Count>::new()
//!     .add_node("inc", FnNode::new(|s: &mut Count, _| { s.n += 1; Ok(Next::Continue) }))
//!     .add_edge(START, "inc")
//!     .add_conditional_edges("inc", ["inc", END], |s: &Count| if s.n < 3 { "inc" } else { END })
//!     .compile()
//!     .unwrap();
//! let checkpoints = MemoryCheckpointer::new();
//! let out = graph.invoke("run-1", Count { n: 0 }, &checkpoints, &NoObserver).await.unwrap();
//! assert_eq!(out.state.n, 3);
//! assert_eq!(out.status, RunStatus::Finished);
//! assert_eq!(out.path, ["inc", "inc", "inc"]);
//! # });
//! ```
//!
//! # Layout
//! - [`state`]: the [`State`] trait: what a graph's state type declares.
//! - [`node`]: [`Node`], [`FnNode`], [`NodeContext`], [`Next`], [`NodeError`].
//! - [`builder`]: [`GraphBuilder`]: nodes, edges, the step limit, and the
//!   wiring checks of [`GraphBuilder::compile`].
//! - [`run`]: [`Graph`]: invoke, resume, snapshot, fork; the run loop.
//! - [`checkpoint`]: [`Checkpoint`], [`Interrupt`], the [`Checkpointer`]
//!   trait and [`CheckpointError`].
//! - [`durability`]: [`Durability`]: when an invocation's checkpoints are
//!   written (`sync`, `async`, `exit`) and what a crash can lose in each.
//! - [`memory`]: [`MemoryCheckpointer`], checkpoints in memory.
//! - [`name`]: [`Name`], a node's name or a thread's id, shared by the
//!   checkpoints that carry it.
//! - [`observer`]: [`Observer`] with no-op defaults, and [`NoObserver`].
//! - [`error`]: [`GraphError`], what can go wrong building or running.
#![forbid(unsafe_code)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod builder;
pub mod checkpoint;
pub mod durability;
pub mod encoded;
pub mod error;
pub mod memory;
pub mod name;
pub mod node;
pub mod observer;
pub mod run;
pub mod state;

pub use builder::GraphBuilder;
pub use checkpoint::{Checkpoint, CheckpointError, Checkpointer, Interrupt, StateJson};
pub use durability::Durability;
pub use encoded::Encoded;
pub use error::GraphError;
pub use memory::MemoryCheckpointer;
pub use name::Name;
pub use node::{FnNode, Next, Node, NodeContext, NodeError};
pub use observer::{NoObserver, Observer};
pub use run::{Graph, RunOutcome, RunStatus, Snapshot};
pub use state::State;

/// A new checkpoint or thread id: a UUID that sorts by time (v7, as
/// LangGraph's checkpoint ids do). The rows a store keys by these ids (a
/// run's checkpoints, its run and turn rows) then go to the last pages of
/// their indexes, shared by the turns that run together, instead of a
/// random page each.
pub fn new_id() -> String {
    stamp().0
}

/// The counter that keeps ids made in one millisecond in order (uuid's own
/// shared one is not public).
static IDS: std::sync::Mutex<uuid::ContextV7> = std::sync::Mutex::new(uuid::ContextV7::new());

/// A new id and the time it was made, from one reading of the clock: a
/// checkpoint's id and its `created_at` name the same millisecond (the
/// engine's checkpoints, and any a caller makes, take both from here). The
/// clock is read under the counter's lock, so ids made on other threads
/// meanwhile cannot be later than this reading (the counter would then
/// move this id's time forward to keep the ids in order); only a clock
/// stepped back can still do that.
pub fn stamp() -> (String, Timestamp) {
    let ids = IDS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let now = chrono::Utc::now();
    let at = uuid::Timestamp::from_unix(
        &*ids,
        u64::try_from(now.timestamp()).unwrap_or(0),
        now.timestamp_subsec_nanos(),
    );
    drop(ids);
    let mut text = uuid::Uuid::encode_buffer();
    let id = uuid::Uuid::new_v7(at)
        .hyphenated()
        .encode_lower(&mut text)
        .to_owned();
    (id, now)
}

/// The virtual node every run starts from.
pub const START: &str = "__start__";
/// The virtual node that ends a run.
pub const END: &str = "__end__";

/// The default number of nodes one invocation may run (LangGraph's recursion limit).
pub const DEFAULT_STEP_LIMIT: u32 = 25;

/// A point in time, UTC, as checkpoints record it.
pub type Timestamp = chrono::DateTime<chrono::Utc>;

#[cfg(test)]
mod tests;
