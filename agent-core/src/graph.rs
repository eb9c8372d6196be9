//! `StateGraph`: the builder. Nodes, edges, joins and conditional edges, then `compile()`.
//!
//! Builder calls never fail on their own; every problem (unknown node, duplicate name, missing
//! entry...) is collected and reported by [`StateGraph::compile`], so the chain reads like the
//! diagram it describes.

use std::marker::PhantomData;
use std::sync::Arc;

use crate::compiled::CompiledGraph;
use crate::constants::{END, START};
use crate::error::GraphError;
use crate::node::{IntoInputNode, IntoNode, NodeSpec};
use crate::route::{IntoRoute, PathMap, Route};
use crate::runtime::CompatibleContext;
use crate::state::GraphState;

/// A router: reads the state, returns where to go.
pub(crate) type Router<S> = Arc<dyn Fn(&S) -> Route<S> + Send + Sync>;

/// An edge from one or more sources (a join when several) to a target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EdgeSpec {
    pub(crate) sources: Vec<String>,
    pub(crate) target: String,
}

pub(crate) struct BranchSpec<S> {
    pub(crate) from: String,
    pub(crate) router: Router<S>,
    pub(crate) path_map: PathMap,
}

/// The sources of an edge: one name, or several for a join (`add_edge(["a", "b"], "c")`).
pub trait IntoSources {
    /// The source names.
    fn into_sources(self) -> Vec<String>;
}

impl IntoSources for &str {
    fn into_sources(self) -> Vec<String> {
        vec![self.to_owned()]
    }
}

impl IntoSources for String {
    fn into_sources(self) -> Vec<String> {
        vec![self]
    }
}

impl IntoSources for &String {
    fn into_sources(self) -> Vec<String> {
        vec![self.clone()]
    }
}

impl<const N: usize> IntoSources for [&str; N] {
    fn into_sources(self) -> Vec<String> {
        self.iter().map(|s| (*s).to_owned()).collect()
    }
}

impl IntoSources for Vec<&str> {
    fn into_sources(self) -> Vec<String> {
        self.into_iter().map(str::to_owned).collect()
    }
}

impl IntoSources for Vec<String> {
    fn into_sources(self) -> Vec<String> {
        self
    }
}

/// A graph over state `S`, being built.
///
/// ```
/// use std::sync::Arc;
/// use agent_core::{GraphState, StateGraph, RunConfig, START, END};
///
/// #[derive(GraphState, Clone, Default, Debug)]
/// struct Counter {
///     #[reducer(add)]
///     count: u32,
///     #[reducer(append)]
///     log: Vec<String>,
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), agent_core::GraphError> {
/// let graph = StateGraph::<Counter>::new()
///     .add_node("hello", |_s: Arc<Counter>| async {
///         CounterUpdate::default().count(1).log(vec!["hello".to_owned()])
///     })
///     .add_node("world", |_s: Arc<Counter>| async {
///         CounterUpdate::default().count(1).log(vec!["world".to_owned()])
///     })
///     .add_edge(START, "hello")
///     .add_edge("hello", "world")
///     .add_edge("world", END)
///     .compile()?;
///
/// let out = graph.invoke(Counter::default(), RunConfig::default()).await?;
/// assert_eq!(out.count, 2);
/// assert_eq!(out.log, ["hello", "world"]);
/// # Ok(()) }
/// ```
///
/// `C` is the runtime context every node may read (LangGraph's `context_schema`): `()` for
/// [`StateGraph::new`], any type with [`StateGraph::with_context_type`]. See [`crate::Runtime`].
pub struct StateGraph<S: GraphState, C = ()> {
    pub(crate) nodes: Vec<(String, NodeSpec<S>)>,
    pub(crate) edges: Vec<EdgeSpec>,
    pub(crate) branches: Vec<BranchSpec<S>>,
    pub(crate) interrupt_before: Vec<String>,
    pub(crate) interrupt_after: Vec<String>,
    pub(crate) errors: Vec<GraphError>,
    pub(crate) _context: PhantomData<fn() -> C>,
}

impl<S: GraphState> Default for StateGraph<S> {
    fn default() -> Self {
        StateGraph::with_context_type()
    }
}

impl<S: GraphState> StateGraph<S> {
    /// An empty graph without a runtime context.
    pub fn new() -> Self {
        StateGraph::default()
    }
}

impl<S: GraphState, C: Send + Sync + 'static> StateGraph<S, C> {
    /// An empty graph whose nodes may read a runtime context of type `C` (taking
    /// `&Runtime<C>`); the compiled graph gets the value with `.with_context(..)`.
    pub fn with_context_type() -> Self {
        StateGraph {
            nodes: Vec::new(),
            edges: Vec::new(),
            branches: Vec::new(),
            interrupt_before: Vec::new(),
            interrupt_after: Vec::new(),
            errors: Vec::new(),
            _context: PhantomData,
        }
    }

    /// Adds a node under `name`.
    pub fn add_node<M: CompatibleContext<C>>(
        mut self,
        name: impl Into<String>,
        node: impl IntoNode<S, M>,
    ) -> Self {
        self.nodes.push((name.into(), node.into_node()));
        self
    }

    /// Adds a node that takes its own input `I` instead of the state (LangGraph's node with an
    /// input schema): an async fn or closure `Fn(I)` or `Fn(I, NodeContext)`. Only a
    /// [`Send::input`](crate::Send::input) carrying an `I` runs it, so map-reduce workers get
    /// their item, not a made-up state. The same as `add_node(name, input_node(node))`; see
    /// [`crate::input_node`] for adapters and [`crate::Send`] for a map-reduce example.
    pub fn add_node_with_input<I, M>(
        mut self,
        name: impl Into<String>,
        node: impl IntoInputNode<S, I, M>,
    ) -> Self {
        self.nodes.push((name.into(), node.into_input_node()));
        self
    }

    /// Adds a node that knows its own name (a `#[node]` fn, or a spec built with `.named()`).
    pub fn add_named<M: CompatibleContext<C>>(mut self, node: impl IntoNode<S, M>) -> Self {
        let spec = node.into_node();
        match spec.default_name() {
            Some(name) => self.nodes.push((name.to_owned(), spec)),
            None => self.errors.push(GraphError::UnnamedNode),
        }
        self
    }

    /// Adds nodes and chains them with edges in order (LangGraph's `add_sequence`).
    pub fn add_sequence<N: Into<String>>(
        mut self,
        nodes: impl IntoIterator<Item = (N, NodeSpec<S>)>,
    ) -> Self {
        let mut previous: Option<String> = None;
        for (name, spec) in nodes {
            let name = name.into();
            self.nodes.push((name.clone(), spec));
            if let Some(prev) = previous.take() {
                self.edges.push(EdgeSpec {
                    sources: vec![prev],
                    target: name.clone(),
                });
            }
            previous = Some(name);
        }
        self
    }

    /// Adds an edge. Several sources make a join: the target runs once all of them have run.
    pub fn add_edge(mut self, from: impl IntoSources, to: impl Into<String>) -> Self {
        self.edges.push(EdgeSpec {
            sources: from.into_sources(),
            target: to.into(),
        });
        self
    }

    /// Adds conditional edges: after `from` runs, `router` reads the state and names the next
    /// nodes through `path_map` (a list of node names, `(key, node)` pairs, or [`PathMap::any`]).
    pub fn add_conditional_edges<F, R>(
        mut self,
        from: impl Into<String>,
        router: F,
        path_map: impl Into<PathMap>,
    ) -> Self
    where
        F: Fn(&S) -> R + Send + Sync + 'static,
        R: IntoRoute<S>,
    {
        self.branches.push(BranchSpec {
            from: from.into(),
            router: Arc::new(move |state: &S| router(state).into_route()),
            path_map: path_map.into(),
        });
        self
    }

    /// The same as `add_edge(START, name)`.
    pub fn set_entry_point(self, name: impl Into<String>) -> Self {
        self.add_edge(START, name)
    }

    /// The same as `add_edge(name, END)`.
    pub fn set_finish_point(self, name: impl Into<String>) -> Self {
        let name: String = name.into();
        self.add_edge(name, END)
    }

    /// Pauses every run before these nodes (needs a checkpointer).
    pub fn interrupt_before<N: Into<String>>(mut self, nodes: impl IntoIterator<Item = N>) -> Self {
        self.interrupt_before
            .extend(nodes.into_iter().map(Into::into));
        self
    }

    /// Pauses every run after these nodes (needs a checkpointer).
    pub fn interrupt_after<N: Into<String>>(mut self, nodes: impl IntoIterator<Item = N>) -> Self {
        self.interrupt_after
            .extend(nodes.into_iter().map(Into::into));
        self
    }

    /// Validates the graph and returns the runnable form (no checkpoints).
    pub fn compile(self) -> Result<CompiledGraph<S, C>, GraphError> {
        crate::compiled::compile(self, None)
    }

    /// Validates the graph and returns the runnable form, persisting every run with a thread
    /// id through `checkpointer` (LangGraph's `compile(checkpointer=...)`).
    pub fn compile_with(
        self,
        checkpointer: Arc<dyn crate::checkpoint::Checkpointer>,
    ) -> Result<CompiledGraph<S, C>, GraphError> {
        crate::compiled::compile(self, Some(checkpointer))
    }
}
