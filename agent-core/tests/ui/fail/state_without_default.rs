use agent_core::GraphState;

#[derive(GraphState, Clone)]
struct State {
    name: String,
}

fn main() {}
