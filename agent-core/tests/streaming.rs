//! Stream modes and the event stream, through the public API.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use agent_core::{
    END, GraphState, NodeContext, RunConfig, START, StateGraph, StreamMode, StreamPart,
};
use futures::StreamExt;

#[derive(GraphState, Clone, Default, Debug, PartialEq)]
struct S {
    #[reducer(append)]
    log: Vec<String>,
    #[reducer(add)]
    n: u32,
}

fn visit(
    name: &'static str,
    delay_ms: u64,
) -> impl Fn(Arc<S>, NodeContext) -> futures::future::BoxFuture<'static, SUpdate> + Clone {
    move |_s, ctx: NodeContext| {
        Box::pin(async move {
            ctx.write_custom(format!("{name} working")).await;
            tokio::time::sleep(Duration::from_millis(delay_ms)).await;
            SUpdate::default().log(vec![name.to_owned()]).n(1)
        })
    }
}

/// a -> {b, c} (parallel; c finishes first) -> d
fn diamond() -> agent_core::CompiledGraph<S> {
    StateGraph::new()
        .add_node("a", visit("a", 0))
        .add_node("b", visit("b", 30))
        .add_node("c", visit("c", 1))
        .add_node("d", visit("d", 0))
        .add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("a", "c")
        .add_edge(["b", "c"], "d")
        .add_edge("d", END)
        .compile()
        .unwrap()
}

fn render(part: &StreamPart<S>) -> String {
    match part {
        StreamPart::Values(s) => format!("values: {:?} n={}", s.log, s.n),
        StreamPart::Updates { node, update } => format!("updates: {node} -> {:?}", update.log),
        StreamPart::Custom { value, meta } => format!(
            "custom: {} (node {}, step {}, triggers {:?})",
            value, meta.node, meta.step, meta.triggers
        ),
        StreamPart::Messages { chunk, meta } => format!("messages: {chunk} (node {})", meta.node),
        StreamPart::Debug(e) => format!("debug: {}", serde_json::to_string(e).unwrap()),
        StreamPart::Event(e) => format!("event: {} {}", e.event, e.name),
        StreamPart::Subgraph { ns, part } => format!("subgraph {ns}: {part:?}"),
    }
}

async fn collect(stream: agent_core::GraphStream<S>) -> Vec<String> {
    stream
        .map(|item| match item {
            Ok(part) => render(&part),
            Err(e) => format!("error: {e}"),
        })
        .collect()
        .await
}

#[tokio::test]
async fn values_and_updates_in_semantic_order() {
    let parts = collect(diamond().stream(
        S::default(),
        RunConfig::default(),
        [StreamMode::Values, StreamMode::Updates],
    ))
    .await;
    insta::assert_snapshot!(parts.join("\n"));
}

#[tokio::test]
async fn custom_writes_carry_node_step_and_triggers() {
    let mut parts =
        collect(diamond().stream(S::default(), RunConfig::default(), StreamMode::Custom)).await;
    // b and c run concurrently: within their step the order is theirs, so sort that step.
    parts[1..3].sort();
    insta::assert_snapshot!(parts.join("\n"));
}

#[tokio::test]
async fn debug_mode_reports_tasks_and_results() {
    let parts =
        collect(diamond().stream(S::default(), RunConfig::default(), StreamMode::Debug)).await;
    assert_eq!(parts.len(), 8, "{parts:#?}");
    assert!(
        parts[0].contains(r#""type":"task","step":1,"node":"a","triggers":["__start__"]"#),
        "{}",
        parts[0]
    );
    assert!(parts[1].contains(r#""type":"task_result","step":1,"node":"a""#));
    // Step 2 starts b and c in task order; results arrive as they finish (c first).
    assert!(parts[2].contains(r#""node":"b""#) && parts[2].contains(r#""type":"task""#));
    assert!(parts[3].contains(r#""node":"c""#) && parts[3].contains(r#""type":"task""#));
    assert!(
        parts[4].contains(r#""type":"task_result","step":2,"node":"c""#),
        "{}",
        parts[4]
    );
    assert!(parts[5].contains(r#""type":"task_result","step":2,"node":"b""#));
    assert!(
        parts[6].contains(r#""node":"d","triggers":["join"]"#),
        "{}",
        parts[6]
    );
}

#[tokio::test]
async fn debug_mode_reports_checkpoints() {
    let graph = StateGraph::new()
        .add_node("a", visit("a", 0))
        .add_edge(START, "a")
        .add_edge("a", END)
        .compile_with(Arc::new(agent_core::InMemorySaver::new()))
        .unwrap();
    let parts = collect(graph.stream(
        S::default(),
        RunConfig::default().thread_id("t"),
        StreamMode::Debug,
    ))
    .await;
    let checkpoints: Vec<&String> = parts.iter().filter(|p| p.contains("checkpoint")).collect();
    assert_eq!(checkpoints.len(), 3, "{parts:#?}");
    assert!(checkpoints[0].contains(r#""step":-1"#) && checkpoints[0].contains(r#""next":[]"#));
    assert!(checkpoints[1].contains(r#""step":0"#) && checkpoints[1].contains(r#""next":["a"]"#));
    assert!(checkpoints[2].contains(r#""step":1"#));
}

#[tokio::test]
async fn several_modes_yield_tagged_items() {
    let mut stream = diamond().stream(
        S::default(),
        RunConfig::default(),
        [StreamMode::Values, StreamMode::Custom],
    );
    let mut modes = Vec::new();
    while let Some(part) = stream.next().await {
        modes.push(part.unwrap().mode());
    }
    assert!(modes.contains(&StreamMode::Values) && modes.contains(&StreamMode::Custom));
    assert!(
        modes
            .iter()
            .all(|m| matches!(m, StreamMode::Values | StreamMode::Custom))
    );
    assert_eq!(modes.first(), Some(&StreamMode::Values));
    assert_eq!(modes.last(), Some(&StreamMode::Values));
}

#[tokio::test]
async fn tokens_reach_the_caller_while_the_node_runs() {
    let release = Arc::new(tokio::sync::Notify::new());
    let finished = Arc::new(AtomicBool::new(false));
    let (r, f) = (release.clone(), finished.clone());
    let graph = StateGraph::new()
        .add_node("llm", move |_s: Arc<S>, ctx: NodeContext| {
            let (r, f) = (r.clone(), f.clone());
            async move {
                for token in ["Hel", "lo"] {
                    ctx.write_message(serde_json::json!({ "text": token }))
                        .await;
                }
                r.notified().await;
                f.store(true, Ordering::SeqCst);
                SUpdate::default().log(vec!["Hello".to_owned()])
            }
        })
        .add_edge(START, "llm")
        .add_edge("llm", END)
        .compile()
        .unwrap();
    let mut stream = graph.stream(S::default(), RunConfig::default(), StreamMode::Messages);
    for expected in ["Hel", "lo"] {
        let part = tokio::time::timeout(Duration::from_secs(5), stream.next())
            .await
            .expect("a token before the node ends")
            .unwrap()
            .unwrap();
        match part {
            StreamPart::Messages { chunk, meta } => {
                assert_eq!(chunk["text"], expected);
                assert_eq!(meta.node, "llm");
                assert_eq!(meta.step, 1);
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(
            !finished.load(Ordering::SeqCst),
            "the node is still running"
        );
    }
    release.notify_one();
    assert!(stream.next().await.is_none());
    assert!(finished.load(Ordering::SeqCst));
}

/// A call tagged `nostream` (LangGraph's `TAG_NOSTREAM`) writes no chunk to `messages`, and a
/// run tagged so streams none at all; the events of a tagged call carry its tags.
#[tokio::test]
async fn nostream_calls_stay_out_of_the_messages_mode() {
    let graph = StateGraph::new()
        .add_node("llm", |_s: Arc<S>, ctx: NodeContext| async move {
            let internal = vec![agent_core::TAG_NOSTREAM.to_owned()];
            assert!(!ctx.streams_messages(&internal));
            ctx.write_message_tagged(serde_json::json!({ "text": "{\"route\": 1}" }), &internal)
                .await;
            ctx.emit_event_tagged(
                "on_chat_model_end",
                "router",
                None,
                serde_json::json!({}),
                &internal,
            )
            .await;
            ctx.write_message_tagged(serde_json::json!({ "text": "answer" }), &[])
                .await;
            SUpdate::default().n(1)
        })
        .add_edge(START, "llm")
        .add_edge("llm", END)
        .compile()
        .unwrap();
    let modes = agent_core::StreamModes::from([StreamMode::Messages, StreamMode::Events]);
    let run = |config: RunConfig| {
        let graph = graph.clone();
        async move {
            let mut texts = Vec::new();
            let mut tags = Vec::new();
            let mut stream = graph.stream(S::default(), config, modes);
            while let Some(part) = stream.next().await {
                match part.unwrap() {
                    StreamPart::Messages { chunk, .. } => texts.push(chunk["text"].clone()),
                    StreamPart::Event(e) if e.name == "router" => tags = e.tags,
                    _ => {}
                }
            }
            (texts, tags)
        }
    };
    let (texts, tags) = run(RunConfig::default().tag("mine")).await;
    assert_eq!(texts, ["answer"]);
    assert_eq!(tags, ["mine", "nostream"]);
    let (texts, _) = run(RunConfig::default().tag(agent_core::TAG_NOSTREAM)).await;
    assert!(texts.is_empty(), "{texts:?}");
}

struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_stream_cancels_the_run() {
    let dropped = Arc::new(AtomicBool::new(false));
    let d = dropped.clone();
    let saver = Arc::new(agent_core::InMemorySaver::new());
    let graph = StateGraph::new()
        .add_node("a", visit("a", 0))
        .add_node("forever", move |_s: Arc<S>, ctx: NodeContext| {
            let guard = SetOnDrop(d.clone());
            async move {
                let _guard = guard;
                let never = AtomicBool::new(false);
                while !never.load(Ordering::SeqCst) {
                    ctx.write_custom("tick").await;
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                SUpdate::default()
            }
        })
        .add_edge(START, "a")
        .add_edge("a", "forever")
        .add_edge("forever", END)
        .compile_with(saver)
        .unwrap();
    let config = RunConfig::default().thread_id("cancel");
    let mut stream = graph.stream(S::default(), config.clone(), StreamMode::Custom);
    let mut ticks = 0;
    while let Some(part) = stream.next().await {
        if render(&part.unwrap()).contains("tick") {
            ticks += 1;
            if ticks == 3 {
                break;
            }
        }
    }
    drop(stream);
    for _ in 0..100 {
        if dropped.load(Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(
        dropped.load(Ordering::SeqCst),
        "the running node was cancelled"
    );
    // The thread stays consistent: `a` is done, `forever` is next.
    let snapshot = graph.get_state(&config).await.unwrap().unwrap();
    assert_eq!(snapshot.values.log, ["a"]);
    assert_eq!(snapshot.next, ["forever"]);
}

#[tokio::test]
async fn a_slow_consumer_holds_the_node_back() {
    let written = Arc::new(AtomicUsize::new(0));
    let w = written.clone();
    let graph = StateGraph::new()
        .add_node("chatty", move |_s: Arc<S>, ctx: NodeContext| {
            let w = w.clone();
            async move {
                for i in 0..2_000 {
                    ctx.write_custom(i).await;
                    w.fetch_add(1, Ordering::SeqCst);
                }
                SUpdate::default()
            }
        })
        .add_edge(START, "chatty")
        .add_edge("chatty", END)
        .compile()
        .unwrap();
    let mut stream = graph.stream(S::default(), RunConfig::default(), StreamMode::Custom);
    let mut read = 0;
    while let Some(part) = stream.next().await {
        part.unwrap();
        read += 1;
        if read % 100 == 0 {
            tokio::time::sleep(Duration::from_millis(2)).await;
            let ahead = written.load(Ordering::SeqCst) - read;
            assert!(
                ahead <= 66,
                "the node ran {ahead} items ahead of the consumer"
            );
        }
    }
    assert_eq!(read, 2_000);
}

#[tokio::test]
async fn event_stream_v2_order() {
    let graph = StateGraph::new()
        .add_node("agent", |_s: Arc<S>, ctx: NodeContext| async move {
            let model_run = ctx.child_run_id();
            ctx.emit_event(
                "on_chat_model_start",
                "scripted",
                Some(&model_run),
                serde_json::json!({"input": "hi"}),
            )
            .await;
            for token in ["a", "b"] {
                ctx.emit_event(
                    "on_chat_model_stream",
                    "scripted",
                    Some(&model_run),
                    serde_json::json!({"chunk": token}),
                )
                .await;
            }
            ctx.emit_event(
                "on_chat_model_end",
                "scripted",
                Some(&model_run),
                serde_json::json!({"output": "ab"}),
            )
            .await;
            ctx.emit_event(
                "on_custom_event",
                "progress",
                None,
                serde_json::json!({"done": true}),
            )
            .await;
            SUpdate::default().log(vec!["agent".to_owned()])
        })
        .add_node("tools", visit("tools", 0))
        .add_edge(START, "agent")
        .add_edge("agent", "tools")
        .add_edge("tools", END)
        .compile()
        .unwrap();
    let mut stream = graph.stream(
        S::default(),
        RunConfig::default().tag("demo"),
        StreamMode::Events,
    );
    let mut events = Vec::new();
    while let Some(part) = stream.next().await {
        match part.unwrap() {
            StreamPart::Event(e) => events.push(e),
            other => panic!("unexpected {other:?}"),
        }
    }
    let names: Vec<String> = events
        .iter()
        .map(|e| format!("{} {}", e.event, e.name))
        .collect();
    insta::assert_snapshot!(names.join("\n"));
    let graph_run = &events[0].run_id;
    let agent_start = &events[1];
    assert_eq!(agent_start.parent_ids, vec![graph_run.clone()]);
    let model = &events[2];
    assert_eq!(
        model.parent_ids,
        vec![graph_run.clone(), agent_start.run_id.clone()]
    );
    assert_eq!(model.metadata["langgraph_node"], "agent");
    assert_eq!(model.tags, ["demo"]);
    let custom = events
        .iter()
        .find(|e| e.event == "on_custom_event")
        .unwrap();
    assert_eq!(custom.run_id, agent_start.run_id);
    assert_eq!(
        events.last().unwrap().data["output"]["log"],
        serde_json::json!(["agent", "tools"])
    );
}

#[tokio::test]
async fn usage_is_aggregated_per_run() {
    let graph = StateGraph::new()
        .add_node("one", |_s: Arc<S>, ctx: NodeContext| async move {
            ctx.add_usage("input_tokens", 5);
            ctx.add_usage("output_tokens", 2);
            SUpdate::default()
        })
        .add_node("two", |_s: Arc<S>, ctx: NodeContext| async move {
            ctx.add_usage("input_tokens", 7);
            SUpdate::default()
        })
        .add_edge(START, "one")
        .add_edge("one", "two")
        .add_edge("two", END)
        .compile()
        .unwrap();
    let out = graph
        .invoke(S::default(), RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.usage["input_tokens"], 12);
    assert_eq!(out.usage["output_tokens"], 2);
}

#[tokio::test]
async fn a_failing_run_ends_its_stream_with_the_error() {
    let graph = StateGraph::new()
        .add_node("bad", |_s: Arc<S>| async { Err::<SUpdate, _>("boom") })
        .add_edge(START, "bad")
        .add_edge("bad", END)
        .compile()
        .unwrap();
    let parts = collect(graph.stream(S::default(), RunConfig::default(), StreamMode::Values)).await;
    assert_eq!(
        parts.last().unwrap(),
        "error: node `bad` failed in step 1: boom"
    );
}

#[tokio::test]
async fn a_stream_ends_with_the_runs_output() {
    let mut stream = diamond().stream(S::default(), RunConfig::default(), StreamMode::Updates);
    let mut updates = 0;
    while let Some(part) = stream.next().await {
        assert!(matches!(part.unwrap(), StreamPart::Updates { .. }));
        updates += 1;
        if updates == 2 {
            break;
        }
    }
    // Parts not read are dropped; the output is the whole run's.
    let out = stream.into_output().await.unwrap();
    assert_eq!(out.n, 4);
    assert_eq!(out.path.to_vec(), [vec!["a"], vec!["b", "c"], vec!["d"]]);
}
