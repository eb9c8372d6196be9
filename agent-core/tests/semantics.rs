//! Super-step semantics through the public API, one test per rule LangGraph users rely on.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agent_core::{
    Command, END, GraphError, GraphState, NodeContext, NodeExt, RetryPolicy, Route, RunConfig,
    START, Send, StateGraph, node,
};

#[derive(GraphState, Clone, Default, Debug, PartialEq)]
struct Trace {
    #[reducer(append)]
    visits: Vec<String>,
    #[reducer(add)]
    total: u64,
    last: Option<String>,
    route: String,
}

/// A node that records its name.
fn visit(name: &'static str) -> impl Fn(Arc<Trace>) -> std::future::Ready<TraceUpdate> + Clone {
    move |_s: Arc<Trace>| std::future::ready(TraceUpdate::default().visits(vec![name.to_owned()]))
}

fn config() -> RunConfig {
    RunConfig::default()
}

#[tokio::test]
async fn sequence_runs_in_order() {
    let graph = StateGraph::new()
        .add_sequence([
            ("a", visit("a").boxed()),
            ("b", visit("b").boxed()),
            ("c", visit("c").boxed()),
        ])
        .add_edge(START, "a")
        .add_edge("c", END)
        .compile()
        .unwrap();
    let out = graph.invoke(Trace::default(), config()).await.unwrap();
    assert_eq!(out.visits, ["a", "b", "c"]);
}

#[tokio::test]
async fn fan_out_fan_in_runs_the_target_once() {
    let graph = StateGraph::new()
        .add_node("a", visit("a"))
        .add_node("b", visit("b"))
        .add_node("c", visit("c"))
        .add_node("d", visit("d"))
        .add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("a", "c")
        .add_edge("b", "d")
        .add_edge("c", "d")
        .add_edge("d", END)
        .compile()
        .unwrap();
    let out = graph.invoke(Trace::default(), config()).await.unwrap();
    assert_eq!(out.visits, ["a", "b", "c", "d"]);
}

fn unequal_branches(join: bool) -> agent_core::CompiledGraph<Trace> {
    let graph = StateGraph::new()
        .add_node("a", visit("a"))
        .add_node("b", visit("b"))
        .add_node("c1", visit("c1"))
        .add_node("c2", visit("c2"))
        .add_node("d", visit("d"))
        .add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("a", "c1")
        .add_edge("c1", "c2")
        .add_edge("d", END);
    let graph = if join {
        graph.add_edge(["b", "c2"], "d")
    } else {
        graph.add_edge("b", "d").add_edge("c2", "d")
    };
    graph.compile().unwrap()
}

#[tokio::test]
async fn unequal_branches_with_plain_edges_run_the_target_twice() {
    let out = unequal_branches(false)
        .invoke(Trace::default(), config())
        .await
        .unwrap();
    // step 1: b, c1; step 2: c2, d (from b); step 3: d (from c2)
    assert_eq!(out.visits, ["a", "b", "c1", "c2", "d", "d"]);
}

#[tokio::test]
async fn unequal_branches_with_a_join_run_the_target_once() {
    let out = unequal_branches(true)
        .invoke(Trace::default(), config())
        .await
        .unwrap();
    assert_eq!(out.visits, ["a", "b", "c1", "c2", "d"]);
}

fn router_graph() -> agent_core::CompiledGraph<Trace> {
    StateGraph::new()
        .add_node("classify", visit("classify"))
        .add_node("weather", visit("weather"))
        .add_node("news", visit("news"))
        .add_edge(START, "classify")
        .add_conditional_edges(
            "classify",
            |s: &Trace| s.route.clone(),
            [("weather", "weather"), ("news", "news"), ("done", END)],
        )
        .add_edge("weather", END)
        .add_edge("news", END)
        .compile()
        .unwrap()
}

#[tokio::test]
async fn conditional_edges_follow_the_path_map() {
    let graph = router_graph();
    let weather = graph
        .invoke(TraceUpdate::default().route("weather"), config())
        .await
        .unwrap();
    assert_eq!(weather.visits, ["classify", "weather"]);
    let done = graph
        .invoke(TraceUpdate::default().route("done"), config())
        .await
        .unwrap();
    assert_eq!(done.visits, ["classify"]);
}

#[tokio::test]
async fn a_route_key_missing_from_the_path_map_is_an_error() {
    let err = router_graph()
        .invoke(TraceUpdate::default().route("sports"), config())
        .await
        .unwrap_err();
    match &err {
        GraphError::RouteNotInPathMap { from, key, known } => {
            assert_eq!(from, "classify");
            assert_eq!(key, "sports");
            assert!(known.contains("`weather`"), "{known}");
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(err.to_string().contains("not in its path map"), "{err}");
}

#[tokio::test]
async fn routing_to_an_unknown_node_without_a_path_map_is_an_error() {
    let graph = StateGraph::new()
        .add_node("a", visit("a"))
        .add_node("b", visit("b"))
        .add_edge(START, "a")
        .add_conditional_edges("a", |_: &Trace| "nowhere", agent_core::PathMap::any())
        .add_edge("b", END)
        .compile()
        .unwrap();
    let err = graph.invoke(Trace::default(), config()).await.unwrap_err();
    assert!(
        matches!(&err, GraphError::UnknownTarget { target, .. } if target == "nowhere"),
        "{err:?}"
    );
}

#[tokio::test]
async fn routers_may_fan_out_to_several_nodes() {
    let graph = StateGraph::new()
        .add_node("a", visit("a"))
        .add_node("x", visit("x"))
        .add_node("y", visit("y"))
        .add_edge(START, "a")
        .add_conditional_edges("a", |_: &Trace| vec!["y", "x"], ["x", "y"])
        .add_edge("x", END)
        .add_edge("y", END)
        .compile()
        .unwrap();
    let out = graph.invoke(Trace::default(), config()).await.unwrap();
    assert_eq!(out.visits, ["a", "x", "y"]);
}

#[tokio::test]
async fn two_writes_to_a_last_value_field_in_one_step_are_an_error() {
    let write_last = |name: &'static str| {
        move |_s: Arc<Trace>| async move { TraceUpdate::default().last(Some(name.to_owned())) }
    };
    let graph = StateGraph::new()
        .add_node("a", visit("a"))
        .add_node("b", write_last("b"))
        .add_node("c", write_last("c"))
        .add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("a", "c")
        .add_edge(["b", "c"], END)
        .compile()
        .unwrap();
    let err = graph.invoke(Trace::default(), config()).await.unwrap_err();
    match &err {
        GraphError::InvalidUpdate {
            field,
            first,
            second,
            step,
        } => {
            assert_eq!(*field, "last");
            assert_eq!((first.as_str(), second.as_str()), ("b", "c"));
            assert_eq!(*step, 2);
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(
        err.to_string()
            .contains("can receive only one value per step")
    );
}

#[tokio::test]
async fn reducer_order_is_task_order_not_completion_order() {
    // Ten parallel nodes that finish in random order; names sort as strings (b10 < b2).
    let mut graph = StateGraph::new()
        .add_node("a", visit("a"))
        .add_edge(START, "a");
    let names: Vec<String> = (1..=10).map(|i| format!("b{i}")).collect();
    for name in &names {
        let leaked: &'static str = Box::leak(name.clone().into_boxed_str());
        graph = graph
            .add_node(name.as_str(), move |_s: Arc<Trace>| async move {
                tokio::time::sleep(Duration::from_micros(fastrand::u64(0..2_000))).await;
                TraceUpdate::default()
                    .visits(vec![leaked.to_owned()])
                    .total(1)
            })
            .add_edge("a", name.as_str())
            .add_edge(name.as_str(), END);
    }
    let graph = graph.compile().unwrap();
    let mut expected = names.clone();
    expected.sort();
    expected.insert(0, "a".to_owned());
    for _ in 0..100 {
        let out = graph.invoke(Trace::default(), config()).await.unwrap();
        assert_eq!(out.visits, expected);
        assert_eq!(out.total, 10);
    }
    assert_eq!(expected[1..4], ["b1", "b10", "b2"]);
}

#[derive(GraphState, Clone, Default, Debug)]
struct MapReduce {
    subjects: Vec<u32>,
    subject: u32,
    #[reducer(append)]
    results: Vec<u32>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_map_reduce_of_a_thousand_tasks() {
    let started = Arc::new(AtomicUsize::new(0));
    let counter = started.clone();
    let graph = StateGraph::new()
        .add_node("plan", |_s: Arc<MapReduce>| async {
            MapReduceUpdate::default().subjects((0..1000).collect::<Vec<u32>>())
        })
        .add_node("work", move |s: Arc<MapReduce>| {
            counter.fetch_add(1, Ordering::Relaxed);
            async move {
                tokio::time::sleep(Duration::from_micros(u64::from(999 - s.subject))).await;
                MapReduceUpdate::default().results(vec![s.subject * 2])
            }
        })
        .add_node("reduce", |s: Arc<MapReduce>| async move {
            assert_eq!(s.results.len(), 1000);
            MapReduceUpdate::default()
        })
        .add_edge(START, "plan")
        .add_conditional_edges(
            "plan",
            |s: &MapReduce| {
                s.subjects
                    .iter()
                    .map(|&subject| {
                        Send::new(
                            "work",
                            MapReduce {
                                subject,
                                ..MapReduce::default()
                            },
                        )
                    })
                    .collect::<Vec<_>>()
            },
            ["work"],
        )
        .add_edge("work", "reduce")
        .add_edge("reduce", END)
        .compile()
        .unwrap();
    let out = graph.invoke(MapReduce::default(), config()).await.unwrap();
    assert_eq!(started.load(Ordering::Relaxed), 1000);
    // Send tasks apply in the order sent, whatever order they finished in.
    assert_eq!(out.results, (0..1000).map(|i| i * 2).collect::<Vec<u32>>());
}

#[tokio::test]
async fn command_goto_and_static_edges_both_fire() {
    let graph = StateGraph::new()
        .add_node(
            "a",
            (|_s: Arc<Trace>| async {
                Command::goto("c").update(TraceUpdate::default().visits(vec!["a".to_owned()]))
            })
            .with_destinations(["c"]),
        )
        .add_node("b", visit("b"))
        .add_node("c", visit("c"))
        .add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("b", END)
        .add_edge("c", END)
        .compile()
        .unwrap();
    let out = graph.invoke(Trace::default(), config()).await.unwrap();
    assert_eq!(out.visits, ["a", "b", "c"]);
}

/// LangGraph compiles a node reached only by a goto from a node that also has a static
/// edge (no `with_destinations`), and runs both next: the goto's target and the edge's.
#[tokio::test]
async fn a_node_reached_only_by_a_goto_from_a_node_with_an_edge_compiles() {
    let graph = StateGraph::new()
        .add_node("a", |_s: Arc<Trace>| async {
            Command::goto("b").update(TraceUpdate::default().visits(vec!["a".to_owned()]))
        })
        .add_node("b", seen("b"))
        .add_node("c", seen("c"))
        .add_edge(START, "a")
        .add_edge("a", "c")
        .add_edge("b", END)
        .add_edge("c", END)
        .compile()
        .expect("`b` is reached by a's goto");
    let out = graph.invoke(Trace::default(), config()).await.unwrap();
    // Both ran in the step after `a`'s, each seeing only `a`'s visit.
    assert_eq!(out.visits, ["a", "b after 1", "c after 1"]);
}

/// A node that records its name and how many visits it saw.
fn seen(name: &'static str) -> impl Fn(Arc<Trace>) -> std::future::Ready<TraceUpdate> + Clone {
    move |s: Arc<Trace>| {
        let visit = format!("{name} after {}", s.visits.len());
        std::future::ready(TraceUpdate::default().visits(vec![visit]))
    }
}

/// LangGraph compiles a node with no outgoing edge that returns `Command(goto=..)`: it routes
/// by its gotos alone, with no `with_destinations`.
#[tokio::test]
async fn a_node_routed_only_by_command_compiles_without_destinations() {
    let graph = StateGraph::new()
        .add_node("agent", |s: Arc<Trace>| async move {
            let next = if s.visits.len() < 2 { "tool" } else { END };
            Command::goto(next).update(TraceUpdate::default().visits(vec!["agent".to_owned()]))
        })
        .add_node("tool", visit("tool"))
        .add_edge(START, "agent")
        .add_edge("tool", "agent")
        .compile()
        .expect("a Command-returning node needs no outgoing edge");
    let out = graph.invoke(Trace::default(), config()).await.unwrap();
    assert_eq!(out.visits, ["agent", "tool", "agent"]);
}

/// A goto to a node the graph does not have fails when it happens, naming both.
#[tokio::test]
async fn a_command_goto_to_an_unknown_node_fails_naming_it() {
    let graph = StateGraph::new()
        .add_node("agent", |_s: Arc<Trace>| async { Command::goto("nowhere") })
        .add_node("tool", visit("tool"))
        .add_edge(START, "agent")
        .add_edge(START, "tool")
        .add_edge("tool", END)
        .compile()
        .unwrap();
    let error = graph.invoke(Trace::default(), config()).await.unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("`agent`") && text.contains("`nowhere`"),
        "{text}"
    );
}

/// A fallible node whose `Ok` is a `Command` routes by it too; one whose `Ok` is an update
/// still needs an edge.
#[tokio::test]
async fn a_result_of_command_routes_and_a_result_of_update_needs_an_edge() {
    let graph = StateGraph::new()
        .add_node("agent", |_s: Arc<Trace>| async {
            Ok::<_, std::io::Error>(Command::goto("tool"))
        })
        .add_node("tool", visit("tool"))
        .add_edge(START, "agent")
        .add_edge("tool", END)
        .compile()
        .unwrap();
    assert_eq!(
        graph
            .invoke(Trace::default(), config())
            .await
            .unwrap()
            .visits,
        ["tool"]
    );

    let error = StateGraph::new()
        .add_node("agent", |_s: Arc<Trace>| async {
            Ok::<_, std::io::Error>(TraceUpdate::default())
        })
        .add_edge(START, "agent")
        .compile()
        .unwrap_err();
    assert!(
        matches!(&error, GraphError::DeadEnd(n) if n == "agent"),
        "{error:?}"
    );
}

#[tokio::test]
async fn command_can_send() {
    let graph = StateGraph::new()
        .add_node(
            "a",
            (|_s: Arc<Trace>| async {
                Command::goto_all([
                    Send::new("w", TraceUpdate::default().route("one").into_state()),
                    Send::new("w", TraceUpdate::default().route("two").into_state()),
                ])
            })
            .with_destinations(["w"]),
        )
        .add_node("w", |s: Arc<Trace>| async move {
            TraceUpdate::default().visits(vec![format!("w:{}", s.route)])
        })
        .add_edge(START, "a")
        .add_edge("w", END)
        .compile()
        .unwrap();
    let out = graph.invoke(Trace::default(), config()).await.unwrap();
    assert_eq!(out.visits, ["w:one", "w:two"]);
    // The path lists each Send task of a step.
    assert_eq!(out.path.to_vec(), [vec!["a"], vec!["w", "w"]]);
    assert_eq!(
        serde_json::to_string(&out.path).unwrap(),
        r#"[["a"],["w","w"]]"#
    );
}

trait IntoState {
    fn into_state(self) -> Trace;
}

impl IntoState for TraceUpdate {
    fn into_state(self) -> Trace {
        let mut state = Trace::default();
        state.apply(self).unwrap();
        state
    }
}

#[tokio::test]
async fn recursion_limit_stops_a_loop_with_a_clear_error() {
    let graph = StateGraph::new()
        .add_node("ping", visit("ping"))
        .add_node("pong", visit("pong"))
        .add_edge(START, "ping")
        .add_edge("ping", "pong")
        .add_edge("pong", "ping")
        .compile()
        .unwrap();
    let err = graph
        .invoke(Trace::default(), RunConfig::default().recursion_limit(7))
        .await
        .unwrap_err();
    match &err {
        GraphError::RecursionLimit { limit, last_nodes } => {
            assert_eq!(*limit, 7);
            assert_eq!(last_nodes, "`ping`");
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(err.to_string().contains("recursion limit of 7"));
}

#[tokio::test]
async fn a_graph_that_needs_exactly_the_limit_finishes() {
    let graph = StateGraph::new()
        .add_sequence([
            ("a", visit("a").boxed()),
            ("b", visit("b").boxed()),
            ("c", visit("c").boxed()),
        ])
        .add_edge(START, "a")
        .add_edge("c", END)
        .compile()
        .unwrap();
    assert!(
        graph
            .invoke(Trace::default(), RunConfig::default().recursion_limit(3))
            .await
            .is_ok()
    );
    assert!(
        graph
            .invoke(Trace::default(), RunConfig::default().recursion_limit(2))
            .await
            .is_err()
    );
}

#[tokio::test]
async fn nodes_see_remaining_steps_and_can_stop_gracefully() {
    let graph = StateGraph::new()
        .add_node("loop", |_s: Arc<Trace>, ctx: NodeContext| async move {
            let route = if ctx.remaining_steps() <= 1 {
                "stop"
            } else {
                "again"
            };
            TraceUpdate::default()
                .visits(vec![format!("{}:{}", ctx.step(), ctx.remaining_steps())])
                .route(route)
        })
        .add_edge(START, "loop")
        .add_conditional_edges(
            "loop",
            |s: &Trace| s.route.clone(),
            [("again", "loop"), ("stop", END)],
        )
        .compile()
        .unwrap();
    let out = graph
        .invoke(Trace::default(), RunConfig::default().recursion_limit(3))
        .await
        .unwrap();
    assert_eq!(out.visits, ["1:3", "2:2", "3:1"]);
}

#[tokio::test]
async fn remaining_steps_counts_the_running_step_in() {
    // A loop that never stops: the recursion limit allows exactly 3 steps, which see 3, 2, 1
    // (LangGraph's `RemainingSteps` shows 2, 1, 0 for the same run).
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = seen.clone();
    let graph = StateGraph::new()
        .add_node("loop", move |_s: Arc<Trace>, ctx: NodeContext| {
            let kept = kept.clone();
            async move {
                kept.lock().unwrap().push(ctx.remaining_steps());
                TraceUpdate::default()
            }
        })
        .add_edge(START, "loop")
        .add_edge("loop", "loop")
        .compile()
        .unwrap();
    let out = graph
        .invoke(Trace::default(), RunConfig::default().recursion_limit(3))
        .await;
    assert!(
        matches!(out, Err(GraphError::RecursionLimit { .. })),
        "{out:?}"
    );
    assert_eq!(*seen.lock().unwrap(), [3, 2, 1]);
}

#[tokio::test]
async fn routers_read_their_own_nodes_writes_not_their_siblings() {
    // b and c run in the same step; b's router must see b's write of `route`, not c's.
    let graph = StateGraph::new()
        .add_node("a", visit("a"))
        .add_node("b", |_s: Arc<Trace>| async {
            TraceUpdate::default()
                .visits(vec!["b".to_owned()])
                .route("x")
        })
        .add_node("c", visit("c"))
        .add_node("x", visit("x"))
        .add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("a", "c")
        .add_conditional_edges(
            "b",
            |s: &Trace| {
                // c's visit is not visible here
                assert!(!s.visits.iter().any(|v| v == "c"));
                s.route.clone()
            },
            ["x"],
        )
        .add_edge("c", END)
        .add_edge("x", END)
        .compile()
        .unwrap();
    let out = graph.invoke(Trace::default(), config()).await.unwrap();
    assert_eq!(out.visits, ["a", "b", "c", "x"]);
}

#[tokio::test]
async fn conditional_edges_from_start_see_the_input() {
    let graph = StateGraph::new()
        .add_node("x", visit("x"))
        .add_node("y", visit("y"))
        .add_conditional_edges(START, |s: &Trace| s.route.clone(), ["x", "y"])
        .add_edge("x", END)
        .add_edge("y", END)
        .compile()
        .unwrap();
    let out = graph
        .invoke(TraceUpdate::default().route("y"), config())
        .await
        .unwrap();
    assert_eq!(out.visits, ["y"]);
}

#[derive(Debug, thiserror::Error)]
#[error("the weather service is down")]
struct ServiceDown;

#[node]
async fn flaky(_state: &Trace) -> Result<TraceUpdate, ServiceDown> {
    Err(ServiceDown)
}

#[tokio::test]
async fn node_errors_name_the_node_and_stop_the_run() {
    let graph = StateGraph::new()
        .add_named(flaky)
        .add_edge(START, "flaky")
        .add_edge("flaky", END)
        .compile()
        .unwrap();
    let err = graph.invoke(Trace::default(), config()).await.unwrap_err();
    assert_eq!(err.node(), Some("flaky"));
    assert_eq!(
        err.to_string(),
        "node `flaky` failed in step 1: the weather service is down"
    );
}

#[tokio::test]
async fn a_panicking_node_is_an_error_not_a_crash() {
    let graph = StateGraph::new()
        .add_node("a", visit("a"))
        .add_node("boom", |_s: Arc<Trace>| async {
            if true {
                panic!("kaboom");
            }
            TraceUpdate::default()
        })
        .add_node("c", visit("c"))
        .add_edge(START, "a")
        .add_edge("a", "boom")
        .add_edge("a", "c")
        .add_edge(["boom", "c"], END)
        .compile()
        .unwrap();
    let err = graph.invoke(Trace::default(), config()).await.unwrap_err();
    assert!(
        matches!(&err, GraphError::NodePanicked { node, message, .. } if node == "boom" && message == "kaboom"),
        "{err:?}"
    );
}

static ATTEMPTS: AtomicUsize = AtomicUsize::new(0);

/// Fails twice, then succeeds.
#[node(retry(max_attempts = 3, initial_interval = "1ms", jitter = false))]
async fn third_time_lucky(_state: &Trace, ctx: &NodeContext) -> Result<TraceUpdate, ServiceDown> {
    if ATTEMPTS.fetch_add(1, Ordering::SeqCst) < 2 {
        return Err(ServiceDown);
    }
    Ok(TraceUpdate::default().visits(vec![ctx.node().to_owned()]))
}

#[tokio::test]
async fn node_retry_policy_retries_failed_attempts() {
    let graph = StateGraph::new()
        .add_named(third_time_lucky)
        .add_edge(START, third_time_lucky::NAME)
        .add_edge("third_time_lucky", END)
        .compile()
        .unwrap();
    let out = graph.invoke(Trace::default(), config()).await.unwrap();
    assert_eq!(out.visits, ["third_time_lucky"]);
    assert_eq!(ATTEMPTS.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn retries_give_up_with_the_last_error() {
    let graph = StateGraph::new()
        .add_node(
            "down",
            (|_s: Arc<Trace>| async { Err::<TraceUpdate, _>(ServiceDown) }).with_retry(
                RetryPolicy::new()
                    .max_attempts(2)
                    .initial_interval(Duration::from_millis(1)),
            ),
        )
        .add_edge(START, "down")
        .add_edge("down", END)
        .compile()
        .unwrap();
    let err = graph.invoke(Trace::default(), config()).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "node `down` failed in step 1: gave up after 2 attempts: the weather service is down"
    );
}

#[node(name = "slowpoke", timeout = "20ms")]
async fn slow(_state: &Trace) -> TraceUpdate {
    tokio::time::sleep(Duration::from_secs(5)).await;
    TraceUpdate::default()
}

#[tokio::test]
async fn node_timeouts_fail_the_node() {
    let graph = StateGraph::new()
        .add_named(slow)
        .add_edge(START, "slowpoke")
        .add_edge("slowpoke", END)
        .compile()
        .unwrap();
    let err = graph.invoke(Trace::default(), config()).await.unwrap_err();
    assert!(
        matches!(&err, GraphError::NodeTimeout { node, after, .. } if node == "slowpoke" && *after == Duration::from_millis(20)),
        "{err:?}"
    );
}

#[tokio::test]
async fn node_fns_stay_callable_for_unit_tests() {
    let out = flaky::call(&Trace::default()).await;
    assert!(out.is_err());
    let state = Trace::default();
    drop(slow::call(&state));
}

fn keep_longest(current: &mut String, update: String) {
    if update.len() > current.len() {
        *current = update;
    }
}

#[derive(Debug, thiserror::Error)]
#[error("negative amounts are not allowed")]
struct Negative;

fn checked_add(current: &mut i64, update: i64) -> Result<(), Negative> {
    if update < 0 {
        return Err(Negative);
    }
    *current += update;
    Ok(())
}

#[derive(GraphState, Clone, Default, Debug)]
struct Custom {
    #[reducer(keep_longest)]
    word: String,
    #[reducer(checked_add)]
    balance: i64,
    #[reducer(merge)]
    tags: std::collections::BTreeMap<String, String>,
}

#[tokio::test]
async fn custom_reducers_and_their_errors() {
    let graph = StateGraph::new()
        .add_node("a", |_s: Arc<Custom>| async {
            CustomUpdate::default().word("elephant").balance(5).tags(
                [("k".to_owned(), "a".to_owned())]
                    .into_iter()
                    .collect::<std::collections::BTreeMap<_, _>>(),
            )
        })
        .add_node("b", |_s: Arc<Custom>| async {
            CustomUpdate::default().word("cat").balance(7).tags(
                [("j".to_owned(), "b".to_owned())]
                    .into_iter()
                    .collect::<std::collections::BTreeMap<_, _>>(),
            )
        })
        .add_edge(START, "a")
        .add_edge(START, "b")
        .add_edge(["a", "b"], END)
        .compile()
        .unwrap();
    let out = graph
        .invoke(CustomUpdate::default().word("dog"), config())
        .await
        .unwrap();
    assert_eq!(out.word, "elephant");
    assert_eq!(out.balance, 12);
    assert_eq!(out.tags.len(), 2);

    let err = graph
        .invoke(CustomUpdate::default().balance(-1), config())
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "node `__start__` in step -1: reducer `checked_add` of field `balance` rejected the update: negative amounts are not allowed"
    );
}

#[tokio::test]
async fn routers_can_return_a_route_with_sends_and_keys() {
    let graph = StateGraph::new()
        .add_node("a", visit("a"))
        .add_node("w", |s: Arc<Trace>| async move {
            TraceUpdate::default().visits(vec![format!("w:{}", s.route)])
        })
        .add_node("z", visit("z"))
        .add_edge(START, "a")
        .add_conditional_edges(
            "a",
            |_: &Trace| {
                Route::to("z").send(
                    "w",
                    Trace {
                        route: "sent".to_owned(),
                        ..Trace::default()
                    },
                )
            },
            ["z", "w"],
        )
        .add_edge("w", END)
        .add_edge("z", END)
        .compile()
        .unwrap();
    let out = graph.invoke(Trace::default(), config()).await.unwrap();
    // Edge-triggered z applies before the Send task.
    assert_eq!(out.visits, ["a", "z", "w:sent"]);
}

#[tokio::test]
async fn max_concurrency_limits_parallel_tasks() {
    let running = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let (r, p) = (running.clone(), peak.clone());
    let graph = StateGraph::new()
        .add_node("fan", visit("fan"))
        .add_node("w", move |_s: Arc<Trace>| {
            let (r, p) = (r.clone(), p.clone());
            async move {
                let now = r.fetch_add(1, Ordering::SeqCst) + 1;
                p.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(2)).await;
                r.fetch_sub(1, Ordering::SeqCst);
                TraceUpdate::default().total(1)
            }
        })
        .add_edge(START, "fan")
        .add_conditional_edges(
            "fan",
            |_: &Trace| {
                (0..20)
                    .map(|_| Send::new("w", Trace::default()))
                    .collect::<Vec<_>>()
            },
            ["w"],
        )
        .add_edge("w", END)
        .compile()
        .unwrap();
    let out = graph
        .invoke(Trace::default(), RunConfig::default().max_concurrency(3))
        .await
        .unwrap();
    assert_eq!(out.total, 20);
    assert!(peak.load(Ordering::SeqCst) <= 3);
}

/// A step's tasks run concurrently whatever its width: a few on the run's own task, many
/// spread over the runtime's workers. Each waits at a barrier for all its siblings, which
/// only concurrent tasks pass.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steps_tasks_run_concurrently_narrow_or_wide() {
    for width in [2usize, 3, 4, 12] {
        let barrier = Arc::new(tokio::sync::Barrier::new(width));
        let mut graph = StateGraph::<Trace>::new();
        for i in 0..width {
            let barrier = barrier.clone();
            let name = format!("n{i}");
            graph = graph
                .add_node(name.clone(), move |_s: Arc<Trace>| {
                    let barrier = barrier.clone();
                    async move {
                        barrier.wait().await;
                        TraceUpdate::default().total(1)
                    }
                })
                .add_edge(START, name.clone())
                .add_edge(name, END);
        }
        let graph = graph.compile().unwrap();
        let run = graph.invoke(Trace::default(), config());
        let out = tokio::time::timeout(Duration::from_secs(10), run)
            .await
            .unwrap_or_else(|_| panic!("{width} tasks did not run concurrently"))
            .unwrap();
        assert_eq!(out.total, width as u64);
    }
}

/// In a wide step, tasks that finish when first polled (on the run's own task) and tasks that
/// wait (spawned) mix: those that wait are woken by a sibling that finishes at once, and the
/// writes still apply in task order, on either runtime.
#[test]
fn wide_steps_mix_tasks_that_finish_at_once_with_tasks_that_wait() {
    fn graph() -> agent_core::CompiledGraph<Trace> {
        let gate = Arc::new(tokio::sync::Semaphore::new(0));
        StateGraph::new()
            .add_node("fan", visit("fan"))
            .add_node("w", move |s: Arc<Trace>| {
                let gate = gate.clone();
                async move {
                    let i: u64 = s.route.parse().unwrap();
                    if i == 7 {
                        // The last task opens the gate for the four that wait on it.
                        gate.add_permits(4);
                    } else if i % 2 == 1 {
                        gate.acquire().await.unwrap().forget();
                    }
                    TraceUpdate::default()
                        .visits(vec![format!("w{i}")])
                        .total(i)
                }
            })
            .add_edge(START, "fan")
            .add_conditional_edges(
                "fan",
                |_: &Trace| {
                    (0..8)
                        .map(|i| {
                            let payload = Trace {
                                route: i.to_string(),
                                ..Trace::default()
                            };
                            Send::new("w", payload)
                        })
                        .collect::<Vec<_>>()
                },
                ["w"],
            )
            .add_edge("w", END)
            .compile()
            .unwrap()
    }
    let expected: Vec<String> = std::iter::once("fan".to_owned())
        .chain((0..8).map(|i| format!("w{i}")))
        .collect();
    for multi in [false, true] {
        let runtime = if multi {
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
        } else {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
        }
        .unwrap();
        for _ in 0..20 {
            let out = runtime
                .block_on(graph().invoke(Trace::default(), config()))
                .unwrap();
            assert_eq!(out.visits, expected, "multi-thread: {multi}");
            assert_eq!(out.total, (0..8).sum::<u64>());
        }
    }
}
