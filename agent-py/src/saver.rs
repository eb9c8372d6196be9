//! agent-core's checkpointers as Python objects `compile(checkpointer=...)` takes.
//!
//! The Python classes (`agentgraph.checkpoint.memory`, `.sqlite`, `.postgres`) wrap these;
//! values reach the savers already serialized in LangGraph's format (`value`).

use std::sync::Arc;

use agent_core::{Checkpointer, InMemorySaver, PostgresSaver, SqliteSaver};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use crate::langgraph_saver::LangGraphSaver;
use crate::schema::Schema;

/// A Rust checkpointer.
#[pyclass(frozen, name = "NativeSaver", module = "agentgraph._native")]
pub struct NativeSaver {
    pub(crate) saver: Arc<dyn Checkpointer>,
}

/// What `compile(checkpointer=...)` got, as agent-core's checkpointer: one of ours, or any
/// LangGraph `BaseCheckpointSaver` through the adapter.
/// `joins`: how many sources each of the graph's joins waits for.
pub fn checkpointer(
    saver: Bound<'_, PyAny>,
    schema: &Arc<Schema>,
    joins: Vec<usize>,
) -> Arc<dyn Checkpointer> {
    match saver.cast::<NativeSaver>() {
        Ok(native) => native.get().saver.clone(),
        Err(_) => Arc::new(LangGraphSaver::new(saver.unbind(), schema.clone(), joins)),
    }
}

fn failed(error: agent_core::GraphError) -> PyErr {
    PyRuntimeError::new_err(error.to_string())
}

#[pymethods]
impl NativeSaver {
    /// The in-memory saver.
    #[staticmethod]
    fn memory() -> Self {
        NativeSaver {
            saver: Arc::new(InMemorySaver::new()),
        }
    }

    /// The SQLite saver on a file (created with its tables when missing), or in memory for
    /// `None`.
    #[staticmethod]
    #[pyo3(signature = (path=None))]
    fn sqlite(py: Python<'_>, path: Option<String>) -> PyResult<Self> {
        let saver = py
            .detach(|| match path {
                Some(path) => SqliteSaver::open(path),
                None => SqliteSaver::in_memory(),
            })
            .map_err(failed)?;
        Ok(NativeSaver {
            saver: Arc::new(saver),
        })
    }

    /// The PostgreSQL saver for a connection URL (its tables migrated on connecting).
    #[staticmethod]
    fn postgres(py: Python<'_>, url: String) -> PyResult<Self> {
        let saver = py
            .detach(|| {
                pyo3_async_runtimes::tokio::get_runtime().block_on(PostgresSaver::connect(&url))
            })
            .map_err(failed)?;
        Ok(NativeSaver {
            saver: Arc::new(saver),
        })
    }

    /// Deletes every checkpoint and write of a thread (LangGraph's `delete_thread`).
    fn delete_thread(&self, py: Python<'_>, thread_id: String) -> PyResult<()> {
        let saver = self.saver.clone();
        py.detach(|| {
            pyo3_async_runtimes::tokio::get_runtime().block_on(saver.delete_thread(&thread_id))
        })
        .map_err(failed)
    }
}
