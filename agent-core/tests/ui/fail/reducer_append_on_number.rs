use agent_core::{node, GraphState, RunConfig, StateGraph, END, START};

#[derive(GraphState, Clone, Default)]
struct State {
    #[reducer(append)]
    count: u32,
}

#[node]
async fn bump(state: &State) -> StateUpdate {
    StateUpdate::default().count(state.count + 1)
}

async fn run() {
    let graph = StateGraph::new()
        .add_named(bump)
        .add_edge(START, "bump")
        .add_edge("bump", END)
        .compile()
        .unwrap();
    let _ = graph.invoke(State::default(), RunConfig::default()).await;
}

fn main() {
    let _ = run();
}
