use agent_core::{GraphState, node};

#[derive(GraphState, Clone, Default)]
struct State {
    name: String,
}

#[node]
async fn greet(state: &mut State) {
    state.name.push('!');
}

fn main() {}
