//! A compiled graph as a node: it runs on the parent's snapshot and its writes land once.

use std::sync::Arc;

use agent_core::{
    END, GraphState, NodeContext, RunConfig, START, Send, StateGraph, StreamMode, StreamPart,
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
            seen.push(format!("{} {:?}", value.as_str().unwrap(), meta.ns));
        }
    }
    assert_eq!(seen, ["prep []", r#"edit ["sub"]"#, r#"check ["sub"]"#]);
}
