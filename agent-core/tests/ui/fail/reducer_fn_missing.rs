use agent_core::GraphState;

#[derive(GraphState, Clone, Default)]
struct State {
    #[reducer(keep_the_biggest)]
    score: u32,
}

fn main() {}
