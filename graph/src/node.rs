//! Nodes: the steps of a graph, what they see, and what they say happens next.

use std::collections::HashMap;
use std::time::Instant;

use async_trait::async_trait;

use crate::checkpoint::Interrupt;
use crate::observer::Observer;
use crate::state::State;

/// What happens after a node ran.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// Follow the node's outgoing edge (plain or conditional).
    Continue,
    /// Go to this node, ignoring the node's edges (LangGraph's `Command(goto=)`).
    Goto(String),
    /// End the run now, whatever the edges say.
    End,
    /// Pause the run until resume values for these interrupts arrive; on
    /// [`crate::Graph::resume`] the same node runs again and finds them in
    /// [`NodeContext::resume`].
    Interrupt(Vec<Interrupt>),
}

/// A node failed in a way the graph cannot route around.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct NodeError {
    message: String,
    #[source]
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl NodeError {
    /// A failure described by `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            source: None,
        }
    }

    /// A failure caused by `source`.
    pub fn with_source(
        message: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self {
            message: message.into(),
            source: Some(Box::new(source)),
        }
    }

    /// What went wrong, without the source chain.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// What a node sees besides the state.
pub struct NodeContext<'a, S: State> {
    /// The run (thread) id.
    pub thread_id: &'a str,
    /// The name of the node being run.
    pub node: &'a str,
    /// The checkpoint step this node will be saved as.
    pub step: u32,
    /// Resume values keyed by interrupt id; only set for the node that
    /// paused, on the first node of a resumed run.
    pub resume: Option<&'a HashMap<String, S::Resume>>,
    /// When this invocation (start or resume) began.
    pub started: Instant,
    pub(crate) observer: &'a dyn Observer<S>,
}

impl<'a, S: State> NodeContext<'a, S> {
    /// A context for calling a node outside a graph (unit tests of nodes).
    pub fn detached(
        thread_id: &'a str,
        node: &'a str,
        resume: Option<&'a HashMap<String, S::Resume>>,
        observer: &'a dyn Observer<S>,
    ) -> Self {
        Self {
            thread_id,
            node,
            step: 0,
            resume,
            started: Instant::now(),
            observer,
        }
    }

    /// Reports progress of this node to the run's observer (never blocks).
    pub fn progress(&self, progress: S::Progress) {
        self.observer.progress(self.thread_id, self.node, progress);
    }

    /// The resume value for one interrupt id, on the resumed node.
    pub fn resume_value(&self, interrupt_id: &str) -> Option<&S::Resume> {
        self.resume.and_then(|r| r.get(interrupt_id))
    }
}

impl<S: State> std::fmt::Debug for NodeContext<'_, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeContext")
            .field("thread_id", &self.thread_id)
            .field("node", &self.node)
            .field("step", &self.step)
            .field("resumed", &self.resume.is_some())
            .finish()
    }
}

/// One node of a graph.
#[async_trait]
pub trait Node<S: State>: Send + Sync {
    /// Runs the node: it reads and updates the state in place.
    async fn run(&self, state: &mut S, ctx: &NodeContext<'_, S>) -> Result<Next, NodeError>;
}

type SyncNodeFn<S> = dyn Fn(&mut S, &NodeContext<'_, S>) -> Result<Next, NodeError> + Send + Sync;

/// A node made of a plain (synchronous) function; handy for small steps and tests.
pub struct FnNode<S: State>(Box<SyncNodeFn<S>>);

impl<S: State> FnNode<S> {
    pub fn new(
        f: impl Fn(&mut S, &NodeContext<'_, S>) -> Result<Next, NodeError> + Send + Sync + 'static,
    ) -> Self {
        Self(Box::new(f))
    }
}

#[async_trait]
impl<S: State> Node<S> for FnNode<S> {
    async fn run(&self, state: &mut S, ctx: &NodeContext<'_, S>) -> Result<Next, NodeError> {
        (self.0)(state, ctx)
    }
}
