//! `agentgraph.types.Command` as agent-core's [`Command`]: a run's input (`resume`), or a
//! node's output (`update` and `goto`).

use std::sync::Arc;

use agent_core::{Command, Goto};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::schema::Schema;
use crate::scope::to_json;
use crate::state::{PyState, PyUpdate};

/// The command `value` is, or `None` if it is not a `Command`.
pub fn from_py(
    py: Python<'_>,
    schema: &Arc<Schema>,
    value: &Bound<'_, PyAny>,
) -> PyResult<Option<Command<PyState>>> {
    let class = py.import("agentgraph.types")?.getattr("Command")?;
    if !value.is_instance(&class)? {
        return Ok(None);
    }
    let mut command = Command::<PyState>::default();
    let update = value.getattr("update")?;
    if !update.is_none() {
        let dict = update.cast::<PyDict>().map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err("Command(update=...) takes a dict for now")
        })?;
        command.update = Some(PyUpdate::from_dict(schema, dict)?);
    }
    let resume = value.getattr("resume")?;
    if !resume.is_none() {
        command.resume = Some(to_json(&resume)?);
    }
    let goto = value.getattr("goto")?;
    let names: Vec<String> = if goto.is_instance_of::<PyString>() {
        vec![goto.extract()?]
    } else {
        goto.extract()?
    };
    command.goto = names.into_iter().map(Goto::Node).collect();
    if !value.getattr("graph")?.is_none() {
        return Err(pyo3::exceptions::PyNotImplementedError::new_err(
            "Command(graph=Command.PARENT) needs subgraphs, which agentgraph does not run yet",
        ));
    }
    Ok(Some(command))
}
