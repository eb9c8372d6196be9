//! # agent-tools: tools for agent graphs
//!
//! The tool registry, `ToolNode` and built-in tools land here (see the project's issues);
//! for now the crate holds the echo tool every flow can rely on.

/// The echo tool: returns its input unchanged. Useful to test tool plumbing end to end.
pub fn echo(input: &str) -> String {
    input.to_owned()
}

#[cfg(test)]
mod tests {
    #[test]
    fn echo_returns_input() {
        assert_eq!(super::echo("hi"), "hi");
    }
}
