//! agent-core's errors as the Python exceptions LangGraph raises.
//!
//! A node's (or reducer's) Python exception comes back as itself, same type and traceback.
//! The run's own errors become `agentgraph.errors` classes named as LangGraph's
//! (`GraphRecursionError`, `InvalidUpdateError`), with keys' names in place of slots.

use agent_core::GraphError;
use pyo3::prelude::*;

use crate::runs;
use crate::schema::Schema;

/// `agentgraph.errors.<name>(message)`.
pub(crate) fn error_class(py: Python<'_>, name: &str, message: String) -> PyErr {
    match py
        .import("agentgraph.errors")
        .and_then(|module| module.getattr(name))
    {
        Ok(class) => PyErr::from_type(
            class
                .cast_into()
                .unwrap_or_else(|_| py.get_type::<pyo3::exceptions::PyRuntimeError>()),
            message,
        ),
        Err(error) => error,
    }
}

/// The first Python exception in an error's source chain.
fn python_cause(py: Python<'_>, error: &(dyn std::error::Error + 'static)) -> Option<PyErr> {
    let mut current = Some(error);
    while let Some(error) = current {
        if let Some(py_err) = error.downcast_ref::<PyErr>() {
            return Some(py_err.clone_ref(py));
        }
        current = error.source();
    }
    None
}

/// The Python exception for a failed run.
pub fn to_py_err(py: Python<'_>, error: GraphError, schema: &Schema) -> PyErr {
    match &error {
        GraphError::RouteNotInPathMap { key: target, .. }
        | GraphError::UnknownTarget { target, .. } => {
            if let Some(err) = runs::take_error(target) {
                return err;
            }
        }
        GraphError::ParentCommand(parent) => {
            // A root graph's node addressed a parent it does not have: LangGraph's
            // `ParentCommand` reaches the caller, with the command.
            if let Some(command) = parent
                .command::<crate::state::PyState>()
                .and_then(|command| crate::command::take_parent(py, command))
            {
                return match py
                    .import("agentgraph.errors")
                    .and_then(|m| m.getattr("ParentCommand"))
                    .and_then(|class| class.call1((command,)))
                {
                    Ok(error) => PyErr::from_value(error),
                    Err(error) => error,
                };
            }
        }
        GraphError::RecursionLimit { limit, .. } => {
            return error_class(
                py,
                "GraphRecursionError",
                format!(
                    "Recursion limit of {limit} reached without hitting a stop condition. You can increase the limit by setting the `recursion_limit` config key."
                ),
            );
        }
        GraphError::InvalidUpdate { field, .. } => {
            let key = schema.key_of_field(field).unwrap_or(field);
            return error_class(
                py,
                "InvalidUpdateError",
                format!(
                    "At key '{key}': Can receive only one value per step. Use an Annotated key to handle multiple values."
                ),
            );
        }
        _ => {}
    }
    if let Some(err) = python_cause(py, &error) {
        return err;
    }
    match error {
        GraphError::Cancelled => pyo3::exceptions::PyRuntimeError::new_err("the run was cancelled"),
        other if is_build_error(&other) => {
            pyo3::exceptions::PyValueError::new_err(other.to_string())
        }
        other => pyo3::exceptions::PyRuntimeError::new_err(other.to_string()),
    }
}

/// Whether `compile()` raised it (LangGraph raises `ValueError` for an invalid graph).
fn is_build_error(error: &GraphError) -> bool {
    matches!(
        error,
        GraphError::DuplicateNode(_)
            | GraphError::ReservedName(_)
            | GraphError::UnknownNode { .. }
            | GraphError::NoEntryPoint
            | GraphError::Empty
            | GraphError::Unreachable(_)
            | GraphError::DeadEnd(_)
            | GraphError::InvalidEdge(_)
    )
}
