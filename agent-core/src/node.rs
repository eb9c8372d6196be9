//! Nodes: the object-safe [`Node`] trait the executor stores, and the blanket impls that turn
//! async functions and closures into nodes (axum's `Handler` idiom).
//!
//! Authors never implement [`Node`] by hand unless they want to: any
//! `Fn(Arc<S>) -> impl Future<Output = O>` or `Fn(Arc<S>, NodeContext) -> impl Future<Output = O>`
//! is a node, where `O` is an update, a [`Command`], `()`, or a `Result` of those (a closure ends
//! with [`BoxResult::Ok(..)`](crate::BoxResult) to name its error type without a turbofish).
//! `#[node]` on an `async fn(&S, &NodeContext)` adds a name, retry, timeout and destinations.
//!
//! A node may instead take an input of its own type `I` (`Fn(I)` or `Fn(I, NodeContext)`, see
//! [`IntoInputNode`]): it runs only through [`Send::input`](crate::Send::input), which carries
//! that value (LangGraph's `Send(node, arg)`); the spec records `I` so a wrong `Send` is
//! reported by name, and a checkpointed one decodes as an `I`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use crate::command::Command;
use crate::context::NodeContext;
use crate::error::BoxError;
use crate::layers::RetryPolicy;
use crate::node_input::{InputType, NodeInput};
use crate::runtime::{CompatibleContext, ContextType, Runtime};
use crate::state::GraphState;

/// A boxed, `Send` future; what erased nodes return.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + std::marker::Send + 'static>>;

/// What a node produced: an update, or an update plus routing.
#[derive(Debug, Clone)]
pub enum NodeOutput<S: GraphState> {
    /// A partial state update.
    Update(S::Update),
    /// An update plus destinations.
    Command(Command<S>),
    /// Several updates applied in order, as one task's writes (a subgraph's output: the
    /// writes of its steps, so appends are not applied twice).
    Batch(Vec<S::Update>),
}

/// Values a node may return. The derive implements it for the state's update type; this crate
/// implements it for [`Command`], `()` (no update), [`NodeOutput`], and `Result<T, E>`.
#[diagnostic::on_unimplemented(
    message = "a node of `{S}` cannot return `{Self}`",
    note = "return the state's update type (from `#[derive(GraphState)]`), a `Command`, `()`, or a `Result` of one of those"
)]
pub trait IntoNodeOutput<S: GraphState> {
    /// Whether a value of this type can be a [`Command`]: a node returning one may route by
    /// its gotos alone, so `compile()` does not ask it for an outgoing edge. `false` for
    /// updates and `()`.
    const MAY_COMMAND: bool = false;

    /// Converts to an output, or the node's error.
    fn into_node_output(self) -> Result<NodeOutput<S>, NodeError>;
}

impl<S: GraphState> IntoNodeOutput<S> for NodeOutput<S> {
    const MAY_COMMAND: bool = true;

    fn into_node_output(self) -> Result<NodeOutput<S>, NodeError> {
        Ok(self)
    }
}

impl<S: GraphState> IntoNodeOutput<S> for Command<S> {
    const MAY_COMMAND: bool = true;

    fn into_node_output(self) -> Result<NodeOutput<S>, NodeError> {
        Ok(NodeOutput::Command(self))
    }
}

impl<S: GraphState> IntoNodeOutput<S> for () {
    fn into_node_output(self) -> Result<NodeOutput<S>, NodeError> {
        Ok(NodeOutput::Update(S::Update::default()))
    }
}

impl<S, T, E> IntoNodeOutput<S> for Result<T, E>
where
    S: GraphState,
    T: IntoNodeOutput<S>,
    E: Into<BoxError>,
{
    const MAY_COMMAND: bool = T::MAY_COMMAND;

    fn into_node_output(self) -> Result<NodeOutput<S>, NodeError> {
        match self {
            Ok(value) => value.into_node_output(),
            Err(error) => Err(NodeError::Failed(error.into())),
        }
    }
}

/// Why a node did not produce an output.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NodeError {
    /// The node returned an error.
    #[error(transparent)]
    Failed(BoxError),
    /// An attempt ran past the node's timeout.
    #[error("timed out after {0:?}")]
    TimedOut(Duration),
    /// Retries gave up.
    #[error("gave up after {attempts} attempts: {last}")]
    RetriesExhausted {
        /// How many attempts ran.
        attempts: u32,
        /// The last attempt's error.
        last: Box<NodeError>,
    },
}

/// A node as the executor stores it: object-safe, shared, returning a boxed future.
///
/// Implement it directly for full control; usually a closure or `#[node]` fn is enough.
pub trait Node<S: GraphState>: std::marker::Send + Sync + 'static {
    /// Runs the node on a snapshot of the state.
    fn call(&self, state: Arc<S>, ctx: NodeContext) -> BoxFuture<Result<NodeOutput<S>, NodeError>>;
}

/// A node plus its settings: retry, timeout, declared `Command` destinations, default name.
///
/// Build one with [`IntoNode::into_node`] or the [`NodeExt`] adapters.
pub struct NodeSpec<S: GraphState> {
    pub(crate) node: Arc<dyn Node<S>>,
    pub(crate) name: Option<&'static str>,
    pub(crate) retry: Option<RetryPolicy>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) destinations: Vec<String>,
    /// The runtime context the node asks for (`&Runtime<C>`), checked by `compile()`.
    pub(crate) context: Option<ContextType>,
    /// Caching of its results (used when the compiled graph has a cache).
    pub(crate) cache: Option<crate::cache::CachePolicy<S>>,
    /// The node's own input type, when it takes one instead of the state.
    pub(crate) input: Option<InputType>,
    /// Whether its output can be a `Command` (then it may route by gotos alone).
    pub(crate) may_command: bool,
    /// The shape of the graph it runs, when it is a subgraph (for xray drawings).
    pub(crate) subgraph: Option<Box<crate::compiled::Topology>>,
}

impl<S: GraphState> Clone for NodeSpec<S> {
    fn clone(&self) -> Self {
        NodeSpec {
            node: self.node.clone(),
            name: self.name,
            retry: self.retry.clone(),
            timeout: self.timeout,
            destinations: self.destinations.clone(),
            context: self.context,
            cache: self.cache.clone(),
            input: self.input,
            may_command: self.may_command,
            subgraph: self.subgraph.clone(),
        }
    }
}

impl<S: GraphState> std::fmt::Debug for NodeSpec<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeSpec")
            .field("name", &self.name)
            .field("retry", &self.retry)
            .field("timeout", &self.timeout)
            .field("destinations", &self.destinations)
            .field("context", &self.context.map(|c| c.name))
            .field("cache", &self.cache)
            .field("input", &self.input)
            .field("may_command", &self.may_command)
            .finish_non_exhaustive()
    }
}

impl<S: GraphState> NodeSpec<S> {
    /// Wraps an erased node. Its output may be a `Command` (a [`Node`] returns a
    /// [`NodeOutput`]), so the node may route by its gotos alone.
    pub fn new(node: impl Node<S>) -> Self {
        NodeSpec {
            node: Arc::new(node),
            name: None,
            retry: None,
            timeout: None,
            destinations: Vec::new(),
            context: None,
            cache: None,
            input: None,
            may_command: true,
            subgraph: None,
        }
    }

    /// Marks the node as running a subgraph of this shape.
    pub(crate) fn with_subgraph(mut self, shape: crate::compiled::Topology) -> Self {
        self.subgraph = Some(Box::new(shape));
        self
    }

    /// Records whether the node's output type can be a `Command` (the blanket impls read
    /// it off the output type: an update or `()` cannot).
    pub(crate) fn with_output<O: IntoNodeOutput<S>>(mut self) -> Self {
        self.may_command = O::MAY_COMMAND;
        self
    }

    /// Whether the node's output can be a `Command`: a node that can needs no outgoing edge
    /// (LangGraph's rule), and `compile()` counts every node as reachable from it — with or
    /// without edges of its own — unless [`with_destinations`](Self::with_destinations) says
    /// where its gotos go.
    pub fn may_command(&self) -> bool {
        self.may_command
    }

    /// Records that the node takes its own input `I` instead of the state: only a
    /// [`Send::input`](crate::Send::input) carrying an `I` runs it (what [`input_node`] and
    /// `#[node]` fns taking an input by value do on their own). A hand-written [`Node`] reads
    /// the value with [`NodeContext::input`].
    pub fn with_input_type<I: NodeInput>(mut self) -> Self {
        self.input = Some(InputType::of::<I>());
        self
    }

    /// Records that the node takes the state when an edge, a router's key or a `Command`
    /// goto triggers it, and its own input `I` when a [`Send::input`](crate::Send::input)
    /// carries one — LangGraph's nodes, which take whatever they are sent. The node reads the
    /// input with [`NodeContext::input`] (`None`: it runs on the state). For nodes whose
    /// input type is known only at run time, such as a binding's dynamic values.
    pub fn with_input_or_state<I: NodeInput>(mut self) -> Self {
        self.input = Some(InputType::of::<I>().or_state());
        self
    }

    /// The name of the node's own input type, when it takes one instead of the state.
    pub fn input_type_name(&self) -> Option<&'static str> {
        self.input.map(|ty| ty.name)
    }

    /// Records that the node reads the graph's runtime context `C` (what `&Runtime<C>`
    /// nodes do on their own); `compile()` checks it against the graph's context type.
    pub fn with_context_type<C: 'static>(mut self) -> Self {
        self.context = Some(ContextType::of::<C>());
        self
    }

    /// The name the node suggests for itself (`#[node]` uses the fn's name).
    pub fn default_name(&self) -> Option<&'static str> {
        self.name
    }

    /// Sets the default name.
    pub fn named(mut self, name: &'static str) -> Self {
        self.name = Some(name);
        self
    }

    /// Retries failed attempts with `policy`.
    pub fn with_retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = Some(policy);
        self
    }

    /// Caches the node's results (LangGraph's `cache_policy`): on an input whose key is in
    /// the graph's cache, the node does not run and its writes come from the cache.
    pub fn with_cache_policy(mut self, policy: crate::cache::CachePolicy<S>) -> Self {
        self.cache = Some(policy);
        self
    }

    /// Fails an attempt that runs longer than `timeout`.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Declares where this node's `Command`s may go (validation and diagrams; LangGraph's
    /// `destinations`). A node with destinations needs no outgoing edge.
    pub fn with_destinations<I, N>(mut self, destinations: I) -> Self
    where
        I: IntoIterator<Item = N>,
        N: Into<String>,
    {
        self.destinations
            .extend(destinations.into_iter().map(Into::into));
        self
    }

    /// The node with its layers applied: retry around timeout around the node.
    pub(crate) fn layered(&self) -> Arc<dyn Node<S>> {
        let mut node = self.node.clone();
        if let Some(timeout) = self.timeout {
            node = Arc::new(crate::layers::Timeout::new(node, timeout));
        }
        if let Some(policy) = &self.retry {
            node = Arc::new(crate::layers::Retry::new(node, policy.clone()));
        }
        node
    }
}

/// Anything that can become a node of a graph over `S`. `M` is a marker that keeps the blanket
/// impls for different closure shapes apart; callers never name it.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a node of a graph over `{S}`",
    note = "a node is an async fn or closure taking `Arc<State>` (and optionally `NodeContext`) and returning the update type, a `Command`, `()`, or a `Result` of those; or an `async fn(&State, &NodeContext)` marked `#[node]`; a closure taking its own input (run by `Send::input`) goes in `add_node_with_input`"
)]
pub trait IntoNode<S: GraphState, M>: Sized {
    /// Converts into a node with its settings.
    fn into_node(self) -> NodeSpec<S>;
}

impl<S: GraphState> IntoNode<S, ()> for NodeSpec<S> {
    fn into_node(self) -> NodeSpec<S> {
        self
    }
}

/// Marker for closures taking the state only.
#[doc(hidden)]
pub struct StateOnly;

/// Marker for closures taking the state and the context.
#[doc(hidden)]
pub struct WithContext;

/// Marker for closures taking the state and the graph's [`Runtime`].
#[doc(hidden)]
pub struct WithRuntime<C>(std::marker::PhantomData<fn() -> C>);

impl<C, O> CompatibleContext<C> for (StateOnly, O) {}
impl<C, O> CompatibleContext<C> for (WithContext, O) {}
impl<C, O> CompatibleContext<C> for (WithRuntime<C>, O) {}
impl<C> CompatibleContext<C> for SubgraphMarker {}

struct FnNode<F, M> {
    f: F,
    _marker: std::marker::PhantomData<fn() -> M>,
}

impl<S, F, Fut, O> Node<S> for FnNode<F, StateOnly>
where
    S: GraphState,
    F: Fn(Arc<S>) -> Fut + std::marker::Send + Sync + 'static,
    Fut: Future<Output = O> + std::marker::Send + 'static,
    O: IntoNodeOutput<S>,
{
    fn call(
        &self,
        state: Arc<S>,
        _ctx: NodeContext,
    ) -> BoxFuture<Result<NodeOutput<S>, NodeError>> {
        let fut = (self.f)(state);
        Box::pin(async move { fut.await.into_node_output() })
    }
}

impl<S, F, Fut, O> Node<S> for FnNode<F, WithContext>
where
    S: GraphState,
    F: Fn(Arc<S>, NodeContext) -> Fut + std::marker::Send + Sync + 'static,
    Fut: Future<Output = O> + std::marker::Send + 'static,
    O: IntoNodeOutput<S>,
{
    fn call(&self, state: Arc<S>, ctx: NodeContext) -> BoxFuture<Result<NodeOutput<S>, NodeError>> {
        let fut = (self.f)(state, ctx);
        Box::pin(async move { fut.await.into_node_output() })
    }
}

impl<S, C, F, Fut, O> Node<S> for FnNode<F, WithRuntime<C>>
where
    S: GraphState,
    C: std::marker::Send + Sync + 'static,
    F: Fn(Arc<S>, Runtime<C>) -> Fut + std::marker::Send + Sync + 'static,
    Fut: Future<Output = O> + std::marker::Send + 'static,
    O: IntoNodeOutput<S>,
{
    fn call(&self, state: Arc<S>, ctx: NodeContext) -> BoxFuture<Result<NodeOutput<S>, NodeError>> {
        match Runtime::from_node_context(ctx) {
            Ok(runtime) => {
                let fut = (self.f)(state, runtime);
                Box::pin(async move { fut.await.into_node_output() })
            }
            Err(error) => Box::pin(std::future::ready(Err(error))),
        }
    }
}

impl<S, C, F, Fut, O> IntoNode<S, (WithRuntime<C>, O)> for F
where
    S: GraphState,
    C: std::marker::Send + Sync + 'static,
    F: Fn(Arc<S>, Runtime<C>) -> Fut + std::marker::Send + Sync + 'static,
    Fut: Future<Output = O> + std::marker::Send + 'static,
    O: IntoNodeOutput<S>,
{
    fn into_node(self) -> NodeSpec<S> {
        NodeSpec::new(FnNode {
            f: self,
            _marker: std::marker::PhantomData::<fn() -> WithRuntime<C>>,
        })
        .with_output::<O>()
        .with_context_type::<C>()
    }
}

impl<S, F, Fut, O> IntoNode<S, (StateOnly, O)> for F
where
    S: GraphState,
    F: Fn(Arc<S>) -> Fut + std::marker::Send + Sync + 'static,
    Fut: Future<Output = O> + std::marker::Send + 'static,
    O: IntoNodeOutput<S>,
{
    fn into_node(self) -> NodeSpec<S> {
        NodeSpec::new(FnNode {
            f: self,
            _marker: std::marker::PhantomData::<fn() -> StateOnly>,
        })
        .with_output::<O>()
    }
}

impl<S, F, Fut, O> IntoNode<S, (WithContext, O)> for F
where
    S: GraphState,
    F: Fn(Arc<S>, NodeContext) -> Fut + std::marker::Send + Sync + 'static,
    Fut: Future<Output = O> + std::marker::Send + 'static,
    O: IntoNodeOutput<S>,
{
    fn into_node(self) -> NodeSpec<S> {
        NodeSpec::new(FnNode {
            f: self,
            _marker: std::marker::PhantomData::<fn() -> WithContext>,
        })
        .with_output::<O>()
    }
}

/// Anything that can become a node taking its own input `I` (instead of the state) in a graph
/// over `S`: an async fn or closure `Fn(I)`, `Fn(I, NodeContext)` or `Fn(I, Runtime<C>)` (the
/// graph's runtime context, checked by `compile()`) returning what a node returns. `M` keeps the two shapes apart; callers never name it. See [`input_node`] and
/// [`StateGraph::add_node_with_input`](crate::StateGraph::add_node_with_input).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a node taking `{I}` in a graph over `{S}`",
    note = "a node with its own input is an async fn or closure taking the input by value (and optionally `NodeContext`) and returning the update type, a `Command`, `()`, or a `Result` of those"
)]
pub trait IntoInputNode<S: GraphState, I, M>: Sized {
    /// Converts into a node with its settings (its input type recorded).
    fn into_input_node(self) -> NodeSpec<S>;
}

/// Marker for closures taking the input only.
#[doc(hidden)]
pub struct InputOnly;

/// Marker for closures taking the input and the context.
#[doc(hidden)]
pub struct InputWithContext;

/// Marker for closures taking the input and the graph's [`Runtime`].
#[doc(hidden)]
pub struct InputWithRuntime<C>(std::marker::PhantomData<fn() -> C>);

/// Runs an input node: the task's input of type `I` (an error when the task carries another),
/// then `start` (which may fail before the node runs, e.g. a missing runtime context).
fn call_with_input<S, I, Fut, O>(
    ctx: NodeContext,
    start: impl FnOnce(I, NodeContext) -> Result<Fut, NodeError>,
) -> BoxFuture<Result<NodeOutput<S>, NodeError>>
where
    S: GraphState,
    I: NodeInput,
    Fut: Future<Output = O> + std::marker::Send + 'static,
    O: IntoNodeOutput<S>,
{
    match ctx.task_input::<I>().and_then(|input| start(input, ctx)) {
        Ok(fut) => Box::pin(async move { fut.await.into_node_output() }),
        Err(error) => Box::pin(std::future::ready(Err(error))),
    }
}

struct InputFn<F, I, M> {
    f: F,
    _marker: std::marker::PhantomData<fn() -> (I, M)>,
}

impl<F, I: NodeInput, M> InputFn<F, I, M> {
    /// The spec of a node that runs `f` on its own input `I` (`M`: which arguments it takes).
    fn spec<S: GraphState>(f: F) -> NodeSpec<S>
    where
        Self: Node<S>,
    {
        NodeSpec::new(InputFn {
            f,
            _marker: std::marker::PhantomData,
        })
        .with_input_type::<I>()
    }
}

impl<S, I, F, Fut, O> Node<S> for InputFn<F, I, InputOnly>
where
    S: GraphState,
    I: NodeInput,
    F: Fn(I) -> Fut + std::marker::Send + Sync + 'static,
    Fut: Future<Output = O> + std::marker::Send + 'static,
    O: IntoNodeOutput<S>,
{
    fn call(
        &self,
        _state: Arc<S>,
        ctx: NodeContext,
    ) -> BoxFuture<Result<NodeOutput<S>, NodeError>> {
        call_with_input(ctx, |input, _ctx| Ok((self.f)(input)))
    }
}

impl<S, I, F, Fut, O> Node<S> for InputFn<F, I, InputWithContext>
where
    S: GraphState,
    I: NodeInput,
    F: Fn(I, NodeContext) -> Fut + std::marker::Send + Sync + 'static,
    Fut: Future<Output = O> + std::marker::Send + 'static,
    O: IntoNodeOutput<S>,
{
    fn call(
        &self,
        _state: Arc<S>,
        ctx: NodeContext,
    ) -> BoxFuture<Result<NodeOutput<S>, NodeError>> {
        call_with_input(ctx, |input, ctx| Ok((self.f)(input, ctx)))
    }
}

impl<S, I, C, F, Fut, O> Node<S> for InputFn<F, I, InputWithRuntime<C>>
where
    S: GraphState,
    I: NodeInput,
    C: std::marker::Send + Sync + 'static,
    F: Fn(I, Runtime<C>) -> Fut + std::marker::Send + Sync + 'static,
    Fut: Future<Output = O> + std::marker::Send + 'static,
    O: IntoNodeOutput<S>,
{
    fn call(
        &self,
        _state: Arc<S>,
        ctx: NodeContext,
    ) -> BoxFuture<Result<NodeOutput<S>, NodeError>> {
        call_with_input(ctx, |input, ctx| {
            Ok((self.f)(input, Runtime::from_node_context(ctx)?))
        })
    }
}

impl<S, I, C, F, Fut, O> IntoInputNode<S, I, (InputWithRuntime<C>, O)> for F
where
    S: GraphState,
    I: NodeInput,
    C: std::marker::Send + Sync + 'static,
    F: Fn(I, Runtime<C>) -> Fut + std::marker::Send + Sync + 'static,
    Fut: Future<Output = O> + std::marker::Send + 'static,
    O: IntoNodeOutput<S>,
{
    fn into_input_node(self) -> NodeSpec<S> {
        InputFn::<F, I, InputWithRuntime<C>>::spec(self)
            .with_output::<O>()
            .with_context_type::<C>()
    }
}

impl<S, I, F, Fut, O> IntoInputNode<S, I, (InputOnly, O)> for F
where
    S: GraphState,
    I: NodeInput,
    F: Fn(I) -> Fut + std::marker::Send + Sync + 'static,
    Fut: Future<Output = O> + std::marker::Send + 'static,
    O: IntoNodeOutput<S>,
{
    fn into_input_node(self) -> NodeSpec<S> {
        InputFn::<F, I, InputOnly>::spec(self).with_output::<O>()
    }
}

impl<S, I, F, Fut, O> IntoInputNode<S, I, (InputWithContext, O)> for F
where
    S: GraphState,
    I: NodeInput,
    F: Fn(I, NodeContext) -> Fut + std::marker::Send + Sync + 'static,
    Fut: Future<Output = O> + std::marker::Send + 'static,
    O: IntoNodeOutput<S>,
{
    fn into_input_node(self) -> NodeSpec<S> {
        InputFn::<F, I, InputWithContext>::spec(self).with_output::<O>()
    }
}

/// A node that takes its own input `I` instead of the state (LangGraph's node with an input
/// schema, run by `Send(node, arg)`): only a [`Send::input`](crate::Send::input) carrying an
/// `I` runs it. The spec takes the usual adapters (`.with_retry(..)`, `.with_timeout(..)`);
/// add it with `add_node`, or use
/// [`StateGraph::add_node_with_input`](crate::StateGraph::add_node_with_input) directly.
///
/// ```
/// # use std::sync::Arc;
/// # use std::time::Duration;
/// use agent_core::prelude::*;
///
/// #[derive(GraphState, Clone, Default, Debug)]
/// struct S {
///     #[reducer(append)]
///     done: Vec<u32>,
/// }
///
/// #[derive(Clone, serde::Serialize, serde::Deserialize)]
/// struct Job {
///     id: u32,
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Report> {
/// let graph = StateGraph::<S>::new()
///     .add_node(
///         "fan",
///         (|_s: Arc<S>| async {
///             Command::goto_all((1..=3).map(|id| SendTo::input("work", Job { id })))
///         })
///         .with_destinations(["work"]),
///     )
///     .add_node(
///         "work",
///         input_node(|job: Job, ctx: NodeContext| async move {
///             assert_eq!(ctx.node(), "work");
///             SUpdate::default().done(vec![job.id])
///         })
///         .with_timeout(Duration::from_secs(5)),
///     )
///     .add_edge(START, "fan")
///     .add_edge("work", END)
///     .compile()?;
/// let out = graph.invoke(S::default(), RunConfig::default()).await?;
/// assert_eq!(out.done, [1, 2, 3]);
/// # Ok(()) }
/// ```
pub fn input_node<S, I, M>(node: impl IntoInputNode<S, I, M>) -> NodeSpec<S>
where
    S: GraphState,
{
    node.into_input_node()
}

/// Marker for a compiled graph used as a node.
#[doc(hidden)]
pub struct SubgraphMarker;

struct Subgraph<S: GraphState, C> {
    graph: crate::compiled::CompiledGraph<S, C>,
}

impl<S: GraphState, C: std::marker::Send + Sync + 'static> Node<S> for Subgraph<S, C> {
    fn call(&self, state: Arc<S>, ctx: NodeContext) -> BoxFuture<Result<NodeOutput<S>, NodeError>> {
        let graph = self.graph.clone();
        Box::pin(async move {
            let start = crate::executor::ChildStart::Snapshot(state);
            let out = crate::executor::Run::run_child(
                &graph.inner,
                graph.name(),
                graph.context.clone(),
                graph.store.clone(),
                graph.subgraph_checkpoints,
                start,
                ctx,
            )
            .await?;
            Ok(match out.to_parent {
                // Addressed to this graph: its update and gotos are this node's.
                Some(command) => NodeOutput::Command(Command {
                    graph: crate::command::CommandGraph::Current,
                    ..command
                }),
                None => NodeOutput::Batch(out.recorded),
            })
        })
    }
}

/// Maps a parent's state to a subgraph's input.
type InputMap<S, T> = Arc<dyn Fn(&S) -> <T as GraphState>::Update + std::marker::Send + Sync>;

/// Maps a subgraph's final state to its parent's update.
type OutputMap<S, T> = Arc<dyn Fn(T) -> <S as GraphState>::Update + std::marker::Send + Sync>;

/// A compiled graph over another state, run as a node through an input and an output map.
struct MappedSubgraph<S: GraphState, T: GraphState, C> {
    graph: crate::compiled::CompiledGraph<T, C>,
    input: InputMap<S, T>,
    output: OutputMap<S, T>,
}

impl<S, T, C> Node<S> for MappedSubgraph<S, T, C>
where
    S: GraphState,
    T: GraphState,
    C: std::marker::Send + Sync + 'static,
{
    fn call(&self, state: Arc<S>, ctx: NodeContext) -> BoxFuture<Result<NodeOutput<S>, NodeError>> {
        let graph = self.graph.clone();
        let input = (self.input)(&state);
        let output = self.output.clone();
        Box::pin(async move {
            let start = crate::executor::ChildStart::Input(input);
            let node = ctx.node().to_owned();
            let out = crate::executor::Run::run_child(
                &graph.inner,
                graph.name(),
                graph.context.clone(),
                graph.store.clone(),
                graph.subgraph_checkpoints,
                start,
                ctx,
            )
            .await?;
            match out.to_parent {
                Some(command) => parent_goto(&node, command),
                None => Ok(NodeOutput::Update(output(out.state))),
            }
        })
    }
}

/// A command from a subgraph over another state `T` to its parent over `S`: only its `goto`
/// to node names can cross (an update or a `Send` is of the subgraph's state).
fn parent_goto<S: GraphState, T: GraphState>(
    node: &str,
    command: Command<T>,
) -> Result<NodeOutput<S>, NodeError> {
    let refuse = |what: &str| {
        NodeError::Failed(Box::new(crate::error::GraphError::InvalidInput(format!(
            "subgraph `{node}` runs over another state, so its `Command::to_parent()` cannot carry {what}; route with `goto` to the parent's node names and let the output map write the state"
        ))))
    };
    if command.update.is_some() {
        return Err(refuse("an update"));
    }
    let mut goto = Vec::with_capacity(command.goto.len());
    for to in command.goto {
        match to {
            crate::command::Goto::Node(name) => goto.push(crate::command::Goto::Node(name)),
            crate::command::Goto::Send(_) => return Err(refuse("a `Send`")),
        }
    }
    Ok(NodeOutput::Command(Command {
        goto,
        ..Command::default()
    }))
}

impl<T: GraphState, C: std::marker::Send + Sync + 'static> crate::compiled::CompiledGraph<T, C> {
    /// This graph as a node of a parent over another state `S` (LangGraph's subgraph with
    /// its own schema): `input` maps the task's state (the parent's snapshot, or a `Send`'s
    /// input) to this graph's input, and `output` maps this graph's final state to the
    /// parent's update. Like a subgraph over the parent's state, it checkpoints in the
    /// parent's saver under its own namespace, can pause the whole run with `interrupt()`,
    /// and streams under its namespace.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use agent_core::{GraphState, RunConfig, StateGraph, END, START};
    /// #[derive(GraphState, Clone, Default, Debug)]
    /// struct Parent { topic: String, summary: String }
    /// #[derive(GraphState, Clone, Default, Debug)]
    /// struct Writer { subject: String, draft: String }
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), agent_core::GraphError> {
    /// let writer = StateGraph::<Writer>::new()
    ///     .add_node("draft", |s: Arc<Writer>| async move {
    ///         WriterUpdate::default().draft(format!("all about {}", s.subject))
    ///     })
    ///     .add_edge(START, "draft")
    ///     .add_edge("draft", END)
    ///     .compile()?;
    /// let graph = StateGraph::<Parent>::new()
    ///     .add_node(
    ///         "write",
    ///         writer.as_node(
    ///             |p: &Parent| WriterUpdate::default().subject(p.topic.clone()),
    ///             |w: Writer| ParentUpdate::default().summary(w.draft),
    ///         ),
    ///     )
    ///     .add_edge(START, "write")
    ///     .add_edge("write", END)
    ///     .compile()?;
    /// let out = graph
    ///     .invoke(ParentUpdate::default().topic("owls".to_owned()), RunConfig::default())
    ///     .await?;
    /// assert_eq!(out.summary, "all about owls");
    /// # Ok(()) }
    /// ```
    pub fn as_node<S: GraphState>(
        &self,
        input: impl Fn(&S) -> T::Update + std::marker::Send + Sync + 'static,
        output: impl Fn(T) -> S::Update + std::marker::Send + Sync + 'static,
    ) -> NodeSpec<S> {
        let shape = self.topology().clone();
        NodeSpec::new(MappedSubgraph {
            graph: self.clone(),
            input: Arc::new(input),
            output: Arc::new(output),
        })
        .with_subgraph(shape)
    }
}

/// What a subgraph run inside a node ended with
/// ([`CompiledGraph::invoke_in`](crate::CompiledGraph::invoke_in)).
#[non_exhaustive]
pub struct SubgraphOutput<S: GraphState> {
    /// The subgraph's state where its run ended.
    pub state: S,
    /// A command one of its nodes addressed to its parent ([`Command::to_parent`]): the
    /// subgraph's run ended there, and the calling node hands it on as its own output
    /// (addressed to its own graph), as a subgraph node does.
    pub to_parent: Option<Command<S>>,
}

impl<S: GraphState + std::fmt::Debug> std::fmt::Debug for SubgraphOutput<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubgraphOutput")
            .field("state", &self.state)
            .field("to_parent", &self.to_parent.as_ref().map(|c| &c.goto))
            .finish()
    }
}

impl<T: GraphState, C: std::marker::Send + Sync + 'static> crate::compiled::CompiledGraph<T, C> {
    /// Runs this graph inside the running node of `ctx`, as that node's subgraph (LangGraph's
    /// `graph.invoke(..)` called inside a node): `input` is its input, as for `invoke`, and
    /// the node makes its own update from the output. The run is a child of the node's task,
    /// as for [`as_node`](Self::as_node): it checkpoints in the parent's saver under the
    /// task's namespace, streams under it, and an `interrupt()` inside pauses the whole run —
    /// return the error (it is the task's pause: an [`Interrupted`](crate::Interrupted)); when
    /// the parent is resumed, the node runs again and this call resumes the subgraph where it
    /// stopped. One subgraph run per task: a second call in the same task finds the first
    /// one's checkpoints.
    pub async fn invoke_in(
        &self,
        input: T::Update,
        ctx: &NodeContext,
    ) -> Result<SubgraphOutput<T>, BoxError> {
        let out = crate::executor::Run::run_child(
            &self.inner,
            self.name(),
            self.context.clone(),
            self.store.clone(),
            self.subgraph_checkpoints,
            crate::executor::ChildStart::Input(input),
            ctx.clone(),
        )
        .await
        .map_err(|error| match error {
            NodeError::Failed(error) => error,
            other => Box::new(other),
        })?;
        Ok(SubgraphOutput {
            state: out.state,
            to_parent: out.to_parent,
        })
    }
}

/// A compiled graph over the same state is a node (a subgraph): it runs on the parent's
/// snapshot and its writes land in the parent as that node's writes, each through the
/// parent's reducers exactly once. It runs with its own context when it was given one, else
/// with its parent's. When the parent checkpoints, it checkpoints under its own namespace
/// and may pause the whole run with `interrupt()`.
impl<S: GraphState, C: std::marker::Send + Sync + 'static> IntoNode<S, SubgraphMarker>
    for crate::compiled::CompiledGraph<S, C>
{
    fn into_node(self) -> NodeSpec<S> {
        let shape = self.topology().clone();
        NodeSpec::new(Subgraph { graph: self }).with_subgraph(shape)
    }
}

/// Adapters on anything that is a node: `.with_retry(..)`, `.with_timeout(..)`,
/// `.with_destinations(..)`, `.with_cache_policy(..)`, `.boxed()` (tower's `ServiceExt` idiom).
pub trait NodeExt<S: GraphState, M>: IntoNode<S, M> {
    /// Retries failed attempts with `policy`.
    fn with_retry(self, policy: RetryPolicy) -> NodeSpec<S> {
        self.into_node().with_retry(policy)
    }

    /// Caches the node's results under `policy`.
    fn with_cache_policy(self, policy: crate::cache::CachePolicy<S>) -> NodeSpec<S> {
        self.into_node().with_cache_policy(policy)
    }

    /// Fails an attempt that runs longer than `timeout`.
    fn with_timeout(self, timeout: Duration) -> NodeSpec<S> {
        self.into_node().with_timeout(timeout)
    }

    /// Declares where this node's `Command`s may go.
    fn with_destinations<I, N>(self, destinations: I) -> NodeSpec<S>
    where
        I: IntoIterator<Item = N>,
        N: Into<String>,
    {
        self.into_node().with_destinations(destinations)
    }

    /// Erases the node's type (for lists of different nodes, e.g. `add_sequence`).
    fn boxed(self) -> NodeSpec<S> {
        self.into_node()
    }
}

impl<S: GraphState, M, T: IntoNode<S, M>> NodeExt<S, M> for T {}
