use agent_core::GraphState;

#[derive(GraphState, Clone, Default)]
#[graph_state(updates = "Patch")]
struct State {
    name: String,
}

fn main() {}
