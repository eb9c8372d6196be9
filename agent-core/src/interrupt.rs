//! Human in the loop: `interrupt()` from inside a node, and what a paused run reports.
//!
//! A node calls [`NodeContext::interrupt`](crate::NodeContext::interrupt) with a value for the
//! human (a question, a draft to approve). The first time, the call fails with [`Interrupted`];
//! the node returns it (`?`), the run pauses and persists, and the caller gets the value in
//! [`RunOutput::interrupts`](crate::RunOutput). Resuming with `Command::resume(answer)` runs the
//! node again from the top; this time `interrupt` returns the answer. Several interrupts in one
//! node are matched to resume values in call order.

use serde::{Deserialize, Serialize};

/// A pause requested by a node, as the caller sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interrupt {
    /// Stable id: the task id plus the interrupt's index in the node.
    pub id: String,
    /// The node that paused.
    pub node: String,
    /// What the node passed to `interrupt`.
    pub value: serde_json::Value,
}

/// The error `interrupt` returns to pause the run; return it from the node (`?` works when
/// the node's error type is `BoxError`, `anyhow::Error` or has a `From<Interrupted>`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("node paused for human input (interrupt {index}); resume the run with Command::resume")]
pub struct Interrupted {
    pub(crate) index: usize,
    pub(crate) value: serde_json::Value,
    /// The task's journal when it paused (see [`NodeContext::record`](crate::NodeContext::record)),
    /// set by the executor; kept with the pause so the re-run replays it.
    pub(crate) journal: Vec<serde_json::Value>,
}

impl Interrupted {
    /// The value passed to `interrupt`.
    pub fn value(&self) -> &serde_json::Value {
        &self.value
    }
}

/// Per-task interrupt bookkeeping: resume values received so far and the next call's index.
#[derive(Debug, Default)]
pub(crate) struct InterruptSlots {
    pub(crate) resume: Vec<serde_json::Value>,
    pub(crate) next: usize,
    /// Whether the node used its journal (then a pause keeps `resume`).
    pub(crate) recorded: bool,
}
