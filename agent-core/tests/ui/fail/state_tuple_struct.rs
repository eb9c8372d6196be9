use agent_core::GraphState;

#[derive(GraphState, Clone, Default)]
struct State(Vec<String>, u32);

fn main() {}
