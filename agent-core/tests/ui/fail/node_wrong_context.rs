use agent_core::{node, GraphState, Runtime, StateGraph, START, END};

#[derive(GraphState, Clone, Default, Debug)]
struct Chat {
    reply: String,
}

struct Models;
struct Settings;

#[node]
async fn answer(_state: &Chat, _rt: &Runtime<Settings>) -> ChatUpdate {
    ChatUpdate::default()
}

fn main() {
    let _ = StateGraph::<Chat, Models>::with_context_type()
        .add_named(answer)
        .add_edge(START, "answer")
        .add_edge("answer", END)
        .compile();
}
