//! LangGraph's benchmark shapes as a library: each shape as an agentgraph graph
//! ([`graphs`]) and as a hand-written tokio program doing the same work ([`floor`]), and the
//! report that turns the bench's JSON lines into ratio tables ([`report`]); and the server
//! bench's load generator ([`load`]) and tables ([`server_report`]), which `src/bin/server_bench.rs`
//! (`cargo xtask bench server`) runs against our server and langgraph-api, and its reads at
//! scale ([`scale`], `--scale`); and the store
//! bench's tables ([`store_report`]) for `src/bin/store_bench.rs` (`cargo xtask bench store`).
//!
//! `benches/shapes.rs` is the program `cargo xtask bench` runs (release build, one child
//! process per shape x saver x durability). Nothing here asserts on time; the unit tests only
//! check that a graph and its floor end in the same state.

pub mod floor;
pub mod graphs;
pub mod load;
pub mod pg;
pub mod report;
pub mod savers;
pub mod scale;
pub mod server_report;
pub mod store_report;

use agent_core::{BoxError, BoxFuture, RunConfig};
use serde_json::Value;

/// What one run of a shape did.
pub struct Outcome {
    /// Super-steps, subgraphs' included.
    pub steps: usize,
    /// Tasks (node runs), subgraphs' included.
    pub tasks: usize,
    /// A digest of the final state, compared with LangGraph's.
    pub check: Value,
}

/// A prepared run: called before the clock starts (it clones the input), it returns the run.
pub type Runner = Box<
    dyn Fn() -> Box<dyn FnOnce(RunConfig) -> BoxFuture<Result<Outcome, BoxError>> + Send>
        + Send
        + Sync,
>;

/// A benchmark shape and its size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// A chain of n no-op nodes.
    Sequential(usize),
    /// One router, n `Send`s.
    SendFanout(usize),
    /// n tool calls, then an answer.
    ReactAgent(usize),
    /// The wide state looping until messages exceed `n`; input `outer` x `inner`.
    WideState {
        /// Loop bound and length of the random strings.
        n: usize,
        /// Keys of the input message.
        outer: usize,
        /// Keys of each inner dict.
        inner: usize,
    },
    /// n subgraph runs.
    FanoutToSubgraph(usize),
}

/// Every shape, in the order tables list them.
pub const SHAPES: &[(&str, Shape)] = &[
    ("sequential_10", Shape::Sequential(10)),
    ("sequential_1000", Shape::Sequential(1000)),
    ("send_fanout_100", Shape::SendFanout(100)),
    ("send_fanout_1000", Shape::SendFanout(1000)),
    ("react_agent_10x", Shape::ReactAgent(10)),
    ("react_agent_100x", Shape::ReactAgent(100)),
    (
        "wide_state_25x300",
        Shape::WideState {
            n: 300,
            outer: 5,
            inner: 5,
        },
    ),
    (
        "wide_state_15x600",
        Shape::WideState {
            n: 600,
            outer: 3,
            inner: 5,
        },
    ),
    (
        "wide_state_9x1200",
        Shape::WideState {
            n: 1200,
            outer: 3,
            inner: 3,
        },
    ),
    ("fanout_to_subgraph_10x", Shape::FanoutToSubgraph(10)),
    ("fanout_to_subgraph_100x", Shape::FanoutToSubgraph(100)),
];

/// Savers, plus `floor` (the hand-written program).
pub const SAVERS: &[&str] = &["none", "memory", "sqlite", "postgres", "floor"];

/// Durabilities a saver runs in: every step, awaited (the default); every step, stored while
/// the next runs (LangGraph's default); once when the run ends.
pub const DURABILITIES: &[&str] = &["sync", "async", "exit"];

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use agent_core::{Checkpointer, InMemorySaver, RunConfig};

    use super::*;

    /// Small sizes of every shape kind.
    const SMALL: &[Shape] = &[
        Shape::Sequential(10),
        Shape::SendFanout(10),
        Shape::ReactAgent(3),
        Shape::WideState {
            n: 20,
            outer: 2,
            inner: 2,
        },
        Shape::FanoutToSubgraph(3),
    ];

    async fn run(runner: &Runner, config: RunConfig) -> Outcome {
        let run = runner();
        run(config).await.unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_graph_ends_where_its_hand_written_floor_does() {
        for &shape in SMALL {
            let floor = run(&floor::build(shape).unwrap(), RunConfig::default()).await;
            let graph = run(&graphs::build(shape, None).unwrap(), RunConfig::default()).await;
            assert_eq!(graph.check, floor.check, "{shape:?}");
            assert_eq!(graph.steps, floor.steps, "{shape:?}: super-steps");
            assert_eq!(graph.tasks, floor.tasks, "{shape:?}: tasks");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_saver_changes_nothing_but_where_the_state_goes() {
        for &shape in SMALL {
            let saver: Arc<dyn Checkpointer> = Arc::new(InMemorySaver::new());
            let bare = run(&graphs::build(shape, None).unwrap(), RunConfig::default()).await;
            let runner = graphs::build(shape, Some(saver.clone())).unwrap();
            let saved = run(&runner, RunConfig::default().thread_id("t")).await;
            assert_eq!(saved.check, bare.check, "{shape:?}");
            assert_eq!(saved.steps, bare.steps, "{shape:?}: super-steps");
            let records = saver
                .list("t", "", &agent_core::ListFilter::default())
                .await
                .unwrap();
            assert!(!records.is_empty(), "{shape:?}: no checkpoint written");
        }
    }
}
