//! A run's keyword options beside its config: LangGraph's `invoke(..., interrupt_before=,
//! interrupt_after=, durability=)`, read into agent-core's `RunConfig`.

use agent_core::{Durability, RunConfig};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// `run` with the options the Python side gathered (`None` values left out; `"*"` already
/// expanded to every node; `checkpoint_during` already turned into a durability).
pub fn apply(mut run: RunConfig, options: Option<&Bound<'_, PyDict>>) -> PyResult<RunConfig> {
    let Some(options) = options else {
        return Ok(run);
    };
    if let Some(nodes) = options.get_item("interrupt_before")? {
        run = run.interrupt_before(nodes.extract::<Vec<String>>()?);
    }
    if let Some(nodes) = options.get_item("interrupt_after")? {
        run = run.interrupt_after(nodes.extract::<Vec<String>>()?);
    }
    if let Some(durability) = options.get_item("durability")? {
        run = run.durability(durability_of(&durability.extract::<String>()?)?);
    }
    Ok(run)
}

/// LangGraph's `Durability` literal as agent-core's.
fn durability_of(name: &str) -> PyResult<Durability> {
    match name {
        "sync" => Ok(Durability::Sync),
        "async" => Ok(Durability::Async),
        "exit" => Ok(Durability::Exit),
        other => Err(PyValueError::new_err(format!(
            "durability must be 'sync', 'async' or 'exit', got {other:?}"
        ))),
    }
}
