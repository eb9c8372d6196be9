use agent_core::GraphState;

#[derive(GraphState, Clone, Default)]
struct State;

fn main() {}
