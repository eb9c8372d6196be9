//! # agent-flows: reference flows
//!
//! The five seed graphs land here as small modules that read like their diagrams.
pub mod hello;
