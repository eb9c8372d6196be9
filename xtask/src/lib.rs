//! What the crates' codegen tests share with `cargo xtask`: keeping checked-in generated files
//! equal to what their generator produces, and a small line diff to show when they are not.
//!
//! Generators live next to what they describe (macro expansion snapshots in `agent-macros`,
//! flow diagrams in `agent-flows`) and run as ordinary `#[test]`s whose names start with
//! `codegen_`; they hand their output to [`sourcegen::ensure_dir`]. Plain `cargo test` only
//! checks; `cargo xtask codegen` runs the same tests with `AGENTGRAPH_CODEGEN=write`, and then
//! they write. This library has no dependencies, so the crates can use it as a dev-dependency
//! at no cost.

mod diff;
pub mod sourcegen;

pub use diff::line_diff;
