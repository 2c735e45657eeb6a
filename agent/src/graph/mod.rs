//! A small typed graph engine in the style of LangGraph.
//!
//! A [`Graph`] is a set of named [`Node`]s over one state type `S`, joined by
//! plain edges (`a → b`) and conditional edges (a function of the state names
//! the next node), from [`START`] to [`END`]. A run executes one node at a
//! time; after every node the whole state is written through a
//! [`Checkpointer`] (thread id = the run's id, with parent id, node, next
//! node and pending interrupts), so a run can be listed step by step,
//! resumed by another engine instance after an interrupt or a restart, or
//! forked from any checkpoint.
//!
//! A node says what happens next with [`Next`]. [`Next::Interrupt`] pauses
//! the run: the engine saves a checkpoint whose `next` is the same node and
//! returns [`RunStatus::Interrupted`]; [`Graph::resume`] later runs that node
//! again with the decisions keyed by interrupt id in
//! [`NodeContext::resume`]. A node that interrupts must therefore be
//! idempotent up to the point where it pauses.
//!
//! A run that executes more than [`GraphBuilder::step_limit`] nodes ends with
//! [`GraphError::StepLimit`] instead of looping for ever.
//!
//! ```
//! use aics_agent::checkpoint::MemoryCheckpointer;
//! use aics_agent::events::EventSink;
//! use aics_agent::graph::{FnNode, GraphBuilder, Next, RunStatus, END, START};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize)]
//! struct Count { n: u32 }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let graph = GraphBuilder::<Count>::new()
//!     .add_node("inc", FnNode::new(|s: &mut Count, _| { s.n += 1; Ok(Next::Continue) }))
//!     .add_edge(START, "inc")
//!     .add_conditional_edges("inc", |s: &Count| if s.n < 3 { "inc".into() } else { END.into() })
//!     .compile()
//!     .unwrap();
//! let cp = MemoryCheckpointer::new();
//! let out = graph.invoke("run-1", Count { n: 0 }, &cp, &EventSink::none()).await.unwrap();
//! assert_eq!(out.state.n, 3);
//! assert!(matches!(out.status, RunStatus::Finished));
//! # });
//! ```

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use aics_types::AgentEvent;
use async_trait::async_trait;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::checkpoint::{Checkpoint, CheckpointError, Checkpointer, Interrupt};
use crate::events::EventSink;

/// The virtual node every run starts from.
pub const START: &str = "__start__";
/// The virtual node that ends a run.
pub const END: &str = "__end__";

/// The default number of nodes one run may execute (LangGraph's recursion limit).
pub const DEFAULT_STEP_LIMIT: u32 = 25;

/// What a state type needs: it is checkpointed as JSON after every node.
pub trait GraphState: Serialize + DeserializeOwned + Send + Sync + 'static {}
impl<T: Serialize + DeserializeOwned + Send + Sync + 'static> GraphState for T {}

/// What happens after a node ran.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// Follow the node's outgoing edge (plain or conditional).
    Continue,
    /// Go to this node, ignoring the node's edges (LangGraph's `Command(goto=)`).
    Goto(String),
    /// End the run now, whatever the edges say.
    End,
    /// Pause the run until decisions for these interrupts arrive; on
    /// [`Graph::resume`] the same node runs again and finds them in
    /// [`NodeContext::resume`].
    Interrupt(Vec<Interrupt>),
}

/// A node failed in a way the graph cannot route around.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct NodeError(pub String);

/// What can go wrong running a graph.
#[derive(Debug, thiserror::Error)]
pub enum GraphError {
    /// The graph names a node that was never added (bug in the builder code).
    #[error("unknown node: {0}")]
    UnknownNode(String),
    /// A node has no outgoing edge and did not say where to go.
    #[error("node {0} has no outgoing edge")]
    NoEdge(String),
    /// The run executed `limit` nodes without reaching END.
    #[error("step limit of {limit} reached at node {node}")]
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
    #[error("state serialisation failed: {0}")]
    State(String),
    /// Nothing was ever saved for this thread (or this checkpoint).
    #[error("no checkpoint for thread {0}")]
    UnknownThread(String),
}

/// What a node sees besides the state.
#[derive(Debug)]
pub struct NodeContext<'a> {
    /// The run (thread) id: one chat turn's graph execution id.
    pub thread_id: &'a str,
    /// The name of the node being run.
    pub node: &'a str,
    /// The checkpoint step this node will be saved as.
    pub step: u32,
    pub events: &'a EventSink,
    /// Decisions keyed by interrupt id; only set for the node that paused,
    /// on the first node of a resumed run.
    pub resume: Option<&'a HashMap<String, Value>>,
    /// When this invocation (start or resume) began.
    pub started: Instant,
}

/// One node of a graph.
#[async_trait]
pub trait Node<S>: Send + Sync {
    /// Runs the node: it reads and updates the state in place.
    async fn run(&self, state: &mut S, ctx: &NodeContext<'_>) -> Result<Next, NodeError>;
}

type SyncNodeFn<S> = dyn Fn(&mut S, &NodeContext<'_>) -> Result<Next, NodeError> + Send + Sync;

/// A node made of a plain (synchronous) function; handy for small steps and tests.
pub struct FnNode<S>(Box<SyncNodeFn<S>>);

impl<S> FnNode<S> {
    pub fn new(
        f: impl Fn(&mut S, &NodeContext<'_>) -> Result<Next, NodeError> + Send + Sync + 'static,
    ) -> Self {
        Self(Box::new(f))
    }
}

#[async_trait]
impl<S: Send + Sync> Node<S> for FnNode<S> {
    async fn run(&self, state: &mut S, ctx: &NodeContext<'_>) -> Result<Next, NodeError> {
        (self.0)(state, ctx)
    }
}

type RouteFn<S> = dyn Fn(&S) -> String + Send + Sync;

enum Edge<S> {
    To(String),
    When(Arc<RouteFn<S>>),
}

/// Builds a [`Graph`].
pub struct GraphBuilder<S> {
    nodes: HashMap<String, Arc<dyn Node<S>>>,
    edges: HashMap<String, Edge<S>>,
    step_limit: u32,
}

impl<S: GraphState> Default for GraphBuilder<S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S: GraphState> GraphBuilder<S> {
    pub fn new() -> Self {
        Self {
            nodes: HashMap::new(),
            edges: HashMap::new(),
            step_limit: DEFAULT_STEP_LIMIT,
        }
    }

    /// Adds a node under `name` (replacing one of the same name).
    pub fn add_node(mut self, name: impl Into<String>, node: impl Node<S> + 'static) -> Self {
        self.nodes.insert(name.into(), Arc::new(node));
        self
    }

    /// Always goes from `from` to `to` (either may be [`START`] / [`END`]).
    pub fn add_edge(mut self, from: impl Into<String>, to: impl Into<String>) -> Self {
        self.edges.insert(from.into(), Edge::To(to.into()));
        self
    }

    /// Goes from `from` to the node `route` names for the state.
    pub fn add_conditional_edges(
        mut self,
        from: impl Into<String>,
        route: impl Fn(&S) -> String + Send + Sync + 'static,
    ) -> Self {
        self.edges.insert(from.into(), Edge::When(Arc::new(route)));
        self
    }

    /// How many nodes one invocation may run before it ends with
    /// [`GraphError::StepLimit`].
    pub fn step_limit(mut self, limit: u32) -> Self {
        self.step_limit = limit.max(1);
        self
    }

    /// Checks the wiring: an edge from START, plain edges to known nodes,
    /// an outgoing edge for every node.
    pub fn compile(self) -> Result<Graph<S>, GraphError> {
        if !self.edges.contains_key(START) {
            return Err(GraphError::NoEdge(START.to_owned()));
        }
        for (from, edge) in &self.edges {
            if from != START && !self.nodes.contains_key(from) {
                return Err(GraphError::UnknownNode(from.clone()));
            }
            if let Edge::To(to) = edge {
                if to != END && !self.nodes.contains_key(to) {
                    return Err(GraphError::UnknownNode(to.clone()));
                }
            }
        }
        let names: HashSet<&String> = self.nodes.keys().collect();
        for name in names {
            if !self.edges.contains_key(name) {
                return Err(GraphError::NoEdge(name.clone()));
            }
        }
        Ok(Graph {
            nodes: self.nodes,
            edges: self.edges,
            step_limit: self.step_limit,
        })
    }
}

/// How a run (or a resumed run) ended.
#[derive(Debug, Clone, PartialEq)]
pub enum RunStatus {
    /// The run reached END.
    Finished,
    /// A node paused the run; resume it with decisions keyed by these ids.
    Interrupted(Vec<Interrupt>),
    /// `resume` was called on a run that had already reached END: nothing ran.
    AlreadyFinished,
}

/// The state at the end of an invocation and how it ended.
#[derive(Debug)]
pub struct RunOutcome<S> {
    pub state: S,
    pub status: RunStatus,
    /// The last checkpoint written (or found, for [`RunStatus::AlreadyFinished`]).
    pub checkpoint_id: Option<String>,
}

/// A compiled graph; cheap to share behind an `Arc`, runs many threads at once.
pub struct Graph<S> {
    nodes: HashMap<String, Arc<dyn Node<S>>>,
    edges: HashMap<String, Edge<S>>,
    step_limit: u32,
}

/// Where a run continues from.
struct Cursor {
    node: String,
    parent_id: Option<String>,
    step: u32,
}

impl<S: GraphState> Graph<S> {
    /// Starts a new run of thread `thread_id` from START with `state`.
    pub async fn invoke(
        &self,
        thread_id: &str,
        state: S,
        checkpointer: &dyn Checkpointer,
        events: &EventSink,
    ) -> Result<RunOutcome<S>, GraphError> {
        let first = self.next_after(START, &state)?;
        let cursor = Cursor {
            node: first,
            parent_id: None,
            step: 0,
        };
        self.run_from(thread_id, state, cursor, None, checkpointer, events)
            .await
    }

    /// Continues thread `thread_id` from its newest checkpoint. The node that
    /// paused runs again and sees `decisions` in [`NodeContext::resume`]. A
    /// run that already ended is returned as it is
    /// ([`RunStatus::AlreadyFinished`]), so resuming twice is harmless.
    pub async fn resume(
        &self,
        thread_id: &str,
        decisions: HashMap<String, Value>,
        checkpointer: &dyn Checkpointer,
        events: &EventSink,
    ) -> Result<RunOutcome<S>, GraphError> {
        let latest = checkpointer
            .latest(thread_id)
            .await?
            .ok_or_else(|| GraphError::UnknownThread(thread_id.to_owned()))?;
        let state: S =
            serde_json::from_value(latest.state).map_err(|e| GraphError::State(e.to_string()))?;
        let Some(next) = latest.next else {
            return Ok(RunOutcome {
                state,
                status: RunStatus::AlreadyFinished,
                checkpoint_id: Some(latest.checkpoint_id),
            });
        };
        let cursor = Cursor {
            node: next,
            parent_id: Some(latest.checkpoint_id),
            step: latest.step + 1,
        };
        self.run_from(
            thread_id,
            state,
            cursor,
            Some(&decisions),
            checkpointer,
            events,
        )
        .await
    }

    /// Copies checkpoint `checkpoint_id` of `thread_id` as the first
    /// checkpoint of `new_thread_id`; [`Graph::resume`] on the new thread then
    /// continues from that point while the original run stays as it was.
    pub async fn fork(
        &self,
        checkpointer: &dyn Checkpointer,
        thread_id: &str,
        checkpoint_id: &str,
        new_thread_id: &str,
    ) -> Result<Checkpoint, GraphError> {
        let source = checkpointer
            .get(thread_id, checkpoint_id)
            .await?
            .ok_or_else(|| GraphError::UnknownThread(format!("{thread_id}/{checkpoint_id}")))?;
        let fork = Checkpoint {
            thread_id: new_thread_id.to_owned(),
            checkpoint_id: uuid::Uuid::new_v4().to_string(),
            parent_id: Some(source.checkpoint_id.clone()),
            created_at: chrono::Utc::now(),
            ..source
        };
        checkpointer.put(&fork).await?;
        Ok(fork)
    }

    /// The state saved in one checkpoint.
    pub async fn state_at(
        &self,
        checkpointer: &dyn Checkpointer,
        thread_id: &str,
        checkpoint_id: &str,
    ) -> Result<S, GraphError> {
        let cp = checkpointer
            .get(thread_id, checkpoint_id)
            .await?
            .ok_or_else(|| GraphError::UnknownThread(format!("{thread_id}/{checkpoint_id}")))?;
        serde_json::from_value(cp.state).map_err(|e| GraphError::State(e.to_string()))
    }

    fn next_after(&self, from: &str, state: &S) -> Result<String, GraphError> {
        let next = match self.edges.get(from) {
            Some(Edge::To(to)) => to.clone(),
            Some(Edge::When(route)) => route(state),
            None => return Err(GraphError::NoEdge(from.to_owned())),
        };
        if next != END && !self.nodes.contains_key(&next) {
            return Err(GraphError::UnknownNode(next));
        }
        Ok(next)
    }

    async fn run_from(
        &self,
        thread_id: &str,
        mut state: S,
        mut cursor: Cursor,
        mut resume: Option<&HashMap<String, Value>>,
        checkpointer: &dyn Checkpointer,
        events: &EventSink,
    ) -> Result<RunOutcome<S>, GraphError> {
        let started = Instant::now();
        let mut executed = 0u32;
        loop {
            if cursor.node == END {
                return Ok(RunOutcome {
                    state,
                    status: RunStatus::Finished,
                    checkpoint_id: cursor.parent_id,
                });
            }
            if executed >= self.step_limit {
                return Err(GraphError::StepLimit {
                    limit: self.step_limit,
                    node: cursor.node,
                });
            }
            let ctx = NodeContext {
                thread_id,
                node: &cursor.node,
                step: cursor.step,
                events,
                resume: resume.take(),
                started,
            };
            let next = self.run_node(&mut state, &ctx).await?;
            executed += 1;
            let (next_node, interrupts) = match next {
                Next::Continue => (self.next_after(&cursor.node, &state)?, Vec::new()),
                Next::Goto(to) => {
                    if to != END && !self.nodes.contains_key(&to) {
                        return Err(GraphError::UnknownNode(to));
                    }
                    (to, Vec::new())
                }
                Next::End => (END.to_owned(), Vec::new()),
                // The paused node runs again on resume.
                Next::Interrupt(list) => (cursor.node.clone(), list),
            };
            let checkpoint = Checkpoint {
                thread_id: thread_id.to_owned(),
                checkpoint_id: uuid::Uuid::new_v4().to_string(),
                parent_id: cursor.parent_id.take(),
                step: cursor.step,
                node: cursor.node.clone(),
                next: (next_node != END).then(|| next_node.clone()),
                state: serde_json::to_value(&state)
                    .map_err(|e| GraphError::State(e.to_string()))?,
                pending_interrupts: interrupts.clone(),
                created_at: chrono::Utc::now(),
            };
            let checkpoint_id = checkpoint.checkpoint_id.clone();
            checkpointer.put_owned(checkpoint).await?;
            if !interrupts.is_empty() {
                return Ok(RunOutcome {
                    state,
                    status: RunStatus::Interrupted(interrupts),
                    checkpoint_id: Some(checkpoint_id),
                });
            }
            cursor = Cursor {
                node: next_node,
                parent_id: Some(checkpoint_id),
                step: cursor.step + 1,
            };
        }
    }

    #[tracing::instrument(level = "debug", skip_all, fields(thread_id = ctx.thread_id, node = ctx.node, step = ctx.step))]
    async fn run_node(&self, state: &mut S, ctx: &NodeContext<'_>) -> Result<Next, GraphError> {
        let node = self
            .nodes
            .get(ctx.node)
            .ok_or_else(|| GraphError::UnknownNode(ctx.node.to_owned()))?;
        ctx.events
            .emit(AgentEvent::NodeStart {
                node: ctx.node.to_owned(),
            })
            .await;
        let next = node
            .run(state, ctx)
            .await
            .map_err(|source| GraphError::Node {
                node: ctx.node.to_owned(),
                source,
            })?;
        ctx.events
            .emit(AgentEvent::NodeEnd {
                node: ctx.node.to_owned(),
            })
            .await;
        Ok(next)
    }
}

#[cfg(test)]
mod tests;
