//! # agent-core: a graph runtime for stateful agents
//!
//! LangGraph's model with Rust types: a state struct whose fields have reducers, nodes that
//! are async functions returning partial updates, edges (plain, joins, conditional, `Send`,
//! `Command`) and a Pregel super-step executor that runs every triggered node of a step
//! concurrently and applies their writes together, in a deterministic order.
//!
//! A node reads the state, or takes an input of its own type that a [`Send`] carries to it
//! (map-reduce workers: [`input_node`], [`StateGraph::add_node_with_input`], or a `#[node]`
//! fn taking its input by value).
//!
//! This crate knows nothing of LLMs; `agent-llm` and `agent-tools` build on it.
//!
//! Coming from LangGraph? [`differences`] lists what behaves differently, on purpose, each
//! with its two-line translation.
//!
//! ```
//! use std::sync::Arc;
//! use agent_core::{node, GraphState, NodeContext, RunConfig, StateGraph, END, START};
//!
//! #[derive(GraphState, Clone, Default, Debug)]
//! struct Research {
//!     topic: String,
//!     #[reducer(append)]
//!     notes: Vec<String>,
//! }
//!
//! /// Looks the topic up in two places at once.
//! #[node]
//! async fn plan(state: &Research) -> ResearchUpdate {
//!     ResearchUpdate::default().notes(vec![format!("plan: {}", state.topic)])
//! }
//!
//! #[node]
//! async fn search_web(state: &Research, ctx: &NodeContext) -> ResearchUpdate {
//!     ResearchUpdate::default().notes(vec![format!("{} (step {})", ctx.node(), ctx.step())])
//! }
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), agent_core::GraphError> {
//! let graph = StateGraph::new()
//!     .add_named(plan)
//!     .add_named(search_web)
//!     .add_node("search_docs", |_s: Arc<Research>| async {
//!         ResearchUpdate::default().notes(vec!["search_docs".to_owned()])
//!     })
//!     .add_edge(START, "plan")
//!     .add_edge("plan", "search_web")
//!     .add_edge("plan", "search_docs")
//!     .add_edge(["search_web", "search_docs"], END)
//!     .compile()?;
//!
//! let input = ResearchUpdate::default().topic("rust".to_owned());
//! let out = graph.invoke(input, RunConfig::default()).await?;
//! // Both searches ran in step 2; their writes landed in node-name order.
//! assert_eq!(out.notes, ["plan: rust", "search_docs", "search_web (step 2)"]);
//! # Ok(()) }
//! ```

extern crate self as agent_core;

pub mod cache;
pub mod checkpoint;
mod command;
mod compiled;
mod config;
mod constants;
mod context;
mod diagram;
pub mod differences;
mod error;
mod executor;
mod graph;
mod ids;
mod interrupt;
mod layers;
mod node;
mod node_input;
pub mod prelude;
pub mod reducers;
mod report;
mod route;
mod runtime;
mod shared;
#[cfg(feature = "sqlite")]
pub mod sqlite;
mod state;
mod state_api;
pub mod store;
mod stream;
pub mod telemetry;

pub use agent_macros::{GraphState, node};
#[cfg(feature = "sqlite")]
pub use cache::SqliteCache;
pub use cache::{CachePolicy, InMemoryCache, NodeCache};
#[cfg(feature = "sqlite")]
pub use checkpoint::SqliteSaver;
pub use checkpoint::{Checkpointer, InMemorySaver, ListFilter};
#[cfg(feature = "postgres")]
pub use checkpoint::{Fence, PgListener, PgNotification, PostgresSaver};
pub use command::{Command, CommandGraph, Goto, Send};
pub use compiled::{CompiledGraph, SubgraphCheckpoints, Topology};
pub use config::{DEFAULT_RECURSION_LIMIT, Durability, RunConfig};
pub use constants::{END, START};
pub use context::NodeContext;
pub use diagram::{draw_ascii, draw_mermaid};
pub use error::{BoxError, BoxResult, GraphError, ParentCommand, list_names, panic_message};
pub use executor::{Input, RunOutput, RunPath};
pub use graph::{IntoSources, StateGraph};
pub use ids::new_id;
pub use interrupt::{Interrupt, Interrupted};
pub use layers::{RetryPolicy, Retryable, backoff_interval};
pub use node::{
    BoxFuture, IntoInputNode, IntoNode, IntoNodeOutput, Node, NodeError, NodeExt, NodeOutput,
    NodeSpec, SubgraphOutput, input_node,
};
pub use node_input::NodeInput;
pub use report::Report;
pub use route::{IntoRoute, PathMap, Route, routing_run_id};
pub use runtime::{Clock, CompatibleContext, ManualClock, Runtime, SystemClock};
pub use shared::Shared;
pub use state::{
    FieldInfo, FieldSet, GraphState, MAX_FIELDS, ReducerError, ReducerKind, StateDefault,
    StateUpdate,
};
pub use state_api::{PendingTask, StateSnapshot, SubgraphSnapshot};
pub use stream::{
    DebugEvent, Event, GraphStream, INTERRUPT, Namespace, StreamMeta, StreamMode, StreamModes,
    StreamPart, SubgraphPart, TAG_NOSTREAM,
};

/// The crate README's example compiles and runs as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct CrateReadmeDoctests;

/// Paths for generated code only; not a public API.
#[doc(hidden)]
pub mod __private {
    pub use serde;
    pub use std::sync::Arc;
    pub use std::time::Duration;

    pub use crate::context::NodeContext;
    pub use crate::executor::Input;
    pub use crate::layers::RetryPolicy;
    pub use crate::node::{IntoNode, IntoNodeOutput, NodeError, NodeOutput, NodeSpec};
    pub use crate::reducers::{self, ReducerOutput};
    pub use crate::runtime::{CompatibleContext, Runtime};
    pub use crate::state::{
        FieldInfo, FieldSet, GraphState, ReducerError, ReducerKind, StateDefault,
    };

    /// Formats a field with `Debug` when its type has it (autoref specialization: the
    /// generated call site picks [`ViaDebug`] for `Debug` types, [`ViaOpaque`] otherwise).
    pub struct DebugField<'a, T>(pub &'a T);

    /// The `Debug` branch of [`DebugField`].
    pub trait ViaDebug {
        /// Formats the field.
        fn agent_fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result;
    }

    impl<T: std::fmt::Debug> ViaDebug for &DebugField<'_, T> {
        fn agent_fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            std::fmt::Debug::fmt(self.0, f)
        }
    }

    /// The fallback branch of [`DebugField`].
    pub trait ViaOpaque {
        /// Formats the field.
        fn agent_fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result;
    }

    impl<T> ViaOpaque for DebugField<'_, T> {
        fn agent_fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("<not Debug>")
        }
    }

    /// A `Debug` value from a closure.
    pub struct FmtWith<F>(pub F);

    impl<F: Fn(&mut std::fmt::Formatter<'_>) -> std::fmt::Result> std::fmt::Debug for FmtWith<F> {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            (self.0)(f)
        }
    }

    /// Marker for nodes written with `#[node]`.
    pub struct NodeFnMarker;

    impl<C> CompatibleContext<C> for NodeFnMarker {}

    /// Marker for `#[node]` fns that read the graph's runtime context `C`.
    pub struct RuntimeFnMarker<C>(std::marker::PhantomData<fn() -> C>);

    impl<C> CompatibleContext<C> for RuntimeFnMarker<C> {}

    /// Runs a reducer and names the field when it rejects the write.
    #[inline]
    pub fn reduce<R: ReducerOutput>(
        output: R,
        field: &'static str,
        reducer: &'static str,
    ) -> Result<(), ReducerError> {
        let appended = output.appended();
        output.into_result().map_err(|source| ReducerError {
            field,
            reducer,
            source,
        })?;
        if appended {
            crate::reducers::journal::appended(field);
        }
        Ok(())
    }

    /// An error for a field index a state does not have.
    pub fn no_such_field<E: serde::ser::Error>(index: usize) -> E {
        E::custom(format_args!("graph state has no field with index {index}"))
    }

    /// An error for a field index a state does not have (deserialization side).
    pub fn no_such_field_de<E: serde::de::Error>(index: usize) -> E {
        E::custom(format_args!("graph state has no field with index {index}"))
    }

    /// Builds the spec of a `#[node]` fn from its wrapper closure.
    pub fn node_spec<S, F, Fut, O>(f: F) -> NodeSpec<S>
    where
        S: GraphState,
        F: Fn(Arc<S>, NodeContext) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = O> + Send + 'static,
        O: IntoNodeOutput<S>,
    {
        IntoNode::<S, (crate::node::WithContext, O)>::into_node(f)
    }

    /// Builds the spec of a `#[node]` fn that takes its own input `I`.
    pub fn node_spec_with_input<S, I, F, Fut, O>(f: F) -> NodeSpec<S>
    where
        S: GraphState,
        I: crate::node_input::NodeInput,
        F: Fn(I, NodeContext) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = O> + Send + 'static,
        O: IntoNodeOutput<S>,
    {
        crate::node::IntoInputNode::<S, I, (crate::node::InputWithContext, O)>::into_input_node(f)
    }

    /// Builds the spec of a `#[node]` fn that takes its own input `I` and reads the runtime
    /// context `C`.
    pub fn node_spec_with_input_runtime<S, I, C, F, Fut, O>(f: F) -> NodeSpec<S>
    where
        S: GraphState,
        I: crate::node_input::NodeInput,
        C: Send + Sync + 'static,
        F: Fn(I, Runtime<C>) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = O> + Send + 'static,
        O: IntoNodeOutput<S>,
    {
        crate::node::IntoInputNode::<S, I, (crate::node::InputWithRuntime<C>, O)>::into_input_node(
            f,
        )
    }

    /// Builds the spec of a `#[node]` fn that reads the runtime context `C`.
    pub fn node_spec_with_runtime<S, C, F, Fut, O>(f: F) -> NodeSpec<S>
    where
        S: GraphState,
        C: Send + Sync + 'static,
        F: Fn(Arc<S>, Runtime<C>) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = O> + Send + 'static,
        O: IntoNodeOutput<S>,
    {
        IntoNode::<S, (crate::node::WithRuntime<C>, O)>::into_node(f)
    }
}
