//! agent-core's checkpointers as Python objects `compile(checkpointer=...)` takes.
//!
//! The Python classes (`agentgraph.checkpoint.memory`, `.sqlite`, `.postgres`) wrap these;
//! values reach the savers already serialized in LangGraph's format (`value`).

use std::sync::Arc;

use agent_core::{Checkpointer, InMemorySaver, PostgresSaver, SqliteSaver};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use crate::langgraph_saver::LangGraphSaver;
use crate::schema::{FIELDS, Schema};
use crate::value::PyValue;

/// A stored checkpoint as `read` returns it.
type Stored = (
    String,
    Option<String>,
    i64,
    String,
    Vec<(String, String, Py<PyAny>)>,
);

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

    /// A stored checkpoint (the latest when `checkpoint_id` is `None`) for LangGraph's saver
    /// API (`get_tuple`): `(id, parent id, created (ms), metadata as JSON, [(field, version,
    /// value)])`, values decoded as a run loads them; `None` when there is none.
    #[pyo3(signature = (thread_id, ns, checkpoint_id=None))]
    fn read(
        &self,
        py: Python<'_>,
        thread_id: String,
        ns: String,
        checkpoint_id: Option<String>,
    ) -> PyResult<Option<Stored>> {
        let saver = self.saver.clone();
        let loaded = py
            .detach(|| {
                pyo3_async_runtimes::tokio::get_runtime().block_on(saver.get(
                    &thread_id,
                    &ns,
                    checkpoint_id.as_deref(),
                ))
            })
            .map_err(failed)?;
        let Some(record) = &loaded.record else {
            return Ok(None);
        };
        let mut values = Vec::with_capacity(record.versions.len());
        for (field, version) in record.versions.iter() {
            if !FIELDS.iter().any(|f| f.name == field) {
                continue; // agent-core's own entries (a table of shared values)
            }
            let bytes = agent_core::checkpoint::field_value_bytes(field, version, &loaded.blobs)
                .map_err(PyRuntimeError::new_err)?;
            let value: Option<PyValue> = rmp_serde::from_slice(&bytes)
                .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
            if let Some(value) = value {
                values.push((field.to_owned(), version.to_owned(), value.0.clone_ref(py)));
            }
        }
        Ok(Some((
            record.id.to_string(),
            record.parent_id.as_deref().map(str::to_owned),
            record.created_at_ms,
            record.metadata.to_json().to_string(),
            values,
        )))
    }

    /// A thread's checkpoint ids, newest first (LangGraph's `list`), at most `limit`, older
    /// than `before`.
    #[pyo3(signature = (thread_id, ns, before=None, limit=None))]
    fn ids(
        &self,
        py: Python<'_>,
        thread_id: String,
        ns: String,
        before: Option<String>,
        limit: Option<usize>,
    ) -> PyResult<Vec<String>> {
        let saver = self.saver.clone();
        let filter = agent_core::ListFilter {
            before,
            limit,
            ..Default::default()
        };
        let records = py
            .detach(|| {
                pyo3_async_runtimes::tokio::get_runtime()
                    .block_on(saver.list(&thread_id, &ns, &filter))
            })
            .map_err(failed)?;
        Ok(records.into_iter().map(|r| r.id.to_string()).collect())
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
