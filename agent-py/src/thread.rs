//! The thread API over a checkpointer: `get_state`, `get_state_history`, `update_state`
//! (LangGraph's names; its `as_node="__copy__"` is `copy_checkpoint`), as agent-core's
//! `state_api` serves them.
//!
//! Snapshots cross to Python as plain tuples; `agentgraph.graph.state` makes LangGraph's
//! `StateSnapshot` and `PregelTask` of them, so the Python types stay where LangGraph has them.

use agent_core::{Goto, ListFilter, RunConfig, StateSnapshot};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::errors::to_py_err;
use crate::graph::{NativeGraph, interrupts_list};
use crate::scope::{from_json, to_json};
use crate::state::{PyState, PyUpdate};
use crate::subgraph_state::state_config;

/// `{"thread_id", "checkpoint_ns", "checkpoint_id"}` of a checkpoint's config.
fn configurable<'py>(py: Python<'py>, config: &RunConfig) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item("thread_id", config.thread_id.as_deref())?;
    dict.set_item("checkpoint_ns", &config.checkpoint_ns)?;
    dict.set_item("checkpoint_id", config.checkpoint_id.as_deref())?;
    Ok(dict)
}

/// A snapshot as `(values, next, configurable, metadata, created_at_ms, parent_configurable,
/// interrupts, tasks, writers)`, each task `(id, name, error, interrupts)`; `writers` are
/// the nodes that wrote the checkpoint's step (`update_state` infers `as_node` from them).
pub fn snapshot_tuple<'py>(
    py: Python<'py>,
    graph: &NativeGraph,
    snapshot: &StateSnapshot<PyState>,
) -> PyResult<Bound<'py, PyTuple>> {
    let parent = match &snapshot.parent_config {
        Some(parent) => configurable(py, parent)?.into_any(),
        None => py.None().into_bound(py),
    };
    let mut tasks = Vec::with_capacity(snapshot.tasks.len());
    for task in &snapshot.tasks {
        tasks.push(PyTuple::new(
            py,
            [
                task.id.as_str().into_pyobject(py)?.into_any(),
                task.node.as_str().into_pyobject(py)?.into_any(),
                task.error.as_deref().into_pyobject(py)?.into_any(),
                PyTuple::new(py, interrupts_list(py, &task.interrupts)?)?.into_any(),
            ],
        )?);
    }
    PyTuple::new(
        py,
        [
            snapshot.values.to_dict(py, &graph.schema)?.into_any(),
            PyTuple::new(py, crate::graph::next_tasks(snapshot))?.into_any(),
            configurable(py, &snapshot.config)?.into_any(),
            from_json(py, &snapshot.metadata)?,
            snapshot.created_at_ms.into_pyobject(py)?.into_any(),
            parent,
            PyTuple::new(py, interrupts_list(py, &snapshot.interrupts)?)?.into_any(),
            PyTuple::new(py, tasks)?.into_any(),
            PyTuple::new(py, &snapshot.writers)?.into_any(),
        ],
    )
}

/// The thread's checkpoints, newest first, as snapshot tuples; `filter` matches metadata
/// entries, `before` is a checkpoint config, `limit` counts.
#[pyfunction]
#[pyo3(signature = (graph, config, filter=None, before=None, limit=None, lender=None))]
pub fn get_state_history(
    py: Python<'_>,
    graph: PyRef<'_, NativeGraph>,
    config: Bound<'_, PyDict>,
    filter: Option<Bound<'_, PyDict>>,
    before: Option<Bound<'_, PyDict>>,
    limit: Option<usize>,
    lender: Option<PyRef<'_, NativeGraph>>,
) -> PyResult<Vec<Py<PyTuple>>> {
    // A subgraph's namespace, through the saver its root lends (`crate::subgraph_state`).
    let run = state_config(&config, lender.as_deref())?;
    let mut list = ListFilter {
        limit,
        ..ListFilter::default()
    };
    if let Some(filter) = filter {
        for (key, value) in filter.iter() {
            list.metadata.insert(key.extract()?, to_json(&value)?);
        }
    }
    let before_id = match before {
        Some(before) => checkpoint_id_of(&before)?,
        None => None,
    };
    list.before = before_id;
    let compiled = graph.graph.clone();
    let snapshots = py
        .detach(move || {
            pyo3_async_runtimes::tokio::get_runtime().block_on(async move {
                // A config naming a checkpoint lists that one alone (as LangGraph's savers do).
                if run.checkpoint_id.is_none() {
                    return compiled.get_state_history(&run, &list).await;
                }
                let at = compiled.get_state(&run).await?;
                Ok(at
                    .filter(|s| list.limit != Some(0) && list.matches_metadata(&s.meta()))
                    .into_iter()
                    .collect())
            })
        })
        .map_err(|error| to_py_err(py, error, &graph.schema))?;
    snapshots
        .iter()
        .map(|s| Ok(snapshot_tuple(py, &graph, s)?.unbind()))
        .collect()
}

/// `config["configurable"]["checkpoint_id"]`, if any.
fn checkpoint_id_of(config: &Bound<'_, PyDict>) -> PyResult<Option<String>> {
    let Some(configurable) = config.get_item("configurable")? else {
        return Ok(None);
    };
    let configurable = configurable.cast::<PyDict>()?;
    match configurable.get_item("checkpoint_id")? {
        Some(id) if !id.is_none() => Ok(Some(id.extract()?)),
        _ => Ok(None),
    }
}

/// Writes `values` (a dict, or `None` for no write) to the thread as node `as_node`, through
/// the keys' reducers, the nodes of `goto` added to the next step (a `Command`'s); returns
/// the new checkpoint's configurable dict.
#[pyfunction]
#[pyo3(signature = (graph, config, values, as_node=None, goto=Vec::new(), lender=None))]
#[allow(clippy::too_many_arguments)] // LangGraph's arguments, and the lending root graph
pub fn update_state<'py>(
    py: Python<'py>,
    graph: PyRef<'py, NativeGraph>,
    config: Bound<'py, PyDict>,
    values: Bound<'py, PyAny>,
    as_node: Option<String>,
    goto: Vec<String>,
    lender: Option<PyRef<'py, NativeGraph>>,
) -> PyResult<Bound<'py, PyDict>> {
    let run = state_config(&config, lender.as_deref())?;
    let update = if values.is_none() {
        PyUpdate::default()
    } else {
        let kind = values.get_type().name()?.to_string();
        let dict = values.cast::<PyDict>().map_err(|_| {
            PyValueError::new_err(format!(
                "update_state takes a dict of state keys or None, got {kind}"
            ))
        })?;
        PyUpdate::from_dict(&graph.schema, dict)?
    };
    let compiled = graph.graph.clone();
    let written = py
        .detach(move || {
            pyo3_async_runtimes::tokio::get_runtime().block_on(compiled.update_state_with_goto(
                &run,
                update,
                as_node.as_deref(),
                goto.into_iter().map(Goto::Node).collect(),
            ))
        })
        .map_err(|error| to_py_err(py, error, &graph.schema))?;
    configurable(py, &written)
}

/// `update_state(config, None, as_node="__copy__")`: the checkpoint copied as its sibling
/// (agent-core's `copy_checkpoint`); the copy's `configurable`.
#[pyfunction]
pub fn copy_checkpoint<'py>(
    py: Python<'py>,
    graph: PyRef<'py, NativeGraph>,
    config: Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyDict>> {
    let run = state_config(&config, None)?;
    let compiled = graph.graph.clone();
    let written = py
        .detach(move || {
            pyo3_async_runtimes::tokio::get_runtime().block_on(compiled.copy_checkpoint(&run))
        })
        .map_err(|error| to_py_err(py, error, &graph.schema))?;
    configurable(py, &written)
}
