use agent_core::{GraphState, node};

#[derive(GraphState, Clone, Default)]
struct State {
    #[reducer(append)]
    done: Vec<u32>,
}

/// What a `Send::input` carries to `work`: it must be storable in a checkpoint.
#[derive(Clone)]
struct Job {
    id: u32,
}

#[node]
async fn work(job: Job) -> StateUpdate {
    StateUpdate::default().done(vec![job.id])
}

fn main() {}
