use agent_core::GraphState;

#[derive(GraphState, Clone, Default)]
struct State<T> {
    value: T,
}

fn main() {}
