//! Python functions as agent-core nodes and routers.
//!
//! A sync node runs with `tokio::task::block_in_place` on the worker that polls it: the
//! worker's other tasks move to another thread meanwhile, so a step's parallel nodes overlap
//! wherever they release the GIL (I/O, `time.sleep`, C extensions), as in LangGraph's thread
//! pool. Measured on `sequential_10` (release, 2 cores): `spawn_blocking` cost ~120 µs per
//! node (a thread hand-off and a fresh Python thread state each time), `block_in_place`
//! ~6 µs, a plain call on the worker ~3 µs (but one blocking node would stall the worker).
//! An async node is awaited on the caller's asyncio loop under `ainvoke`/`astream` (the
//! loop is the run's, from [`crate::runs`]); under `invoke`/`stream` it runs to completion
//! with `asyncio.run` in the same way as a sync node.
//!
//! A Python node takes whatever it is sent, as in LangGraph: the state dict when an edge, a
//! router's key or a `Command` goto runs it, a `Send`'s argument verbatim when a `Send` does.
//! agent-core checks a `Send`'s input against the node's declared input type, so every Python
//! node declares [`PyValue`] as an input it takes besides the state
//! (`NodeSpec::with_input_or_state`) and reads it from its context.

use std::sync::Arc;

use agent_core::{BoxError, IntoNode, NodeContext, NodeOutput, NodeSpec, Route};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::runs;
use crate::schema::Schema;
use crate::scope::{Emitted, NodeScope, forward};
use crate::state::{PyState, PyUpdate};
use crate::value::PyValue;

/// A Python node as `compile` got it.
pub struct PyNode {
    /// The callable.
    pub func: Py<PyAny>,
    /// Whether it takes `config` (its signature says so; the Python side looks).
    pub takes_config: bool,
    /// Whether it is a coroutine function.
    pub is_async: bool,
    /// The graph's schema.
    pub schema: Arc<Schema>,
}

type NodeResult = Result<NodeOutput<PyState>, BoxError>;

/// The node as agent-core runs it.
pub fn node_spec(node: PyNode) -> NodeSpec<PyState> {
    let node = Arc::new(node);
    (move |state: Arc<PyState>, ctx: NodeContext| {
        let node = node.clone();
        async move { run(node, state, ctx).await }
    })
    .into_node()
    .with_input_or_state::<PyValue>()
}

async fn run(node: Arc<PyNode>, state: Arc<PyState>, ctx: NodeContext) -> NodeResult {
    let entry = runs::lookup(ctx.run_id());
    let locals = entry.as_ref().and_then(|e| e.locals.clone());
    // A `Send`'s argument, else the state.
    let sent = ctx.input::<PyValue>();
    let input = Input {
        state: &state,
        sent: sent.as_ref(),
    };
    let outbox = crate::outbox::lookup(ctx.run_id());
    let on_loop = node.is_async && locals.is_some();
    // An async node on the caller's loop queues what it streams (see `scope`).
    let (queue, mut queued) = match (on_loop, &outbox) {
        (true, Some(_)) => {
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Emitted>();
            (Some(tx), Some(rx))
        }
        _ => (None, None),
    };
    let scope = Arc::new(Python::attach(|py| {
        Py::new(py, NodeScope::new(ctx.clone(), outbox, queue))
    })?);
    let result = if let (true, Some(locals)) = (node.is_async, locals) {
        let future = Python::attach(|py| {
            let coroutine = call(py, &node, &scope, input, entry.as_deref())?;
            pyo3_async_runtimes::into_future_with_locals(&locals, coroutine)
        })?;
        let awaited = async {
            let out = future.await;
            scope.get().close_queue();
            out
        };
        let forwarded = async {
            if let Some(queued) = queued.as_mut() {
                while let Some(item) = queued.recv().await {
                    forward(&ctx, item).await;
                }
            }
        };
        match tokio::join!(awaited, forwarded).0 {
            Ok(out) => Python::attach(|py| output(py, &node.schema, out.bind(py))),
            Err(error) => Err(error),
        }
    } else {
        let (node, scope) = (node.clone(), scope.clone());
        tokio::task::block_in_place(|| {
            Python::attach(|py| {
                // `call_sync` runs an async function to completion with `asyncio.run`.
                let out = call(py, &node, &scope, input, entry.as_deref())?;
                output(py, &node.schema, &out)
            })
        })
    };
    scope.get().close();
    result
        .or_else(|error| crate::subgraph::parent_command(&node.schema, error))
        .map_err(|error| paused(&scope, error))
}

/// What a node is called with: the state, or what a `Send` carried.
#[derive(Clone, Copy)]
struct Input<'a> {
    state: &'a PyState,
    sent: Option<&'a PyValue>,
}

/// The node's error for agent-core: the pause `interrupt()` asked for, or the exception.
///
/// A `GraphInterrupt` is dropped here under the GIL: dropped without it, its traceback (and
/// whatever its frames hold) would wait for the next thread to take the GIL.
fn paused(scope: &Py<NodeScope>, error: PyErr) -> BoxError {
    Python::attach(|py| {
        let is_interrupt = py
            .import("agentgraph.errors")
            .and_then(|m| m.getattr("GraphInterrupt"))
            .is_ok_and(|class| error.is_instance(py, &class));
        match scope.get().take_pending() {
            Some(interrupted) if is_interrupt => {
                drop(error);
                Box::new(interrupted) as BoxError
            }
            _ => Box::new(error),
        }
    })
}

/// Calls the function through `agentgraph._runtime` (its scope current), with the state dict
/// or a `Send`'s argument (and the run's config if it takes one); an async function gives its
/// coroutine.
fn call<'py>(
    py: Python<'py>,
    node: &PyNode,
    scope: &Py<NodeScope>,
    input: Input<'_>,
    entry: Option<&runs::RunEntry>,
) -> PyResult<Bound<'py, PyAny>> {
    let dict = match input.sent {
        Some(sent) => sent.bind(py),
        None => input.state.to_dict(py, &node.schema)?.into_any(),
    };
    let args = if node.takes_config {
        let config = match entry {
            Some(entry) => entry.config.bind(py).clone(),
            None => PyDict::new(py).into_any(),
        };
        PyTuple::new(py, [dict, config])?
    } else {
        PyTuple::new(py, [dict])?
    };
    let runtime = py.import("agentgraph._runtime")?;
    let via = if node.is_async && entry.is_some_and(|e| e.locals.is_some()) {
        "call_async"
    } else {
        "call_sync"
    };
    runtime.call_method1(via, (scope.bind(py), node.func.bind(py), args))
}

/// What a node returned, as agent-core's output.
fn output(
    py: Python<'_>,
    schema: &Arc<Schema>,
    out: &Bound<'_, PyAny>,
) -> PyResult<NodeOutput<PyState>> {
    if out.is_none() {
        return Ok(NodeOutput::Update(PyUpdate::default()));
    }
    if let Ok(dict) = out.cast::<PyDict>() {
        let mut update = PyUpdate::from_dict(schema, dict)?;
        // A result from the node cache (`agentgraph.graph._policies.CachedWrites`).
        update.cached = !out.is_exact_instance_of::<PyDict>() && is_cached(py, out)?;
        return Ok(NodeOutput::Update(update));
    }
    if let Some(command) = crate::command::from_py(py, schema, out)? {
        return Ok(NodeOutput::Command(command));
    }
    let errors = py.import("agentgraph.errors")?;
    let class = errors.getattr("InvalidUpdateError")?;
    Err(PyErr::from_value(
        class.call1((format!("Expected dict, got {}", out.repr()?),))?,
    ))
}

/// Whether a node's dict is `CachedWrites`: its writes came from the node cache.
fn is_cached(py: Python<'_>, out: &Bound<'_, PyAny>) -> PyResult<bool> {
    static CLASS: pyo3::sync::PyOnceLock<Py<pyo3::types::PyType>> = pyo3::sync::PyOnceLock::new();
    let class = CLASS.import(py, "agentgraph.graph._policies", "CachedWrites")?;
    out.is_instance(class)
}

/// A router: the Python path function returns the destinations (node names and `Send`s),
/// already through its path map (the Python side applies it, so any hashable key works as in
/// LangGraph).
pub fn router(
    path: Py<PyAny>,
    schema: Arc<Schema>,
) -> impl Fn(&PyState) -> Route<PyState> + Send + Sync + 'static {
    move |state: &PyState| {
        Python::attach(|py| -> PyResult<Route<PyState>> {
            let dict = state.to_dict(py, &schema)?;
            let out = path.bind(py).call1((dict,))?;
            Ok(Route {
                goto: crate::command::gotos(py, &out)?,
            })
        })
        .unwrap_or_else(|error| Route::to(runs::stash_error(error)))
    }
}
