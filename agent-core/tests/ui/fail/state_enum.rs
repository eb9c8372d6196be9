use agent_core::GraphState;

#[derive(GraphState, Clone)]
enum State {
    Idle,
    Busy,
}

fn main() {}
