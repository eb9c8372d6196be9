//! Threads, time travel, human in the loop and recovery, on every checkpointer.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use agent_core::checkpoint::Checkpointer;
use agent_core::{
    BoxError, Command, CompiledGraph, Durability, END, GraphError, GraphState, Input, ListFilter,
    NodeContext, RunConfig, START, StateGraph,
};

#[derive(GraphState, Clone, Default, Debug, PartialEq)]
struct Chat {
    #[reducer(append)]
    messages: Vec<String>,
    #[reducer(add)]
    turns: u32,
    approved: Option<String>,
}

fn thread(name: &str) -> RunConfig {
    RunConfig::default().thread_id(common::unique(name))
}

fn human(text: &str) -> ChatUpdate {
    ChatUpdate::default().messages(vec![format!("human: {text}")])
}

fn chat_graph(saver: Arc<dyn Checkpointer>) -> CompiledGraph<Chat> {
    StateGraph::new()
        .add_node("chat", |s: Arc<Chat>| async move {
            let last = s.messages.last().cloned().unwrap_or_default();
            ChatUpdate::default()
                .messages(vec![format!("ai: re {last}")])
                .turns(1)
        })
        .add_edge(START, "chat")
        .add_edge("chat", END)
        .compile_with(saver)
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_turn_history_and_fork() {
    for (name, saver) in common::backends().await {
        let graph = chat_graph(saver);
        let config = thread("multi");
        for text in ["one", "two", "three"] {
            // The last turn asks for each step's updates in the checkpoint metadata.
            let config = config.clone().writes_metadata(text == "three");
            graph.invoke(human(text), config).await.unwrap();
        }
        let state = graph.get_state(&config).await.unwrap().unwrap();
        assert_eq!(state.values.turns, 3, "{name}");
        assert_eq!(state.values.messages.len(), 6);
        assert_eq!(state.values.messages[5], "ai: re human: three");
        assert!(state.next.is_empty());

        let history = graph
            .get_state_history(&config, &ListFilter::default())
            .await
            .unwrap();
        let steps: Vec<i64> = history.iter().map(|s| s.step).collect();
        assert_eq!(steps, vec![7, 6, 5, 4, 3, 2, 1, 0, -1], "{name}");
        let sources: Vec<&str> = history
            .iter()
            .map(|s| s.metadata["source"].as_str().unwrap())
            .collect();
        assert_eq!(
            sources,
            [
                "loop", "loop", "input", "loop", "loop", "input", "loop", "loop", "input"
            ],
            "{name}"
        );
        assert_eq!(history[0].metadata["writes"]["chat"]["turns"], 1);
        assert!(
            history[3].metadata.get("writes").is_none(),
            "no writes metadata unless asked for: {}",
            history[3].metadata
        );
        assert_eq!(history[2].next, ["__start__"]);
        assert_eq!(history[1].next, ["chat"]);
        // Parents chain back to the first input.
        for pair in history.windows(2) {
            assert_eq!(
                pair[0].parent_config.as_ref().unwrap().checkpoint_id,
                pair[1].config.checkpoint_id
            );
        }

        // Fork from step 1 (after the first turn): a new branch, the original intact.
        let step1 = history.iter().find(|s| s.step == 1).unwrap();
        let fork = graph
            .update_state(
                &step1.config,
                ChatUpdate::default().messages(vec!["human: edited".to_owned()]),
                Some(START),
            )
            .await
            .unwrap();
        let forked = graph.get_state(&fork).await.unwrap().unwrap();
        assert_eq!(forked.metadata["source"], "fork", "{name}");
        assert_eq!(forked.next, ["chat"]);
        let out = graph.invoke(Input::Continue, fork.clone()).await.unwrap();
        assert_eq!(
            out.messages,
            [
                "human: one",
                "ai: re human: one",
                "human: edited",
                "ai: re human: edited"
            ],
            "{name}"
        );
        let original = graph.get_state(&history[0].config).await.unwrap().unwrap();
        assert_eq!(
            original.values.messages.len(),
            6,
            "{name}: original branch intact"
        );
        // The thread's latest checkpoint is now on the fork.
        let latest = graph.get_state(&config).await.unwrap().unwrap();
        assert_eq!(latest.values.messages.len(), 4);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replaying_an_older_checkpoint_runs_from_there() {
    for (name, saver) in common::backends().await {
        let graph = chat_graph(saver);
        let config = thread("replay");
        graph.invoke(human("one"), config.clone()).await.unwrap();
        graph.invoke(human("two"), config.clone()).await.unwrap();
        let history = graph
            .get_state_history(&config, &ListFilter::default())
            .await
            .unwrap();
        // Step 0: the first input applied, `chat` next.
        let before_chat = history.iter().find(|s| s.step == 0).unwrap();
        let out = graph
            .invoke(Input::Continue, before_chat.config.clone())
            .await
            .unwrap();
        assert_eq!(out.messages, ["human: one", "ai: re human: one"], "{name}");
        assert_eq!(out.steps, 1);
    }
}

fn agent_tools_graph(saver: Arc<dyn Checkpointer>, before: bool) -> CompiledGraph<Chat> {
    let graph = StateGraph::new()
        .add_node("agent", |_s: Arc<Chat>| async {
            ChatUpdate::default().messages(vec!["agent".to_owned()])
        })
        .add_node("tools", |s: Arc<Chat>| async move {
            let approved = s.approved.clone().unwrap_or_else(|| "none".to_owned());
            ChatUpdate::default().messages(vec![format!("tools ({approved})")])
        })
        .add_node("answer", |_s: Arc<Chat>| async {
            ChatUpdate::default().messages(vec!["answer".to_owned()])
        })
        .add_edge(START, "agent")
        .add_edge("agent", "tools")
        .add_edge("tools", "answer")
        .add_edge("answer", END);
    let graph = if before {
        graph.interrupt_before(["tools"])
    } else {
        graph.interrupt_after(["tools"])
    };
    graph.compile_with(saver).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupt_before_pauses_and_continue_resumes() {
    for (name, saver) in common::backends().await {
        let graph = agent_tools_graph(saver, true);
        let config = thread("before");
        let out = graph.invoke(Chat::default(), config.clone()).await.unwrap();
        assert_eq!(out.messages, ["agent"], "{name}");
        assert_eq!(out.next, ["tools"]);
        assert!(out.is_paused());
        let snapshot = graph.get_state(&config).await.unwrap().unwrap();
        assert_eq!(snapshot.next, ["tools"]);
        // A human edits the state; `tools` is still next (as_node = the last writer, agent).
        graph
            .update_state(
                &config,
                ChatUpdate::default().approved(Some("yes".to_owned())),
                None,
            )
            .await
            .unwrap();
        let snapshot = graph.get_state(&config).await.unwrap().unwrap();
        assert_eq!(snapshot.metadata["source"], "update", "{name}");
        assert_eq!(snapshot.next, ["tools"]);
        let out = graph.invoke(Input::Continue, config.clone()).await.unwrap();
        assert_eq!(out.messages, ["agent", "tools (yes)", "answer"], "{name}");
        assert!(!out.is_paused());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupt_after_pauses_after_the_node() {
    for (name, saver) in common::backends().await {
        let graph = agent_tools_graph(saver, false);
        let config = thread("after");
        let out = graph.invoke(Chat::default(), config.clone()).await.unwrap();
        assert_eq!(out.messages, ["agent", "tools (none)"], "{name}");
        assert_eq!(out.next, ["answer"]);
        let out = graph.invoke(Input::Continue, config.clone()).await.unwrap();
        assert_eq!(out.messages, ["agent", "tools (none)", "answer"], "{name}");
    }
}

#[tokio::test]
async fn interrupt_after_the_last_node_is_a_pause() {
    let graph = chat_graph(Arc::new(agent_core::InMemorySaver::new()));
    let config = thread("after-last").interrupt_after(["chat"]);
    let out = graph.invoke(human("hi"), config.clone()).await.unwrap();
    assert_eq!(out.messages.len(), 2);
    assert!(out.next.is_empty(), "nothing is left to run");
    assert!(
        out.paused && out.is_paused(),
        "yet the run paused after `chat`"
    );
    // Continuing has nothing to run: the run finishes, unpaused.
    let out = graph
        .invoke(Input::Continue, thread_of(&config))
        .await
        .unwrap();
    assert_eq!(out.messages.len(), 2);
    assert!(!out.paused && !out.is_paused());
    // Without the interrupt, the same run is no pause.
    let out = graph
        .invoke(human("hi"), thread("after-last-none"))
        .await
        .unwrap();
    assert!(!out.paused);
}

#[tokio::test]
async fn snapshots_name_the_nodes_that_wrote_their_step() {
    let graph = StateGraph::<Chat>::new()
        .add_node("a", |_s: Arc<Chat>| async {
            ChatUpdate::default().turns(1)
        })
        .add_node("b", |_s: Arc<Chat>| async {
            ChatUpdate::default().turns(1)
        })
        .add_node("c", |_s: Arc<Chat>| async {
            ChatUpdate::default().turns(1)
        })
        .add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("a", "c")
        .add_edge(["b", "c"], END)
        .compile_with(Arc::new(agent_core::InMemorySaver::new()))
        .unwrap();
    let config = thread("writers");
    graph.invoke(human("hi"), config.clone()).await.unwrap();
    let history = graph
        .get_state_history(&config, &ListFilter::default())
        .await
        .unwrap();
    let writers: Vec<Vec<String>> = history.iter().map(|s| s.writers.clone()).collect();
    assert_eq!(
        writers,
        [vec!["b", "c"], vec!["a"], vec![START], vec![]],
        "newest first: the join step, `a`, the input, the thread's first checkpoint"
    );
    graph
        .update_state(&config, ChatUpdate::default(), Some("b"))
        .await
        .unwrap();
    let snapshot = graph.get_state(&config).await.unwrap().unwrap();
    assert_eq!(snapshot.writers, ["b"]);
}

#[tokio::test]
async fn continuing_from_an_addressed_checkpoint_forks_it_first() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let graph = StateGraph::<Chat>::new()
        .add_node("a", |_s: Arc<Chat>| async {
            ChatUpdate::default().messages(vec!["a".to_owned()])
        })
        .add_node("b", move |_s: Arc<Chat>| {
            counter.fetch_add(1, Ordering::SeqCst);
            async { ChatUpdate::default().messages(vec!["b".to_owned()]) }
        })
        .add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("b", END)
        .compile_with(Arc::new(agent_core::InMemorySaver::new()))
        .unwrap();
    let config = thread("replay");
    graph.invoke(Chat::default(), config.clone()).await.unwrap();
    let history = graph
        .get_state_history(&config, &ListFilter::default())
        .await
        .unwrap();
    let after_a = history.iter().find(|s| s.step == 1).unwrap();
    assert_eq!(after_a.next, ["b"]);

    // Time travel: a `fork` copy of the addressed checkpoint, then the branch's steps.
    let out = graph
        .invoke(Input::Continue, after_a.config.clone())
        .await
        .unwrap();
    assert_eq!(out.messages, ["a", "b"]);
    assert_eq!(calls.load(Ordering::SeqCst), 2, "b ran again on the branch");
    let branch = graph
        .get_state_history(&config, &ListFilter::default())
        .await
        .unwrap();
    let lineage: Vec<(&str, i64)> = branch
        .iter()
        .take(2)
        .map(|s| (s.metadata["source"].as_str().unwrap(), s.step))
        .collect();
    assert_eq!(lineage, [("loop", 3), ("fork", 2)]);
    assert_eq!(branch[1].next, ["b"]);
    assert_eq!(
        branch[1].parent_config.as_ref().unwrap().checkpoint_id,
        after_a.config.checkpoint_id,
        "the fork hangs off the addressed checkpoint"
    );
    assert_eq!(
        branch.len(),
        history.len() + 2,
        "the original branch is intact"
    );

    // An update's checkpoint, still the latest, is a branch already: no second fork.
    let updated = graph
        .update_state(&after_a.config, ChatUpdate::default(), Some("a"))
        .await
        .unwrap();
    graph.invoke(Input::Continue, updated).await.unwrap();
    let latest = graph
        .get_state_history(&config, &ListFilter::default())
        .await
        .unwrap();
    let sources: Vec<&str> = latest
        .iter()
        .take(2)
        .map(|s| s.metadata["source"].as_str().unwrap())
        .collect();
    assert_eq!(
        sources,
        ["loop", "fork"],
        "the update's own checkpoint, then b's step"
    );
    assert_eq!(latest.len(), branch.len() + 2);
}

#[tokio::test]
async fn an_update_with_a_goto_adds_to_the_next_step() {
    let graph = StateGraph::<Chat>::new()
        .add_node("a", |_s: Arc<Chat>| async {
            ChatUpdate::default().turns(1)
        })
        .add_node("b", |_s: Arc<Chat>| async {
            ChatUpdate::default().messages(vec!["b".to_owned()])
        })
        .add_node("c", |_s: Arc<Chat>| async {
            ChatUpdate::default().messages(vec!["c".to_owned()])
        })
        .add_edge(START, "a")
        // `c` is reachable (the router never picks it): only a goto runs it here.
        .add_conditional_edges("a", |_: &Chat| "b", [("b", "b"), ("c", "c")])
        .add_edge("b", END)
        .add_edge("c", END)
        .compile_with(Arc::new(agent_core::InMemorySaver::new()))
        .unwrap();
    let config = thread("goto").interrupt_before(["b"]);
    graph.invoke(Chat::default(), config.clone()).await.unwrap();
    let plain = thread_of(&config);
    graph
        .update_state_with_goto(
            &plain,
            ChatUpdate::default().turns(5),
            Some("a"),
            vec!["c".into()],
        )
        .await
        .unwrap();
    let snapshot = graph.get_state(&plain).await.unwrap().unwrap();
    assert_eq!(snapshot.next, ["b", "c"], "a's edge and the goto");
    assert_eq!(snapshot.values.turns, 6);
    let out = graph.invoke(Input::Continue, plain.clone()).await.unwrap();
    assert_eq!(out.messages, ["b", "c"]);
    // Without as_node, the goto joins whatever was next (nothing, once finished).
    graph
        .update_state_with_goto(&plain, ChatUpdate::default(), None, vec!["c".into()])
        .await
        .unwrap();
    let snapshot = graph.get_state(&plain).await.unwrap().unwrap();
    assert_eq!(snapshot.next, ["c"]);
}

fn thread_of(config: &RunConfig) -> RunConfig {
    RunConfig::default().thread_id(config.thread_id.clone().unwrap_or_default())
}

#[tokio::test]
async fn per_run_interrupts_work_too() {
    let graph = chat_graph(Arc::new(agent_core::InMemorySaver::new()));
    let config = thread("per-run").interrupt_before(["chat"]);
    let out = graph.invoke(human("hi"), config.clone()).await.unwrap();
    assert_eq!(out.next, ["chat"]);
    let out = graph.invoke(Input::Continue, config).await.unwrap();
    assert_eq!(out.messages.len(), 2);
}

fn approval_graph(
    saver: Arc<dyn Checkpointer>,
    calls: Arc<AtomicUsize>,
    two: bool,
) -> CompiledGraph<Chat> {
    StateGraph::new()
        .add_node("draft", |_s: Arc<Chat>| async {
            ChatUpdate::default().messages(vec!["draft".to_owned()])
        })
        .add_node("approve", move |_s: Arc<Chat>, ctx: NodeContext| {
            let calls = calls.clone();
            async move {
                calls.fetch_add(1, Ordering::SeqCst);
                let first = ctx.interrupt(serde_json::json!({"question": "ship it?"}))?;
                let mut answers = vec![first.as_str().unwrap_or_default().to_owned()];
                if two {
                    let second: String = ctx.interrupt_as("really?")?;
                    answers.push(second);
                }
                Ok::<_, BoxError>(ChatUpdate::default().approved(Some(answers.join("+"))))
            }
        })
        .add_edge(START, "draft")
        .add_edge("draft", "approve")
        .add_edge("approve", END)
        .compile_with(saver)
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dynamic_interrupt_pauses_and_resume_answers_it() {
    for (name, saver) in common::backends().await {
        let calls = Arc::new(AtomicUsize::new(0));
        let graph = approval_graph(saver, calls.clone(), false);
        let config = thread("interrupt");
        let out = graph.invoke(Chat::default(), config.clone()).await.unwrap();
        assert_eq!(out.interrupts.len(), 1, "{name}");
        assert_eq!(out.interrupts[0].node, "approve");
        assert_eq!(out.interrupts[0].value["question"], "ship it?");
        assert_eq!(out.next, ["approve"]);
        assert_eq!(out.approved, None);

        let snapshot = graph.get_state(&config).await.unwrap().unwrap();
        assert_eq!(snapshot.next, ["approve"]);
        assert_eq!(snapshot.tasks.len(), 1);
        assert_eq!(snapshot.tasks[0].interrupts.len(), 1, "{name}");
        assert_eq!(snapshot.interrupts[0].id, out.interrupts[0].id);

        let out = graph
            .invoke(Command::resume("yes").unwrap(), config.clone())
            .await
            .unwrap();
        assert!(out.interrupts.is_empty(), "{name}");
        assert_eq!(out.approved.as_deref(), Some("yes"));
        assert_eq!(out.messages, ["draft"], "draft ran once");
        assert_eq!(
            calls.load(Ordering::SeqCst),
            2,
            "the node reruns from the top"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_interrupts_in_one_node_are_matched_in_order() {
    for (name, saver) in common::backends().await {
        let calls = Arc::new(AtomicUsize::new(0));
        let graph = approval_graph(saver, calls.clone(), true);
        let config = thread("two");
        let out = graph.invoke(Chat::default(), config.clone()).await.unwrap();
        assert_eq!(out.interrupts[0].value["question"], "ship it?", "{name}");
        let out = graph
            .invoke(Command::resume("yes").unwrap(), config.clone())
            .await
            .unwrap();
        assert_eq!(out.interrupts.len(), 1, "{name}");
        assert_eq!(out.interrupts[0].value, "really?");
        let out = graph
            .invoke(Command::resume("sure").unwrap(), config.clone())
            .await
            .unwrap();
        assert_eq!(out.approved.as_deref(), Some("yes+sure"), "{name}");
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        let err = graph
            .invoke(Command::resume("again").unwrap(), config.clone())
            .await
            .unwrap_err();
        assert!(matches!(err, GraphError::NothingToResume(_)), "{err:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_the_node_fails_on_is_not_kept() {
    for (name, saver) in common::backends().await {
        let graph = StateGraph::new()
            .add_node("approve", |_s: Arc<Chat>, ctx: NodeContext| async move {
                let answer: String = ctx.interrupt_as("ship it?")?;
                if answer == "bad" {
                    return Err::<ChatUpdate, BoxError>("not an answer".into());
                }
                Ok(ChatUpdate::default().approved(Some(answer)))
            })
            .add_edge(START, "approve")
            .add_edge("approve", END)
            .compile_with(saver)
            .unwrap();
        let config = thread("rejected-answer");
        let out = graph.invoke(Chat::default(), config.clone()).await.unwrap();
        assert_eq!(out.interrupts.len(), 1, "{name}");
        let err = graph
            .invoke(Command::resume("bad").unwrap(), config.clone())
            .await
            .unwrap_err();
        assert!(err.to_string().contains("not an answer"), "{name}: {err}");
        // The pause still stands, and the next answer is the one the node gets.
        let snapshot = graph.get_state(&config).await.unwrap().unwrap();
        assert_eq!(snapshot.next, ["approve"], "{name}");
        let out = graph
            .invoke(Command::resume("good").unwrap(), config.clone())
            .await
            .unwrap();
        assert_eq!(out.approved.as_deref(), Some("good"), "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_map_answers_the_interrupts_it_names() {
    for (name, saver) in common::backends().await {
        let ask = |question: &'static str| {
            move |_s: Arc<Chat>, ctx: NodeContext| async move {
                let answer: String = ctx.interrupt_as(question)?;
                Ok::<_, BoxError>(
                    ChatUpdate::default().messages(vec![format!("{question}={answer}")]),
                )
            }
        };
        let graph = StateGraph::new()
            .add_node("a", ask("qa"))
            .add_node("b", ask("qb"))
            .add_edge(START, "a")
            .add_edge(START, "b")
            .add_edge("a", END)
            .add_edge("b", END)
            .compile_with(saver)
            .unwrap();
        let config = thread("resume-map");
        let out = graph.invoke(Chat::default(), config.clone()).await.unwrap();
        let id = |q: &str| {
            out.interrupts
                .iter()
                .find(|i| i.value == q)
                .map(|i| i.id.clone())
                .unwrap()
        };
        let (qa, qb) = (id("qa"), id("qb"));
        let first = graph
            .invoke(
                Command::resume(serde_json::json!({ qa: "A" })).unwrap(),
                config.clone(),
            )
            .await
            .unwrap();
        assert_eq!(first.interrupts.len(), 1, "{name}: b is still paused");
        assert_eq!(first.interrupts[0].value, "qb");
        let second = graph
            .invoke(
                Command::resume(serde_json::json!({ qb: "B" })).unwrap(),
                config.clone(),
            )
            .await
            .unwrap();
        let mut messages = second.messages.clone();
        messages.sort();
        assert_eq!(messages, ["qa=A", "qb=B"], "{name}");
        // A map that is not by interrupt id is an answer like any other value.
        let config = thread("resume-plain-map");
        graph.invoke(Chat::default(), config.clone()).await.unwrap();
        let out = graph
            .invoke(
                Command::resume(serde_json::json!({"not": "an id"})).unwrap(),
                config,
            )
            .await;
        assert!(
            out.is_err(),
            "{name}: both nodes got the map (not a string)"
        );
    }
}

#[tokio::test]
async fn interrupts_without_a_checkpointer_are_an_error() {
    let calls = Arc::new(AtomicUsize::new(0));
    let graph = StateGraph::new()
        .add_node("approve", move |_s: Arc<Chat>, ctx: NodeContext| {
            let calls = calls.clone();
            async move {
                calls.fetch_add(1, Ordering::SeqCst);
                ctx.interrupt("ok?")?;
                Ok::<_, BoxError>(ChatUpdate::default())
            }
        })
        .add_edge(START, "approve")
        .add_edge("approve", END)
        .compile()
        .unwrap();
    let err = graph
        .invoke(Chat::default(), RunConfig::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, GraphError::NoCheckpointer(what) if what.contains("approve")),
        "{err:?}"
    );
    assert!(err.to_string().contains("needs a checkpointer"));

    let graph = StateGraph::<Chat>::new()
        .add_node("a", |_s: Arc<Chat>| async {})
        .add_edge(START, "a")
        .add_edge("a", END)
        .interrupt_before(["a"])
        .compile()
        .unwrap();
    let err = graph
        .invoke(Chat::default(), RunConfig::default())
        .await
        .unwrap_err();
    assert!(matches!(err, GraphError::NoCheckpointer(_)), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finished_siblings_are_not_rerun_after_a_failure() {
    for (name, saver, durability) in common::backends_and_durabilities().await {
        let ok_runs = Arc::new(AtomicUsize::new(0));
        let bad_runs = Arc::new(AtomicUsize::new(0));
        let (ok, bad) = (ok_runs.clone(), bad_runs.clone());
        let graph = StateGraph::new()
            .add_node("start", |_s: Arc<Chat>| async {
                ChatUpdate::default().messages(vec!["start".to_owned()])
            })
            .add_node("steady", move |_s: Arc<Chat>| {
                ok.fetch_add(1, Ordering::SeqCst);
                async {
                    ChatUpdate::default()
                        .messages(vec!["steady".to_owned()])
                        .turns(1)
                }
            })
            .add_node("flaky", move |_s: Arc<Chat>| {
                let n = bad.fetch_add(1, Ordering::SeqCst);
                async move {
                    if n == 0 {
                        return Err("the service is down".into());
                    }
                    Ok::<_, BoxError>(
                        ChatUpdate::default()
                            .messages(vec!["flaky".to_owned()])
                            .turns(10),
                    )
                }
            })
            .add_edge(START, "start")
            .add_edge("start", "steady")
            .add_edge("start", "flaky")
            .add_edge(["steady", "flaky"], END)
            .compile_with(saver)
            .unwrap();
        let config = thread("siblings").durability(durability);
        let err = graph
            .invoke(Chat::default(), config.clone())
            .await
            .unwrap_err();
        assert_eq!(err.node(), Some("flaky"), "{name}");
        let snapshot = graph.get_state(&config).await.unwrap().unwrap();
        assert_eq!(snapshot.next, ["flaky", "steady"]);
        let steady = snapshot.tasks.iter().find(|t| t.node == "steady").unwrap();
        let flaky = snapshot.tasks.iter().find(|t| t.node == "flaky").unwrap();
        assert!(steady.finished, "{name}: steady's output was kept");
        assert!(!flaky.finished);
        assert!(
            flaky
                .error
                .as_deref()
                .unwrap_or_default()
                .contains("the service is down"),
            "{name}"
        );

        let out = graph.invoke(Input::Continue, config.clone()).await.unwrap();
        assert_eq!(
            ok_runs.load(Ordering::SeqCst),
            1,
            "{name}: steady did not run again"
        );
        assert_eq!(bad_runs.load(Ordering::SeqCst), 2);
        // Writes applied in task order (flaky < steady), as if nothing had failed.
        assert_eq!(out.messages, ["start", "flaky", "steady"], "{name}");
        assert_eq!(out.turns, 11);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupt_checkpoints_are_clear_errors() {
    for (name, saver) in common::backends().await {
        let graph = chat_graph(saver.clone());
        let config = thread("corrupt");
        graph.invoke(human("hi"), config.clone()).await.unwrap();
        let thread_id = config.thread_id.clone().unwrap();
        let loaded = saver.get(&thread_id, "", None).await.unwrap();
        let mut record = loaded.record.unwrap();
        record.id = uuid_after(&record.id).into();
        record.body = vec![0xc1, 0xff, 0x00];
        saver.put(&record, &[]).await.unwrap();
        let err = graph.get_state(&config).await.unwrap_err();
        match &err {
            GraphError::CorruptCheckpoint {
                thread_id: t,
                checkpoint_id,
                ..
            } => {
                assert_eq!(t, &thread_id, "{name}");
                assert_eq!(**checkpoint_id, *record.id);
            }
            other => panic!("{name}: unexpected {other:?}"),
        }
        let err = graph
            .invoke(human("again"), config.clone())
            .await
            .unwrap_err();
        assert!(
            matches!(err, GraphError::CorruptCheckpoint { .. }),
            "{name}: {err:?}"
        );

        // A field blob that does not decode into the state's type names the field.
        let mut record = saver
            .get(&thread_id, "", None)
            .await
            .unwrap()
            .record
            .unwrap();
        let good = saver
            .list(&thread_id, "", &ListFilter::default())
            .await
            .unwrap()
            .into_iter()
            .find(|r| r.body != vec![0xc1, 0xff, 0x00])
            .unwrap();
        record.id = uuid_after(&record.id).into();
        record.body = good.body.clone();
        record.versions = [("turns".to_owned(), record.id.clone())]
            .into_iter()
            .collect();
        let bad_blob = agent_core::checkpoint::FieldBlob {
            field: "turns".into(),
            version: record.id.clone(),
            base: None,
            data: vec![0xa3, b'a', b'b', b'c'],
        };
        saver.put(&record, &[bad_blob]).await.unwrap();
        let err = graph.get_state(&config).await.unwrap_err();
        assert!(err.to_string().contains("field `turns`"), "{name}: {err}");
    }
}

/// An id that sorts after `id` (uuid v7 strings sort by time).
fn uuid_after(id: &str) -> String {
    let mut chars: Vec<char> = id.chars().collect();
    chars[0] = 'f';
    chars.into_iter().collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn storage_grows_with_what_changed() {
    let memory = Arc::new(agent_core::InMemorySaver::new());
    let sqlite = Arc::new(agent_core::SqliteSaver::open(common::sqlite_path()).unwrap());
    let mut results = Vec::new();
    for turns in [100usize, 500] {
        let graph = chat_graph(memory.clone());
        let config = thread("growth");
        let graph_sqlite = chat_graph(sqlite.clone());
        let config_sqlite = thread("growth-sqlite");
        for i in 0..turns {
            let text = format!("message number {i} {}", "x".repeat(80));
            graph.invoke(human(&text), config.clone()).await.unwrap();
            graph_sqlite
                .invoke(human(&text), config_sqlite.clone())
                .await
                .unwrap();
        }
        let state = graph.get_state(&config).await.unwrap().unwrap();
        assert_eq!(state.values.messages.len(), turns * 2);
        let mem_bytes = memory.blob_bytes(config.thread_id.as_deref().unwrap());
        let sql_bytes = sqlite
            .blob_bytes(config_sqlite.thread_id.as_deref().unwrap())
            .await
            .unwrap();
        let history_bytes: usize = state.values.messages.iter().map(|m| m.len() + 2).sum();
        eprintln!(
            "{turns} turns: history {history_bytes} B, memory blobs {mem_bytes} B, sqlite blobs {sql_bytes} B"
        );
        results.push((mem_bytes as f64, sql_bytes as f64, history_bytes as f64));
    }
    let (m100, s100, h100) = results[0];
    let (m500, s500, h500) = results[1];
    // Linear: five times the turns, about five times the bytes (quadratic would be 25x),
    // and a small multiple of one copy of the final history.
    assert!(m500 / m100 < 6.0, "memory grew {:.1}x", m500 / m100);
    assert!(s500 / s100 < 6.0, "sqlite grew {:.1}x", s500 / s100);
    assert!(m500 < h500 * 3.0 && m100 < h100 * 3.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_durability_writes_one_checkpoint_per_run() {
    for (name, saver) in common::backends().await {
        let graph = agent_tools_graph_plain(saver);
        let config = thread("exit").durability(agent_core::Durability::Exit);
        let out = graph.invoke(Chat::default(), config.clone()).await.unwrap();
        assert_eq!(out.messages, ["agent", "tools (none)", "answer"], "{name}");
        let history = graph
            .get_state_history(&config, &ListFilter::default())
            .await
            .unwrap();
        assert_eq!(history.len(), 1, "{name}: one checkpoint for the whole run");
        assert_eq!(history[0].step, 3);
        assert!(history[0].next.is_empty());
        // The thread goes on from it.
        let out = graph
            .invoke(ChatUpdate::default().turns(1), config.clone())
            .await
            .unwrap();
        assert_eq!(out.messages.len(), 6, "{name}");
        assert_eq!(
            graph
                .get_state_history(&config, &ListFilter::default())
                .await
                .unwrap()
                .len(),
            2
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_durability_writes_the_checkpoints_sync_writes() {
    for (name, saver) in common::backends().await {
        let graph = agent_tools_graph_plain(saver);
        let mut histories = Vec::new();
        for durability in [Durability::Sync, Durability::Async] {
            let config = thread("async").durability(durability);
            for turn in 0..3 {
                let out = graph
                    .invoke(ChatUpdate::default().turns(1), config.clone())
                    .await
                    .unwrap();
                assert_eq!(out.messages.len(), 3 * (turn + 1), "{name}");
                // Stored before the run returned.
                let latest = graph.get_state(&config).await.unwrap().unwrap();
                assert_eq!(latest.values.messages, out.messages, "{name}");
                assert_eq!(Some(latest.config.checkpoint_id), Some(out.checkpoint_id));
            }
            let history: Vec<(i64, String, Vec<String>, usize)> = graph
                .get_state_history(&config, &ListFilter::default())
                .await
                .unwrap()
                .into_iter()
                .map(|s| {
                    let source = s.metadata["source"].as_str().unwrap_or_default().to_owned();
                    (s.step, source, s.next, s.values.messages.len())
                })
                .collect();
            histories.push(history);
        }
        assert_eq!(
            histories[0].len(),
            15,
            "{name}: an input and four steps per run"
        );
        assert_eq!(histories[0], histories[1], "{name}");
    }
}

/// A fan-out of eight `Send`s (a wide step: its tasks spread over the workers while the
/// checkpoint they start from is encoded), one edge-triggered node beside them, a pause before
/// `review`, and a node that fails once: `Async` stores the same checkpoints as `Sync` (steps,
/// next tasks, values, parents), whether its checkpoint is encoded once the next step started,
/// or when the run stops before that (a pause, a failure).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_checkpoints_encoded_while_the_next_step_runs_match_sync() {
    for (name, saver) in common::backends().await {
        let failures = Arc::new(AtomicUsize::new(1));
        let failing = failures.clone();
        let graph = StateGraph::<Chat>::new()
            .add_node("plan", |_s: Arc<Chat>| async {
                ChatUpdate::default().messages(vec!["plan".to_owned()])
            })
            .add_node("work", |s: Arc<Chat>| async move {
                ChatUpdate::default().messages(vec![format!("work {}", s.turns)])
            })
            .add_node("audit", |_s: Arc<Chat>| async {
                ChatUpdate::default().messages(vec!["audit".to_owned()])
            })
            .add_node("review", move |_s: Arc<Chat>| {
                let failing = failing.clone();
                async move {
                    if failing
                        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                        .is_ok()
                    {
                        return Err::<ChatUpdate, BoxError>("review failed".into());
                    }
                    Ok(ChatUpdate::default().approved(Some("ok".to_owned())))
                }
            })
            .add_edge(START, "plan")
            .add_conditional_edges(
                "plan",
                |_s: &Chat| {
                    (0..8)
                        .map(|i| {
                            agent_core::Send::new(
                                "work",
                                Chat {
                                    turns: i,
                                    ..Chat::default()
                                },
                            )
                        })
                        .collect::<Vec<_>>()
                },
                ["work"],
            )
            .add_edge("plan", "audit")
            .add_edge(["work", "audit"], "review")
            .add_edge("review", END)
            .compile_with(saver)
            .unwrap();
        let mut histories = Vec::new();
        for durability in [Durability::Sync, Durability::Async] {
            failures.store(1, Ordering::SeqCst);
            let config = thread("owed")
                .durability(durability)
                .interrupt_before(["review"]);
            let out = graph.invoke(human("go"), config.clone()).await.unwrap();
            assert_eq!(
                out.next,
                ["review"],
                "{name} {durability:?}: paused before review"
            );
            assert_eq!(out.messages.len(), 11, "{name} {durability:?}");
            let failed = graph.invoke(Input::Continue, config.clone()).await;
            assert!(failed.is_err(), "{name} {durability:?}: review fails once");
            let out = graph.invoke(Input::Continue, config.clone()).await.unwrap();
            assert_eq!(out.approved.as_deref(), Some("ok"), "{name} {durability:?}");
            let history = graph
                .get_state_history(&config, &ListFilter::default())
                .await
                .unwrap();
            for (newer, older) in history.iter().zip(history.iter().skip(1)) {
                assert_eq!(
                    newer
                        .parent_config
                        .as_ref()
                        .and_then(|c| c.checkpoint_id.clone()),
                    older.config.checkpoint_id,
                    "{name} {durability:?}: each checkpoint's parent is the one before it"
                );
            }
            type Row = (i64, String, Vec<String>, usize, Vec<String>, Option<String>);
            let history: Vec<Row> = history
                .into_iter()
                .map(|s| {
                    let source = s.metadata["source"].as_str().unwrap_or_default().to_owned();
                    let mut messages = s.values.messages;
                    messages.sort();
                    let tasks = s.tasks.len();
                    (s.step, source, s.next, tasks, messages, s.values.approved)
                })
                .collect();
            histories.push(history);
        }
        assert_eq!(
            histories[0].iter().map(|h| h.0).collect::<Vec<_>>(),
            [3, 2, 1, 0, -1],
            "{name}: the input, then after START, plan, the fan-out and review"
        );
        assert_eq!(histories[0][2].3, 9, "{name}: audit and eight sends next");
        assert_eq!(histories[0], histories[1], "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_durability_pauses_and_resumes() {
    for (name, saver) in common::backends().await {
        let calls = Arc::new(AtomicUsize::new(0));
        let graph = approval_graph(saver, calls.clone(), true);
        let config = thread("async-interrupt").durability(Durability::Async);
        let out = graph.invoke(Chat::default(), config.clone()).await.unwrap();
        assert_eq!(out.interrupts.len(), 1, "{name}");
        // The pause is stored before it is reported.
        let snapshot = graph.get_state(&config).await.unwrap().unwrap();
        assert_eq!(snapshot.interrupts, out.interrupts, "{name}");
        let out = graph
            .invoke(Command::resume("yes").unwrap(), config.clone())
            .await
            .unwrap();
        assert_eq!(out.interrupts[0].value, "really?", "{name}");
        let out = graph
            .invoke(Command::resume("sure").unwrap(), config.clone())
            .await
            .unwrap();
        assert_eq!(out.approved.as_deref(), Some("yes+sure"), "{name}");
        assert_eq!(out.messages, ["draft"], "{name}: draft ran once");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_durability_pauses_and_resumes() {
    for (name, saver) in common::backends().await {
        let calls = Arc::new(AtomicUsize::new(0));
        let graph = approval_graph(saver, calls.clone(), true);
        let config = thread("exit-interrupt").durability(agent_core::Durability::Exit);
        let out = graph.invoke(Chat::default(), config.clone()).await.unwrap();
        assert_eq!(out.interrupts.len(), 1, "{name}");
        assert_eq!(out.messages, ["draft"]);
        let out = graph
            .invoke(Command::resume("yes").unwrap(), config.clone())
            .await
            .unwrap();
        assert_eq!(out.interrupts[0].value, "really?", "{name}");
        let out = graph
            .invoke(Command::resume("sure").unwrap(), config.clone())
            .await
            .unwrap();
        assert_eq!(out.approved.as_deref(), Some("yes+sure"), "{name}");
        assert_eq!(out.messages, ["draft"], "{name}: draft ran once");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_durability_keeps_the_last_completed_step_on_failure() {
    for (name, saver) in common::backends().await {
        let fail = Arc::new(AtomicUsize::new(0));
        let f = fail.clone();
        let graph = StateGraph::new()
            .add_node("one", |_s: Arc<Chat>| async {
                ChatUpdate::default().messages(vec!["one".to_owned()])
            })
            .add_node("two", move |_s: Arc<Chat>| {
                let first = f.fetch_add(1, Ordering::SeqCst) == 0;
                async move {
                    if first {
                        return Err("flaky".into());
                    }
                    Ok::<_, BoxError>(ChatUpdate::default().messages(vec!["two".to_owned()]))
                }
            })
            .add_edge(START, "one")
            .add_edge("one", "two")
            .add_edge("two", END)
            .compile_with(saver)
            .unwrap();
        let config = thread("exit-fail").durability(agent_core::Durability::Exit);
        assert!(graph.invoke(Chat::default(), config.clone()).await.is_err());
        let snapshot = graph.get_state(&config).await.unwrap().unwrap();
        assert_eq!(snapshot.values.messages, ["one"], "{name}");
        assert_eq!(snapshot.next, ["two"]);
        let out = graph.invoke(Input::Continue, config).await.unwrap();
        assert_eq!(out.messages, ["one", "two"], "{name}");
    }
}

fn agent_tools_graph_plain(saver: Arc<dyn Checkpointer>) -> CompiledGraph<Chat> {
    StateGraph::new()
        .add_node("agent", |_s: Arc<Chat>| async {
            ChatUpdate::default().messages(vec!["agent".to_owned()])
        })
        .add_node("tools", |s: Arc<Chat>| async move {
            let approved = s.approved.clone().unwrap_or_else(|| "none".to_owned());
            ChatUpdate::default().messages(vec![format!("tools ({approved})")])
        })
        .add_node("answer", |_s: Arc<Chat>| async {
            ChatUpdate::default().messages(vec!["answer".to_owned()])
        })
        .add_edge(START, "agent")
        .add_edge("agent", "tools")
        .add_edge("tools", "answer")
        .add_edge("answer", END)
        .compile_with(saver)
        .unwrap()
}

#[derive(GraphState, Clone, Default, Debug, PartialEq)]
struct Mixed {
    #[reducer(append)]
    log: Vec<String>,
    #[reducer(append)]
    tags: std::collections::BTreeSet<String>,
    #[reducer(self::keep_last_two)]
    recent: Vec<String>,
}

fn keep_last_two(current: &mut Vec<String>, update: Vec<String>) {
    current.extend(update);
    let cut = current.len().saturating_sub(2);
    current.drain(..cut);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appends_store_new_elements_and_every_reducer_restores_exactly() {
    for (name, saver, durability) in common::backends_and_durabilities().await {
        let graph = StateGraph::new()
            .add_node("step", |s: Arc<Mixed>| async move {
                let n = s.log.len();
                // Tags land before and after the existing ones (a set reorders).
                let tag = if n.is_multiple_of(2) {
                    format!("a{n}")
                } else {
                    format!("z{n}")
                };
                MixedUpdate::default()
                    .log(vec![format!("entry {n}")])
                    .tags(std::collections::BTreeSet::from([tag]))
                    .recent(vec![format!("recent {n}")])
            })
            .add_edge(START, "step")
            .add_edge("step", END)
            .compile_with(saver)
            .unwrap();
        let config = thread("mixed").durability(durability);
        for _ in 0..6 {
            graph
                .invoke(Mixed::default(), config.clone())
                .await
                .unwrap();
        }
        // An update that rewrites the appended field's history through update_state.
        graph
            .update_state(
                &config,
                MixedUpdate::default().log(vec!["edited".to_owned()]),
                None,
            )
            .await
            .unwrap();
        let out = graph
            .invoke(Mixed::default(), config.clone())
            .await
            .unwrap()
            .state;
        let expected_len = out.log.len();
        assert_eq!(expected_len, 8, "{name}");
        let stored = graph.get_state(&config).await.unwrap().unwrap().values;
        assert_eq!(stored, out, "{name} {durability:?}");
        assert_eq!(out.recent.len(), 2);
        assert_eq!(out.tags.len(), 7);
        // Every checkpoint of the history restores to what its run saw.
        let history = graph
            .get_state_history(&config, &ListFilter::default())
            .await
            .unwrap();
        let lens: Vec<usize> = history.iter().map(|s| s.values.log.len()).collect();
        assert!(lens.windows(2).all(|w| w[0] >= w[1]), "{name}: {lens:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_metadata_reads_what_the_executor_stores() {
    use agent_core::checkpoint::Source;
    for (name, saver) in common::backends().await {
        let graph = chat_graph(saver.clone());
        let config = thread("meta").metadata("user", "ada").writes_metadata(true);
        let out = graph.invoke(human("hi"), config.clone()).await.unwrap();
        let history = graph
            .get_state_history(&config, &ListFilter::default())
            .await
            .unwrap();
        // Newest first: the step that ran `chat`, the input step, the input.
        let metas: Vec<_> = history.iter().map(|s| s.meta()).collect();
        let sources: Vec<_> = metas.iter().map(|m| (m.source, m.step)).collect();
        assert_eq!(
            sources,
            [
                (Some(Source::Loop), Some(1)),
                (Some(Source::Loop), Some(0)),
                (Some(Source::Input), Some(-1)),
            ],
            "{name}"
        );
        for (meta, snapshot) in metas.iter().zip(&history) {
            assert_eq!(meta.extra["user"], "ada", "{name}");
            assert!(meta.run_id.is_some(), "{name}");
            // The typed view gives back exactly what is stored.
            assert_eq!(meta.to_json(), snapshot.metadata, "{name}");
        }
        assert!(
            metas[0]
                .writes
                .as_ref()
                .is_some_and(|w| w.get("chat").is_some()),
            "{name}"
        );
        let latest = saver
            .get(config.thread_id.as_deref().unwrap(), "", None)
            .await
            .unwrap()
            .record
            .unwrap();
        assert_eq!(*latest.id, *out.checkpoint_id.unwrap(), "{name}");
        assert_eq!(latest.metadata, metas[0], "{name}");
    }
}

#[derive(GraphState, Clone, Default, Debug, PartialEq)]
struct Draft {
    /// Replaced every step by a longer text (a reply streamed into one field).
    text: String,
    #[reducer(add)]
    words: u32,
}

fn draft_graph(saver: Arc<dyn Checkpointer>, words: u32) -> CompiledGraph<Draft> {
    StateGraph::new()
        .add_node("write", |s: Arc<Draft>| async move {
            DraftUpdate::default()
                .text(format!("{} word{}", s.text, s.words))
                .words(1)
        })
        .add_edge(START, "write")
        .add_conditional_edges(
            "write",
            move |s: &Draft| if s.words < words { "write" } else { END },
            ["write", END],
        )
        .compile_with(saver)
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_growing_text_stores_what_it_gained_and_every_checkpoint_reads_back() {
    let head = "a long opening paragraph. ".repeat(80);
    let path = common::sqlite_path();
    let mut backends = common::backends().await;
    // A second saver reads the file back: the shared SQLite saver only.
    backends.remove(2);
    backends[1].1 = Arc::new(agent_core::SqliteSaver::open(&path).unwrap());
    for (name, saver) in backends {
        for durability in [Durability::Sync, Durability::Async] {
            let graph = draft_graph(saver.clone(), 40);
            let config = thread("draft").durability(durability);
            let out = graph
                .invoke(DraftUpdate::default().text(head.clone()), config.clone())
                .await
                .unwrap();
            assert_eq!(out.words, 40, "{name}");
            // Every checkpoint's text, rebuilt (a later process reads the SQLite file).
            let reader = match name {
                "sqlite" => {
                    draft_graph(Arc::new(agent_core::SqliteSaver::open(&path).unwrap()), 40)
                }
                _ => graph.clone(),
            };
            let history = reader
                .get_state_history(&config, &ListFilter::default())
                .await
                .unwrap();
            assert_eq!(history.len(), 42, "{name}: input, START and 40 steps");
            for snapshot in &history {
                let words = snapshot.values.words;
                if snapshot.step == -1 {
                    assert_eq!(
                        snapshot.values,
                        Draft::default(),
                        "{name}: before the input"
                    );
                    continue;
                }
                let mut expected = head.clone();
                for i in 0..words {
                    expected.push_str(&format!(" word{i}"));
                }
                assert_eq!(
                    snapshot.values.text, expected,
                    "{name} {durability:?} at {words}"
                );
            }
        }
    }
    // Stored: a few whole copies (one per chain of splices), not one per step.
    let memory = Arc::new(agent_core::InMemorySaver::new());
    let config = thread("draft-bytes");
    draft_graph(memory.clone(), 40)
        .invoke(DraftUpdate::default().text(head.clone()), config.clone())
        .await
        .unwrap();
    let stored = memory.blob_bytes(config.thread_id.as_deref().unwrap());
    assert!(
        stored < head.len() * 4,
        "{stored} bytes stored for a {}-byte text written 41 times",
        head.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_text_is_stored_compressed_and_reads_back_on_every_backend() {
    let page =
        "A retrieved page of text, with its words repeated as real pages repeat them. ".repeat(600);
    for (name, saver) in common::backends().await {
        let graph = draft_graph(saver.clone(), 3);
        let config = thread("compressed");
        let out = graph
            .invoke(DraftUpdate::default().text(page.clone()), config.clone())
            .await
            .unwrap();
        let state = graph.get_state(&config).await.unwrap().unwrap();
        assert_eq!(state.values, out.state, "{name}");
        assert!(state.values.text.starts_with(&page), "{name}");
        let history = graph
            .get_state_history(&config, &ListFilter::default())
            .await
            .unwrap();
        assert_eq!(history.len(), 5, "{name}");
    }
    let memory = Arc::new(agent_core::InMemorySaver::new());
    let sqlite = Arc::new(agent_core::SqliteSaver::open(common::sqlite_path()).unwrap());
    let config = thread("compressed-bytes");
    draft_graph(memory.clone(), 1)
        .invoke(DraftUpdate::default().text(page.clone()), config.clone())
        .await
        .unwrap();
    draft_graph(sqlite.clone(), 1)
        .invoke(DraftUpdate::default().text(page.clone()), config.clone())
        .await
        .unwrap();
    let thread_id = config.thread_id.as_deref().unwrap();
    let in_memory = memory.blob_bytes(thread_id);
    let in_sqlite = sqlite.blob_bytes(thread_id).await.unwrap() as usize;
    for (name, stored) in [("memory", in_memory), ("sqlite", in_sqlite)] {
        assert!(
            stored < page.len() / 4,
            "{name}: {stored} bytes stored for a {}-byte text",
            page.len()
        );
    }
}

/// A node that journals two results (`work` counts their computations), then asks a question:
/// resumed, it replays the results instead of computing them again. The second result lands
/// before the first (out of order), as parallel work does.
fn journal_graph(saver: Arc<dyn Checkpointer>, work: Arc<AtomicUsize>) -> CompiledGraph<Chat> {
    StateGraph::new()
        .add_node("entry", move |_s: Arc<Chat>, ctx: NodeContext| {
            let work = work.clone();
            async move {
                let (first, kept_first) = ctx.journal_slot();
                let (second, kept_second) = ctx.journal_slot();
                let mut results = Vec::new();
                for (slot, kept, value) in [(second, kept_second, "b"), (first, kept_first, "a")] {
                    let value = match kept {
                        Some(kept) => kept,
                        None => {
                            work.fetch_add(1, Ordering::SeqCst);
                            ctx.record(slot, serde_json::json!(value));
                            serde_json::json!(value)
                        }
                    };
                    results.push(value.as_str().unwrap_or_default().to_owned());
                }
                let answer = ctx.interrupt("ok?")?;
                results.push(answer.as_str().unwrap_or_default().to_owned());
                Ok::<_, BoxError>(ChatUpdate::default().messages(results))
            }
        })
        .add_edge(START, "entry")
        .add_edge("entry", END)
        .compile_with(saver)
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_task_replays_its_journal_when_resumed() {
    for (name, saver) in common::backends().await {
        let work = Arc::new(AtomicUsize::new(0));
        let graph = journal_graph(saver, work.clone());
        let config = thread("journal");
        let out = graph.invoke(Chat::default(), config.clone()).await.unwrap();
        assert_eq!(out.interrupts.len(), 1, "{name}");
        assert_eq!(work.load(Ordering::SeqCst), 2, "{name}");
        let out = graph
            .invoke(Command::resume("yes").unwrap(), config.clone())
            .await
            .unwrap();
        assert_eq!(out.messages, ["b", "a", "yes"], "{name}");
        assert_eq!(
            work.load(Ordering::SeqCst),
            2,
            "{name}: the resumed task replays its journal"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unrecorded_slot_before_an_interrupt_leaves_the_answer_in_its_slot() {
    // The slot is taken but nothing recorded (the work itself paused): the resume answer
    // must land in the interrupt's slot (1), not in the empty one (0).
    for (name, saver) in common::backends().await {
        let graph = StateGraph::new()
            .add_node("entry", |_s: Arc<Chat>, ctx: NodeContext| async move {
                let (_slot, kept) = ctx.journal_slot();
                assert!(kept.is_none() || kept == Some(serde_json::Value::Null));
                let answer = ctx.interrupt("ok?")?;
                Ok::<_, BoxError>(
                    ChatUpdate::default().messages(vec![answer.as_str().unwrap_or("?").to_owned()]),
                )
            })
            .add_edge(START, "entry")
            .add_edge("entry", END)
            .compile_with(saver)
            .unwrap();
        let config = thread("unrecorded");
        let out = graph.invoke(Chat::default(), config.clone()).await.unwrap();
        assert_eq!(out.interrupts.len(), 1, "{name}");
        let out = graph
            .invoke(Command::resume("yes").unwrap(), config.clone())
            .await
            .unwrap();
        assert_eq!(out.interrupts.len(), 0, "{name}");
        assert_eq!(out.messages, ["yes"], "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_journal_a_pause_keeps_only_resume_answers() {
    // The approval node records nothing: two interrupts still take their answers in order
    // (the journal is kept only when a node records into it).
    for (name, saver) in common::backends().await {
        let calls = Arc::new(AtomicUsize::new(0));
        let graph = approval_graph(saver, calls, true);
        let config = thread("no-journal");
        graph.invoke(Chat::default(), config.clone()).await.unwrap();
        graph
            .invoke(Command::resume("1").unwrap(), config.clone())
            .await
            .unwrap();
        let out = graph
            .invoke(Command::resume("2").unwrap(), config.clone())
            .await
            .unwrap();
        assert_eq!(out.approved.as_deref(), Some("1+2"), "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_task_replays_its_journal_when_the_thread_runs_on() {
    // The node records a result, then fails the first time: running the thread on (no new
    // input) retries the node, which finds the result instead of computing it again.
    for (name, saver) in common::backends().await {
        let work = Arc::new(AtomicUsize::new(0));
        let calls = Arc::new(AtomicUsize::new(0));
        let (w, c) = (work.clone(), calls.clone());
        let graph = StateGraph::new()
            .add_node("entry", move |_s: Arc<Chat>, ctx: NodeContext| {
                let (work, calls) = (w.clone(), c.clone());
                async move {
                    let (slot, kept) = ctx.journal_slot();
                    let value = match kept {
                        Some(kept) => kept,
                        None => {
                            work.fetch_add(1, Ordering::SeqCst);
                            ctx.record(slot, serde_json::json!("slow result"));
                            serde_json::json!("slow result")
                        }
                    };
                    if calls.fetch_add(1, Ordering::SeqCst) == 0 {
                        return Err::<ChatUpdate, BoxError>("flaky".into());
                    }
                    Ok(ChatUpdate::default()
                        .messages(vec![value.as_str().unwrap_or("?").to_owned()]))
                }
            })
            .add_edge(START, "entry")
            .add_edge("entry", END)
            .compile_with(saver)
            .unwrap();
        let config = thread("journal-failure");
        let failed = graph.invoke(Chat::default(), config.clone()).await;
        assert!(failed.is_err(), "{name}");
        let out = graph.invoke(Input::Continue, config.clone()).await.unwrap();
        assert_eq!(out.messages, ["slow result"], "{name}");
        assert_eq!(calls.load(Ordering::SeqCst), 2, "{name}");
        assert_eq!(
            work.load(Ordering::SeqCst),
            1,
            "{name}: replayed, not computed again"
        );
    }
}
