use agent_core::{node, GraphState, RunConfig, StateGraph, END, START};

#[derive(GraphState, Clone, Default)]
struct State {
    #[reducer(apend)]
    messages: Vec<String>,
}

#[node]
async fn greet(state: &State) -> StateUpdate {
    StateUpdate::default().messages(vec![format!("hello #{}", state.messages.len())])
}

async fn run() {
    let graph = StateGraph::new()
        .add_named(greet)
        .add_edge(START, "greet")
        .add_edge("greet", END)
        .compile()
        .unwrap();
    let _ = graph.invoke(StateUpdate::default(), RunConfig::default()).await;
}

fn main() {
    let _ = run();
}
