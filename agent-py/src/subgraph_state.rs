//! A subgraph's own thread state: LangGraph's `compile(checkpointer=True | False)` on a child
//! graph, and the state API on a subgraph's namespace (`get_state`, `get_state_history`,
//! `update_state` with a config whose `checkpoint_ns` names a subgraph's checkpoints).
//!
//! The child's checkpoints live in its parent's saver, under its namespace; the child graph
//! itself has no saver. So the state API reads them through the child's graph (its schema,
//! its nodes) with the saver of the graph that lends it (the root's), as LangGraph lends its
//! checkpointer through the config. Which child a namespace names is the Python side's
//! business (`agentgraph.graph._subgraphs`): it knows the nodes.

use agent_core::{RunConfig, SubgraphCheckpoints};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::errors::to_py_err;
use crate::graph::{NativeGraph, run_config};

/// The child graph checkpointing as `mode` when run as a subgraph: `"task"` (a namespace per
/// task, LangGraph's `checkpointer=None`), `"thread"` (one history per thread,
/// `checkpointer=True`) or `"off"` (none, `checkpointer=False`).
#[pyfunction]
pub fn with_subgraph_checkpoints(
    graph: PyRef<'_, NativeGraph>,
    mode: &str,
) -> PyResult<NativeGraph> {
    let mode = match mode {
        "task" => SubgraphCheckpoints::PerTask,
        "thread" => SubgraphCheckpoints::PerThread,
        "off" => SubgraphCheckpoints::Off,
        other => {
            return Err(PyValueError::new_err(format!(
                "subgraph checkpoints are \"task\", \"thread\" or \"off\", not {other:?}"
            )));
        }
    };
    Ok(NativeGraph {
        graph: graph.graph.with_subgraph_checkpoints(mode),
        schema: graph.schema.clone(),
    })
}

/// The run config of a state-API call on `config`'s namespace, through `lender`'s saver when
/// one is given (the root graph's, for a subgraph's namespace).
pub(crate) fn state_config(
    config: &Bound<'_, PyDict>,
    lender: Option<&NativeGraph>,
) -> PyResult<RunConfig> {
    let mut run = run_config(config)?;
    if let Some(configurable) = config.get_item("configurable")? {
        let configurable = configurable.cast::<PyDict>()?;
        if let Some(ns) = configurable.get_item("checkpoint_ns")?
            && !ns.is_none()
        {
            run = run.checkpoint_ns(ns.extract::<String>()?);
        }
    }
    if let Some(saver) = lender.and_then(|l| l.graph.checkpointer()) {
        run = run.checkpointer(saver.clone());
    }
    Ok(run)
}

/// The checkpoint `config` names (its namespace's latest without an id), read with `graph`'s
/// schema through `lender`'s saver: a snapshot tuple ([`crate::thread::snapshot_tuple`]).
#[pyfunction]
#[pyo3(signature = (graph, config, lender=None))]
pub fn get_state_in(
    py: Python<'_>,
    graph: PyRef<'_, NativeGraph>,
    config: Bound<'_, PyDict>,
    lender: Option<PyRef<'_, NativeGraph>>,
) -> PyResult<Option<Py<PyTuple>>> {
    let run = state_config(&config, lender.as_deref())?;
    let compiled = graph.graph.clone();
    let snapshot = py
        .detach(move || {
            pyo3_async_runtimes::tokio::get_runtime().block_on(compiled.get_state(&run))
        })
        .map_err(|error| to_py_err(py, error, &graph.schema))?;
    snapshot
        .map(|s| Ok(crate::thread::snapshot_tuple(py, &graph, &s)?.unbind()))
        .transpose()
}
