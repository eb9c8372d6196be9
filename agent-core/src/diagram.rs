//! Diagrams of a compiled graph: Mermaid (LangGraph's `draw_mermaid()` layout) and a plain
//! text outline for terminals and logs.

use std::fmt::Write;

use crate::compiled::{CompiledGraph, Topology};
use crate::constants::{END, START};
use crate::state::GraphState;

impl<S: GraphState, C> CompiledGraph<S, C> {
    /// The graph as a Mermaid flowchart: solid arrows for edges, dotted for conditional edges
    /// (labelled with the path-map key when it differs from the node) and `Command` destinations.
    pub fn draw_mermaid(&self) -> String {
        draw_mermaid(self.topology())
    }

    /// The graph as a plain text outline, one edge a line.
    pub fn draw_ascii(&self) -> String {
        draw_ascii(self.topology())
    }
}

fn uses_end(t: &Topology) -> bool {
    t.edges.iter().any(|(_, to)| to == END)
        || t.conditional.iter().any(|(_, _, to)| to == END)
        || t.commands.iter().any(|(_, to)| to == END)
}

/// Words Mermaid reads as flowchart syntax, never as a node id (a node named `end` would
/// close a subgraph that was never opened and break the whole diagram).
const MERMAID_KEYWORDS: &[&str] = &[
    "end",
    "graph",
    "subgraph",
    "flowchart",
    "style",
    "linkStyle",
    "classDef",
    "class",
    "click",
    "direction",
];

/// Mermaid node ids cannot hold every character a node name may; quote-free ids are kept,
/// and a keyword gets a `_` after it (the label still shows the name).
fn id(name: &str) -> String {
    let mut id: String = name
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if MERMAID_KEYWORDS.contains(&id.as_str()) {
        id.push('_');
    }
    id
}

/// Renders a topology as Mermaid.
pub fn draw_mermaid(t: &Topology) -> String {
    let mut out = String::new();
    out.push_str("---\nconfig:\n  flowchart:\n    curve: linear\n---\ngraph TD;\n");
    let _ = writeln!(out, "\t{START}([<p>{START}</p>]):::first");
    for name in &t.nodes {
        let _ = writeln!(out, "\t{}({})", id(name), name);
    }
    if uses_end(t) {
        let _ = writeln!(out, "\t{END}([<p>{END}</p>]):::last");
    }
    for (from, to) in &t.edges {
        let _ = writeln!(out, "\t{} --> {};", id(from), id(to));
    }
    for (from, label, to) in &t.conditional {
        match label {
            Some(label) if label != to => {
                let _ = writeln!(
                    out,
                    "\t{} -. &nbsp;{}&nbsp; .-> {};",
                    id(from),
                    label,
                    id(to)
                );
            }
            _ => {
                let _ = writeln!(out, "\t{} -.-> {};", id(from), id(to));
            }
        }
    }
    for (from, to) in &t.commands {
        let _ = writeln!(out, "\t{} -.-> {};", id(from), id(to));
    }
    out.push_str("\tclassDef default fill:#f2f0ff,line-height:1.2\n");
    out.push_str("\tclassDef first fill-opacity:0\n");
    out.push_str("\tclassDef last fill:#bfb6fc\n");
    out
}

/// Renders a topology as a text outline.
pub fn draw_ascii(t: &Topology) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "nodes: {}", t.nodes.join(", "));
    for (from, to) in &t.edges {
        let _ = writeln!(out, "{from} --> {to}");
    }
    for (from, label, to) in &t.conditional {
        match label {
            Some(label) => {
                let _ = writeln!(out, "{from} -.-> {to}  [if {label}]");
            }
            None => {
                let _ = writeln!(out, "{from} -.-> {to}  [if routed]");
            }
        }
    }
    for (from, to) in &t.commands {
        let _ = writeln!(out, "{from} ==> {to}  [Command]");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::id;

    #[test]
    fn mermaid_keywords_are_not_node_ids() {
        assert_eq!(id("end"), "end_");
        assert_eq!(id("class"), "class_");
        assert_eq!(id("End"), "End");
        assert_eq!(id("endpoint"), "endpoint");
        assert_eq!(id("my node"), "my_node");
    }
}
