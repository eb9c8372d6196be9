use agent_core::{node, GraphState, Runtime};

#[derive(GraphState, Clone, Default, Debug)]
struct Chat {
    reply: String,
}

#[node]
async fn answer(_state: &Chat, _rt: &Runtime) -> ChatUpdate {
    ChatUpdate::default()
}

fn main() {}
