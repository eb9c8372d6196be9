//! # agent-flows: reference flows
//!
//! The seed graphs as small modules that read like their diagrams: state, nodes, edges,
//! `build()`. Deterministic parts are plain functions with unit tests.
//!
//! - [`tool_router`]: router -> parallel tool executor -> generator (seed 000), with the
//!   offline keyword router; the LLM router plugs in with agent-llm.
//! - [`catalog`]: every flow above with its description and diagram (for `docs/graphs/`).

pub mod catalog;
pub mod tool_router;
