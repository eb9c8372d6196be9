//! `compile()` rejects invalid graphs with an error that names the problem; one test each.

use std::sync::Arc;

use agent_core::{END, GraphError, GraphState, NodeExt, PathMap, START, StateGraph};

#[derive(GraphState, Clone, Default, Debug)]
struct S {
    #[reducer(append)]
    log: Vec<String>,
}

async fn noop(_s: Arc<S>) -> SUpdate {
    SUpdate::default()
}

fn err(graph: StateGraph<S>) -> GraphError {
    graph.compile().expect_err("graph should not compile")
}

#[test]
fn unknown_node_in_an_edge() {
    let e = err(StateGraph::new()
        .add_node("a", noop)
        .add_edge(START, "a")
        .add_edge("a", "b"));
    assert!(
        matches!(&e, GraphError::UnknownNode { name, .. } if name == "b"),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "edge `a` -> `b` refers to unknown node `b`; add it with add_node first (known nodes: `a`)"
    );
}

#[test]
fn unknown_source_in_an_edge() {
    let e = err(StateGraph::new()
        .add_node("a", noop)
        .add_edge(START, "a")
        .add_edge("a", END)
        .add_edge("ghost", "a"));
    assert!(
        matches!(&e, GraphError::UnknownNode { name, .. } if name == "ghost"),
        "{e:?}"
    );
}

#[test]
fn unknown_node_in_a_path_map() {
    let e = err(StateGraph::new()
        .add_node("a", noop)
        .add_edge(START, "a")
        .add_conditional_edges("a", |_: &S| "x", [("x", "missing"), ("done", END)]));
    assert!(
        matches!(&e, GraphError::UnknownNode { name, context, .. } if name == "missing" && context.contains("path map")),
        "{e:?}"
    );
}

#[test]
fn unknown_node_in_destinations() {
    let e = err(StateGraph::new()
        .add_node("a", noop.with_destinations(["nope"]))
        .add_edge(START, "a"));
    assert!(
        matches!(&e, GraphError::UnknownNode { name, .. } if name == "nope"),
        "{e:?}"
    );
}

#[test]
fn no_edge_from_start() {
    let e = err(StateGraph::new().add_node("a", noop).add_edge("a", END));
    assert!(matches!(e, GraphError::NoEntryPoint), "{e:?}");
    assert!(e.to_string().contains("add an edge from START"));
}

#[test]
fn empty_graph() {
    assert!(matches!(err(StateGraph::new()), GraphError::Empty));
}

#[test]
fn duplicate_node_name() {
    let e = err(StateGraph::new()
        .add_node("a", noop)
        .add_node("a", noop)
        .add_edge(START, "a")
        .add_edge("a", END));
    assert!(
        matches!(&e, GraphError::DuplicateNode(n) if n == "a"),
        "{e:?}"
    );
}

#[test]
fn reserved_names() {
    for name in [START, END, "a:b", "a|b", ""] {
        let e = err(StateGraph::new().add_node(name, noop).add_edge(START, END));
        assert!(
            matches!(&e, GraphError::ReservedName(n) if n == name),
            "{name}: {e:?}"
        );
    }
}

#[test]
fn unreachable_node() {
    let e = err(StateGraph::new()
        .add_node("a", noop)
        .add_node("island", noop)
        .add_edge(START, "a")
        .add_edge("a", END)
        .add_edge("island", END));
    assert!(
        matches!(&e, GraphError::Unreachable(n) if n == "island"),
        "{e:?}"
    );
}

#[test]
fn join_target_with_an_unreachable_source_is_unreachable() {
    let e = err(StateGraph::new()
        .add_node("a", noop)
        .add_node("orphan", noop)
        .add_node("j", noop)
        .add_edge(START, "a")
        .add_edge(["a", "orphan"], "j")
        .add_edge("j", END));
    assert!(
        matches!(&e, GraphError::Unreachable(n) if n == "orphan" || n == "j"),
        "{e:?}"
    );
}

#[test]
fn dead_end_node() {
    let e = err(StateGraph::new()
        .add_node("a", noop)
        .add_node("b", noop)
        .add_edge(START, "a")
        .add_edge("a", "b"));
    assert!(matches!(&e, GraphError::DeadEnd(n) if n == "b"), "{e:?}");
    assert!(e.to_string().contains("add an edge (to END"));
}

#[test]
fn command_destinations_count_as_a_way_out() {
    let ok = StateGraph::new()
        .add_node("a", noop.with_destinations(["b", END]))
        .add_node("b", noop)
        .add_edge(START, "a")
        .add_edge("b", END)
        .compile();
    assert!(ok.is_ok());
}

#[test]
fn edges_cannot_leave_end_or_enter_start() {
    let e = err(StateGraph::new()
        .add_node("a", noop)
        .add_edge(START, "a")
        .add_edge("a", START));
    assert!(matches!(e, GraphError::InvalidEdge(_)), "{e:?}");
    let e = err(StateGraph::new()
        .add_node("a", noop)
        .add_edge(START, "a")
        .add_edge("a", END)
        .add_edge(END, "a"));
    assert!(matches!(e, GraphError::InvalidEdge(_)), "{e:?}");
}

#[test]
fn add_named_needs_a_named_node() {
    let e = err(StateGraph::new().add_named(noop).add_edge(START, END));
    assert!(matches!(e, GraphError::UnnamedNode), "{e:?}");
}

#[test]
fn path_map_any_makes_every_node_reachable() {
    let ok = StateGraph::new()
        .add_node("a", noop)
        .add_node("b", noop)
        .add_edge(START, "a")
        .add_conditional_edges("a", |_: &S| END, PathMap::any())
        .add_edge("b", END)
        .compile();
    assert!(ok.is_ok());
}

/// A node that may return a `Command` reaches any node, unless its destinations say where:
/// then a node none of them names is unreachable.
#[test]
fn declared_destinations_narrow_where_a_command_goes() {
    let commanding = |_s: Arc<S>| async { agent_core::Command::<S>::goto("c") };
    let e = err(StateGraph::new()
        .add_node("a", commanding.with_destinations(["c"]))
        .add_node("b", noop)
        .add_node("c", noop)
        .add_edge(START, "a")
        .add_edge("b", END)
        .add_edge("c", END));
    assert!(
        matches!(&e, GraphError::Unreachable(n) if n == "b"),
        "{e:?}"
    );
    let ok = StateGraph::new()
        .add_node("a", commanding)
        .add_node("b", noop)
        .add_node("c", noop)
        .add_edge(START, "a")
        .add_edge("a", "c")
        .add_edge("b", END)
        .add_edge("c", END)
        .compile();
    assert!(ok.is_ok());
}
