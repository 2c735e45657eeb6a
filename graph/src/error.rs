//! What can go wrong building or running a graph.

use crate::checkpoint::CheckpointError;
use crate::node::NodeError;

/// What can go wrong building or running a graph.
#[derive(Debug, thiserror::Error)]
pub enum GraphError {
    /// The wiring names a node that was never added (a bug in the builder code).
    #[error("unknown node {0:?}")]
    UnknownNode(String),
    /// A node has no outgoing edge (or START has none).
    #[error("node {0:?} has no outgoing edge")]
    NoEdge(String),
    /// A conditional edge routed to a node it did not declare.
    #[error("the edge from {from:?} routed to {to:?}, which it does not declare")]
    UndeclaredTarget { from: String, to: String },
    /// The invocation executed `limit` nodes without reaching END.
    #[error("step limit of {limit} reached at node {node:?}")]
    StepLimit { limit: u32, node: String },
    /// A node failed.
    #[error("node {node} failed: {source}")]
    Node {
        node: String,
        #[source]
        source: NodeError,
    },
    /// Saving or loading a checkpoint failed.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// The state could not be (de)serialised for a checkpoint.
    #[error("the state of thread {thread_id:?} could not be (de)serialised: {source}")]
    State {
        thread_id: String,
        #[source]
        source: serde_json::Error,
    },
    /// Nothing was ever saved for this thread.
    #[error("no checkpoint for thread {0:?}")]
    UnknownThread(String),
    /// The thread has no checkpoint with this id.
    #[error("thread {thread_id:?} has no checkpoint {checkpoint_id:?}")]
    UnknownCheckpoint {
        thread_id: String,
        checkpoint_id: String,
    },
}
