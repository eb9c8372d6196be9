//! Subgraph streams (LangGraph's `stream(..., subgraphs=True)`): a subgraph's own parts under
//! its namespace when the caller asks, and not otherwise; the parent's parts unchanged;
//! messages, custom items and events from inside a subgraph carry the namespace.

use std::sync::Arc;

use agent_core::{
    BoxError, Command, CompiledGraph, DebugEvent, END, GraphState, INTERRUPT, InMemorySaver,
    ListFilter, Namespace, NodeContext, RunConfig, START, StateGraph, StreamMode, StreamModes,
    StreamPart, SubgraphPart,
};
use futures::StreamExt;

#[derive(GraphState, Clone, Default, Debug, PartialEq)]
struct P {
    #[reducer(append)]
    log: Vec<String>,
    topic: String,
    summary: String,
}

/// The state of the subgraph over a state of its own.
#[derive(GraphState, Clone, Default, Debug, PartialEq)]
struct W {
    subject: String,
    draft: String,
}

fn step(
    name: &'static str,
) -> impl Fn(Arc<P>, NodeContext) -> futures::future::BoxFuture<'static, PUpdate> + Clone {
    move |_s: Arc<P>, ctx: NodeContext| {
        Box::pin(async move {
            ctx.write_custom(name).await;
            ctx.write_message(serde_json::json!({ "text": name })).await;
            PUpdate::default().log(vec![name.to_owned()])
        })
    }
}

fn chain(nodes: &[&'static str]) -> StateGraph<P> {
    let mut graph = StateGraph::new();
    let mut last = START;
    for &node in nodes {
        graph = graph.add_node(node, step(node)).add_edge(last, node);
        last = node;
    }
    graph.add_edge(last, END)
}

/// `a -> sub (s1 -> s2) -> other (draft, own state) -> outer (o1 -> inner (deep)) -> END`.
fn parent(saver: Option<Arc<InMemorySaver>>) -> CompiledGraph<P> {
    let sub = chain(&["s1", "s2"]).compile().unwrap();
    let writer = StateGraph::<W>::new()
        .add_node("draft", |s: Arc<W>, ctx: NodeContext| async move {
            ctx.write_custom("draft").await;
            WUpdate::default().draft(format!("all about {}", s.subject))
        })
        .add_edge(START, "draft")
        .add_edge("draft", END)
        .compile()
        .unwrap();
    let inner = chain(&["deep"]).compile().unwrap();
    let outer = StateGraph::new()
        .add_node("o1", step("o1"))
        .add_node("inner", inner)
        .add_edge(START, "o1")
        .add_edge("o1", "inner")
        .add_edge("inner", END)
        .compile()
        .unwrap();
    let graph = StateGraph::new()
        .add_node("a", step("a"))
        .add_node("sub", sub)
        .add_node(
            "other",
            writer.as_node(
                |p: &P| WUpdate::default().subject(p.topic.clone()),
                |w: W| PUpdate::default().summary(w.draft),
            ),
        )
        .add_node("outer", outer)
        .add_edge(START, "a")
        .add_edge("a", "sub")
        .add_edge("sub", "other")
        .add_edge("other", "outer")
        .add_edge("outer", END);
    match saver {
        Some(saver) => graph.compile_with(saver).unwrap(),
        None => graph.compile().unwrap(),
    }
}

fn input() -> PUpdate {
    PUpdate::default().topic("owls".to_owned())
}

/// A namespace with its task ids masked: `sub:<id>|inner:<id>`.
fn masked(ns: &Namespace) -> String {
    let segments: Vec<String> = ns
        .iter()
        .map(|segment| match segment.split_once(':') {
            Some((node, id)) if !id.is_empty() => format!("{node}:<id>"),
            _ => format!("{segment} (no task id)"),
        })
        .collect();
    if segments.is_empty() {
        "()".to_owned()
    } else {
        segments.join("|")
    }
}

/// `ns  mode  node`: where a part comes from (the node for updates, custom and messages).
fn line(part: &StreamPart<P>) -> String {
    let node = match part {
        StreamPart::Updates { node, .. } => node.clone(),
        StreamPart::Messages { meta, .. } | StreamPart::Custom { meta, .. } => meta.node.clone(),
        StreamPart::Subgraph {
            part: SubgraphPart::Updates { node, .. },
            ..
        } => node.clone(),
        _ => "-".to_owned(),
    };
    format!(
        "{:<22} {:<8} {node}",
        masked(&part.namespace()),
        part.mode()
    )
}

async fn parts(
    graph: &CompiledGraph<P>,
    config: RunConfig,
    modes: StreamModes,
) -> Vec<StreamPart<P>> {
    let mut stream = graph.stream(input(), config, modes);
    let mut parts = Vec::new();
    while let Some(part) = stream.next().await {
        parts.push(part.unwrap());
    }
    parts
}

fn modes() -> StreamModes {
    StreamModes::from([StreamMode::Updates, StreamMode::Values, StreamMode::Custom])
}

#[tokio::test]
async fn subgraph_parts_stream_under_their_namespace_when_asked() {
    let graph = parent(None);
    let parts = parts(&graph, RunConfig::default(), modes().with_subgraphs()).await;
    let lines: Vec<String> = parts.iter().map(line).collect();
    insta::assert_snapshot!(lines.join("\n"));

    // The subgraph over a state of its own streams its state and updates as JSON.
    let other: Vec<&SubgraphPart> = parts
        .iter()
        .filter_map(|part| match part {
            StreamPart::Subgraph { ns, part } if ns[0].starts_with("other:") => Some(part),
            _ => None,
        })
        .collect();
    assert!(other.contains(&&SubgraphPart::Updates {
        node: "draft".to_owned(),
        update: serde_json::json!({ "draft": "all about owls" }),
    }));
    assert!(other.contains(&&SubgraphPart::Values {
        state: serde_json::json!({ "subject": "owls", "draft": "all about owls" }),
    }));
    // A subgraph over the parent's state streams the parent's fields.
    let last_sub_values = parts
        .iter()
        .rev()
        .find_map(|part| match part {
            StreamPart::Subgraph {
                ns,
                part: SubgraphPart::Values { state },
            } if ns[0].starts_with("sub:") => Some(state),
            _ => None,
        })
        .unwrap();
    assert_eq!(last_sub_values["log"], serde_json::json!(["a", "s1", "s2"]));
}

#[tokio::test]
async fn without_the_flag_the_parents_parts_are_all_there_is() {
    let graph = parent(None);
    let plain = parts(&graph, RunConfig::default(), modes()).await;
    assert!(
        !plain
            .iter()
            .any(|part| matches!(part, StreamPart::Subgraph { .. })),
        "no subgraph parts without the flag"
    );
    // The parent's own parts are the same with the flag and without.
    let with = parts(&graph, RunConfig::default(), modes().with_subgraphs()).await;
    let root = |parts: &[StreamPart<P>]| -> Vec<String> {
        parts
            .iter()
            .filter(|part| {
                !matches!(part, StreamPart::Subgraph { .. })
                    && !matches!(part, StreamPart::Custom { .. })
            })
            .map(|part| format!("{part:?}"))
            .collect()
    };
    assert_eq!(root(&plain), root(&with));
    // One update per parent node, a subgraph node's included (never one per inner node).
    let updates: Vec<String> = plain
        .iter()
        .filter_map(|part| match part {
            StreamPart::Updates { node, .. } => Some(node.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(updates, ["a", "sub", "other", "outer"]);
    assert_eq!(root(&plain).len(), 4 + 5, "4 updates, 5 values");
    // Custom items from inside subgraphs reach the caller either way, under their namespace.
    let custom = |parts: &[StreamPart<P>]| -> Vec<String> {
        parts
            .iter()
            .filter(|part| part.mode() == StreamMode::Custom)
            .map(line)
            .collect()
    };
    assert_eq!(custom(&plain), custom(&with));
    insta::assert_snapshot!(custom(&plain).join("\n"));
}

#[tokio::test]
async fn only_the_modes_asked_for_stream_from_subgraphs() {
    let graph = parent(None);
    let parts = parts(
        &graph,
        RunConfig::default(),
        StreamModes::from(StreamMode::Updates).with_subgraphs(),
    )
    .await;
    assert!(parts.iter().all(|part| part.mode() == StreamMode::Updates));
    let names: Vec<String> = parts.iter().map(StreamPart::event_name).collect();
    // The parent's 4 (a, sub, other, outer), then sub's (s1, s2), other's (draft), outer's
    // (o1, inner) and inner's (deep) own.
    assert_eq!(names.len(), 4 + 2 + 1 + 2 + 1);
    assert!(names.iter().any(|n| n.starts_with("updates|sub:")));
    assert!(
        names
            .iter()
            .any(|n| n.starts_with("updates|outer:") && n.contains("|inner:"))
    );
}

#[tokio::test]
async fn a_subgraphs_namespace_is_its_checkpoint_ns() {
    let saver = Arc::new(InMemorySaver::new());
    let graph = parent(Some(saver.clone()));
    let config = RunConfig::default().thread_id("t1");
    let parts = parts(&graph, config, modes().with_subgraphs()).await;
    let namespaces: std::collections::BTreeSet<String> = parts
        .iter()
        .map(StreamPart::namespace)
        .filter(|ns| !ns.is_root())
        .map(|ns| ns.to_string())
        .collect();
    assert_eq!(namespaces.len(), 4, "{namespaces:?}");
    for ns in namespaces {
        let stored = agent_core::Checkpointer::list(&*saver, "t1", &ns, &ListFilter::default())
            .await
            .unwrap();
        assert!(!stored.is_empty(), "no checkpoint under `{ns}`");
        assert_eq!(Namespace::parse(&ns).to_string(), ns);
        // Each segment is `node:<task id>`, the id free of `:` and `|` (LangGraph's clients
        // split on them).
        for segment in Namespace::parse(&ns).iter() {
            let (node, id) = segment.split_once(':').unwrap();
            assert!(["sub", "other", "outer", "inner"].contains(&node), "{ns}");
            assert_eq!(id.len(), 36, "a uuid: {ns}");
            assert!(!id.contains(':'), "{ns}");
        }
    }
}

#[tokio::test]
async fn messages_from_a_subgraph_carry_its_namespace() {
    let graph = parent(None);
    for modes in [
        StreamModes::from(StreamMode::Messages),
        StreamModes::from(StreamMode::Messages).with_subgraphs(),
    ] {
        let parts = parts(&graph, RunConfig::default(), modes).await;
        let lines: Vec<String> = parts.iter().map(line).collect();
        assert_eq!(
            lines,
            [
                "()                     messages a",
                "sub:<id>               messages s1",
                "sub:<id>               messages s2",
                "outer:<id>             messages o1",
                "outer:<id>|inner:<id>  messages deep",
            ]
        );
        let StreamPart::Messages { meta, .. } = &parts[4] else {
            panic!("a message");
        };
        assert_eq!(meta.ns.len(), 2);
        assert_eq!(parts[4].event_name(), format!("messages|{}", meta.ns));
    }
}

#[tokio::test]
async fn events_from_inside_subgraphs_carry_their_namespace() {
    let graph = parent(None);
    let starts = |parts: &[StreamPart<P>]| -> Vec<(String, String, usize)> {
        parts
            .iter()
            .filter_map(|part| match part {
                StreamPart::Event(e) if e.event == "on_chain_start" => {
                    Some((e.name.clone(), masked(&e.namespace()), e.parent_ids.len()))
                }
                _ => None,
            })
            .collect()
    };
    let plain = parts(&graph, RunConfig::default(), StreamMode::Events.into()).await;
    let names: Vec<String> = starts(&plain).into_iter().map(|s| s.0).collect();
    assert_eq!(names, ["LangGraph", "a", "sub", "other", "outer"]);

    let with = parts(
        &graph,
        RunConfig::default(),
        StreamModes::from(StreamMode::Events).with_subgraphs(),
    )
    .await;
    let starts = starts(&with);
    let show: Vec<String> = starts
        .iter()
        .map(|(name, ns, parents)| format!("{name} {ns} parents={parents}"))
        .collect();
    assert_eq!(
        show,
        [
            "LangGraph () parents=0",
            "a () parents=1",
            "sub () parents=1",
            "s1 sub:<id> parents=2",
            "s2 sub:<id> parents=2",
            "other () parents=1",
            "draft other:<id> parents=2",
            "outer () parents=1",
            "o1 outer:<id> parents=2",
            "inner outer:<id> parents=2",
            "deep outer:<id>|inner:<id> parents=3",
        ]
    );
    // A subgraph node's parents are the graph's run and its subgraph's task in the parent.
    let run_of = |name: &str| {
        with.iter()
            .find_map(|part| match part {
                StreamPart::Event(e) if e.event == "on_chain_start" && e.name == name => Some(e),
                _ => None,
            })
            .unwrap()
    };
    let (root, sub, s1) = (run_of("LangGraph"), run_of("sub"), run_of("s1"));
    assert_eq!(s1.parent_ids, [root.run_id.clone(), sub.run_id.clone()]);
    assert_eq!(
        s1.metadata["langgraph_checkpoint_ns"],
        s1.metadata["checkpoint_ns"]
    );
    assert!(
        sub.metadata.get("checkpoint_ns").is_none(),
        "root nodes have none"
    );
}

/// A state with a field of each kind of reducer the fold of a batch meets.
#[derive(GraphState, Clone, Default, Debug, PartialEq)]
struct F {
    #[reducer(add)]
    count: i64,
    #[reducer(append)]
    log: Vec<String>,
    last: String,
}

fn writes(
    name: &'static str,
    count: i64,
) -> impl Fn(Arc<F>) -> std::future::Ready<FUpdate> + Clone {
    move |_| {
        std::future::ready(
            FUpdate::default()
                .count(count)
                .log(vec![name.to_owned()])
                .last(name.to_owned()),
        )
    }
}

#[tokio::test]
async fn a_subgraph_nodes_update_is_one_update_of_what_its_subgraph_applied() {
    let sub = StateGraph::<F>::new()
        .add_node("n1", writes("n1", 1))
        .add_node("n2", writes("n2", 2))
        .add_edge(START, "n1")
        .add_edge("n1", "n2")
        .add_edge("n2", END)
        .compile()
        .unwrap();
    let graph = StateGraph::<F>::new()
        .add_node("first", writes("first", 10))
        .add_node("sub", sub)
        .add_edge(START, "first")
        .add_edge("first", "sub")
        .add_edge("sub", END)
        .compile()
        .unwrap();
    let modes = StreamModes::from([StreamMode::Updates, StreamMode::Debug]);
    let mut stream = graph.stream(F::default(), RunConfig::default(), modes);
    let (mut updates, mut results) = (Vec::new(), Vec::new());
    while let Some(part) = stream.next().await {
        match part.unwrap() {
            StreamPart::Updates { node, update } => {
                updates.push((node, serde_json::to_value(update).unwrap()));
            }
            StreamPart::Debug(DebugEvent::TaskResult { node, result, .. }) => {
                results.push((node, result));
            }
            _ => {}
        }
    }
    // What the parent applies, once: counts added, logs appended, the last value last.
    let sub_update = serde_json::json!({ "count": 3, "log": ["n1", "n2"], "last": "n2" });
    assert_eq!(
        updates,
        [
            (
                "first".to_owned(),
                serde_json::json!({ "count": 10, "log": ["first"], "last": "first" })
            ),
            ("sub".to_owned(), sub_update.clone()),
        ]
    );
    // The debug task result shows the same one update.
    assert_eq!(results[1], ("sub".to_owned(), sub_update));
    let out = graph
        .invoke(F::default(), RunConfig::default())
        .await
        .unwrap();
    assert_eq!(out.count, 13);
    assert_eq!(out.log, ["first", "n1", "n2"]);
}

async fn ask(_s: Arc<P>, ctx: NodeContext) -> Result<PUpdate, BoxError> {
    let answer = ctx.interrupt("ship it?")?;
    Ok(PUpdate::default().log(vec![format!("answer {answer}")]))
}

/// `a -> outer (o1 -> inner (ask)) -> END`, checkpointed.
fn asking() -> CompiledGraph<P> {
    let inner = StateGraph::new()
        .add_node("ask", ask)
        .add_edge(START, "ask")
        .add_edge("ask", END)
        .compile()
        .unwrap();
    let outer = StateGraph::new()
        .add_node("o1", step("o1"))
        .add_node("inner", inner)
        .add_edge(START, "o1")
        .add_edge("o1", "inner")
        .add_edge("inner", END)
        .compile()
        .unwrap();
    StateGraph::new()
        .add_node("a", step("a"))
        .add_node("outer", outer)
        .add_edge(START, "a")
        .add_edge("a", "outer")
        .add_edge("outer", END)
        .compile_with(Arc::new(InMemorySaver::new()))
        .unwrap()
}

#[tokio::test]
async fn an_interrupt_inside_a_subgraph_streams_under_its_namespaces() {
    let graph = asking();
    let config = RunConfig::default().thread_id("asking");
    let modes = StreamModes::from(StreamMode::Updates).with_subgraphs();
    let mut stream = graph.stream(input(), config.clone(), modes);
    let mut parts = Vec::new();
    while let Some(part) = stream.next().await {
        parts.push(part.unwrap());
    }
    let output = stream.into_output().await.unwrap();
    let lines: Vec<String> = parts.iter().map(line).collect();
    insta::assert_snapshot!(lines.join("\n"));
    // Each level the interrupt crosses reports it as `{"__interrupt__": [{value, id}]}`; the
    // root's caller reads it from the output.
    let reported: Vec<&serde_json::Value> = parts
        .iter()
        .filter_map(|part| match part {
            StreamPart::Subgraph {
                part: SubgraphPart::Updates { node, update },
                ..
            } if node == INTERRUPT => Some(update),
            _ => None,
        })
        .collect();
    assert_eq!(reported.len(), 2);
    for update in reported {
        assert_eq!(update[0]["value"], "ship it?");
        assert!(update[0]["id"].is_string());
    }
    assert_eq!(output.interrupts.len(), 1);
    assert_eq!(output.interrupts[0].value, "ship it?");

    // Without the flag, the parent's parts only: no interrupt part.
    let graph = asking();
    let plain: Vec<String> = {
        let mut stream = graph.stream(input(), config.clone(), StreamMode::Updates);
        let mut lines = Vec::new();
        while let Some(part) = stream.next().await {
            lines.push(line(&part.unwrap()));
        }
        lines
    };
    assert_eq!(
        plain,
        ["()                     updates  a"],
        "the paused subgraph node has no update yet"
    );

    // Resumed, the subgraphs go on under the same namespaces.
    let resumed = parts_of(
        &graph,
        Command::resume("yes").unwrap(),
        config,
        StreamModes::from(StreamMode::Updates).with_subgraphs(),
    )
    .await;
    let lines: Vec<String> = resumed.iter().map(line).collect();
    assert_eq!(
        lines,
        [
            "outer:<id>|inner:<id>  updates  ask",
            "outer:<id>             updates  inner",
            "()                     updates  outer",
        ]
    );
    let StreamPart::Updates { update, .. } = &resumed[2] else {
        panic!("the parent's update");
    };
    assert_eq!(
        update.log.as_deref(),
        Some(&["o1".to_owned(), "answer \"yes\"".to_owned()][..])
    );
}

async fn parts_of(
    graph: &CompiledGraph<P>,
    input: impl Into<agent_core::Input<P>>,
    config: RunConfig,
    modes: StreamModes,
) -> Vec<StreamPart<P>> {
    let mut stream = graph.stream(input, config, modes);
    let mut parts = Vec::new();
    while let Some(part) = stream.next().await {
        parts.push(part.unwrap());
    }
    parts
}

#[tokio::test]
async fn every_mode_streams_from_subgraphs_under_their_namespace() {
    let graph = parent(Some(Arc::new(InMemorySaver::new())));
    let all = StreamModes::from([
        StreamMode::Values,
        StreamMode::Updates,
        StreamMode::Messages,
        StreamMode::Custom,
        StreamMode::Debug,
    ]);
    let config = RunConfig::default().thread_id("every-mode");
    let parts = parts_of(&graph, input(), config, all.with_subgraphs()).await;
    let mut seen = std::collections::BTreeSet::new();
    for part in &parts {
        let name = part.event_name();
        let (mode, ns) = name.split_once('|').unwrap_or((&name, ""));
        let node = ns.split(':').next().unwrap_or_default();
        seen.insert(format!("{mode} {node}"));
    }
    let seen: Vec<String> = seen.into_iter().collect();
    assert_eq!(
        seen,
        [
            "custom ",
            "custom other",
            "custom outer",
            "custom sub",
            "debug ",
            "debug other",
            "debug outer",
            "debug sub",
            "messages ",
            "messages outer",
            "messages sub",
            "updates ",
            "updates other",
            "updates outer",
            "updates sub",
            "values ",
            "values other",
            "values outer",
            "values sub",
        ]
    );
    // A subgraph's debug parts are its own tasks and checkpoints.
    assert!(parts.iter().any(|part| matches!(
        part,
        StreamPart::Subgraph { part: SubgraphPart::Debug { event: DebugEvent::Task { node, .. } }, ns }
            if node == "s1" && ns[0].starts_with("sub:")
    )));
}
