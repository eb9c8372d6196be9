use agent_core::GraphState;

#[derive(GraphState, Clone, Default)]
struct State {
    #[reducer(merge)]
    messages: Vec<String>,
}

fn main() {}
