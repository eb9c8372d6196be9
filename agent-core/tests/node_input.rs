//! Typed node inputs: nodes that take a value of their own type, run by `Send::input`
//! (LangGraph's `Send(node, arg)`), through the public API: map-reduce, the errors of a `Send`
//! that does not fit its node, and payloads that survive checkpoints, interrupts and a resume
//! by a fresh graph over a reopened saver.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_core::checkpoint::Checkpointer;
use agent_core::{
    BoxResult, Command, CompiledGraph, Durability, END, GraphError, GraphState, InMemorySaver,
    Input, NodeContext, NodeExt, PathMap, Route, RunConfig, START, Send, SqliteSaver, StateGraph,
    input_node, node,
};

#[derive(GraphState, Clone, Default, Debug, PartialEq)]
struct Essay {
    topics: Vec<String>,
    #[reducer(append)]
    paragraphs: Vec<String>,
    #[reducer(append)]
    reviews: Vec<String>,
}

/// What one writer gets: a topic and its position, not an `Essay`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct Topic {
    name: String,
    index: usize,
}

/// What one reviewer gets.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
struct Review {
    paragraph: String,
}

#[node]
async fn review(input: Review, ctx: &NodeContext) -> EssayUpdate {
    EssayUpdate::default().reviews(vec![format!("{} ok ({})", input.paragraph, ctx.node())])
}

#[node]
async fn shout(input: Review) -> EssayUpdate {
    EssayUpdate::default().reviews(vec![input.paragraph.to_uppercase()])
}

fn topics(names: &[&str]) -> EssayUpdate {
    EssayUpdate::default().topics(names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>())
}

/// One `Send::input` per topic.
fn fan_out(s: &Essay) -> Vec<Send<Essay>> {
    s.topics
        .iter()
        .enumerate()
        .map(|(index, name)| {
            Send::input(
                "write",
                Topic {
                    name: name.clone(),
                    index,
                },
            )
        })
        .collect()
}

#[tokio::test]
async fn map_reduce_with_typed_inputs() {
    let graph = StateGraph::new()
        .add_node("plan", |_s: Arc<Essay>| async { EssayUpdate::default() })
        .add_node(
            "write",
            input_node(|topic: Topic| async move {
                // A worker hands its paragraph on to a reviewer, also as a typed input.
                let paragraph = format!("{}: {}", topic.index, topic.name);
                Command::from_update(EssayUpdate::default().paragraphs(vec![paragraph.clone()]))
                    .and_goto(Send::input("review", Review { paragraph }))
            })
            .with_destinations(["review"]),
        )
        .add_named(review)
        .add_node("extra", |_s: Arc<Essay>| async { EssayUpdate::default() })
        .add_edge(START, "plan")
        .add_conditional_edges("plan", fan_out, ["write"])
        // A router mixing a key and a typed Send.
        .add_conditional_edges(
            "plan",
            |_: &Essay| {
                Route::to("extra").send_input(
                    "review",
                    Review {
                        paragraph: "preface".into(),
                    },
                )
            },
            PathMap::any(),
        )
        .add_edge("extra", END)
        .add_edge("review", END)
        .compile()
        .unwrap();
    let out = graph
        .invoke(topics(&["owls", "bats", "moths"]), RunConfig::default())
        .await
        .unwrap();
    // Sends run and apply in the order sent.
    assert_eq!(out.paragraphs, ["0: owls", "1: bats", "2: moths"]);
    assert_eq!(
        out.reviews,
        [
            // Sent by the second router, one step before the writers' reviews.
            "preface ok (review)",
            "0: owls ok (review)",
            "1: bats ok (review)",
            "2: moths ok (review)"
        ]
    );
}

#[tokio::test]
async fn input_nodes_take_adapters_and_a_context() {
    let graph = StateGraph::<Essay>::new()
        .add_node(
            "fan",
            (|_s: Arc<Essay>| async {
                Command::goto_all([
                    Send::input(
                        "a",
                        Review {
                            paragraph: "x".into(),
                        },
                    ),
                    Send::input(
                        "b",
                        Review {
                            paragraph: "y".into(),
                        },
                    ),
                ])
            })
            .with_destinations(["a", "b"]),
        )
        .add_node(
            "a",
            input_node(|r: Review, ctx: NodeContext| async move {
                EssayUpdate::default().reviews(vec![format!("{}@{}", r.paragraph, ctx.step())])
            })
            .with_retry(agent_core::RetryPolicy::new().max_attempts(2)),
        )
        .add_node("b", shout.with_timeout(std::time::Duration::from_secs(5)))
        .add_edge(START, "fan")
        .add_edge(["a", "b"], END)
        .compile()
        .unwrap();
    let out = graph
        .invoke(Essay::default(), RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.reviews, ["x@2", "Y"]);
}

/// A graph with one state node `state_worker` and one input node `write` (takes `Topic`);
/// `plan` sends what `send` makes.
fn send_graph(
    send: impl Fn() -> Send<Essay> + std::marker::Send + Sync + 'static,
) -> CompiledGraph<Essay> {
    StateGraph::new()
        .add_node("plan", |_s: Arc<Essay>| async { EssayUpdate::default() })
        .add_node_with_input("write", |_t: Topic| async { EssayUpdate::default() })
        .add_node("state_worker", |_s: Arc<Essay>| async {
            EssayUpdate::default()
        })
        .add_edge(START, "plan")
        .add_conditional_edges("plan", move |_: &Essay| send(), ["write", "state_worker"])
        .add_edge("write", END)
        .add_edge("state_worker", END)
        .compile()
        .unwrap()
}

#[tokio::test]
async fn a_send_that_does_not_fit_its_node_names_both_types() {
    // An input of the wrong type.
    let graph = send_graph(|| {
        Send::input(
            "write",
            Review {
                paragraph: "p".into(),
            },
        )
    });
    let err = graph
        .invoke(Essay::default(), RunConfig::default())
        .await
        .unwrap_err();
    let GraphError::SendInput {
        from,
        node,
        expected,
        found,
        ..
    } = &err
    else {
        panic!("{err:?}");
    };
    assert_eq!((from.as_str(), node.as_str()), ("plan", "write"));
    assert!(
        expected.contains("Topic") && found.contains("Review"),
        "{err}"
    );
    assert!(err.to_string().contains("Send::input(\"write\""), "{err}");

    // A whole state to a node with its own input.
    let graph = send_graph(|| Send::new("write", Essay::default()));
    let err = graph
        .invoke(Essay::default(), RunConfig::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, GraphError::SendInput { found, expected, .. } if found.contains("Essay") && expected.contains("Topic")),
        "{err:?}"
    );

    // An input to a node that takes the state.
    let graph = send_graph(|| {
        Send::input(
            "state_worker",
            Topic {
                name: "t".into(),
                index: 0,
            },
        )
    });
    let err = graph
        .invoke(Essay::default(), RunConfig::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, GraphError::SendInput { node, found, expected, .. } if node == "state_worker" && found.contains("Topic") && expected.contains("Essay")),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("Send::new(\"state_worker\""),
        "{err}"
    );
}

#[tokio::test]
async fn an_input_node_is_not_run_by_name() {
    // An edge: found by compile().
    let err = StateGraph::<Essay>::new()
        .add_node("plan", |_s: Arc<Essay>| async { EssayUpdate::default() })
        .add_node_with_input("write", |_t: Topic| async { EssayUpdate::default() })
        .add_edge(START, "plan")
        .add_edge("plan", "write")
        .add_edge("write", END)
        .compile()
        .unwrap_err();
    assert!(
        matches!(&err, GraphError::NeedsInput { node, via, .. } if node == "write" && via.contains("`plan` -> `write`")),
        "{err:?}"
    );

    // A Command goto by name: found when it fires.
    let graph = StateGraph::<Essay>::new()
        .add_node(
            "plan",
            (|_s: Arc<Essay>| async { Command::goto("write") }).with_destinations(["write"]),
        )
        .add_node_with_input("write", |_t: Topic| async { EssayUpdate::default() })
        .add_edge(START, "plan")
        .add_edge("write", END)
        .compile()
        .unwrap();
    let err = graph
        .invoke(Essay::default(), RunConfig::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, GraphError::NeedsInput { node, input, .. } if node == "write" && input.contains("Topic")),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("Command goto from `plan`"),
        "{err}"
    );
}

#[tokio::test]
async fn a_node_taking_the_state_by_value_is_reported() {
    // With a state that derives no serde it does not compile (tests/ui/fail); one that does:
    #[derive(GraphState, Clone, Default, Debug, serde::Serialize, serde::Deserialize)]
    struct Doc {
        text: String,
    }
    #[node]
    async fn echo(state: Doc) -> DocUpdate {
        DocUpdate::default().text(state.text)
    }
    let err = StateGraph::<Doc>::new()
        .add_named(echo)
        .add_node("start", |_s: Arc<Doc>| async { DocUpdate::default() })
        .add_edge(START, "start")
        .add_edge("start", END)
        .add_edge("echo", END)
        .compile()
        .unwrap_err();
    assert!(
        matches!(&err, GraphError::InputIsState { node, .. } if node == "echo"),
        "{err:?}"
    );
    assert!(err.to_string().contains("state: &"), "{err}");
}

/// Workers that count their calls and, for one topic, ask a human first.
fn durable_graph(saver: Arc<dyn Checkpointer>, calls: Arc<AtomicUsize>) -> CompiledGraph<Essay> {
    StateGraph::new()
        .add_node("plan", |_s: Arc<Essay>| async { EssayUpdate::default() })
        .add_node(
            "write",
            input_node(move |topic: Topic, ctx: NodeContext| {
                let calls = calls.clone();
                async move {
                    calls.fetch_add(1, Ordering::SeqCst);
                    let mut paragraph = format!("{}: {}", topic.index, topic.name);
                    if topic.name == "bats" {
                        let answer: String =
                            ctx.interrupt_as(format!("write about {}?", topic.name))?;
                        paragraph.push_str(&format!(" ({answer})"));
                    }
                    BoxResult::Ok(
                        Command::from_update(
                            EssayUpdate::default().paragraphs(vec![paragraph.clone()]),
                        )
                        .and_goto(Send::input("review", Review { paragraph })),
                    )
                }
            })
            .with_destinations(["review"]),
        )
        .add_named(review)
        .add_edge(START, "plan")
        .add_conditional_edges("plan", fan_out, ["write"])
        .add_edge("review", END)
        .interrupt_before(["write"])
        .compile_with(saver)
        .unwrap()
}

const DONE: [&str; 3] = ["0: owls", "1: bats (yes)", "2: moths"];

/// The same run on `saver`: paused before the workers (their `Send` inputs in the checkpoint),
/// then inside one of them (its siblings' `Send` inputs in their pending writes), each time
/// resumed by a fresh graph over `reopen()`'s saver.
async fn pause_and_resume(
    name: &str,
    durability: Durability,
    saver: Arc<dyn Checkpointer>,
    reopen: impl Fn() -> Arc<dyn Checkpointer>,
) {
    let calls = Arc::new(AtomicUsize::new(0));
    let config = RunConfig::default()
        .thread_id(common::unique("typed-input"))
        .durability(durability);
    let what = format!("{name} {durability:?}");

    let out = durable_graph(saver, calls.clone())
        .invoke(topics(&["owls", "bats", "moths"]), config.clone())
        .await
        .unwrap();
    assert_eq!(out.next, ["write"], "{what}");
    assert_eq!(calls.load(Ordering::SeqCst), 0, "{what}");

    // A new graph over the stored bytes: the pending Sends decode as `Topic`s.
    let graph = durable_graph(reopen(), calls.clone());
    let state = graph.get_state(&config).await.unwrap().unwrap();
    assert_eq!(state.next, ["write"], "{what}");
    assert_eq!(state.tasks.len(), 3, "{what}");
    let out = graph.invoke(Input::Continue, config.clone()).await.unwrap();
    assert_eq!(out.interrupts.len(), 1, "{what}");
    assert_eq!(out.interrupts[0].value, "write about bats?", "{what}");
    assert_eq!(calls.load(Ordering::SeqCst), 3, "{what}");

    let graph = durable_graph(reopen(), calls.clone());
    let out = graph
        .invoke(Command::resume("yes").unwrap(), config.clone())
        .await
        .unwrap();
    assert!(out.interrupts.is_empty(), "{what}");
    assert_eq!(out.paragraphs, DONE, "{what}");
    let reviewed: Vec<String> = DONE.iter().map(|p| format!("{p} ok (review)")).collect();
    assert_eq!(out.reviews, reviewed, "{what}");
    // The siblings' writes (with their `Send::input` to `review`) were kept (as they landed
    // with `Sync`, when the step paused otherwise): only the paused worker ran again.
    assert_eq!(calls.load(Ordering::SeqCst), 4, "{what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_inputs_survive_checkpoints_interrupts_and_a_reopened_saver() {
    for durability in [Durability::Sync, Durability::Async, Durability::Exit] {
        let memory: Arc<dyn Checkpointer> = Arc::new(InMemorySaver::new());
        let shared = memory.clone();
        pause_and_resume("memory", durability, memory, move || shared.clone()).await;

        // SQLite: every resume opens the file again, as a second process would.
        let path = common::sqlite_path();
        let saver: Arc<dyn Checkpointer> = Arc::new(SqliteSaver::open(&path).unwrap());
        pause_and_resume("sqlite", durability, saver, move || {
            Arc::new(SqliteSaver::open(&path).unwrap())
        })
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_inputs_on_every_backend() {
    for (name, saver) in common::backends().await {
        let shared = saver.clone();
        pause_and_resume(name, Durability::Sync, saver, move || shared.clone()).await;
    }
}

/// What the workers below read from the graph's runtime context.
struct Style {
    suffix: &'static str,
}

#[node]
async fn styled(input: Review, rt: &agent_core::Runtime<Style>) -> EssayUpdate {
    EssayUpdate::default().reviews(vec![format!("{}{}", input.paragraph, rt.context().suffix)])
}

#[tokio::test]
async fn input_nodes_read_the_runtime_context() {
    let graph = StateGraph::<Essay, Style>::with_context_type()
        .add_node("plan", |_s: Arc<Essay>| async { EssayUpdate::default() })
        .add_named(styled)
        .add_node_with_input(
            "loud",
            |input: Review, rt: agent_core::Runtime<Style>| async move {
                EssayUpdate::default().reviews(vec![format!(
                    "{}{}",
                    input.paragraph.to_uppercase(),
                    rt.context().suffix
                )])
            },
        )
        .add_edge(START, "plan")
        .add_conditional_edges(
            "plan",
            |_: &Essay| {
                vec![
                    Send::input(
                        "styled",
                        Review {
                            paragraph: "a".into(),
                        },
                    ),
                    Send::input(
                        "loud",
                        Review {
                            paragraph: "b".into(),
                        },
                    ),
                ]
            },
            ["styled", "loud"],
        )
        .add_edge(["styled", "loud"], END)
        .compile()
        .unwrap()
        .with_context(Style { suffix: "!" });
    let out = graph
        .invoke(Essay::default(), RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.reviews, ["a!", "B!"]);

    // A closure reading another context than the graph's is caught by compile().
    let err = StateGraph::<Essay>::new()
        .add_node("plan", |_s: Arc<Essay>| async { EssayUpdate::default() })
        .add_node_with_input(
            "loud",
            |_i: Review, _rt: agent_core::Runtime<Style>| async { EssayUpdate::default() },
        )
        .add_edge(START, "plan")
        .add_conditional_edges("plan", |_: &Essay| Vec::<Send<Essay>>::new(), ["loud"])
        .add_edge("loud", END)
        .compile()
        .unwrap_err();
    assert!(matches!(err, GraphError::ContextMismatch { .. }), "{err:?}");
}

/// A node that runs on the state when triggered by name and on a `Topic` when sent one
/// (LangGraph's nodes, which take whatever they are sent): `with_input_or_state`.
fn either_node() -> agent_core::NodeSpec<Essay> {
    use agent_core::IntoNode;
    (|s: Arc<Essay>, ctx: NodeContext| async move {
        let paragraph = match ctx.input::<Topic>() {
            Some(topic) => format!("sent {}", topic.name),
            None => format!("state with {} topics", s.topics.len()),
        };
        EssayUpdate::default().paragraphs(vec![paragraph])
    })
    .into_node()
    .with_input_or_state::<Topic>()
}

fn either_graph(saver: Option<Arc<dyn Checkpointer>>) -> CompiledGraph<Essay> {
    let builder = StateGraph::new()
        .add_node("plan", |_s: Arc<Essay>| async { EssayUpdate::default() })
        .add_node("write", either_node())
        .add_edge(START, "plan")
        // By name (an edge) and by `Send::input` (the router) in the same step.
        .add_edge("plan", "write")
        .add_conditional_edges("plan", fan_out, PathMap::any())
        .add_edge("write", END);
    match saver {
        Some(saver) => builder.interrupt_before(["write"]).compile_with(saver),
        None => builder.compile(),
    }
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_may_take_its_input_or_the_state() {
    let expected = ["state with 2 topics", "sent owls", "sent bats"];
    let out = either_graph(None)
        .invoke(topics(&["owls", "bats"]), RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.paragraphs, expected);

    // Paused before the step: the `Send`s' inputs are stored and decode as `Topic`s again.
    let saver: Arc<dyn Checkpointer> = Arc::new(InMemorySaver::new());
    let config = RunConfig::default().thread_id(common::unique("either"));
    let graph = either_graph(Some(saver.clone()));
    let out = graph
        .invoke(topics(&["owls", "bats"]), config.clone())
        .await
        .unwrap();
    assert_eq!(out.next, ["write"]);
    let state = graph.get_state(&config).await.unwrap().unwrap();
    assert_eq!(state.tasks.len(), 3);
    let out = either_graph(Some(saver))
        .invoke(Input::Continue, config)
        .await
        .unwrap();
    assert_eq!(out.paragraphs, expected);

    // A `Command` goto by name runs it on the state; a `Send` of a state is taken too; one of
    // another input type is still refused.
    let graph = StateGraph::new()
        .add_node(
            "plan",
            (|_s: Arc<Essay>| async {
                Command::goto("write").and_goto(Send::new("write", Essay::default()))
            })
            .with_destinations(["write"]),
        )
        .add_node("write", either_node())
        .add_edge(START, "plan")
        .add_edge("write", END)
        .compile()
        .unwrap();
    let out = graph
        .invoke(topics(&["owls"]), RunConfig::default())
        .await
        .unwrap();
    assert_eq!(
        out.paragraphs,
        ["state with 1 topics", "state with 0 topics"]
    );
    let graph = StateGraph::new()
        .add_node("plan", |_s: Arc<Essay>| async { EssayUpdate::default() })
        .add_node("write", either_node())
        .add_edge(START, "plan")
        .add_conditional_edges(
            "plan",
            |_: &Essay| {
                Route::default().send_input(
                    "write",
                    Review {
                        paragraph: "p".to_owned(),
                    },
                )
            },
            ["write"],
        )
        .add_edge("write", END)
        .compile()
        .unwrap();
    let err = graph
        .invoke(Essay::default(), RunConfig::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, GraphError::SendInput { found, expected, .. } if found.contains("Review") && expected.contains("Topic")),
        "{err:?}"
    );
}
