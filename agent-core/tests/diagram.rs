//! Diagrams of compiled graphs, pinned with insta.

use std::sync::Arc;

use agent_core::{END, GraphState, NodeExt, START, StateGraph};

#[derive(GraphState, Clone, Default, Debug)]
struct S {
    next: String,
}

async fn noop(_s: Arc<S>) -> SUpdate {
    SUpdate::default()
}

fn agent_graph() -> agent_core::CompiledGraph<S> {
    StateGraph::new()
        .add_node("agent", noop)
        .add_node("tools", noop)
        .add_node("review", noop.with_destinations(["agent", END]))
        .add_node("left", noop)
        .add_node("right", noop)
        .add_edge(START, "agent")
        .add_conditional_edges(
            "agent",
            |s: &S| s.next.clone(),
            [
                ("continue", "tools"),
                ("review", "review"),
                ("fan", "left"),
                ("end", END),
            ],
        )
        .add_edge("agent", "right")
        .add_edge("tools", "agent")
        .add_edge(["left", "right"], END)
        .compile()
        .unwrap()
}

#[test]
fn mermaid_labels_conditional_edges_and_commands() {
    insta::assert_snapshot!(agent_graph().draw_mermaid());
}

#[test]
fn ascii_outline() {
    insta::assert_snapshot!(agent_graph().draw_ascii());
}
