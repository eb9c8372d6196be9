//! The graph's runtime context: nodes read it through `&Runtime<C>`, runs get it from the
//! compiled graph, a missing or mismatched context is a clear error, subgraphs inherit it.

use std::sync::Arc;
use std::time::Duration;

use agent_core::{
    Clock, END, GraphError, GraphState, ManualClock, NodeContext, NodeExt, RunConfig, Runtime,
    START, StateGraph, node,
};

#[derive(Debug)]
struct Services {
    prefix: String,
    clock: Arc<ManualClock>,
}

#[derive(GraphState, Clone, Default, Debug)]
struct Log {
    #[reducer(append)]
    lines: Vec<String>,
}

#[node]
async fn stamp(_state: &Log, rt: &Runtime<Services>) -> LogUpdate {
    let services = rt.context();
    LogUpdate::default().lines(vec![format!(
        "{} {} @{}",
        services.prefix,
        rt.node(),
        services.clock.unix_seconds()
    )])
}

fn services(prefix: &str, at: i64) -> Services {
    Services {
        prefix: prefix.to_owned(),
        clock: Arc::new(ManualClock::at_unix_seconds(at)),
    }
}

fn graph() -> agent_core::CompiledGraph<Log, Services> {
    StateGraph::<Log, Services>::with_context_type()
        .add_named(stamp)
        .add_node(
            "closure",
            |_s: Arc<Log>, rt: Runtime<Services>| async move {
                LogUpdate::default().lines(vec![format!("{} closure", rt.context().prefix)])
            },
        )
        .add_node("plain", |_s: Arc<Log>| async { LogUpdate::default() })
        .add_edge(START, "stamp")
        .add_edge("stamp", "closure")
        .add_edge("closure", "plain")
        .add_edge("plain", END)
        .compile()
        .expect("valid graph")
}

#[tokio::test]
async fn nodes_and_closures_read_the_context_each_handle_carries() {
    let graph = graph();
    let a = graph.with_context(services("a", 10));
    let b = graph.with_context(services("b", 20));
    let out = a
        .invoke(Log::default(), RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.lines, ["a stamp @10", "a closure"]);
    let out = b
        .invoke(Log::default(), RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.lines, ["b stamp @20", "b closure"]);

    // The clock is shared: moving it shows in the next run.
    a.context().unwrap().clock.advance(Duration::from_secs(5));
    let out = a
        .invoke(Log::default(), RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.lines[0], "a stamp @15");
}

#[tokio::test]
async fn a_run_without_the_context_is_refused_before_any_node_runs() {
    let error = graph()
        .invoke(Log::default(), RunConfig::default())
        .await
        .unwrap_err();
    assert!(
        matches!(error, GraphError::MissingContext { .. }),
        "{error}"
    );
    let message = error.to_string();
    assert!(message.contains("Services"), "{message}");
    assert!(message.contains(".with_context("), "{message}");
}

#[test]
fn an_erased_node_with_another_context_fails_compile_with_a_clear_message() {
    struct Other;
    let erased = (|_s: Arc<Log>, _rt: Runtime<Other>| async { LogUpdate::default() })
        .with_timeout(Duration::from_secs(1));
    let error = StateGraph::<Log, Services>::with_context_type()
        .add_node("other", erased)
        .add_edge(START, "other")
        .add_edge("other", END)
        .compile()
        .unwrap_err();
    let message = error.to_string();
    assert!(
        matches!(error, GraphError::ContextMismatch { .. }),
        "{message}"
    );
    assert!(message.contains("node `other`"), "{message}");
    assert!(message.contains("Other"), "{message}");
    assert!(message.contains("Services"), "{message}");
}

#[tokio::test]
async fn a_node_body_is_callable_in_a_unit_test() {
    let rt = Runtime::new(services("t", 1), NodeContext::detached("stamp"));
    let update = stamp::call(&Log::default(), &rt).await;
    let mut state = Log::default();
    agent_core::GraphState::apply(&mut state, update).unwrap();
    assert_eq!(state.lines, ["t stamp @1"]);
}

#[tokio::test]
async fn subgraphs_inherit_the_parents_context_unless_given_their_own() {
    let child = StateGraph::<Log, Services>::with_context_type()
        .add_named(stamp)
        .add_edge(START, "stamp")
        .add_edge("stamp", END)
        .compile()
        .unwrap();
    let parent = StateGraph::<Log, Services>::with_context_type()
        .add_node("inherits", child.clone())
        .add_node("own", child.with_context(services("own", 99)))
        .add_edge(START, "inherits")
        .add_edge("inherits", "own")
        .add_edge("own", END)
        .compile()
        .unwrap()
        .with_context(services("parent", 7));
    let out = parent
        .invoke(Log::default(), RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.lines, ["parent stamp @7", "own stamp @99"]);
}
