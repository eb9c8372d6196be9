use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use agent_core::{GraphState, NodeContext, RunConfig, StateGraph, END, START, node};
use serde::Serialize;
use serde::de::DeserializeOwned;

#[derive(GraphState, Clone, Default, Debug)]
#[graph_state(update = Patch, derive(Debug, PartialEq))]
pub struct Generic<T>
where
    T: Clone + Default + Send + Sync + Serialize + DeserializeOwned + 'static,
{
    pub value: T,
    #[reducer(append)]
    pub log: Vec<T>,
    #[reducer(merge)]
    pub seen: HashSet<String>,
    #[reducer(merge)]
    pub meta: BTreeMap<String, serde_json::Value>,
    #[reducer(add)]
    pub cost: f64,
    #[reducer(self::longest)]
    pub word: String,
}

fn longest(current: &mut String, update: String) {
    if update.len() > current.len() {
        *current = update;
    }
}

#[derive(GraphState, Clone, Default)]
struct Plain {
    n: u32,
}

/// A node named like a field of its state (the derive never reads a field name as a pattern).
#[derive(GraphState, Clone, Default)]
struct Counter {
    count: u32,
}

#[node]
async fn count(state: &Counter) -> CounterUpdate {
    CounterUpdate::default().count(state.count + 1)
}

#[node(name = "bump", retry, timeout = "1s", destinations("bump", "__end__"))]
async fn bump_it(state: &Plain, ctx: &NodeContext) -> Result<PlainUpdate, std::io::Error> {
    let _ = ctx.step();
    Ok(PlainUpdate::default().n(state.n + 1))
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let patch: Patch<u8> = Patch::default().value(1).log(vec![2, 3]).cost(0.5);
    assert_eq!(patch.clone(), patch);
    let mut g = Generic::<u8>::default();
    agent_core::GraphState::apply(&mut g, patch).unwrap();
    assert_eq!(g.log, vec![2, 3]);

    let graph = StateGraph::new()
        .add_named(bump_it)
        .add_node("check", |s: Arc<Plain>| async move { let _ = s.n; })
        .add_edge(START, bump_it::NAME)
        .add_edge("bump", "check")
        .add_edge("check", END)
        .compile()
        .unwrap();
    let out = graph.invoke(Plain::default(), RunConfig::default()).await.unwrap();
    assert_eq!(out.n, 1);

    let counter = StateGraph::new()
        .add_named(count)
        .add_edge(START, "count")
        .add_edge("count", END)
        .compile()
        .unwrap();
    let out = counter.invoke(CounterUpdate::default().count(41), RunConfig::default()).await.unwrap();
    assert_eq!(out.count, 42);
}
