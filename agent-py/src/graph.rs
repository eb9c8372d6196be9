//! A compiled Python graph and its runs: `invoke`, `stream` and their async forms.

use std::collections::VecDeque;
use std::sync::Arc;

use agent_core::{
    CompiledGraph, GraphError, GraphStream, INTERRUPT, Input, Interrupt, PathMap, RunConfig,
    RunOutput, StateGraph, StreamMode, StreamPart,
};
use futures::StreamExt;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::errors::to_py_err;
use crate::nodes::{PyNode, node_spec, router};
use crate::runs::{RunEntry, RunGuard};
use crate::saver::NativeSaver;
use crate::schema::Schema;
use crate::scope::from_json;
use crate::state::{PyState, PyUpdate};
use crate::value::PyValue;

/// LangGraph's default `recursion_limit` (agent-core's own default is far higher).
const DEFAULT_RECURSION_LIMIT: usize = 25;

/// A schema key: name, reducer, initial value.
type KeySpec = (String, Option<Py<PyAny>>, Option<Py<PyAny>>);
/// A node: name, callable, takes `config`, is async.
type NodeDef = (String, Py<PyAny>, bool, bool);
/// A conditional edge: source, path function (path map applied), the destinations it may
/// name (`None`: any node).
type BranchDef = (String, Py<PyAny>, Option<Vec<String>>);

/// A graph compiled to agent-core.
#[pyclass(frozen, name = "NativeGraph", module = "agentgraph._native")]
pub struct NativeGraph {
    pub(crate) graph: CompiledGraph<PyState>,
    pub(crate) schema: Arc<Schema>,
}

/// Builds agent-core's graph from what the Python `StateGraph` recorded.
#[pyfunction]
#[pyo3(signature = (schema, nodes, edges, branches, checkpointer=None, interrupt_before=Vec::new(), interrupt_after=Vec::new()))]
#[allow(clippy::too_many_arguments)] // LangGraph's `compile` keywords, one each
pub fn compile(
    py: Python<'_>,
    schema: Vec<KeySpec>,
    nodes: Vec<NodeDef>,
    edges: Vec<(Vec<String>, String)>,
    branches: Vec<BranchDef>,
    checkpointer: Option<PyRef<'_, NativeSaver>>,
    interrupt_before: Vec<String>,
    interrupt_after: Vec<String>,
) -> PyResult<NativeGraph> {
    let spec = schema
        .into_iter()
        .map(|(name, reducer, initial)| {
            (
                name,
                reducer,
                initial.map(|v| PyValue::new(v.into_bound(py))),
            )
        })
        .collect();
    let schema = Schema::new(spec)?;
    let mut builder = StateGraph::<PyState>::new();
    for (name, func, takes_config, is_async) in nodes {
        let node = PyNode {
            func,
            takes_config,
            is_async,
            schema: schema.clone(),
        };
        builder = builder.add_node(name, node_spec(node));
    }
    for (sources, target) in edges {
        builder = builder.add_edge(sources, target);
    }
    for (source, path, destinations) in branches {
        let path_map = match destinations {
            Some(names) => PathMap::from_names(names),
            None => PathMap::any(),
        };
        builder = builder.add_conditional_edges(source, router(path, schema.clone()), path_map);
    }
    builder = builder
        .interrupt_before(interrupt_before)
        .interrupt_after(interrupt_after);
    let compiled = match checkpointer {
        Some(saver) => builder.compile_with(saver.saver.clone()),
        None => builder.compile(),
    };
    let graph = compiled.map_err(|error| to_py_err(py, error, &schema))?;
    Ok(NativeGraph { graph, schema })
}

/// Reads LangGraph's config dict into agent-core's, with a run id for [`crate::runs`].
pub(crate) fn run_config(config: &Bound<'_, PyDict>) -> PyResult<RunConfig> {
    let mut run = RunConfig::default().recursion_limit(DEFAULT_RECURSION_LIMIT);
    if let Some(limit) = config.get_item("recursion_limit")? {
        run = run.recursion_limit(limit.extract()?);
    }
    if let Some(configurable) = config.get_item("configurable")? {
        let configurable = configurable.cast::<PyDict>()?;
        if let Some(thread) = configurable.get_item("thread_id")? {
            run = run.thread_id(thread.str()?.to_string());
        }
        if let Some(checkpoint) = configurable.get_item("checkpoint_id")?
            && !checkpoint.is_none()
        {
            run = run.checkpoint_id(checkpoint.extract::<String>()?);
        }
    }
    let run_id = match config.get_item("run_id")? {
        Some(id) if !id.is_none() => id.str()?.to_string(),
        _ => agent_core::new_id(),
    };
    Ok(run.run_id(run_id))
}

/// The stream modes asked for; only `values` and `updates` are served so far.
fn stream_modes(modes: &[String]) -> PyResult<Vec<StreamMode>> {
    modes
        .iter()
        .map(|mode| match mode.as_str() {
            "values" => Ok(StreamMode::Values),
            "updates" => Ok(StreamMode::Updates),
            other => Err(PyValueError::new_err(format!(
                "stream_mode `{other}` is not supported by agentgraph yet (values, updates)"
            ))),
        })
        .collect()
}

impl NativeGraph {
    fn input(&self, input: &Bound<'_, PyAny>) -> PyResult<Input<PyState>> {
        if input.is_none() {
            return Ok(Input::Continue);
        }
        if let Some(command) = crate::command::from_py(input.py(), &self.schema, input)? {
            return Ok(Input::Command(command));
        }
        let dict = input.cast::<PyDict>().map_err(|_| {
            PyValueError::new_err(format!(
                "the input must be a dict, got {}",
                input
                    .get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))
        })?;
        Ok(Input::Update(PyUpdate::from_dict(&self.schema, dict)?))
    }

    fn start(
        &self,
        input: &Bound<'_, PyAny>,
        config: &Bound<'_, PyDict>,
        options: Option<&Bound<'_, PyDict>>,
        locals: Option<pyo3_async_runtimes::TaskLocals>,
    ) -> PyResult<(Input<PyState>, RunConfig, RunGuard)> {
        let input = self.input(input)?;
        let run = crate::run_options::apply(run_config(config)?, options)?;
        let run_id = run.run_id.clone().unwrap_or_default();
        let guard = RunGuard::register(
            run_id,
            RunEntry {
                config: config.clone().into_any().unbind(),
                locals,
            },
        );
        Ok((input, run, guard))
    }
}

#[pymethods]
impl NativeGraph {
    /// Runs to the end (or a pause) and returns the state dict.
    #[pyo3(signature = (input, config, options=None))]
    fn invoke(
        &self,
        py: Python<'_>,
        input: Bound<'_, PyAny>,
        config: Bound<'_, PyDict>,
        options: Option<Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let (input, run, guard) = self.start(&input, &config, options.as_ref(), None)?;
        let graph = self.graph.clone();
        let result = py.detach(move || {
            let out = pyo3_async_runtimes::tokio::get_runtime().block_on(graph.invoke(input, run));
            drop(guard);
            out
        });
        match result {
            Ok(output) => output_dict(py, &output, &self.schema),
            Err(error) => Err(to_py_err(py, error, &self.schema)),
        }
    }

    /// `invoke` as an awaitable; async nodes are awaited on the caller's loop.
    #[pyo3(signature = (input, config, options=None))]
    fn ainvoke<'py>(
        &self,
        py: Python<'py>,
        input: Bound<'py, PyAny>,
        config: Bound<'py, PyDict>,
        options: Option<Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let locals = pyo3_async_runtimes::tokio::get_current_locals(py)?;
        let (input, run, guard) = self.start(&input, &config, options.as_ref(), Some(locals))?;
        let graph = self.graph.clone();
        let schema = self.schema.clone();
        crate::bridge::spawn(py, async move {
            let result = graph.invoke(input, run).await;
            drop(guard);
            Python::attach(|py| match result {
                Ok(output) => output_dict(py, &output, &schema),
                Err(error) => Err(to_py_err(py, error, &schema)),
            })
        })
    }

    /// The thread's latest checkpoint (or `config`'s `checkpoint_id`) as a tuple
    /// ([`crate::thread::snapshot_tuple`]), or `None` for a thread with none.
    fn get_state(
        &self,
        py: Python<'_>,
        config: Bound<'_, PyDict>,
    ) -> PyResult<Option<Py<PyTuple>>> {
        let run = run_config(&config)?;
        let graph = self.graph.clone();
        let snapshot = py
            .detach(move || {
                pyo3_async_runtimes::tokio::get_runtime().block_on(graph.get_state(&run))
            })
            .map_err(|error| to_py_err(py, error, &self.schema))?;
        snapshot
            .map(|s| Ok(crate::thread::snapshot_tuple(py, self, &s)?.unbind()))
            .transpose()
    }

    /// Starts a run whose parts are read with `next` / `anext`.
    #[pyo3(signature = (input, config, modes, tagged, is_async=false, options=None))]
    #[allow(clippy::too_many_arguments)] // LangGraph's `stream` keywords, one each
    fn stream(
        &self,
        py: Python<'_>,
        input: Bound<'_, PyAny>,
        config: Bound<'_, PyDict>,
        modes: Vec<String>,
        tagged: bool,
        is_async: bool,
        options: Option<Bound<'_, PyDict>>,
    ) -> PyResult<NativeStream> {
        let modes = stream_modes(&modes)?;
        let locals = if is_async {
            Some(pyo3_async_runtimes::tokio::get_current_locals(py)?)
        } else {
            None
        };
        let (input, run, guard) = self.start(&input, &config, options.as_ref(), locals)?;
        let _runtime = pyo3_async_runtimes::tokio::get_runtime().enter();
        let stream = self.graph.stream(input, run, modes.as_slice());
        let cursor = Cursor {
            stream: Some(stream),
            tail: VecDeque::new(),
            values: modes.contains(&StreamMode::Values),
            updates: modes.contains(&StreamMode::Updates),
        };
        Ok(NativeStream {
            inner: Arc::new(tokio::sync::Mutex::new(cursor)),
            schema: self.schema.clone(),
            tagged,
            _guard: Arc::new(guard),
        })
    }
}

/// What `invoke` returns: the state dict, and LangGraph's `__interrupt__` list if it paused.
fn output_dict(
    py: Python<'_>,
    output: &RunOutput<PyState>,
    schema: &Schema,
) -> PyResult<Py<PyAny>> {
    let dict = output.state.to_dict(py, schema)?;
    if !output.interrupts.is_empty() {
        dict.set_item(INTERRUPT, interrupts_list(py, &output.interrupts)?)?;
    }
    Ok(dict.into_any().unbind())
}

/// `[Interrupt(value=..., id=...), ...]`.
pub(crate) fn interrupts_list<'py>(
    py: Python<'py>,
    interrupts: &[Interrupt],
) -> PyResult<Bound<'py, PyList>> {
    let class = py.import("agentgraph.types")?.getattr("Interrupt")?;
    let list = PyList::empty(py);
    for interrupt in interrupts {
        list.append(class.call1((from_json(py, &interrupt.value)?, &interrupt.id))?)?;
    }
    Ok(list)
}

/// A run's stream: `__next__` blocks (without the GIL), `anext()` is awaitable.
#[pyclass(frozen, name = "NativeStream", module = "agentgraph._native")]
pub struct NativeStream {
    inner: Arc<tokio::sync::Mutex<Cursor>>,
    schema: Arc<Schema>,
    tagged: bool,
    _guard: Arc<RunGuard>,
}

/// Where a stream is: agent-core's parts, then the chunks LangGraph adds when the run paused.
struct Cursor {
    stream: Option<GraphStream<PyState>>,
    tail: VecDeque<Next>,
    values: bool,
    updates: bool,
}

/// One item for Python.
enum Next {
    Part(StreamPart<PyState>),
    /// `updates`: `{"__interrupt__": (Interrupt, ...)}`.
    Interrupts(Vec<Interrupt>),
    /// `values`: the last state with `__interrupt__` added.
    PausedValues(PyState, Vec<Interrupt>),
    Failed(GraphError),
    End,
}

async fn next_part(inner: &tokio::sync::Mutex<Cursor>) -> Next {
    let mut cursor = inner.lock().await;
    if let Some(next) = cursor.tail.pop_front() {
        return next;
    }
    let Some(stream) = cursor.stream.as_mut() else {
        return Next::End;
    };
    match stream.next().await {
        Some(Ok(part)) => return Next::Part(part),
        Some(Err(error)) => return Next::Failed(error),
        None => {}
    }
    // The run ended: LangGraph reports a pause in the stream itself (updates first).
    let Some(stream) = cursor.stream.take() else {
        return Next::End;
    };
    let Ok(output) = stream.into_output().await else {
        return Next::End;
    };
    if output.interrupts.is_empty() && output.paused && cursor.updates {
        // A static breakpoint (`interrupt_before`/`interrupt_after`, after the last node
        // too): LangGraph streams an empty `__interrupt__` update.
        cursor.tail.push_back(Next::Interrupts(Vec::new()));
    }
    if !output.interrupts.is_empty() {
        if cursor.updates {
            cursor
                .tail
                .push_back(Next::Interrupts(output.interrupts.clone()));
        }
        if cursor.values {
            cursor
                .tail
                .push_back(Next::PausedValues(output.state, output.interrupts));
        }
    }
    cursor.tail.pop_front().unwrap_or(Next::End)
}

/// A part as LangGraph yields it: the chunk, or `(mode, chunk)` when several modes were asked.
fn part_to_py(
    py: Python<'_>,
    part: Next,
    schema: &Schema,
    tagged: bool,
) -> PyResult<Option<Py<PyAny>>> {
    let part = match part {
        Next::End => return Ok(None),
        Next::Failed(error) => return Err(to_py_err(py, error, schema)),
        Next::Interrupts(interrupts) => {
            let dict = PyDict::new(py);
            let list = interrupts_list(py, &interrupts)?;
            dict.set_item(INTERRUPT, PyTuple::new(py, list)?)?;
            return tag(py, tagged, "updates", dict.into_any());
        }
        Next::PausedValues(state, interrupts) => {
            let dict = state.to_dict(py, schema)?;
            let list = interrupts_list(py, &interrupts)?;
            dict.set_item(INTERRUPT, PyTuple::new(py, list)?)?;
            return tag(py, tagged, "values", dict.into_any());
        }
        Next::Part(part) => part,
    };
    let (mode, chunk) = match part {
        StreamPart::Values(state) => ("values", state.to_dict(py, schema)?.into_any()),
        StreamPart::Updates { node, update } => {
            let dict = PyDict::new(py);
            dict.set_item(node, update.to_py(py, schema)?)?;
            if update.cached {
                let metadata = PyDict::new(py);
                metadata.set_item("cached", true)?;
                dict.set_item("__metadata__", metadata)?;
            }
            ("updates", dict.into_any())
        }
        // Other modes are refused when the stream starts.
        _ => return Ok(Some(py.None())),
    };
    tag(py, tagged, mode, chunk)
}

/// `chunk`, or `(mode, chunk)` when several modes were asked.
fn tag(
    py: Python<'_>,
    tagged: bool,
    mode: &str,
    chunk: Bound<'_, PyAny>,
) -> PyResult<Option<Py<PyAny>>> {
    if tagged {
        Ok(Some(
            PyTuple::new(py, [mode.into_pyobject(py)?.into_any(), chunk])?
                .into_any()
                .unbind(),
        ))
    } else {
        Ok(Some(chunk.unbind()))
    }
}

#[pymethods]
impl NativeStream {
    /// The next part, or `None` at the end.
    fn next(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let inner = self.inner.clone();
        let part = py
            .detach(move || pyo3_async_runtimes::tokio::get_runtime().block_on(next_part(&inner)));
        part_to_py(py, part, &self.schema, self.tagged)
    }

    /// The next part, awaitable; `None` at the end.
    fn anext<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let inner = self.inner.clone();
        let schema = self.schema.clone();
        let tagged = self.tagged;
        crate::bridge::spawn(py, async move {
            let part = next_part(&inner).await;
            Python::attach(|py| {
                Ok(part_to_py(py, part, &schema, tagged)?.unwrap_or_else(|| py.None()))
            })
        })
    }
}
