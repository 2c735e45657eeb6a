//! Observers: how a run tells the world what it does, without coupling.
//!
//! The engine calls an [`Observer`] when a node starts and ends and when a
//! checkpoint was saved; nodes report their own [`State::Progress`] through
//! [`crate::NodeContext::progress`]. Every method has a no-op default, so an
//! observer implements only what it needs (rig's hook style).

use crate::checkpoint::Checkpoint;
use crate::state::State;

/// Receives what a run does. Methods are synchronous and must return at
/// once (push into a channel, bump a counter): the run waits for them.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use aics_graph::{Observer, State};
///
/// # #[derive(serde::Serialize, serde::Deserialize)] struct S;
/// # impl State for S { type Resume = (); type Progress = String; }
/// #[derive(Default)]
/// struct Tokens(AtomicUsize);
///
/// impl Observer<S> for Tokens {
///     fn progress(&self, _thread_id: &str, _node: &str, _token: String) {
///         self.0.fetch_add(1, Ordering::Relaxed);
///     }
/// }
/// ```
pub trait Observer<S: State>: Send + Sync {
    /// A node is about to run.
    fn node_started(&self, _thread_id: &str, _node: &str, _step: u32) {}

    /// A node ran (its checkpoint follows).
    fn node_finished(&self, _thread_id: &str, _node: &str, _step: u32) {}

    /// A checkpoint was made and handed to the checkpointer (the state after
    /// a node, or the input). In [`crate::Durability::Sync`] it is written
    /// before the next node starts; in `async` and `exit` later, and always
    /// before the invocation returns.
    fn checkpoint_saved(&self, _checkpoint: &Checkpoint) {}

    /// A node reported progress.
    fn progress(&self, _thread_id: &str, _node: &str, _progress: S::Progress) {}
}

/// An observer that ignores everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoObserver;

impl<S: State> Observer<S> for NoObserver {}
