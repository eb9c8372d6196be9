//! Subgraphs: a compiled Python graph run as a child of a node's task, as LangGraph runs one.
//!
//! Two ways in, one run: a compiled graph added as a node (`add_node("child", child_graph)`,
//! [`subgraph_node`]) and a graph invoked inside a node function ([`invoke_in`]; the Python
//! side sees the node's scope and calls here). Both are agent-core's
//! `CompiledGraph::invoke_in`: the child checkpoints in the parent's saver under the task's
//! namespace (`node:<uuid>`), streams under it, and its `interrupt()` pauses the whole run;
//! resuming the parent runs the task again and the child continues where it stopped.
//!
//! Every Python graph is a `PyState`, but parent and child have schemas of their own (the
//! same Rust type, different slots), so state crosses by key name as in LangGraph: the child's
//! input is the parent's state dict (or a `Send`'s argument) read with the child's schema,
//! and the child's final state dict read with the parent's is the node's update (keys the
//! parent lacks are dropped). A child's `Command(graph=Command.PARENT)` comes back as the
//! Python command (see [`crate::command`]) and is read with the parent's schema.

use std::sync::Arc;

use agent_core::{
    BoxError, BoxFuture, CompiledGraph, GraphError, Interrupted, Node, NodeContext, NodeError,
    NodeOutput, NodeSpec, SubgraphOutput,
};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::errors::to_py_err;
use crate::graph::NativeGraph;
use crate::schema::Schema;
use crate::scope::NodeScope;
use crate::state::{PyState, PyUpdate};
use crate::value::PyValue;

/// A compiled graph as a node of a graph over another schema.
struct PySubgraph {
    child: CompiledGraph<PyState>,
    child_schema: Arc<Schema>,
    parent_schema: Arc<Schema>,
}

/// The node for a compiled graph added to a parent whose schema is `parent_schema`. Like any
/// Python node it takes a `Send`'s argument as well as the state: the child's input.
pub fn subgraph_node(child: &NativeGraph, parent_schema: Arc<Schema>) -> NodeSpec<PyState> {
    NodeSpec::new(PySubgraph {
        child: child.graph.clone(),
        child_schema: child.schema.clone(),
        parent_schema,
    })
    .with_input_or_state::<PyValue>()
}

impl Node<PyState> for PySubgraph {
    fn call(
        &self,
        state: Arc<PyState>,
        ctx: NodeContext,
    ) -> BoxFuture<Result<NodeOutput<PyState>, NodeError>> {
        let child = self.child.clone();
        let (child_schema, parent_schema) = (self.child_schema.clone(), self.parent_schema.clone());
        Box::pin(async move {
            let failed = |error: PyErr| NodeError::Failed(Box::new(error));
            let input = Python::attach(|py| {
                let input = match ctx.input::<PyValue>() {
                    Some(sent) => sent.bind(py),
                    None => state.to_dict(py, &parent_schema)?.into_any(),
                };
                child_input(&child_schema, &input)
            })
            .map_err(failed)?;
            let out = child
                .invoke_in(input, &ctx)
                .await
                .map_err(NodeError::Failed)?;
            Python::attach(|py| node_output(py, out, &child_schema, &parent_schema)).map_err(failed)
        })
    }
}

/// A child's input: a dict read with its schema.
fn child_input(schema: &Arc<Schema>, input: &Bound<'_, PyAny>) -> PyResult<PyUpdate> {
    let dict = input.cast::<PyDict>().map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err(format!(
            "a subgraph's input must be a dict, got {}",
            input.repr().map(|r| r.to_string()).unwrap_or_default()
        ))
    })?;
    PyUpdate::from_dict(schema, dict)
}

/// What a child run hands its node in the parent: the parent's keys of its final state, or
/// the command it addressed to the parent.
fn node_output(
    py: Python<'_>,
    out: SubgraphOutput<PyState>,
    child_schema: &Schema,
    parent_schema: &Arc<Schema>,
) -> PyResult<NodeOutput<PyState>> {
    if let Some(command) = &out.to_parent {
        let Some(command) = crate::command::take_parent(py, command) else {
            return Err(pyo3::exceptions::PyRuntimeError::new_err(
                "a subgraph's command to its parent was lost",
            ));
        };
        let command = crate::command::for_this_graph(py, parent_schema, &command)?;
        return Ok(NodeOutput::Command(command));
    }
    let dict = out.state.to_dict(py, child_schema)?;
    Ok(NodeOutput::Update(PyUpdate::from_dict(
        parent_schema,
        &dict,
    )?))
}

/// A node's exception that is a child's `ParentCommand` (raised out of a graph invoked inside
/// it): the node's command, read with its graph's schema. Other exceptions are returned.
pub fn parent_command(schema: &Arc<Schema>, error: PyErr) -> PyResult<NodeOutput<PyState>> {
    Python::attach(|py| {
        let class = py.import("agentgraph.errors")?.getattr("ParentCommand")?;
        if !error.is_instance(py, &class) {
            return Err(error);
        }
        let command = error.value(py).getattr("args")?.get_item(0)?;
        let command = crate::command::for_this_graph(py, schema, &command)?;
        Ok(NodeOutput::Command(command))
    })
}

/// The Python outcome of a child run invoked inside a node: its state dict; a pause raised as
/// `GraphInterrupt` (the node's scope keeps the pause for agent-core); a command to the
/// parent raised as `ParentCommand`; a failure raised as the child's exception.
fn invoke_result(
    py: Python<'_>,
    result: Result<SubgraphOutput<PyState>, BoxError>,
    scope: &NodeScope,
    schema: &Schema,
) -> PyResult<Py<PyAny>> {
    let error = match result {
        Ok(out) => {
            if let Some(command) = &out.to_parent {
                let command = crate::command::take_parent(py, command)
                    .map(Bound::unbind)
                    .unwrap_or_else(|| py.None());
                let class = py.import("agentgraph.errors")?.getattr("ParentCommand")?;
                return Err(PyErr::from_value(class.call1((command,))?));
            }
            return Ok(out.state.to_dict(py, schema)?.into_any().unbind());
        }
        Err(error) => error,
    };
    let error = match error.downcast::<Interrupted>() {
        Ok(interrupted) => {
            scope.set_pending(*interrupted);
            let class = py.import("agentgraph.errors")?.getattr("GraphInterrupt")?;
            return Err(PyErr::from_value(class.call0()?));
        }
        Err(error) => error,
    };
    let error = match error.downcast::<GraphError>() {
        Ok(error) => return Err(to_py_err(py, *error, schema)),
        Err(error) => error,
    };
    match error.downcast::<PyErr>() {
        Ok(error) => Err(*error),
        Err(error) => Err(pyo3::exceptions::PyRuntimeError::new_err(error.to_string())),
    }
}

/// `graph.invoke(input)` inside the node whose scope is `scope`: a child run of its task.
#[pyfunction]
pub fn invoke_in(
    py: Python<'_>,
    graph: PyRef<'_, NativeGraph>,
    scope: Bound<'_, NodeScope>,
    input: Bound<'_, PyAny>,
) -> PyResult<Py<PyAny>> {
    let ctx = scope.get().context()?;
    let update = child_input(&graph.schema, &input)?;
    let child = graph.graph.clone();
    let result = py.detach(move || {
        pyo3_async_runtimes::tokio::get_runtime().block_on(child.invoke_in(update, &ctx))
    });
    invoke_result(py, result, scope.get(), &graph.schema)
}

/// `await graph.ainvoke(input)` inside an async node: [`invoke_in`] as an awaitable.
#[pyfunction]
pub fn ainvoke_in<'py>(
    py: Python<'py>,
    graph: PyRef<'py, NativeGraph>,
    scope: Bound<'py, NodeScope>,
    input: Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let ctx = scope.get().context()?;
    let update = child_input(&graph.schema, &input)?;
    let (child, schema) = (graph.graph.clone(), graph.schema.clone());
    let scope = scope.unbind();
    crate::bridge::spawn(py, async move {
        let result = child.invoke_in(update, &ctx).await;
        Python::attach(|py| invoke_result(py, result, scope.get(), &schema))
    })
}
