//! `use agent_core::prelude::*;`: what a graph needs, safe to glob-import.
//!
//! The crate root exports LangGraph's `Send` under its own name, which a glob import of the
//! root would let shadow `std::marker::Send` (every `T: Send` bound in the importing module
//! would then name the wrong thing). The prelude exports it as [`SendTo`] instead, and nothing
//! else in it shares a name with the standard prelude.
//!
//! A map-reduce worker takes its own input (`input_node`, or a `#[node]` fn taking a value):
//! `SendTo::input("work", job)` carries the job, `SendTo::new("work", state)` a whole state to a
//! node that reads the state.
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
//! #[derive(Clone, serde::Serialize, serde::Deserialize)]
//! struct Job {
//!     id: u32,
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
//!             Command::goto_all([SendTo::input("work", Job { id: 1 }), SendTo::input("work", Job { id: 2 })])
//!         })
//!         .with_destinations(["work"]),
//!     )
//!     .add_node_with_input("work", |job: Job| async move {
//!         SUpdate::default().done(vec![format!("job {}", job.id)])
//!     })
//!     .add_edge(START, "fan")
//!     .add_edge("work", END)
//!     .compile()?;
//! assert_send(&graph);
//! let out = graph.invoke(S::default(), RunConfig::default()).await?;
//! assert_eq!(out.done, ["job 1", "job 2"]);
//! # Ok(()) }
//! ```

#[cfg(feature = "sqlite")]
pub use crate::SqliteSaver;
pub use crate::command::Send as SendTo;
pub use crate::{
    BoxError, BoxResult, Checkpointer, Command, CompiledGraph, Durability, END, GraphError,
    GraphState, InMemorySaver, Input, Interrupt, IntoNodeOutput, NodeContext, NodeError, NodeExt,
    NodeInput, Report, RetryPolicy, RunConfig, RunOutput, Runtime, START, StateGraph, StreamMode,
    StreamPart, input_node, node,
};
