//! A running node's scope, as Python sees it: what `interrupt()` pauses or resumes.
//!
//! agent-core's [`NodeContext::interrupt`] answers with the resume value or an
//! [`Interrupted`] error the node must return. In Python, `interrupt()` raises
//! `GraphInterrupt` instead; the scope keeps the [`Interrupted`], and the node wrapper returns
//! it to agent-core when that exception comes out of the node.

use std::sync::Mutex;

use agent_core::{Interrupted, NodeContext};
use pyo3::prelude::*;

/// The node's context, handed to `agentgraph._runtime` around each call.
#[pyclass(frozen, name = "NodeScope", module = "agentgraph._native")]
pub struct NodeScope {
    /// `None` once the call returned: Python may keep the scope (a traceback's frame holds
    /// it), and the context must not outlive the run (it holds the run's stream open).
    ctx: Mutex<Option<NodeContext>>,
    pending: Mutex<Option<Interrupted>>,
}

impl NodeScope {
    /// The scope of one node call.
    pub fn new(ctx: NodeContext) -> Self {
        NodeScope {
            ctx: Mutex::new(Some(ctx)),
            pending: Mutex::new(None),
        }
    }

    /// Ends the scope: drops the node's context.
    pub fn close(&self) {
        if let Ok(mut ctx) = self.ctx.lock() {
            *ctx = None;
        }
    }

    fn ctx(&self) -> PyResult<NodeContext> {
        self.ctx
            .lock()
            .ok()
            .and_then(|ctx| ctx.clone())
            .ok_or_else(|| {
                pyo3::exceptions::PyRuntimeError::new_err("this node's call has already returned")
            })
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
        match self.ctx()?.interrupt(to_json(&value)?) {
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

    /// Starts the node's next attempt (a retry): its `interrupt()` calls count from the
    /// first again, so a resumed pause is answered again rather than asked anew.
    fn restart_attempt(&self) -> PyResult<()> {
        self.ctx()?.restart_attempt();
        Ok(())
    }

    /// The node's name.
    #[getter]
    fn node(&self) -> PyResult<String> {
        Ok(self.ctx()?.node().to_owned())
    }

    /// The super-step.
    #[getter]
    fn step(&self) -> PyResult<i64> {
        Ok(self.ctx()?.step())
    }
}

/// A Python value as JSON (through `json.dumps`: what interrupts and resumes carry).
pub fn to_json(value: &Bound<'_, PyAny>) -> PyResult<serde_json::Value> {
    let text: String = value
        .py()
        .import("json")?
        .call_method1("dumps", (value,))?
        .extract()?;
    serde_json::from_str(&text)
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("not JSON: {e}")))
}

/// JSON as a Python value.
pub fn from_json<'py>(py: Python<'py>, value: &serde_json::Value) -> PyResult<Bound<'py, PyAny>> {
    py.import("json")?
        .call_method1("loads", (value.to_string(),))
}
