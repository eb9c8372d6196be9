//! The two virtual nodes every graph has.

/// The virtual node a run starts from: `add_edge(START, "first")`.
pub const START: &str = "__start__";

/// The virtual node that ends a branch of the run: `add_edge("last", END)`.
pub const END: &str = "__end__";
