use agent_core::node;

#[node]
async fn greet() {}

fn main() {}
