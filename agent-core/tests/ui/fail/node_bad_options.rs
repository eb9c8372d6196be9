use agent_core::{GraphState, node};

#[derive(GraphState, Clone, Default)]
struct State {
    name: String,
}

#[node(retries = 3)]
async fn a(_state: &State) {}

#[node(timeout = "3 weeks")]
async fn b(_state: &State) {}

#[node(retry(attempts = 3))]
async fn c(_state: &State) {}

fn main() {}
