//! What a node knows about its run: name, step, remaining steps, config, and the door to
//! run-scoped services (interrupts now; the stream writer as it lands).
//!
//! A node gets a [`NodeContext`] next to the state snapshot. It is cheap to clone (one `Arc`).

use std::sync::{Arc, Mutex};

use crate::config::RunConfig;
use crate::interrupt::{InterruptSlots, Interrupted};

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
    interrupts: Mutex<InterruptSlots>,
}

/// Run-wide facts shared by every task of a run.
#[derive(Debug)]
pub(crate) struct RunInfo {
    pub(crate) run_id: Arc<str>,
    pub(crate) config: RunConfig,
    /// Whether a checkpointer will persist a pause (interrupts need one).
    pub(crate) can_pause: bool,
}

impl NodeContext {
    pub(crate) fn new(
        node: Arc<str>,
        step: i64,
        remaining_steps: usize,
        run: Arc<RunInfo>,
        resume: Vec<serde_json::Value>,
    ) -> Self {
        NodeContext {
            inner: Arc::new(TaskInfo {
                node,
                step,
                remaining_steps,
                run,
                interrupts: Mutex::new(InterruptSlots { resume, next: 0 }),
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
                can_pause: false,
            }),
            Vec::new(),
        )
    }

    /// The node's name in the graph.
    pub fn node(&self) -> &str {
        &self.inner.node
    }

    /// The super-step this task runs in (LangGraph's `langgraph_step`: the first node of a
    /// thread runs in step 1).
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

    /// Pauses the run for human input. Returns the resume value when the run was resumed
    /// with one for this call (matched in call order within the node); otherwise returns
    /// [`Interrupted`], which the node must return so the run pauses.
    ///
    /// ```no_run
    /// # use agent_core::{BoxError, NodeContext};
    /// # async fn node(ctx: &NodeContext) -> Result<(), BoxError> {
    /// let answer = ctx.interrupt(serde_json::json!({"question": "ship it?"}))?;
    /// if answer == "yes" { /* ... */ }
    /// # Ok(()) }
    /// ```
    pub fn interrupt(
        &self,
        value: impl serde::Serialize,
    ) -> Result<serde_json::Value, Interrupted> {
        let value = serde_json::to_value(value).unwrap_or(serde_json::Value::Null);
        let mut slots = self
            .inner
            .interrupts
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let index = slots.next;
        slots.next += 1;
        match slots.resume.get(index) {
            Some(answer) => Ok(answer.clone()),
            None => Err(Interrupted { index, value }),
        }
    }

    /// Like [`NodeContext::interrupt`], with the resume value deserialized into `T`.
    pub fn interrupt_as<T: serde::de::DeserializeOwned>(
        &self,
        value: impl serde::Serialize,
    ) -> Result<T, crate::BoxError> {
        let answer = self.interrupt(value)?;
        Ok(serde_json::from_value(answer)?)
    }

    /// Starts a new attempt (retries call the node again from the top).
    pub(crate) fn restart_attempt(&self) {
        let mut slots = self
            .inner
            .interrupts
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        slots.next = 0;
    }
}
