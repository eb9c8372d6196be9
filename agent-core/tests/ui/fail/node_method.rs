use agent_core::{GraphState, node};

#[derive(GraphState, Clone, Default)]
struct State {
    name: String,
}

struct Greeter;

impl Greeter {
    #[node]
    async fn greet(&self, state: &State) {}
}

fn main() {}
