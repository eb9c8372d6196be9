//! The diagrams in `docs/graphs/` are generated from `agent_flows::catalog`: one Markdown file
//! per flow with its description and Mermaid diagram. This test fails when one is stale or
//! missing, or when a file there belongs to no flow; `cargo xtask codegen` rewrites them.

use agent_flows::catalog::{FlowInfo, flows};
use xtask::sourcegen::{MARKDOWN_HEADER, ensure_dir, project_root};

/// The Markdown page of one flow.
fn page(flow: &FlowInfo) -> String {
    format!(
        "{MARKDOWN_HEADER}\n# `{name}`\n\n{description}\n\nSource: `agent-flows/src/{name}.rs`.\n\n```mermaid\n{mermaid}```\n",
        name = flow.name,
        description = flow.description,
        mermaid = flow.mermaid,
    )
}

#[test]
fn codegen_flow_diagrams() {
    let flows = flows().expect("every flow compiles");
    let files: Vec<(String, String)> = flows
        .iter()
        .map(|flow| (format!("{}.md", flow.name), page(flow)))
        .collect();
    let dir = project_root().join("docs").join("graphs");
    if let Err(problems) = ensure_dir(&dir, "md", &files) {
        panic!("{problems}");
    }
}
