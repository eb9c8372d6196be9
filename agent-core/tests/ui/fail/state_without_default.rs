use agent_core::{node, GraphState, RunConfig, StateGraph, END, START};

#[derive(GraphState, Clone)]
struct State {
    name: String,
}

#[node]
async fn greet(state: &State) -> StateUpdate {
    StateUpdate::default().name(format!("hello {}", state.name))
}

#[node]
async fn shout(state: &State) -> StateUpdate {
    StateUpdate::default().name(state.name.to_uppercase())
}

async fn run() {
    let graph = StateGraph::new()
        .add_named(greet)
        .add_named(shout)
        .add_edge(START, "greet")
        .add_edge("greet", "shout")
        .add_edge("shout", END)
        .compile()
        .unwrap();
    let _ = graph.invoke(StateUpdate::default().name("x"), RunConfig::default()).await;
}

fn main() {
    let _ = run();
}
