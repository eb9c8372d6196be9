//! The catalog of flows this crate ships: name, what it does, and its Mermaid diagram.
//!
//! Docs and tools read it (`cargo xtask codegen` writes `docs/graphs/<name>.md` from it), so
//! a new flow module adds one entry to [`flows`] and its diagram follows.

use agent_core::GraphError;

use crate::tool_router;

/// One shipped flow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowInfo {
    /// The flow's name: its module name, and the file name of its diagram.
    pub name: &'static str,
    /// What the flow does, in a sentence or two of Markdown.
    pub description: &'static str,
    /// The compiled graph as drawn by `CompiledGraph::draw_mermaid`.
    pub mermaid: String,
}

/// Every flow this crate ships, in a stable order; an error if one of them does not compile
/// (a bug in this crate, caught by its tests).
pub fn flows() -> Result<Vec<FlowInfo>, GraphError> {
    Ok(vec![FlowInfo {
        name: "tool_router",
        description: "Seed 000: `router` picks the tools a question needs, `tool_executor` runs \
                      the calls in parallel (one `Send` task per call), `generator` writes the \
                      answer from their results. A question that needs no tool goes straight \
                      to `generator`.",
        mermaid: tool_router::build()?.draw_mermaid(),
    }])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_file_names() {
        let flows = flows().expect("every flow compiles");
        let mut names: Vec<&str> = flows.iter().map(|f| f.name).collect();
        assert!(names.iter().all(|n| {
            !n.is_empty()
                && n.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        }));
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), flows.len(), "two flows share a name");
    }
}
