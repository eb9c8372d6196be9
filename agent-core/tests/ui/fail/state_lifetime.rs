use agent_core::GraphState;

#[derive(GraphState, Clone, Default)]
struct State<'a> {
    name: &'a str,
}

fn main() {}
