//! Running a compiled graph: invoke, resume, snapshot and fork, and the
//! loop that runs one node at a time and checkpoints after each (written as
//! the graph's [`Durability`] says).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use rustc_hash::FxHashMap;

use crate::builder::Edge;
use crate::checkpoint::{Checkpoint, Checkpointer, Interrupt, StateJson};
use crate::durability::{Durability, Writes};
use crate::error::GraphError;
use crate::node::{Next, Node, NodeContext};
use crate::observer::Observer;
use crate::state::State;
use crate::{Name, Timestamp, END, START};

/// How an invocation (a start or a resume) ended.
#[derive(Debug, Clone, PartialEq)]
pub enum RunStatus {
    /// The run reached END.
    Finished,
    /// A node paused the run; resume it with values keyed by these ids.
    Interrupted(Vec<Interrupt>),
    /// `resume` was called on a run that had already reached END: nothing ran.
    AlreadyFinished,
}

/// The state at the end of an invocation and how it ended.
#[derive(Debug)]
pub struct RunOutcome<S> {
    pub state: S,
    pub status: RunStatus,
    /// The nodes the run executed so far, in order (across interrupts).
    pub path: Vec<String>,
    /// The last checkpoint written (or found, for [`RunStatus::AlreadyFinished`]).
    pub checkpoint_id: Option<String>,
}

/// A run as one of its checkpoints shows it, with the state decoded.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot<S> {
    pub thread_id: String,
    pub checkpoint_id: String,
    pub parent_id: Option<String>,
    pub step: u32,
    /// The node that ran last.
    pub node: String,
    /// Where the run continues; `None` when it ended.
    pub next: Option<String>,
    /// The nodes executed so far, in order.
    pub path: Vec<String>,
    pub state: S,
    /// Interrupts waiting for resume values.
    pub interrupts: Vec<Interrupt>,
    pub created_at: Timestamp,
}

impl<S> Snapshot<S> {
    /// Whether the run ended (reached END).
    pub fn is_finished(&self) -> bool {
        self.next.is_none()
    }
}

/// A compiled graph; cheap to share behind an `Arc`, runs many threads at once.
pub struct Graph<S: State> {
    nodes: FxHashMap<Name, Arc<dyn Node<S>>>,
    edges: FxHashMap<Name, Edge<S>>,
    step_limit: u32,
    durability: Durability,
}

/// Where a run continues from.
struct Cursor {
    node: Name,
    parent_id: Option<String>,
    step: u32,
    path: Vec<Name>,
}

impl<S: State> Graph<S> {
    pub(crate) fn new(
        nodes: FxHashMap<Name, Arc<dyn Node<S>>>,
        edges: FxHashMap<Name, Edge<S>>,
        step_limit: u32,
        durability: Durability,
    ) -> Self {
        Self {
            nodes,
            edges,
            step_limit,
            durability,
        }
    }

    /// When this graph's invocations write their checkpoints.
    pub fn durability(&self) -> Durability {
        self.durability
    }

    /// Starts a new run of thread `thread_id` from START with `state`.
    ///
    /// The input is checkpointed first (step 0, node [`START`]), so a run
    /// that dies before its first node finishes can still be resumed from
    /// its input; the nodes' checkpoints follow as steps 1, 2, … (in
    /// [`Durability::Exit`] all of them are written when the invocation
    /// returns, the input included).
    pub async fn invoke(
        &self,
        thread_id: &str,
        state: S,
        checkpointer: &dyn Checkpointer,
        observer: &dyn Observer<S>,
    ) -> Result<RunOutcome<S>, GraphError> {
        let first = self.next_after(START, &state)?;
        let thread: Name = thread_id.into();
        let (checkpoint_id, created_at) = crate::stamp();
        let input = Checkpoint {
            thread_id: thread.clone(),
            checkpoint_id,
            parent_id: None,
            step: 0,
            node: START.into(),
            next: (first != END).then(|| first.clone()),
            path: Vec::new(),
            state: encode(thread_id, &state)?,
            pending_interrupts: Vec::new(),
            created_at,
        };
        let input_id = input.checkpoint_id.clone();
        let mut writes = Writes::new(checkpointer, self.durability);
        observer.checkpoint_saved(&input);
        writes.push(input).await?;
        let cursor = Cursor {
            node: first,
            parent_id: Some(input_id),
            step: 1,
            path: Vec::new(),
        };
        self.run_from(&thread, state, cursor, None, writes, observer)
            .await
    }

    /// Continues thread `thread_id` from its newest checkpoint. The node that
    /// paused runs again and sees `resume` in [`NodeContext::resume`]. A run
    /// that already ended is returned as it is ([`RunStatus::AlreadyFinished`]),
    /// so resuming twice is harmless.
    pub async fn resume(
        &self,
        thread_id: &str,
        resume: HashMap<String, S::Resume>,
        checkpointer: &dyn Checkpointer,
        observer: &dyn Observer<S>,
    ) -> Result<RunOutcome<S>, GraphError> {
        let latest = self
            .snapshot(checkpointer, thread_id)
            .await?
            .ok_or_else(|| GraphError::UnknownThread(thread_id.to_owned()))?;
        let Some(next) = latest.next else {
            return Ok(RunOutcome {
                state: latest.state,
                status: RunStatus::AlreadyFinished,
                path: latest.path,
                checkpoint_id: Some(latest.checkpoint_id),
            });
        };
        let cursor = Cursor {
            node: self.name_of(&next),
            parent_id: Some(latest.checkpoint_id),
            step: latest.step + 1,
            path: latest.path.iter().map(|n| self.name_of(n)).collect(),
        };
        self.run_from(
            &Name::from(thread_id),
            latest.state,
            cursor,
            Some(&resume),
            Writes::new(checkpointer, self.durability),
            observer,
        )
        .await
    }

    /// The newest checkpoint of a thread, decoded; `None` when nothing was
    /// ever saved for it.
    pub async fn snapshot(
        &self,
        checkpointer: &dyn Checkpointer,
        thread_id: &str,
    ) -> Result<Option<Snapshot<S>>, GraphError> {
        checkpointer
            .latest(thread_id)
            .await?
            .map(decode)
            .transpose()
    }

    /// One checkpoint of a thread, decoded.
    pub async fn snapshot_at(
        &self,
        checkpointer: &dyn Checkpointer,
        thread_id: &str,
        checkpoint_id: &str,
    ) -> Result<Snapshot<S>, GraphError> {
        let checkpoint = checkpointer
            .get(thread_id, checkpoint_id)
            .await?
            .ok_or_else(|| GraphError::UnknownCheckpoint {
                thread_id: thread_id.to_owned(),
                checkpoint_id: checkpoint_id.to_owned(),
            })?;
        decode(checkpoint)
    }

    /// Copies checkpoint `checkpoint_id` of `thread_id`, changed by `patch`,
    /// as the first checkpoint of `new_thread_id`; [`Graph::resume`] on the
    /// new thread then continues from that point while the original run
    /// stays as it was. The fork's parent is the source checkpoint.
    pub async fn fork(
        &self,
        checkpointer: &dyn Checkpointer,
        thread_id: &str,
        checkpoint_id: &str,
        new_thread_id: &str,
        patch: impl FnOnce(&mut S) + Send,
    ) -> Result<Snapshot<S>, GraphError> {
        let mut source = self
            .snapshot_at(checkpointer, thread_id, checkpoint_id)
            .await?;
        patch(&mut source.state);
        let (checkpoint_id, created_at) = crate::stamp();
        let fork = Checkpoint {
            thread_id: new_thread_id.into(),
            checkpoint_id,
            parent_id: Some(source.checkpoint_id),
            step: source.step,
            node: self.name_of(&source.node),
            next: source.next.map(|n| self.name_of(&n)),
            path: source.path.iter().map(|n| self.name_of(n)).collect(),
            state: encode(new_thread_id, &source.state)?,
            pending_interrupts: source.interrupts,
            created_at,
        };
        checkpointer.put(&fork).await?;
        decode(fork)
    }

    /// The graph's own shared copy of a node's name (a new one for a name
    /// it does not know, e.g. a stored path from an older graph).
    fn name_of(&self, node: &str) -> Name {
        match self.nodes.get_key_value(node) {
            Some((name, _)) => name.clone(),
            None => node.into(),
        }
    }

    fn next_after(&self, from: &str, state: &S) -> Result<Name, GraphError> {
        let next = match self.edges.get(from) {
            Some(Edge::To(to)) => to.clone(),
            Some(Edge::When { route, targets }) => {
                let to = route(state);
                let Some(target) = targets.iter().find(|t| **t == to) else {
                    return Err(GraphError::UndeclaredTarget {
                        from: from.to_owned(),
                        to: to.to_owned(),
                    });
                };
                target.clone()
            }
            None => return Err(GraphError::NoEdge(from.to_owned())),
        };
        Ok(next)
    }

    /// Runs from `cursor` until the run ends, pauses or fails; in every
    /// case the checkpoints handed to `writes` are durable before it returns
    /// (a failed write wins over the outcome: the store is behind the run).
    async fn run_from(
        &self,
        thread_id: &Name,
        state: S,
        cursor: Cursor,
        resume: Option<&HashMap<String, S::Resume>>,
        mut writes: Writes<'_>,
        observer: &dyn Observer<S>,
    ) -> Result<RunOutcome<S>, GraphError> {
        let outcome = self
            .run_steps(thread_id, state, cursor, resume, &mut writes, observer)
            .await;
        writes.flush().await?;
        outcome
    }

    async fn run_steps(
        &self,
        thread_id: &Name,
        mut state: S,
        mut cursor: Cursor,
        mut resume: Option<&HashMap<String, S::Resume>>,
        writes: &mut Writes<'_>,
        observer: &dyn Observer<S>,
    ) -> Result<RunOutcome<S>, GraphError> {
        let started = Instant::now();
        let mut executed = 0u32;
        loop {
            if cursor.node == END {
                return Ok(RunOutcome {
                    state,
                    status: RunStatus::Finished,
                    path: texts(&cursor.path),
                    checkpoint_id: cursor.parent_id,
                });
            }
            if executed >= self.step_limit {
                return Err(GraphError::StepLimit {
                    limit: self.step_limit,
                    node: cursor.node.to_string(),
                });
            }
            let ctx = NodeContext {
                thread_id,
                node: &cursor.node,
                step: cursor.step,
                resume: resume.take(),
                started,
                observer,
            };
            // In `Async` mode the previous checkpoint is written meanwhile.
            let next = writes.beside(self.run_node(&mut state, &ctx)).await??;
            executed += 1;
            cursor.path.push(cursor.node.clone());
            let (next_node, interrupts) = match next {
                Next::Continue => (self.next_after(&cursor.node, &state)?, Vec::new()),
                Next::Goto(to) => {
                    if to != END && !self.nodes.contains_key(to.as_str()) {
                        return Err(GraphError::UnknownNode(to));
                    }
                    (self.name_of(&to), Vec::new())
                }
                Next::End => (END.into(), Vec::new()),
                // The paused node runs again on resume.
                Next::Interrupt(list) => (
                    cursor.node.clone(),
                    list.into_iter()
                        .map(|i| Interrupt {
                            node: cursor.node.to_string(),
                            ..i
                        })
                        .collect(),
                ),
            };
            let (checkpoint_id, created_at) = crate::stamp();
            let checkpoint = Checkpoint {
                thread_id: thread_id.clone(),
                checkpoint_id,
                parent_id: cursor.parent_id.take(),
                step: cursor.step,
                node: cursor.node.clone(),
                next: (next_node != END).then(|| next_node.clone()),
                path: cursor.path.clone(),
                state: encode(thread_id, &state)?,
                pending_interrupts: interrupts.clone(),
                created_at,
            };
            let checkpoint_id = checkpoint.checkpoint_id.clone();
            observer.checkpoint_saved(&checkpoint);
            writes.push(checkpoint).await?;
            if !interrupts.is_empty() {
                // `run_from` makes the pause durable before it is reported.
                return Ok(RunOutcome {
                    state,
                    status: RunStatus::Interrupted(interrupts),
                    path: texts(&cursor.path),
                    checkpoint_id: Some(checkpoint_id),
                });
            }
            cursor = Cursor {
                node: next_node,
                parent_id: Some(checkpoint_id),
                step: cursor.step + 1,
                path: cursor.path,
            };
        }
    }

    #[tracing::instrument(level = "debug", skip_all, fields(thread_id = ctx.thread_id, node = ctx.node, step = ctx.step))]
    async fn run_node(&self, state: &mut S, ctx: &NodeContext<'_, S>) -> Result<Next, GraphError> {
        let node = self
            .nodes
            .get(ctx.node)
            .ok_or_else(|| GraphError::UnknownNode(ctx.node.to_owned()))?;
        ctx.observer.node_started(ctx.thread_id, ctx.node, ctx.step);
        let next = node
            .run(state, ctx)
            .await
            .map_err(|source| GraphError::Node {
                node: ctx.node.to_owned(),
                source,
            })?;
        ctx.observer
            .node_finished(ctx.thread_id, ctx.node, ctx.step);
        Ok(next)
    }
}

/// The state's JSON.
fn encode<S: State>(thread_id: &str, state: &S) -> Result<StateJson, GraphError> {
    StateJson::encode(state).map_err(|source| GraphError::State {
        thread_id: thread_id.to_owned(),
        source,
    })
}

/// A path as a run's outcome and snapshots show it.
fn texts(path: &[Name]) -> Vec<String> {
    path.iter().map(|n| n.to_string()).collect()
}

fn decode<S: State>(c: Checkpoint) -> Result<Snapshot<S>, GraphError> {
    let state = c.state.decode().map_err(|source| GraphError::State {
        thread_id: c.thread_id.to_string(),
        source,
    })?;
    Ok(Snapshot {
        thread_id: c.thread_id.to_string(),
        checkpoint_id: c.checkpoint_id,
        parent_id: c.parent_id,
        step: c.step,
        node: c.node.to_string(),
        next: c.next.map(|n| n.to_string()),
        path: texts(&c.path),
        state,
        interrupts: c.pending_interrupts,
        created_at: c.created_at,
    })
}
