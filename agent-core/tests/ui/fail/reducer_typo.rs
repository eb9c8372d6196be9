use agent_core::GraphState;

#[derive(GraphState, Clone, Default)]
struct State {
    #[reducer(apend)]
    messages: Vec<String>,
}

fn main() {}
