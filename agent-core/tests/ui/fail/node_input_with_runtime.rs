use agent_core::{GraphState, Runtime, node};

#[derive(GraphState, Clone, Default)]
struct State {
    #[reducer(append)]
    done: Vec<u32>,
}

#[derive(Clone, serde::Serialize, serde::Deserialize)]
struct Job {
    id: u32,
}

struct Services;

#[node]
async fn work(job: Job, rt: &Runtime<Services>) -> StateUpdate {
    let _ = rt;
    StateUpdate::default().done(vec![job.id])
}

fn main() {}
