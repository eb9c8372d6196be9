//! What a node knows about its run: name, step, remaining steps, config.
//!
//! A node gets a [`NodeContext`] next to the state snapshot. It is cheap to clone (one `Arc`),
//! and it is the door to run-scoped services (stream writer, interrupts) as they land.

use std::sync::Arc;

use crate::config::RunConfig;

/// The context of one task: which node, which step, how many steps remain, the run's config.
#[derive(Debug, Clone)]
pub struct NodeContext {
    inner: Arc<TaskInfo>,
}

#[derive(Debug)]
struct TaskInfo {
    node: Arc<str>,
    step: i64,
    remaining_steps: usize,
    run: Arc<RunInfo>,
}

/// Run-wide facts shared by every task of a run.
#[derive(Debug)]
pub(crate) struct RunInfo {
    pub(crate) run_id: Arc<str>,
    pub(crate) config: RunConfig,
}

impl NodeContext {
    pub(crate) fn new(
        node: Arc<str>,
        step: i64,
        remaining_steps: usize,
        run: Arc<RunInfo>,
    ) -> Self {
        NodeContext {
            inner: Arc::new(TaskInfo {
                node,
                step,
                remaining_steps,
                run,
            }),
        }
    }

    /// A context outside any run, for calling a node directly (unit tests of nodes).
    pub fn detached(node: &str) -> Self {
        NodeContext::new(
            node.into(),
            0,
            crate::config::DEFAULT_RECURSION_LIMIT,
            Arc::new(RunInfo {
                run_id: "detached".into(),
                config: RunConfig::default(),
            }),
        )
    }

    /// The node's name in the graph.
    pub fn node(&self) -> &str {
        &self.inner.node
    }

    /// The super-step this task runs in (0 is the first step after the input).
    pub fn step(&self) -> i64 {
        self.inner.step
    }

    /// How many super-steps the run may still take, this one included (LangGraph's
    /// `RemainingSteps`): a node that sees 1 runs in the last step the limit allows.
    pub fn remaining_steps(&self) -> usize {
        self.inner.remaining_steps
    }

    /// The run's id.
    pub fn run_id(&self) -> &str {
        &self.inner.run.run_id
    }

    /// The run's configuration (tags, metadata, thread id...).
    pub fn config(&self) -> &RunConfig {
        &self.inner.run.config
    }
}
