//! `use agent_core::prelude::*;`: what a graph needs, safe to glob-import.
//!
//! The crate root exports LangGraph's `Send` under its own name, which a glob import of the
//! root would let shadow `std::marker::Send` (every `T: Send` bound in the importing module
//! would then name the wrong thing). The prelude exports it as [`SendTo`] instead, and nothing
//! else in it shares a name with the standard prelude.
//!
//! ```
//! use std::sync::Arc;
//!
//! use agent_core::prelude::*;
//!
//! #[derive(GraphState, Clone, Default, Debug)]
//! struct S {
//!     #[reducer(append)]
//!     done: Vec<String>,
//! }
//!
//! // `Send` is still the standard marker trait here.
//! fn assert_send<T: Send>(_: &T) {}
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Report> {
//! let graph = StateGraph::<S>::new()
//!     .add_node(
//!         "fan",
//!         (|_s: Arc<S>| async {
//!             Command::goto_all([SendTo::new("work", S::default()), SendTo::new("work", S::default())])
//!         })
//!         .with_destinations(["work"]),
//!     )
//!     .add_node("work", |_s: Arc<S>| async { SUpdate::default().done(vec!["w".to_owned()]) })
//!     .add_edge(START, "fan")
//!     .add_edge("work", END)
//!     .compile()?;
//! assert_send(&graph);
//! let out = graph.invoke(S::default(), RunConfig::default()).await?;
//! assert_eq!(out.done.len(), 2);
//! # Ok(()) }
//! ```

#[cfg(feature = "sqlite")]
pub use crate::SqliteSaver;
pub use crate::command::Send as SendTo;
pub use crate::{
    BoxError, Checkpointer, Command, CompiledGraph, Durability, END, GraphError, GraphState,
    InMemorySaver, Input, Interrupt, IntoNodeOutput, NodeContext, NodeError, NodeExt, Report,
    RetryPolicy, RunConfig, RunOutput, Runtime, START, StateGraph, StreamMode, StreamPart, node,
};
