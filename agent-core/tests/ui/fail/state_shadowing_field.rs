use agent_core::GraphState;

#[derive(GraphState, Clone, Default)]
struct State {
    default: String,
    clone: u32,
}

fn main() {}
