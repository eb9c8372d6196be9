//! # agent-flows: the reference flows and the `agent` program
//!
//! The five seed graphs as modules that read like their diagrams — state, nodes, routes,
//! `graph()` / `build(context)` — on one platform:
//!
//! - [`chat`]: the chat contract every flow keeps in `messages` (the human message as sent,
//!   tool calls and results, the answer with the id it streamed under).
//! - [`registry`]: the typed [`FlowSpec`] each flow module implements,
//!   the erased [`Flow`] the CLI and the tests use, and [`FLOWS`], the list.
//! - [`env`](mod@env): what a flow is built from (the model, the clock, options).
//! - [`serve`]: a flow served over the LangGraph API ([`ServeFlow`]): what a request may set
//!   (each option's [`Access`]) and the models it may pick ([`Models`]).
//! - [`offline`]: rule-based models behind the `ChatModel` trait, the default of the CLI and
//!   of the snapshot tests; real providers plug in with `--model` / `AGENTGRAPH_MODEL`.
//! - [`lang`]: the seeds' languages (Spanish, English, Russian) for the offline rules.
//! - [`dataset`]: the real data set the data flows query (US macroeconomic series), read-only.
//!
//! Flows: [`tool_router`] (seed 000), [`form`] (seed 001), [`orchestrator`] (seed 002),
//! [`data`] (seed 003), [`react`] (seed 004).
//!
//! ```
//! use agent_flows::{find, FlowEnv};
//! use agent_core::StreamModes;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), agent_flows::FlowError> {
//! let flow = find("tool-router")?;
//! let session = flow.open(&FlowEnv::offline(), None, None)?;
//! let turn = session
//!     .turn("What time is it in New York?", None, StreamModes::NONE, &mut |_| {})
//!     .await?;
//! assert_eq!(turn.path, [["router"], ["tool_executor"], ["generator"]]);
//! assert!(turn.response.starts_with("In New York it is"));
//! # Ok(()) }
//! ```

pub mod chat;
pub mod data;
pub mod dataset;
pub mod env;
pub mod error;
pub mod form;
pub mod lang;
pub mod offline;
pub mod orchestrator;
pub mod react;
pub mod registry;
pub mod serve;
pub mod serve_config;
pub mod tool_router;

pub use env::FlowEnv;
pub use error::FlowError;
pub use registry::{Access, Flow, FlowInfo, FlowSession, FlowSpec, StreamItem, TurnReport};
pub use serve::{Models, ServeFlow};

use registry::Entry;

/// Every flow, in seed order.
pub static FLOWS: &[&dyn Flow] = &[
    &Entry::<tool_router::ToolRouter>::NEW,
    &Entry::<form::Form>::NEW,
    &Entry::<orchestrator::Orchestrator>::NEW,
    &Entry::<data::Data>::NEW,
    &Entry::<react::React>::NEW,
];

/// The flow named `name`, or an error listing the known names.
pub fn find(name: &str) -> Result<&'static dyn Flow, FlowError> {
    FLOWS
        .iter()
        .copied()
        .find(|f| f.info().name == name)
        .ok_or_else(|| FlowError::UnknownFlow {
            name: name.to_owned(),
            known: FLOWS
                .iter()
                .map(|f| f.info().name)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// The workspace README's examples compile and run as doctests here, in the crate that
/// depends on every other (the serving example needs agent-server).
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;

/// The guide's examples too (`docs/guide/src/*.md`), a hidden item per page.
#[cfg(any(test, doctest))]
mod guide_doctests;
