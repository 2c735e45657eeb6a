//! Building a graph: nodes, plain and conditional edges, the step limit,
//! the durability mode, and the wiring checks that turn a builder into a [`Graph`].

use std::collections::HashMap;
use std::sync::Arc;

use crate::durability::Durability;
use crate::error::GraphError;
use crate::node::Node;
use crate::run::Graph;
use crate::state::State;
use crate::{Name, DEFAULT_STEP_LIMIT, END, START};

pub(crate) type RouteFn<S> = dyn Fn(&S) -> &'static str + Send + Sync;

/// Where a node's outgoing edge leads.
pub(crate) enum Edge<S> {
    /// Always to this node.
    To(Name),
    /// To whichever of `targets` the route function names for the state.
    When {
        route: Arc<RouteFn<S>>,
        targets: Vec<Name>,
    },
}

/// Builds a [`Graph`].
pub struct GraphBuilder<S: State> {
    nodes: HashMap<String, Arc<dyn Node<S>>>,
    edges: HashMap<String, Edge<S>>,
    step_limit: u32,
    durability: Durability,
}

impl<S: State> Default for GraphBuilder<S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S: State> GraphBuilder<S> {
    pub fn new() -> Self {
        Self {
            nodes: HashMap::new(),
            edges: HashMap::new(),
            step_limit: DEFAULT_STEP_LIMIT,
            durability: Durability::default(),
        }
    }

    /// Adds a node under `name` (replacing one of the same name).
    pub fn add_node(mut self, name: impl Into<String>, node: impl Node<S> + 'static) -> Self {
        self.nodes.insert(name.into(), Arc::new(node));
        self
    }

    /// Always goes from `from` to `to` (either may be [`START`] / [`END`]).
    pub fn add_edge(mut self, from: impl Into<String>, to: impl Into<String>) -> Self {
        self.edges
            .insert(from.into(), Edge::To(Name::from(to.into())));
        self
    }

    /// Goes from `from` to the node `route` names for the state, which must
    /// be one of `targets` (nodes or [`END`]). The targets are checked when
    /// the graph compiles; a route naming anything else fails the run with
    /// [`GraphError::UndeclaredTarget`].
    pub fn add_conditional_edges<T: Into<String>>(
        mut self,
        from: impl Into<String>,
        targets: impl IntoIterator<Item = T>,
        route: impl Fn(&S) -> &'static str + Send + Sync + 'static,
    ) -> Self {
        self.edges.insert(
            from.into(),
            Edge::When {
                route: Arc::new(route),
                targets: targets.into_iter().map(|t| Name::from(t.into())).collect(),
            },
        );
        self
    }

    /// How many nodes one invocation may run before it ends with
    /// [`GraphError::StepLimit`].
    pub fn step_limit(mut self, limit: u32) -> Self {
        self.step_limit = limit.max(1);
        self
    }

    /// When invocations write their checkpoints (default
    /// [`Durability::Sync`]).
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// Checks the wiring: an edge from START, every edge from and to known
    /// nodes (the declared targets of conditional edges included), an
    /// outgoing edge for every node.
    pub fn compile(self) -> Result<Graph<S>, GraphError> {
        if !self.edges.contains_key(START) {
            return Err(GraphError::NoEdge(START.to_owned()));
        }
        let known = |name: &str| name == END || self.nodes.contains_key(name);
        for (from, edge) in &self.edges {
            if from != START && !self.nodes.contains_key(from) {
                return Err(GraphError::UnknownNode(from.clone()));
            }
            let targets: &[Name] = match edge {
                Edge::To(to) => std::slice::from_ref(to),
                Edge::When { targets, .. } => targets,
            };
            if targets.is_empty() {
                return Err(GraphError::NoEdge(from.clone()));
            }
            if let Some(unknown) = targets.iter().find(|t| !known(t)) {
                return Err(GraphError::UnknownNode(unknown.to_string()));
            }
        }
        if let Some(name) = self.nodes.keys().find(|n| !self.edges.contains_key(*n)) {
            return Err(GraphError::NoEdge(name.clone()));
        }
        Ok(Graph::new(
            self.nodes.into_iter().map(|(k, v)| (k.into(), v)).collect(),
            self.edges.into_iter().map(|(k, v)| (k.into(), v)).collect(),
            self.step_limit,
            self.durability,
        ))
    }
}
