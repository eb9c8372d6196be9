use agent_core::{GraphState, node};

#[derive(GraphState, Clone, Default)]
struct State {
    name: String,
}

#[node]
fn greet(state: &State) -> StateUpdate {
    StateUpdate::default().name(state.name.clone())
}

fn main() {}
