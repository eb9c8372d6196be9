//! agent-core's checkpointers as Python objects `compile(checkpointer=...)` takes.

use std::sync::Arc;

use agent_core::{Checkpointer, InMemorySaver};
use pyo3::prelude::*;

/// A Rust checkpointer (`agentgraph.checkpoint.memory.InMemorySaver` wraps this one).
#[pyclass(frozen, name = "NativeSaver", module = "agentgraph._native")]
pub struct NativeSaver {
    pub(crate) saver: Arc<dyn Checkpointer>,
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
}
