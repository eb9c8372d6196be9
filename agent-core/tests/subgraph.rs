//! A compiled graph as a node: it runs on the parent's snapshot and its writes land once; it
//! checkpoints under its own namespace and an `interrupt()` inside it pauses the whole run;
//! a graph over another state is a node through an input and an output map.

mod common;

use std::sync::Arc;

use agent_core::{
    Command, Durability, END, GraphState, InMemorySaver, NodeContext, RunConfig, START, Send,
    SqliteSaver, StateGraph, StreamMode, StreamPart,
};
use futures::StreamExt;

#[derive(GraphState, Clone, Default, Debug, PartialEq)]
struct S {
    #[reducer(append)]
    log: Vec<String>,
    #[reducer(add)]
    count: u32,
    subject: String,
}

fn step(
    name: &'static str,
) -> impl Fn(Arc<S>, NodeContext) -> futures::future::BoxFuture<'static, SUpdate> + Clone {
    move |s: Arc<S>, ctx: NodeContext| {
        Box::pin(async move {
            ctx.write_custom(name).await;
            let entry = if s.subject.is_empty() {
                name.to_owned()
            } else {
                format!("{name}:{}", s.subject)
            };
            SUpdate::default().log(vec![entry]).count(1)
        })
    }
}

fn inner() -> agent_core::CompiledGraph<S> {
    StateGraph::new()
        .add_node("edit", step("edit"))
        .add_node("check", step("check"))
        .add_edge(START, "edit")
        .add_edge("edit", "check")
        .add_edge("check", END)
        .compile()
        .unwrap()
}

#[tokio::test]
async fn subgraph_writes_land_once_through_the_parents_reducers() {
    let graph = StateGraph::new()
        .add_node("prep", step("prep"))
        .add_node("sub", inner())
        .add_node("finish", step("finish"))
        .add_edge(START, "prep")
        .add_edge("prep", "sub")
        .add_edge("sub", "finish")
        .add_edge("finish", END)
        .compile()
        .unwrap();
    let out = graph
        .invoke(S::default(), RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.log, ["prep", "edit", "check", "finish"]);
    assert_eq!(out.count, 4);
    assert_eq!(out.steps, 3, "the subgraph is one step of the parent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_fans_out_to_subgraphs() {
    let graph = StateGraph::new()
        .add_node("plan", step("plan"))
        .add_node("sub", inner())
        .add_edge(START, "plan")
        .add_conditional_edges(
            "plan",
            |_: &S| {
                ["x", "y", "z"]
                    .map(|subject| {
                        Send::new(
                            "sub",
                            S {
                                subject: subject.to_owned(),
                                ..S::default()
                            },
                        )
                    })
                    .to_vec()
            },
            ["sub"],
        )
        .add_edge("sub", END)
        .compile()
        .unwrap();
    let out = graph
        .invoke(S::default(), RunConfig::default())
        .await
        .unwrap();
    assert_eq!(
        out.log,
        [
            "plan", "edit:x", "check:x", "edit:y", "check:y", "edit:z", "check:z"
        ]
    );
    assert_eq!(out.count, 7);
}

#[tokio::test]
async fn subgraph_stream_items_carry_their_namespace() {
    let graph = StateGraph::new()
        .add_node("prep", step("prep"))
        .add_node("sub", inner())
        .add_edge(START, "prep")
        .add_edge("prep", "sub")
        .add_edge("sub", END)
        .compile()
        .unwrap();
    let mut stream = graph.stream(S::default(), RunConfig::default(), StreamMode::Custom);
    let mut seen = Vec::new();
    while let Some(part) = stream.next().await {
        if let StreamPart::Custom { value, meta } = part.unwrap() {
            // The subgraph's namespace is `sub:<task id>` (made up without a checkpointer).
            let ns: Vec<String> = meta
                .ns
                .iter()
                .map(|segment| segment.split(':').next().unwrap().to_owned())
                .collect();
            assert!(meta.ns.iter().all(|s| s.contains(':')), "{:?}", meta.ns);
            seen.push(format!("{} {ns:?}", value.as_str().unwrap()));
        }
    }
    assert_eq!(seen, ["prep []", r#"edit ["sub"]"#, r#"check ["sub"]"#]);
}

// ---------------------------------------------------------------------------------------------
// Subgraphs that checkpoint and pause.

/// A subgraph that edits, asks a human, then records the answer.
fn approval() -> agent_core::CompiledGraph<S> {
    StateGraph::new()
        .add_node("edit", step("edit"))
        .add_node("ask", |_s: Arc<S>, ctx: NodeContext| async move {
            let answer: String = ctx.interrupt_as("ship it?")?;
            Ok::<_, agent_core::BoxError>(SUpdate::default().log(vec![format!("answer:{answer}")]))
        })
        .add_edge(START, "edit")
        .add_edge("edit", "ask")
        .add_edge("ask", END)
        .compile()
        .unwrap()
}

fn parent(saver: Arc<dyn agent_core::Checkpointer>) -> agent_core::CompiledGraph<S> {
    StateGraph::new()
        .add_node("prep", step("prep"))
        .add_node("sub", approval())
        .add_node("finish", step("finish"))
        .add_edge(START, "prep")
        .add_edge("prep", "sub")
        .add_edge("sub", "finish")
        .add_edge("finish", END)
        .compile_with(saver)
        .unwrap()
}

/// LangGraph's `get_state(subgraphs=True)`: the snapshot of the subgraph the run's first
/// pending task waits in.
async fn paused_subgraph(
    graph: &agent_core::CompiledGraph<S>,
    config: &RunConfig,
) -> agent_core::SubgraphSnapshot {
    let mut nested = graph
        .get_state_with_subgraphs(config)
        .await
        .unwrap()
        .expect("a checkpoint");
    *nested
        .tasks
        .swap_remove(0)
        .subgraph
        .expect("the subgraph's snapshot")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_inside_a_subgraph_pauses_the_run_and_resumes_where_it_stopped() {
    let mut cases = common::backends_and_durabilities().await;
    for (name, saver) in common::backends().await {
        cases.push((name, saver, Durability::Exit));
    }
    for (name, saver, durability) in cases {
        let graph = parent(saver.clone());
        let config = RunConfig::default()
            .thread_id(common::unique("sub-pause"))
            .durability(durability);
        let out = graph.invoke(S::default(), config.clone()).await.unwrap();
        assert_eq!(out.interrupts.len(), 1, "{name}");
        assert_eq!(out.interrupts[0].value, "ship it?");
        assert_eq!(out.interrupts[0].node, "sub");
        assert_eq!(out.next, ["sub"]);
        assert_eq!(
            out.log,
            ["prep"],
            "{name}: the subgraph's writes land when it finishes"
        );

        // The subgraph checkpointed in its own namespace of the same thread: `sub:<uuid>`,
        // the uuid derived from the task's id (no `:` or `|` in it, as LangGraph's).
        let snapshot = graph.get_state(&config).await.unwrap().unwrap();
        let task = &snapshot.tasks[0];
        let ns = paused_subgraph(&graph, &config).await.checkpoint_ns;
        let id = ns.strip_prefix("sub:").unwrap_or_default();
        assert_eq!(id.len(), 36, "{name}: `{ns}` is `sub:<uuid>`");
        assert!(!id.contains([':', '|']), "{name}: `{ns}`");
        assert_ne!(id, &*task.id);
        let inner = saver
            .list(
                config.thread_id.as_deref().unwrap(),
                &ns,
                &Default::default(),
            )
            .await
            .unwrap();
        assert!(!inner.is_empty(), "{name}: no checkpoint in `{ns}`");
        assert!(task.subgraph.is_none(), "get_state leaves subgraphs out");

        // LangGraph's get_state(subgraphs=True): where inside the subgraph the run waits.
        let sub = paused_subgraph(&graph, &config).await;
        assert_eq!(sub.checkpoint_ns, ns, "{name}");
        assert_eq!(sub.next, ["ask"], "{name}");
        assert_eq!(
            sub.values["log"],
            serde_json::json!(["prep", "edit"]),
            "{name}"
        );
        assert_eq!(sub.values["count"], 2, "{name}");
        assert_eq!(sub.tasks.len(), 1, "{name}: {:?}", sub.tasks);
        assert_eq!(sub.tasks[0].node, "ask");
        assert!(sub.tasks[0].subgraph.is_none());
        assert_eq!(sub.interrupts.len(), 1, "{name}");
        assert_eq!(sub.interrupts[0].value, "ship it?");

        let out = graph
            .invoke(Command::resume("yes").unwrap(), config.clone())
            .await
            .unwrap();
        assert!(out.interrupts.is_empty(), "{name}");
        assert_eq!(out.log, ["prep", "edit", "answer:yes", "finish"], "{name}");
        assert_eq!(out.count, 3, "{name}: edit ran once");
    }
}

/// Set in the child process of the test below: `<database>|<thread>`.
const CHILD_ENV: &str = "AGENTGRAPH_SUBGRAPH_TEST_CHILD";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subgraph_paused_in_one_process_resumes_in_another() {
    const NAME: &str = "a_subgraph_paused_in_one_process_resumes_in_another";
    if let Ok(spec) = std::env::var(CHILD_ENV) {
        // The first process: runs until the subgraph asks for a human, and exits.
        let (path, thread) = spec.split_once('|').expect("database|thread");
        let saver = Arc::new(SqliteSaver::open(path).unwrap());
        let out = parent(saver)
            .invoke(S::default(), RunConfig::default().thread_id(thread))
            .await
            .unwrap();
        assert_eq!(out.interrupts[0].value, "ship it?");
        println!("paused: {:?}", out.next);
        return;
    }
    let path = common::sqlite_path();
    let thread = common::unique("sub-process");
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", NAME, "--nocapture"])
        .env(CHILD_ENV, format!("{}|{thread}", path.display()))
        .output()
        .expect("the first process");
    let said = String::from_utf8_lossy(&child.stdout);
    assert!(child.status.success(), "first process failed: {said}");
    assert!(said.contains("paused: [\"sub\"]"), "{said}");

    // This process knows only the file: the pause is there, inside the subgraph.
    let config = RunConfig::default().thread_id(thread);
    let saver = Arc::new(SqliteSaver::open(&path).unwrap());
    let graph = parent(saver);
    let snapshot = graph.get_state(&config).await.unwrap().unwrap();
    assert_eq!(snapshot.next, ["sub"]);
    assert_eq!(snapshot.interrupts[0].value, "ship it?");
    let sub = paused_subgraph(&graph, &config).await;
    assert_eq!(sub.next, ["ask"]);
    let out = graph
        .invoke(Command::resume("later").unwrap(), config)
        .await
        .unwrap();
    assert_eq!(out.log, ["prep", "edit", "answer:later", "finish"]);
    assert_eq!(out.count, 3, "edit ran once, in the first process");
}

#[derive(GraphState, Clone, Default, Debug, PartialEq)]
struct Joke {
    letters: String,
    subject: String,
    #[reducer(append)]
    lines: Vec<String>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subgraph_over_another_state_maps_input_and_output_and_fans_out() {
    let joke = StateGraph::<Joke>::new()
        .add_node("edit", |s: Arc<Joke>| async move {
            JokeUpdate::default().subject(format!("{}!", s.letters))
        })
        .add_node("tell", |s: Arc<Joke>| async move {
            JokeUpdate::default().lines(vec![format!("joke about {}", s.subject)])
        })
        .add_edge(START, "edit")
        .add_edge("edit", "tell")
        .add_edge("tell", END)
        .compile()
        .unwrap();
    let node = joke.as_node(
        |s: &S| JokeUpdate::default().letters(s.subject.clone()),
        |j: Joke| SUpdate::default().log(j.lines).count(1),
    );
    let saver = Arc::new(InMemorySaver::new());
    let graph = StateGraph::new()
        .add_node("joke", node)
        .add_conditional_edges(
            START,
            |_: &S| {
                ["a", "b"]
                    .map(|subject| {
                        Send::new(
                            "joke",
                            S {
                                subject: subject.to_owned(),
                                ..S::default()
                            },
                        )
                    })
                    .to_vec()
            },
            ["joke"],
        )
        .add_edge("joke", END)
        .compile_with(saver)
        .unwrap();
    for durability in [Durability::Sync, Durability::Async, Durability::Exit] {
        let config = RunConfig::default()
            .thread_id(common::unique("mapped"))
            .durability(durability);
        let out = graph.invoke(S::default(), config).await.unwrap();
        assert_eq!(
            out.log,
            ["joke about a!", "joke about b!"],
            "{durability:?}"
        );
        assert_eq!(out.count, 2);
    }
    let out = graph
        .invoke(S::default(), RunConfig::default())
        .await
        .unwrap();
    assert_eq!(
        out.log,
        ["joke about a!", "joke about b!"],
        "without a thread"
    );
}

// ---------------------------------------------------------------------------------------------
// Commands to the parent graph (LangGraph's `Command.PARENT`).

/// An agent subgraph that drafts, then hands off to the parent's `reviewer`.
fn handoff_agent() -> agent_core::CompiledGraph<S> {
    StateGraph::new()
        .add_node("draft", step("draft"))
        .add_node("handoff", |_s: Arc<S>| async {
            Command::goto("reviewer")
                .update(SUpdate::default().log(vec!["handed off".to_owned()]))
                .to_parent()
        })
        .add_node("never", step("never"))
        .add_edge(START, "draft")
        .add_edge("draft", "handoff")
        .add_edge("handoff", "never")
        .add_edge("never", END)
        .compile()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_to_the_parent_ends_the_subgraph_and_routes_the_parent() {
    use agent_core::NodeExt;

    for (name, saver, durability) in common::backends_and_durabilities().await {
        let graph = StateGraph::new()
            .add_node("prep", step("prep"))
            .add_node("agent", handoff_agent().with_destinations(["reviewer"]))
            .add_node("reviewer", step("reviewer"))
            .add_edge(START, "prep")
            .add_edge("prep", "agent")
            .add_edge("reviewer", END)
            .compile_with(saver)
            .unwrap();
        let config = RunConfig::default()
            .thread_id(common::unique("handoff"))
            .durability(durability);
        let out = graph.invoke(S::default(), config.clone()).await.unwrap();
        // The command's update lands; the subgraph's own writes (draft) do not, and the node
        // after the handoff never runs.
        assert_eq!(out.log, ["prep", "handed off", "reviewer"], "{name}");
        assert_eq!(out.count, 2, "{name}");
        assert_eq!(
            out.path.to_vec(),
            [vec!["prep"], vec!["agent"], vec!["reviewer"]],
            "{name}"
        );
        let stored = graph.get_state(&config).await.unwrap().unwrap();
        assert_eq!(stored.values, out.state, "{name} {durability:?}");
    }
}

#[tokio::test]
async fn a_command_to_the_parent_outside_a_subgraph_is_an_error() {
    let graph = StateGraph::new()
        .add_node("handoff", |_s: Arc<S>| async {
            Command::goto("x").to_parent()
        })
        .add_node("x", step("x"))
        .add_edge(START, "handoff")
        .add_edge("handoff", "x")
        .add_edge("x", END)
        .compile()
        .unwrap();
    let error = graph
        .invoke(S::default(), RunConfig::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, agent_core::GraphError::ParentCommand(p) if p.node == "handoff"),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("not running as a subgraph"),
        "{error}"
    );
    let agent_core::GraphError::ParentCommand(parent) = &error else {
        unreachable!()
    };
    let command = parent.command::<S>().expect("a command of `S`");
    assert_eq!(command.goto, [agent_core::Goto::Node("x".to_owned())]);
    assert!(parent.command::<Joke>().is_none());
}

#[tokio::test]
async fn a_subgraph_over_another_state_hands_off_by_name_only() {
    let child = |with_update: bool| {
        StateGraph::<Joke>::new()
            .add_node("decide", move |_s: Arc<Joke>| async move {
                let command = Command::goto("reviewer").to_parent();
                if with_update {
                    command.update(JokeUpdate::default().subject("x".to_owned()))
                } else {
                    command
                }
            })
            .add_edge(START, "decide")
            .add_edge("decide", END)
            .compile()
            .unwrap()
    };
    let parent = |with_update: bool| {
        StateGraph::new()
            .add_node(
                "agent",
                child(with_update)
                    .as_node(
                        |s: &S| JokeUpdate::default().subject(s.subject.clone()),
                        |j: Joke| SUpdate::default().log(j.lines),
                    )
                    .with_destinations(["reviewer"]),
            )
            .add_node("reviewer", step("reviewer"))
            .add_edge(START, "agent")
            .add_edge("reviewer", END)
            .compile()
            .unwrap()
    };
    let out = parent(false)
        .invoke(S::default(), RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.log, ["reviewer"]);
    let error = parent(true)
        .invoke(S::default(), RunConfig::default())
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("cannot carry an update"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subgraph_visited_twice_in_one_run_runs_twice_with_every_durability() {
    // The parent loops through the subgraph: with `Exit` no checkpoint separates the two
    // visits, so both child runs get the same task id and namespace; the second must start
    // afresh, not find the first one's finished run.
    for (name, saver) in common::backends().await {
        let graph = StateGraph::new()
            .add_node("sub", inner())
            .add_node("again", step("again"))
            .add_edge(START, "sub")
            .add_conditional_edges(
                "sub",
                |s: &S| if s.count < 6 { "again" } else { END },
                ["again", END],
            )
            .add_edge("again", "sub")
            .compile_with(saver)
            .unwrap();
        for durability in [Durability::Sync, Durability::Async, Durability::Exit] {
            let config = RunConfig::default()
                .thread_id(common::unique("twice"))
                .durability(durability);
            let out = graph.invoke(S::default(), config.clone()).await.unwrap();
            assert_eq!(
                out.log,
                [
                    "edit", "check", "again", "edit", "check", "again", "edit", "check"
                ],
                "{name} {durability:?}"
            );
            // A second invocation on the thread visits it again from the stored position.
            let out = graph
                .invoke(SUpdate::default().count(0), config)
                .await
                .unwrap();
            assert_eq!(out.log.len(), 10, "{name} {durability:?}: {:?}", out.log);
        }
    }
}

/// A child whose `flaky` node fails on its first call only; `edits` counts `edit`'s calls.
fn flaky_child(
    calls: Arc<std::sync::atomic::AtomicUsize>,
    edits: Arc<std::sync::atomic::AtomicUsize>,
) -> agent_core::CompiledGraph<S> {
    use std::sync::atomic::Ordering;
    let edit = step("edit");
    StateGraph::new()
        .add_node("edit", move |s: Arc<S>, ctx: NodeContext| {
            edits.fetch_add(1, Ordering::SeqCst);
            edit(s, ctx)
        })
        .add_node("flaky", move |_s: Arc<S>| {
            let calls = calls.clone();
            async move {
                if calls.fetch_add(1, Ordering::SeqCst) == 0 {
                    return Err(agent_core::BoxError::from("flaky failed"));
                }
                agent_core::BoxResult::Ok(SUpdate::default().log(vec!["flaky".to_owned()]))
            }
        })
        .add_edge(START, "edit")
        .add_edge("edit", "flaky")
        .add_edge("flaky", END)
        .compile()
        .unwrap()
}

/// `prep`, then `sub`.
fn prep_then(
    sub: agent_core::NodeSpec<S>,
    saver: Arc<dyn agent_core::Checkpointer>,
) -> agent_core::CompiledGraph<S> {
    StateGraph::new()
        .add_node("prep", step("prep"))
        .add_node("sub", sub)
        .add_edge(START, "prep")
        .add_edge("prep", "sub")
        .add_edge("sub", END)
        .compile_with(saver)
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_subgraph_continues_where_it_failed_with_every_durability() {
    use std::sync::atomic::{AtomicUsize, Ordering};

    for (name, saver) in common::backends().await {
        for durability in [Durability::Sync, Durability::Async, Durability::Exit] {
            // `flaky` fails on its first call only; `edit` before it must not run again.
            let (calls, edits) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
            let child = flaky_child(calls.clone(), edits.clone());
            let graph = prep_then(agent_core::IntoNode::into_node(child), saver.clone());
            let config = RunConfig::default()
                .thread_id(common::unique("sub-fail"))
                .durability(durability);
            let error = graph
                .invoke(S::default(), config.clone())
                .await
                .unwrap_err();
            assert!(
                error.to_string().contains("flaky failed"),
                "{name} {durability:?}: {error}"
            );
            let out = graph
                .invoke(agent_core::Input::Continue, config)
                .await
                .unwrap_or_else(|e| panic!("{name} {durability:?}: {e}"));
            assert_eq!(out.log, ["prep", "edit", "flaky"], "{name} {durability:?}");
            assert_eq!(out.count, 2, "{name} {durability:?}: edit ran once");
            assert_eq!(edits.load(Ordering::SeqCst), 1, "{name} {durability:?}");
            assert_eq!(calls.load(Ordering::SeqCst), 2, "{name} {durability:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_subgraph_continues_where_its_failed_attempt_stopped() {
    use agent_core::{NodeExt, RetryPolicy};
    use std::sync::atomic::{AtomicUsize, Ordering};

    // A child run's first attempt starts in a namespace nothing is stored under and does not
    // look for a checkpoint there; the retry of its node must look, and find where it failed.
    for (name, saver) in common::backends().await {
        for durability in [Durability::Sync, Durability::Async, Durability::Exit] {
            let (calls, edits) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
            let retried = flaky_child(calls.clone(), edits.clone()).with_retry(
                RetryPolicy::new()
                    .max_attempts(2)
                    .initial_interval(std::time::Duration::from_millis(1)),
            );
            let graph = prep_then(retried, saver.clone());
            let config = RunConfig::default()
                .thread_id(common::unique("sub-retry"))
                .durability(durability);
            let out = graph
                .invoke(S::default(), config)
                .await
                .unwrap_or_else(|e| panic!("{name} {durability:?}: {e}"));
            assert_eq!(out.log, ["prep", "edit", "flaky"], "{name} {durability:?}");
            assert_eq!(edits.load(Ordering::SeqCst), 1, "{name} {durability:?}");
            assert_eq!(calls.load(Ordering::SeqCst), 2, "{name} {durability:?}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// A graph invoked inside a node (`CompiledGraph::invoke_in`).

/// A subgraph over `Joke` that asks a human about its subject, then tells the joke.
fn asking_joke() -> agent_core::CompiledGraph<Joke> {
    StateGraph::<Joke>::new()
        .add_node("ask", |s: Arc<Joke>, ctx: NodeContext| async move {
            let answer: String = ctx.interrupt_as(format!("joke about {}?", s.letters))?;
            Ok::<_, agent_core::BoxError>(JokeUpdate::default().subject(answer))
        })
        .add_node("tell", |s: Arc<Joke>| async move {
            JokeUpdate::default().lines(vec![format!("joke about {}", s.subject)])
        })
        .add_edge(START, "ask")
        .add_edge("ask", "tell")
        .add_edge("tell", END)
        .compile()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graph_invoked_inside_a_node_is_its_subgraph() {
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = calls.clone();
    let joke = asking_joke();
    let call = move |s: Arc<S>, ctx: NodeContext| {
        let (joke, counted) = (joke.clone(), counted.clone());
        async move {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let input = JokeUpdate::default().letters(s.subject.clone());
            let out = joke.invoke_in(input, &ctx).await?;
            assert!(out.to_parent.is_none());
            Ok::<_, agent_core::BoxError>(SUpdate::default().log(out.state.lines).count(1))
        }
    };
    for (name, saver, durability) in common::backends_and_durabilities().await {
        let graph = StateGraph::new()
            .add_node("prep", step("prep"))
            .add_node("call", call.clone())
            .add_edge(START, "prep")
            .add_edge("prep", "call")
            .add_edge("call", END)
            .compile_with(saver.clone())
            .unwrap();
        let config = RunConfig::default()
            .thread_id(common::unique("invoke-in"))
            .durability(durability);
        let input = SUpdate::default().subject("owls".to_owned());
        let out = graph.invoke(input, config.clone()).await.unwrap();
        // The child's question pauses the parent, at the calling node.
        assert_eq!(out.interrupts.len(), 1, "{name}");
        assert_eq!(out.interrupts[0].value, "joke about owls?", "{name}");
        assert_eq!(out.next, ["call"], "{name}");
        assert_eq!(out.log, ["prep:owls"], "{name}");
        // It checkpointed under the calling task's namespace.
        let ns = paused_subgraph(&graph, &config).await.checkpoint_ns;
        assert!(ns.starts_with("call:"), "{name}: {ns}");

        // Resumed: the node runs again and its call resumes the child where it paused.
        let out = graph
            .invoke(Command::resume("bats").unwrap(), config.clone())
            .await
            .unwrap();
        assert!(out.interrupts.is_empty(), "{name}");
        assert_eq!(out.log, ["prep:owls", "joke about bats"], "{name}");
        assert_eq!(out.count, 2, "{name}");
    }
    assert!(calls.load(std::sync::atomic::Ordering::SeqCst) >= 2);

    // A command to the parent comes back to the calling node, which hands it on.
    let agent = handoff_agent();
    let graph = StateGraph::new()
        .add_node("agent", move |s: Arc<S>, ctx: NodeContext| {
            let agent = agent.clone();
            async move {
                let out = agent.invoke_in((*s).clone().into_update(), &ctx).await?;
                let command = out.to_parent.expect("the handoff");
                assert_eq!(command.graph, agent_core::CommandGraph::Parent);
                Ok::<_, agent_core::BoxError>(Command {
                    graph: agent_core::CommandGraph::Current,
                    ..command
                })
            }
        })
        .add_node("reviewer", step("reviewer"))
        .add_edge(START, "agent")
        .add_edge("reviewer", END)
        .compile()
        .unwrap();
    let out = graph
        .invoke(S::default(), RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.log, ["handed off", "reviewer"]);
}

/// A graph whose `call` node invokes `joke` and keeps what it told as `subject`.
fn calling(
    joke: agent_core::CompiledGraph<Joke>,
    saver: Arc<dyn agent_core::Checkpointer>,
) -> agent_core::CompiledGraph<S> {
    StateGraph::new()
        .add_node("call", move |s: Arc<S>, ctx: NodeContext| {
            let joke = joke.clone();
            async move {
                let input = JokeUpdate::default().letters(s.subject.clone());
                let out = joke.invoke_in(input, &ctx).await?;
                Ok::<_, agent_core::BoxError>(SUpdate::default().subject(out.state.lines.join(",")))
            }
        })
        .add_edge(START, "call")
        .add_edge("call", END)
        .compile_with(saver)
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_per_thread_subgraph_goes_on_from_its_last_call_and_an_off_one_stores_nothing() {
    use agent_core::SubgraphCheckpoints::{Off, PerTask, PerThread};
    for (mode, second) in [
        (PerTask, "joke about cats"),
        (PerThread, "joke about bats,joke about cats"),
    ] {
        let saver = Arc::new(InMemorySaver::new());
        let graph = calling(asking_joke().with_subgraph_checkpoints(mode), saver.clone());
        let thread = common::unique("per-thread");
        let config = RunConfig::default().thread_id(thread.clone());
        let mut told = Vec::new();
        for answer in ["bats", "cats"] {
            let input = SUpdate::default().subject("owls".to_owned());
            let out = graph.invoke(input, config.clone()).await.unwrap();
            assert_eq!(
                out.interrupts.len(),
                1,
                "{mode:?}: the child pauses each call"
            );
            // Per thread: one namespace for the thread, without task ids.
            let stored = list(&saver, &thread, "call").await;
            assert_eq!(!stored.is_empty(), mode == PerThread, "{mode:?}");
            let out = graph
                .invoke(Command::resume(answer).unwrap(), config.clone())
                .await
                .unwrap();
            told.push(out.subject.clone());
        }
        assert_eq!(told, ["joke about bats", second], "{mode:?}");
    }

    // Off: the child keeps no checkpoints (only the parent's namespace has any).
    let plain = StateGraph::<Joke>::new()
        .add_node("tell", |s: Arc<Joke>| async move {
            JokeUpdate::default().lines(vec![format!("joke about {}", s.letters)])
        })
        .add_edge(START, "tell")
        .add_edge("tell", END)
        .compile()
        .unwrap();
    for (mode, child_checkpoints) in [(PerThread, true), (Off, false)] {
        let saver = Arc::new(InMemorySaver::new());
        let graph = calling(plain.with_subgraph_checkpoints(mode), saver.clone());
        let thread = common::unique("off");
        let config = RunConfig::default().thread_id(thread.clone());
        let input = SUpdate::default().subject("owls".to_owned());
        let out = graph.invoke(input, config).await.unwrap();
        assert_eq!(out.subject, "joke about owls");
        let stored = list(&saver, &thread, "call").await;
        assert_eq!(!stored.is_empty(), child_checkpoints, "{mode:?}");
    }
}

async fn list(
    saver: &InMemorySaver,
    thread: &str,
    ns: &str,
) -> Vec<agent_core::checkpoint::CheckpointRecord> {
    agent_core::Checkpointer::list(saver, thread, ns, &agent_core::ListFilter::default())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_per_thread_subgraph_replays_from_what_it_had_at_the_checkpoint_traveled_to() {
    use agent_core::SubgraphCheckpoints::PerThread;
    let tell = StateGraph::<Joke>::new()
        .add_node("tell", |s: Arc<Joke>| async move {
            JokeUpdate::default().lines(vec![format!("joke about {}", s.letters)])
        })
        .add_edge(START, "tell")
        .add_edge("tell", END)
        .compile()
        .unwrap()
        .with_subgraph_checkpoints(PerThread);
    let saver = Arc::new(InMemorySaver::new());
    let graph = calling(tell, saver);
    let config = RunConfig::default().thread_id(common::unique("replay"));
    for subject in ["owls", "bats"] {
        let input = SUpdate::default().subject(subject.to_owned());
        graph.invoke(input, config.clone()).await.unwrap();
    }
    assert_eq!(
        graph
            .get_state(&config)
            .await
            .unwrap()
            .unwrap()
            .values
            .subject,
        "joke about owls,joke about bats"
    );
    // The second call's checkpoint before `call` ran: the child had told one joke then.
    let history = graph
        .get_state_history(&config, &agent_core::ListFilter::default())
        .await
        .unwrap();
    let before_second = history
        .iter()
        .find(|s| s.next == ["call"])
        .expect("the second call's pending step");
    let out = graph
        .invoke(agent_core::Input::Continue, before_second.config.clone())
        .await
        .unwrap();
    assert_eq!(out.subject, "joke about owls,joke about bats");
    // Rerun on its state of then, the child told the second joke once more; the next call
    // goes on from the replay's state.
    let input = SUpdate::default().subject("cats".to_owned());
    let out = graph.invoke(input, config).await.unwrap();
    assert_eq!(
        out.subject,
        "joke about owls,joke about bats,joke about cats"
    );
}

/// A child asking two questions, in two nodes, telling the answers.
fn two_questions() -> agent_core::CompiledGraph<Joke> {
    let ask = |n: u32| {
        move |_s: Arc<Joke>, ctx: NodeContext| async move {
            let answer: String = ctx.interrupt_as(format!("question {n}?"))?;
            Ok::<_, agent_core::BoxError>(JokeUpdate::default().lines(vec![answer]))
        }
    };
    StateGraph::<Joke>::new()
        .add_node("ask_1", ask(1))
        .add_node("ask_2", ask(2))
        .add_edge(START, "ask_1")
        .add_edge("ask_1", "ask_2")
        .add_edge("ask_2", END)
        .compile()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_childs_questions_in_two_nodes_each_take_their_own_answer() {
    use agent_core::SubgraphCheckpoints::{PerTask, PerThread};
    for mode in [PerTask, PerThread] {
        let saver = Arc::new(InMemorySaver::new());
        let graph = calling(two_questions().with_subgraph_checkpoints(mode), saver);
        let config = RunConfig::default().thread_id(common::unique("two-questions"));
        let out = graph.invoke(S::default(), config.clone()).await.unwrap();
        assert_eq!(out.interrupts[0].value, "question 1?");
        let out = graph
            .invoke(Command::resume("a1").unwrap(), config.clone())
            .await
            .unwrap();
        assert_eq!(out.interrupts[0].value, "question 2?", "{mode:?}");
        let out = graph
            .invoke(Command::resume("a2").unwrap(), config)
            .await
            .unwrap();
        assert_eq!(out.subject, "a1,a2", "{mode:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_travel_to_a_per_thread_childs_own_checkpoint_continues_it_there() {
    let saver = Arc::new(InMemorySaver::new());
    let child =
        two_questions().with_subgraph_checkpoints(agent_core::SubgraphCheckpoints::PerThread);
    let graph = calling(child, saver.clone());
    let thread = common::unique("travel");
    let config = RunConfig::default().thread_id(thread.clone());
    graph.invoke(S::default(), config.clone()).await.unwrap();
    // Where both stood at the first question.
    let parent_at = graph.get_state(&config).await.unwrap().unwrap().config;
    let child_at = list(&saver, &thread, "call").await[0].id.to_string();
    for answer in ["a1", "a2"] {
        graph
            .invoke(Command::resume(answer).unwrap(), config.clone())
            .await
            .unwrap();
    }
    let travel = parent_at.checkpoint_map("call", child_at);
    let out = graph
        .invoke(agent_core::Input::Continue, travel)
        .await
        .unwrap();
    assert_eq!(out.interrupts[0].value, "question 1?", "asked again");
    for answer in ["n1", "n2"] {
        graph
            .invoke(Command::resume(answer).unwrap(), config.clone())
            .await
            .unwrap();
    }
    let state = graph.get_state(&config).await.unwrap().unwrap();
    assert_eq!(state.values.subject, "n1,n2", "a new branch from there");
}
