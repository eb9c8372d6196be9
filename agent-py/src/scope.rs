//! A running node's scope, as Python sees it: what `interrupt()` pauses or resumes.
//!
//! agent-core's [`NodeContext::interrupt`] answers with the resume value or an
//! [`Interrupted`] error the node must return. In Python, `interrupt()` raises
//! `GraphInterrupt` instead; the scope keeps the [`Interrupted`], and the node wrapper returns
//! it to agent-core when that exception comes out of the node.
//!
//! It is also where a node streams Python objects (`emit`, see [`crate::outbox`]): a sync
//! node's thread waits (without the GIL) for room in agent-core's channel; an async node,
//! which runs on the caller's asyncio loop, must not block it, so its items queue and the node
//! wrapper forwards them while the node runs ([`Emitted`]).

use std::sync::{Arc, Mutex};

use agent_core::{Interrupted, NodeContext};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use tokio::sync::mpsc::UnboundedSender;

use crate::outbox::Outbox;

/// An item an async node streamed: `custom` (`false`) or `messages` (`true`), and its ticket.
pub type Emitted = (bool, serde_json::Value);

/// Writes an item to agent-core's stream.
pub async fn forward(ctx: &NodeContext, (message, ticket): Emitted) {
    if message {
        ctx.write_message(ticket).await;
    } else {
        ctx.write_custom(ticket).await;
    }
}

/// The node's context, handed to `agentgraph._runtime` around each call.
#[pyclass(frozen, name = "NodeScope", module = "agentgraph._native")]
pub struct NodeScope {
    /// `None` once the call returned: Python may keep the scope (a traceback's frame holds
    /// it), and the context must not outlive the run (it holds the run's stream open).
    ctx: Mutex<Option<NodeContext>>,
    pending: Mutex<Option<Interrupted>>,
    /// The stream's outbox, when the run is a stream.
    outbox: Option<Arc<Outbox>>,
    /// An async node's queue of streamed items (`None`: a sync node writes through).
    queue: Mutex<Option<UnboundedSender<Emitted>>>,
}

impl NodeScope {
    /// The scope of one node call.
    pub fn new(
        ctx: NodeContext,
        outbox: Option<Arc<Outbox>>,
        queue: Option<UnboundedSender<Emitted>>,
    ) -> Self {
        NodeScope {
            ctx: Mutex::new(Some(ctx)),
            pending: Mutex::new(None),
            outbox,
            queue: Mutex::new(queue),
        }
    }

    /// Ends the scope: drops the node's context (and its queue, which ends its forwarding).
    pub fn close(&self) {
        if let Ok(mut ctx) = self.ctx.lock() {
            *ctx = None;
        }
        self.close_queue();
    }

    /// Drops the queue: the forwarding ends once what is queued is written.
    pub fn close_queue(&self) {
        if let Ok(mut queue) = self.queue.lock() {
            *queue = None;
        }
    }

    /// The node's context, while its call runs.
    pub fn context(&self) -> PyResult<NodeContext> {
        self.ctx
            .lock()
            .ok()
            .and_then(|ctx| ctx.clone())
            .ok_or_else(|| {
                pyo3::exceptions::PyRuntimeError::new_err("this node's call has already returned")
            })
    }

    /// Keeps a pause for the node's wrapper (a subgraph invoked inside the node paused).
    pub fn set_pending(&self, interrupted: Interrupted) {
        if let Ok(mut pending) = self.pending.lock() {
            *pending = Some(interrupted);
        }
    }

    /// The pause `interrupt()` asked for, if the node raised on it.
    pub fn take_pending(&self) -> Option<Interrupted> {
        self.pending.lock().ok()?.take()
    }
}

#[pymethods]
impl NodeScope {
    /// The resume value, or raises `GraphInterrupt` to pause.
    fn interrupt(&self, py: Python<'_>, value: Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        match self.context()?.interrupt(to_json(&value)?) {
            Ok(answer) => Ok(from_json(py, &answer)?.unbind()),
            Err(interrupted) => {
                if let Ok(mut pending) = self.pending.lock() {
                    *pending = Some(interrupted);
                }
                let class = py.import("agentgraph.errors")?.getattr("GraphInterrupt")?;
                Err(PyErr::from_value(class.call0()?))
            }
        }
    }

    /// Takes the task's next journal slot (agent-core's `journal_slot`): `(index, value)`,
    /// the value an earlier attempt recorded there (as JSON) or `None`.
    fn journal_slot(&self, py: Python<'_>) -> PyResult<(usize, Option<Py<PyAny>>)> {
        let (index, kept) = self.context()?.journal_slot();
        let kept = match kept {
            Some(value) => Some(from_json(py, &value)?.unbind()),
            None => None,
        };
        Ok((index, kept))
    }

    /// Records `value` in journal slot `index`: kept if the task pauses, replayed on resume.
    fn record(&self, index: usize, value: Bound<'_, PyAny>) -> PyResult<()> {
        self.context()?.record(index, to_json(&value)?);
        Ok(())
    }

    /// Starts the node's next attempt (a retry): its `interrupt()` calls count from the
    /// first again, so a resumed pause is answered again rather than asked anew.
    fn restart_attempt(&self) -> PyResult<()> {
        self.context()?.restart_attempt();
        Ok(())
    }

    /// The node's name.
    #[getter]
    fn node(&self) -> PyResult<String> {
        Ok(self.context()?.node().to_owned())
    }

    /// The super-step.
    #[getter]
    fn step(&self) -> PyResult<i64> {
        Ok(self.context()?.step())
    }

    /// Whether the task was given a `Send`'s argument rather than the state (a node's input
    /// schema reads only the state: a `Send`'s argument reaches the node as it was sent).
    #[getter]
    fn sent(&self) -> PyResult<bool> {
        Ok(self.context()?.input::<crate::value::PyValue>().is_some())
    }

    /// How many super-steps the run may still take, this one included (LangGraph's
    /// `RemainingSteps`).
    #[getter]
    fn remaining_steps(&self) -> PyResult<usize> {
        Ok(self.context()?.remaining_steps())
    }

    /// The run's id.
    #[getter]
    fn run_id(&self) -> PyResult<String> {
        Ok(self.context()?.run_id().to_owned())
    }

    /// The task's id (see [`task_id`]).
    #[getter]
    fn task_id(&self) -> PyResult<String> {
        let ctx = self.context()?;
        Ok(task_id(ctx.run_id(), ctx.step(), ctx.node()))
    }

    /// The stream modes asked for (empty: not a stream).
    #[getter]
    fn modes(&self) -> Vec<String> {
        self.outbox
            .as_ref()
            .map(|o| o.modes.clone())
            .unwrap_or_default()
    }

    /// The stream's Python state (`agentgraph._stream.StreamState`), or `None`.
    #[getter]
    fn stream_state(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.outbox.as_ref().map(|o| o.state.clone_ref(py))
    }

    /// Streams `item` in the `custom` mode, or in `messages` (a `(chunk, metadata)` tuple).
    #[pyo3(signature = (item, message=false))]
    fn emit(&self, py: Python<'_>, item: Py<PyAny>, message: bool) -> PyResult<()> {
        let Some(outbox) = &self.outbox else {
            return Ok(());
        };
        let ctx = self.context()?;
        let emitted = (message, outbox.put(item));
        if let Ok(queue) = self.queue.lock()
            && let Some(queue) = queue.as_ref()
        {
            // The forwarding ended only if the node returned; nothing to write then.
            let _ = queue.send(emitted);
            return Ok(());
        }
        py.detach(|| futures::executor::block_on(forward(&ctx, emitted)));
        Ok(())
    }

    /// Keeps how the task ended (`{"result": ...}` or `{"error": ...}`), for the `tasks` and
    /// `debug` modes.
    fn task_result(&self, outcome: Py<PyAny>) -> PyResult<()> {
        if let Some(outbox) = &self.outbox {
            let ctx = self.context()?;
            outbox.put_result(ctx.step(), ctx.node().to_owned(), outcome);
        }
        Ok(())
    }

    /// Notes that the task's writes came from the node cache (it has no result to show).
    fn task_cached(&self) -> PyResult<()> {
        if let Some(outbox) = &self.outbox {
            let ctx = self.context()?;
            outbox.put_cached(ctx.step(), ctx.node().to_owned());
        }
        Ok(())
    }

    /// Notes that the task paused (its result shows its interrupts, after the run's).
    fn task_paused(&self) -> PyResult<()> {
        if let Some(outbox) = &self.outbox {
            let ctx = self.context()?;
            outbox.put_paused(ctx.step(), ctx.node().to_owned());
        }
        Ok(())
    }
}

/// A task's id as the `tasks`/`debug` modes and `checkpoint_ns` show it: uuid-shaped, the
/// same for a run's step and node wherever it is asked (its start, its result, the checkpoint
/// that plans it). Not LangGraph's (its ids hash its checkpoint), nor stable across builds.
#[pyfunction]
pub fn task_id(run_id: &str, step: i64, node: &str) -> String {
    use std::hash::{Hash, Hasher};
    let half = |salt: u8| {
        let mut hasher = std::hash::DefaultHasher::new();
        (salt, run_id, step, node).hash(&mut hasher);
        hasher.finish()
    };
    let (high, low) = (half(0), half(1));
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        high >> 32,
        (high >> 16) & 0xffff,
        high & 0xffff,
        low >> 48,
        low & 0xffff_ffff_ffff
    )
}

/// An interrupt or resume value as JSON (agent-core keeps them as `serde_json::Value`): JSON
/// values as they are, any other value (a datetime, a message, a dataclass) as the checkpoint
/// serializer's `(type, bytes)` in a tagged object (`agentgraph.checkpoint.serde._to_json`).
pub fn to_json(value: &Bound<'_, PyAny>) -> PyResult<serde_json::Value> {
    static TO_JSON: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let py = value.py();
    let plain = TO_JSON
        .import(py, "agentgraph.checkpoint.serde", "_to_json")?
        .call1((value,))?;
    let text: String = py
        .import("json")?
        .call_method1("dumps", (plain,))?
        .extract()?;
    serde_json::from_str(&text)
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("not JSON: {e}")))
}

/// JSON as a Python value, `to_json` undone.
pub fn from_json<'py>(py: Python<'py>, value: &serde_json::Value) -> PyResult<Bound<'py, PyAny>> {
    static FROM_JSON: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let plain = py
        .import("json")?
        .call_method1("loads", (value.to_string(),))?;
    FROM_JSON
        .import(py, "agentgraph.checkpoint.serde", "_from_json")?
        .call1((plain,))
}
