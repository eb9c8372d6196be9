//! `agentgraph.types.Command` as agent-core's [`Command`]: a run's input (`resume`), or a
//! node's output (`update` and `goto`, node names and `Send`s).
//!
//! A `Command(graph=Command.PARENT)` is for the parent graph, whose schema this graph does not
//! know: its update must be read by the parent's keys (LangGraph writes `update` by name, and
//! may name keys the child does not have). So the Python command itself crosses: it is kept
//! here ([`stash_parent`]) and agent-core carries only a goto that names it; the subgraph's
//! node in the parent ([`crate::subgraph`]) takes it back and reads it with its own schema.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};

use agent_core::{Command, CommandGraph, Goto, Send};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use crate::schema::Schema;
use crate::scope::to_json;
use crate::state::{PyState, PyUpdate};
use crate::value::PyValue;

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
    if !value.getattr("graph")?.is_none() {
        let parent = class.getattr("PARENT")?;
        if !value.getattr("graph")?.eq(parent)? {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "Command(graph=...) takes None or Command.PARENT",
            ));
        }
        return Ok(Some(Command {
            goto: vec![Goto::Node(stash_parent(value))],
            graph: CommandGraph::Parent,
            ..Command::default()
        }));
    }
    let mut command = Command::<PyState>::default();
    let update = value.getattr("update")?;
    if let Ok(dict) = update.cast::<PyDict>() {
        command.update = Some(PyUpdate::from_dict(schema, dict)?);
    } else if update.is_instance_of::<pyo3::types::PyList>()
        || update.is_instance_of::<pyo3::types::PyTuple>()
    {
        // `(key, value)` pairs, a key possibly more than once (LangGraph's list form).
        command.update = Some(PyUpdate::from_pairs(schema, &update)?);
    } else if !update.is_none() {
        return Err(pyo3::exceptions::PyTypeError::new_err(
            "Command(update=...) takes a dict or a list of (key, value) pairs for now",
        ));
    }
    let resume = value.getattr("resume")?;
    if !resume.is_none() {
        command.resume = Some(to_json(&resume)?);
    }
    command.goto = gotos(py, &value.getattr("goto")?)?;
    Ok(Some(command))
}

/// Destinations as agent-core's: a node name, a `Send`, or a list or tuple of those. A
/// `Send`'s argument is the node's own input (`Send::input` of a [`PyValue`]): the node gets
/// it verbatim.
pub fn gotos(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<Vec<Goto<PyState>>> {
    let send = py.import("agentgraph.types")?.getattr("Send")?;
    let one = |item: &Bound<'_, PyAny>| -> PyResult<Goto<PyState>> {
        if item.is_instance(&send)? {
            let node: String = item.getattr("node")?.extract()?;
            let arg = PyValue::new(item.getattr("arg")?);
            Ok(Goto::Send(Send::input(node, arg)))
        } else {
            Ok(Goto::Node(item.extract()?))
        }
    };
    if value.is_instance_of::<PyString>() || value.is_instance(&send)? {
        return Ok(vec![one(value)?]);
    }
    if let Ok(list) = value.cast::<PyList>() {
        return list.iter().map(|item| one(&item)).collect();
    }
    if let Ok(tuple) = value.cast::<PyTuple>() {
        return tuple.iter().map(|item| one(&item)).collect();
    }
    value.try_iter()?.map(|item| one(&item?)).collect()
}

/// The goto that stands for a kept parent command: a name no node can have.
const PARENT_TARGET: &str = "__agentgraph_parent__:";

static PARENT_COMMANDS: LazyLock<Mutex<HashMap<u64, Py<PyAny>>>> = LazyLock::new(Default::default);
static NEXT_PARENT: AtomicU64 = AtomicU64::new(0);

/// Keeps a `Command(graph=Command.PARENT)` and returns the goto that names it.
fn stash_parent(command: &Bound<'_, PyAny>) -> String {
    let id = NEXT_PARENT.fetch_add(1, Ordering::Relaxed);
    if let Ok(mut commands) = PARENT_COMMANDS.lock() {
        commands.insert(id, command.clone().unbind());
    }
    format!("{PARENT_TARGET}{id}")
}

/// The Python command a parent command from a subgraph stands for (taken: once).
pub fn take_parent<'py>(py: Python<'py>, command: &Command<PyState>) -> Option<Bound<'py, PyAny>> {
    let Some(Goto::Node(target)) = command.goto.first() else {
        return None;
    };
    let id: u64 = target.strip_prefix(PARENT_TARGET)?.parse().ok()?;
    let kept = PARENT_COMMANDS.lock().ok()?.remove(&id)?;
    Some(kept.into_bound(py))
}

/// A parent's command, taken back by the graph it addresses: the same command with
/// `graph=None`, read with that graph's schema.
pub fn for_this_graph(
    py: Python<'_>,
    schema: &Arc<Schema>,
    command: &Bound<'_, PyAny>,
) -> PyResult<Command<PyState>> {
    let replace = py.import("dataclasses")?.getattr("replace")?;
    let kwargs = PyDict::new(py);
    kwargs.set_item("graph", py.None())?;
    let own = replace.call((command,), Some(&kwargs))?;
    from_py(py, schema, &own)?
        .ok_or_else(|| pyo3::exceptions::PyTypeError::new_err("a parent command must be a Command"))
}
