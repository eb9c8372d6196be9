//! The diagrams in `docs/graphs/` are generated from the flow registry: one Markdown file per
//! flow with its description and Mermaid diagram. This test fails when one is stale or
//! missing, or when a file there belongs to no flow; `cargo xtask codegen` rewrites them.

use agent_flows::FLOWS;
use xtask::sourcegen::{MARKDOWN_HEADER, ensure_dir, project_root};

#[test]
fn codegen_flow_diagrams() {
    let files: Vec<(String, String)> = FLOWS
        .iter()
        .map(|flow| {
            let info = flow.info();
            let mermaid = flow.diagram(false).expect("every flow compiles");
            let module = info.name.replace('-', "_");
            let page = format!(
                "{MARKDOWN_HEADER}\n# `{name}` (seed {seed})\n\n{description}\n\nSource: `agent-flows/src/{module}/`. Run it: `agent run {name} \"...\"`.\n\n```mermaid\n{mermaid}```\n",
                name = info.name,
                seed = info.seed,
                description = info.description,
            );
            (format!("{}.md", info.name), page)
        })
        .collect();
    let dir = project_root().join("docs").join("graphs");
    if let Err(problems) = ensure_dir(&dir, "md", &files) {
        panic!("{problems}");
    }
}
