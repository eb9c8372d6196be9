//! A compiled Python graph and its runs: `invoke`, `stream` and their async forms.

use std::collections::VecDeque;
use std::sync::Arc;

use agent_core::{
    CompiledGraph, DebugEvent, Durability, GraphError, GraphStream, INTERRUPT, Input, Interrupt,
    Namespace, PathMap, RunConfig, RunOutput, StateGraph, StreamMode, StreamModes, StreamPart,
};
use futures::StreamExt;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::errors::to_py_err;
use crate::nodes::{PyNode, node_spec, router};
use crate::outbox::{Outbox, OutboxGuard};
use crate::runs::{RunEntry, RunGuard};
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
    checkpointer: Option<Bound<'_, PyAny>>,
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
        if let Ok(child) = func.bind(py).cast::<NativeGraph>() {
            let node = crate::subgraph::subgraph_node(child.get(), schema.clone());
            builder = builder.add_node(name, node);
            continue;
        }
        let node = PyNode {
            func,
            takes_config,
            is_async,
            schema: schema.clone(),
        };
        builder = builder.add_node(name, node_spec(node));
    }
    // The joins agent-core makes of these edges, by their distinct sources (for a checkpoint
    // a LangGraph saver holds).
    let joins = edges
        .iter()
        .filter(|(sources, target)| sources.len() > 1 && target != agent_core::END)
        .map(|(sources, _)| {
            let mut distinct = sources.clone();
            distinct.sort();
            distinct.dedup();
            distinct.len()
        })
        .collect();
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
        Some(saver) => builder.compile_with(crate::saver::checkpointer(saver, &schema, joins)),
        None => builder.compile(),
    };
    let graph = compiled.map_err(|error| to_py_err(py, error, &schema))?;
    Ok(NativeGraph { graph, schema })
}

/// Reads LangGraph's config dict into agent-core's, with a run id for [`crate::runs`].
///
/// `durability=` arrives where LangGraph keeps it, `configurable["__pregel_durability"]`;
/// without it a run checkpoints in the background (`async`), LangGraph's default.
pub(crate) fn run_config(config: &Bound<'_, PyDict>) -> PyResult<RunConfig> {
    let mut run = RunConfig::default()
        .recursion_limit(DEFAULT_RECURSION_LIMIT)
        .durability(Durability::Async);
    if let Some(limit) = config.get_item("recursion_limit")? {
        run = run.recursion_limit(limit.extract()?);
    }
    if let Some(configurable) = config.get_item("configurable")? {
        let configurable = configurable.cast::<PyDict>()?;
        if let Some(thread) = configurable.get_item("thread_id")? {
            run = run.thread_id(thread.str()?.to_string());
        }
        if let Some(durability) = configurable.get_item("__pregel_durability")?
            && !durability.is_none()
        {
            run = run.durability(match durability.extract::<String>()?.as_str() {
                "sync" => Durability::Sync,
                "async" => Durability::Async,
                "exit" => Durability::Exit,
                other => {
                    return Err(PyValueError::new_err(format!(
                        "durability must be \"sync\", \"async\" or \"exit\", not {other:?}"
                    )));
                }
            });
        }
        if let Some(checkpoint) = configurable.get_item("checkpoint_id")?
            && !checkpoint.is_none()
        {
            run = run.checkpoint_id(checkpoint.extract::<String>()?);
        }
        // The subgraphs' checkpoints a time-traveling run goes to (a child's snapshot config).
        if let Some(map) = configurable.get_item("checkpoint_map")?
            && let Ok(map) = map.cast::<PyDict>()
        {
            for (ns, id) in map.iter() {
                let ns: String = ns.extract()?;
                if !ns.is_empty() {
                    run = run.checkpoint_map(ns, id.extract::<String>()?);
                }
            }
        }
    }
    let run_id = match config.get_item("run_id")? {
        Some(id) if !id.is_none() => id.str()?.to_string(),
        _ => agent_core::new_id(),
    };
    Ok(run.run_id(run_id))
}

/// What a stream asks of agent-core for LangGraph's modes: `tasks`, `checkpoints` and
/// `debug` are built from agent-core's `debug` parts and the state (`values`, kept by the
/// stream even when not asked for).
fn stream_modes(modes: &[String]) -> PyResult<(Vec<StreamMode>, Wants)> {
    let mut wants = Wants::default();
    let mut core = Vec::new();
    for mode in modes {
        let (flag, needs): (&mut bool, &[StreamMode]) = match mode.as_str() {
            "values" => (&mut wants.values, &[StreamMode::Values]),
            "updates" => (&mut wants.updates, &[StreamMode::Updates]),
            "custom" => (&mut wants.custom, &[StreamMode::Custom]),
            "messages" => (&mut wants.messages, &[StreamMode::Messages]),
            "tasks" => (&mut wants.tasks, &[StreamMode::Debug, StreamMode::Values]),
            "checkpoints" => (
                &mut wants.checkpoints,
                &[StreamMode::Debug, StreamMode::Values],
            ),
            "debug" => (&mut wants.debug, &[StreamMode::Debug, StreamMode::Values]),
            other => {
                return Err(PyValueError::new_err(format!(
                    "unknown stream_mode `{other}` (values, updates, custom, messages, tasks, \
                     checkpoints, debug)"
                )));
            }
        };
        *flag = true;
        for need in needs {
            if !core.contains(need) {
                core.push(*need);
            }
        }
    }
    Ok((core, wants))
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

    /// Starts a run whose parts are read with `next` / `anext`; with `subgraphs`, each part
    /// is `(namespace, chunk)` (`(namespace, mode, chunk)` when `tagged`).
    #[pyo3(signature = (input, config, modes, tagged, state, is_async=false, parent_checkpoint=None, options=None, subgraphs=false))]
    #[allow(clippy::too_many_arguments)] // what `stream` and `astream` hand over
    fn stream(
        &self,
        py: Python<'_>,
        input: Bound<'_, PyAny>,
        config: Bound<'_, PyDict>,
        modes: Vec<String>,
        tagged: bool,
        state: Py<PyAny>,
        is_async: bool,
        parent_checkpoint: Option<String>,
        options: Option<Bound<'_, PyDict>>,
        subgraphs: bool,
    ) -> PyResult<NativeStream> {
        let (core_modes, wants) = stream_modes(&modes)?;
        let children = crate::subgraph_stream::Children::new(wants.values, wants.updates);
        let mut native = StreamModes::from(core_modes.as_slice());
        if subgraphs {
            // A paused subgraph reports its interrupts as an `updates` item only.
            native = native.with_subgraphs().with(StreamMode::Updates);
        }
        let locals = if is_async {
            Some(pyo3_async_runtimes::tokio::get_current_locals(py)?)
        } else {
            None
        };
        let (input, run, guard) = self.start(&input, &config, options.as_ref(), locals)?;
        let run_id = run.run_id.clone().unwrap_or_default();
        let thread_id = run.thread_id.clone();
        let outbox = Arc::new(Outbox::new(modes, state));
        let outbox_guard = crate::outbox::register(run_id.clone(), outbox.clone());
        let _runtime = pyo3_async_runtimes::tokio::get_runtime().enter();
        let stream = self.graph.stream(input, run, native);
        let cursor = Cursor {
            stream: Some(stream),
            tail: VecDeque::new(),
            values: wants.values,
            updates: wants.updates,
            wants,
            state: None,
            // A resumed run's first checkpoint follows the one it resumes from.
            checkpoint: parent_checkpoint,
            held: None,
            results: Vec::new(),
            paused: Vec::new(),
            outbox: outbox.clone(),
            children,
            subgraphs,
        };
        let inner = Arc::new(tokio::sync::Mutex::new(cursor));
        let facts = Arc::new(RunFacts {
            run_id,
            thread_id,
            outbox,
        });
        let feed = {
            let (inner, schema, facts) = (inner.clone(), self.schema.clone(), facts.clone());
            crate::feed::Feed::new(Arc::new(move || {
                let (inner, schema, facts) = (inner.clone(), schema.clone(), facts.clone());
                Box::pin(async move {
                    let part = next_part(&inner).await;
                    let last = matches!(part, Next::End | Next::Failed(_));
                    let item = Python::attach(|py| {
                        part_to_py(py, part, &schema, tagged, &facts, subgraphs)
                            .map(|chunk| chunk.unwrap_or_else(|| py.None()))
                    });
                    let last = last || item.is_err();
                    (item, last)
                })
            }))
        };
        Ok(NativeStream {
            inner,
            schema: self.schema.clone(),
            tagged,
            facts,
            subgraphs,
            feed,
            _guard: Arc::new((guard, outbox_guard)),
        })
    }
}

/// LangGraph's `next`: a name per task still to run (a node sent three `Send`s is there three
/// times; agent-core's `next` names each node once).
pub(crate) fn next_tasks(snapshot: &agent_core::StateSnapshot<PyState>) -> Vec<&str> {
    if snapshot.tasks.is_empty() {
        return snapshot.next.iter().map(String::as_str).collect();
    }
    let start = snapshot.next.iter().filter(|n| *n == agent_core::START);
    let tasks = snapshot.tasks.iter().filter(|t| !t.finished);
    start
        .map(String::as_str)
        .chain(tasks.map(|t| t.node.as_str()))
        .collect()
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
    facts: Arc<RunFacts>,
    /// `subgraphs=True`: parts carry their namespace.
    subgraphs: bool,
    /// `anext()`'s parts, forwarded as they come (`feed`).
    feed: Arc<crate::feed::Feed>,
    _guard: Arc<(RunGuard, OutboxGuard)>,
}

impl Drop for NativeStream {
    fn drop(&mut self) {
        self.feed.close();
    }
}

/// What converting a stream's parts needs of its run.
struct RunFacts {
    run_id: String,
    thread_id: Option<String>,
    outbox: Arc<Outbox>,
}

/// The modes a stream was asked for, by LangGraph's names.
#[derive(Default, Clone, Copy)]
struct Wants {
    values: bool,
    updates: bool,
    custom: bool,
    messages: bool,
    tasks: bool,
    checkpoints: bool,
    debug: bool,
}

/// Where a stream is: agent-core's parts, then the chunks LangGraph adds when the run paused.
struct Cursor {
    stream: Option<GraphStream<PyState>>,
    tail: VecDeque<Next>,
    values: bool,
    updates: bool,
    wants: Wants,
    /// The latest state (a task's input, a checkpoint's values).
    state: Option<Arc<PyState>>,
    /// The latest checkpoint's id (the next one's parent).
    checkpoint: Option<String>,
    /// A checkpoint waiting for the state it holds (see `Cursor::read`).
    held: Option<Traced>,
    /// Task results waiting for their task's update (see `Cursor::read`).
    results: Vec<Traced>,
    /// Results of tasks that paused, waiting for the run's end.
    paused: Vec<Traced>,
    outbox: Arc<Outbox>,
    /// Subgraphs' parts (with `subgraphs=True`).
    children: crate::subgraph_stream::Children,
    /// `subgraphs=True`: a subgraph's `messages` and `custom` items are shown too.
    subgraphs: bool,
}

/// A `tasks`, `checkpoints` or `debug` item, before it meets Python.
enum Traced {
    Task {
        step: i64,
        node: String,
        input: Option<Arc<PyState>>,
    },
    Result {
        step: i64,
        node: String,
        error: Option<String>,
        /// Its pause's interrupts, when it paused.
        interrupts: Vec<Interrupt>,
    },
    Checkpoint {
        step: i64,
        id: String,
        parent: Option<String>,
        values: Option<Arc<PyState>>,
        next: Vec<String>,
    },
}

/// One item for Python.
enum Next {
    Part(StreamPart<PyState>),
    /// A subgraph's chunk, under its namespace.
    Child(Namespace, crate::subgraph_stream::ChildChunk),
    /// `updates`: `{"__interrupt__": (Interrupt, ...)}`.
    Interrupts(Vec<Interrupt>),
    /// `values`: the last state with `__interrupt__` added.
    PausedValues(PyState, Vec<Interrupt>),
    /// A `tasks`/`checkpoints`/`debug` item, in the mode named.
    Traced(&'static str, Arc<Traced>),
    Failed(GraphError),
    End,
}

impl Cursor {
    /// Queues in `tail` what `part` gives the caller: nothing for a part only read for the
    /// state or for a mode not asked for, several items for a part several modes show.
    fn read(&mut self, part: StreamPart<PyState>) {
        let wants = self.wants;
        if let StreamPart::Values(state) = part {
            self.release_results(None);
            self.state = Some(state.clone());
            if wants.values {
                self.tail.push_back(Next::Part(StreamPart::Values(state)));
            }
            // LangGraph shows the input's checkpoint after the state it holds.
            self.release();
            return;
        }
        self.release();
        if let StreamPart::Updates { node, update } = part {
            // LangGraph shows a task's result after its update.
            let node_name = node.clone();
            self.tail
                .push_back(Next::Part(StreamPart::Updates { node, update }));
            self.release_results(Some(&node_name));
            return;
        }
        if !matches!(part, StreamPart::Debug(DebugEvent::TaskResult { .. })) {
            self.release_results(None);
        }
        match part {
            StreamPart::Debug(DebugEvent::Task { step, node, .. }) => {
                let input = self.state.clone();
                self.trace(Traced::Task { step, node, input });
            }
            StreamPart::Debug(DebugEvent::TaskResult {
                step, node, error, ..
            }) => {
                // A task the node cache answered did not run: LangGraph shows no result.
                if (wants.tasks || wants.debug) && !self.outbox.is_cached(step, &node) {
                    let paused = self.outbox.is_paused(step, &node);
                    let result = Traced::Result {
                        step,
                        node,
                        error,
                        interrupts: Vec::new(),
                    };
                    // LangGraph shows a paused task's result after the run's interrupts.
                    if paused {
                        self.paused.push(result);
                    } else {
                        self.results.push(result);
                    }
                }
            }
            StreamPart::Debug(DebugEvent::Checkpoint {
                step,
                checkpoint_id,
                next,
            }) => {
                let parent = self.checkpoint.replace(checkpoint_id.clone());
                if !(wants.checkpoints || wants.debug) {
                    return;
                }
                let checkpoint = Traced::Checkpoint {
                    step,
                    id: checkpoint_id,
                    parent,
                    values: self.state.clone(),
                    next,
                };
                // agent-core writes the input's checkpoint (step 0) before streaming the
                // state it holds: held until that state arrives.
                if step == 0 {
                    self.held = Some(checkpoint);
                } else {
                    self.trace(checkpoint);
                }
            }
            other => self.tail.push_back(Next::Part(other)),
        }
    }

    /// Queues the held results of `node`'s tasks (`None`: of every task).
    fn release_results(&mut self, node: Option<&str>) {
        let held = std::mem::take(&mut self.results);
        for result in held {
            let matches = match (&result, node) {
                (_, None) => true,
                (Traced::Result { node: held, .. }, Some(node)) => held == node,
                _ => false,
            };
            if matches {
                self.trace(result);
            } else {
                self.results.push(result);
            }
        }
    }

    /// Queues a held checkpoint, with the latest state.
    fn release(&mut self) {
        if let Some(Traced::Checkpoint {
            step,
            id,
            parent,
            next,
            ..
        }) = self.held.take()
        {
            let values = self.state.clone();
            self.trace(Traced::Checkpoint {
                step,
                id,
                parent,
                values,
                next,
            });
        }
    }

    /// Queues a `tasks`/`checkpoints`/`debug` item for each of those modes asked for
    /// (LangGraph's order: `tasks` or `checkpoints`, then `debug`).
    fn trace(&mut self, traced: Traced) {
        let wants = self.wants;
        let checkpoint = matches!(traced, Traced::Checkpoint { .. });
        let traced = Arc::new(traced);
        if checkpoint && wants.checkpoints {
            self.tail
                .push_back(Next::Traced("checkpoints", traced.clone()));
        }
        if !checkpoint && wants.tasks {
            self.tail.push_back(Next::Traced("tasks", traced.clone()));
        }
        if wants.debug {
            self.tail.push_back(Next::Traced("debug", traced));
        }
    }
}

async fn next_part(inner: &tokio::sync::Mutex<Cursor>) -> Next {
    let mut cursor = inner.lock().await;
    if let Some(next) = cursor.tail.pop_front() {
        return next;
    }
    let cursor = &mut *cursor;
    loop {
        let Some(stream) = cursor.stream.as_mut() else {
            return Next::End;
        };
        match stream.next().await {
            Some(Ok(StreamPart::Subgraph { ns, part })) => {
                let chunks = cursor.children.chunks(&ns, part);
                cursor
                    .tail
                    .extend(chunks.into_iter().map(|c| Next::Child(ns.clone(), c)));
                if let Some(next) = cursor.tail.pop_front() {
                    return next;
                }
            }
            // Asked of agent-core only for subgraphs' interrupts.
            Some(Ok(StreamPart::Updates { .. })) if !cursor.updates => {}
            // What a subgraph's node wrote or streamed shows only with `subgraphs=True`.
            Some(Ok(StreamPart::Messages { meta, .. } | StreamPart::Custom { meta, .. }))
                if !cursor.subgraphs && !meta.ns.is_root() => {}
            Some(Ok(part)) => {
                cursor.read(part);
                if let Some(next) = cursor.tail.pop_front() {
                    return next;
                }
            }
            Some(Err(error)) => {
                // What the run streamed before it failed goes first.
                cursor.release_results(None);
                cursor.tail.push_back(Next::Failed(error));
                return cursor.tail.pop_front().unwrap_or(Next::End);
            }
            None => break,
        }
    }
    cursor.release_results(None);
    cursor.release();
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
        for result in std::mem::take(&mut cursor.paused) {
            if let Traced::Result {
                step, node, error, ..
            } = result
            {
                let interrupts = output
                    .interrupts
                    .iter()
                    .filter(|i| i.node == node)
                    .cloned()
                    .collect();
                cursor.trace(Traced::Result {
                    step,
                    node,
                    error,
                    interrupts,
                });
            }
        }
        if cursor.values {
            cursor
                .tail
                .push_back(Next::PausedValues(output.state, output.interrupts));
        }
    }
    cursor.tail.pop_front().unwrap_or(Next::End)
}

/// A part as LangGraph yields it: the chunk, or `(mode, chunk)` when several modes were
/// asked; with `subgraphs=True`, the namespace tuple first.
fn part_to_py(
    py: Python<'_>,
    part: Next,
    schema: &Schema,
    tagged: bool,
    facts: &RunFacts,
    subgraphs: bool,
) -> PyResult<Option<Py<PyAny>>> {
    if !subgraphs {
        return root_part_to_py(py, part, schema, tagged, facts);
    }
    let (ns, chunk) = match part {
        Next::Child(ns, chunk) => {
            let (mode, chunk) = crate::subgraph_stream::to_py(py, chunk)?;
            (ns, tag(py, tagged, mode, chunk)?)
        }
        // A subgraph's node's `messages` and `custom` items, under its namespace.
        Next::Part(part @ (StreamPart::Messages { .. } | StreamPart::Custom { .. })) => (
            part.namespace(),
            root_part_to_py(py, Next::Part(part), schema, tagged, facts)?,
        ),
        part => (
            Namespace::root(),
            root_part_to_py(py, part, schema, tagged, facts)?,
        ),
    };
    let Some(chunk) = chunk else {
        return Ok(None);
    };
    let ns = crate::subgraph_stream::namespace(py, &ns)?;
    let mut items = vec![ns.into_any()];
    match chunk.bind(py).cast::<PyTuple>() {
        // `(mode, chunk)` becomes `(namespace, mode, chunk)`.
        Ok(tuple) if tagged => items.extend(tuple.iter()),
        _ => items.push(chunk.into_bound(py)),
    }
    Ok(Some(PyTuple::new(py, items)?.into_any().unbind()))
}

/// A part of the graph streamed (or, for `Next::Child`, of a subgraph, without its namespace).
fn root_part_to_py(
    py: Python<'_>,
    part: Next,
    schema: &Schema,
    tagged: bool,
    facts: &RunFacts,
) -> PyResult<Option<Py<PyAny>>> {
    let part = match part {
        Next::Traced(mode, traced) => {
            let chunk = traced_to_py(py, mode, &traced, schema, facts)?;
            return tag(py, tagged, mode, chunk);
        }
        Next::End => return Ok(None),
        Next::Failed(error) => return Err(to_py_err(py, error, schema)),
        Next::Child(_, chunk) => {
            let (mode, chunk) = crate::subgraph_stream::to_py(py, chunk)?;
            return tag(py, tagged, mode, chunk);
        }
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
        StreamPart::Custom { value, .. } => match facts.outbox.take(&value) {
            Some(object) => ("custom", object.into_bound(py)),
            None => ("custom", from_json(py, &value)?),
        },
        StreamPart::Messages { chunk, .. } => match facts.outbox.take(&chunk) {
            Some(object) => ("messages", object.into_bound(py)),
            None => ("messages", from_json(py, &chunk)?),
        },
        // Other modes are never asked of agent-core.
        _ => return Ok(Some(py.None())),
    };
    tag(py, tagged, mode, chunk)
}

/// A `tasks`, `checkpoints` or `debug` item as LangGraph streams it (`agentgraph._stream`).
fn traced_to_py<'py>(
    py: Python<'py>,
    mode: &str,
    traced: &Traced,
    schema: &Schema,
    facts: &RunFacts,
) -> PyResult<Bound<'py, PyAny>> {
    let fields = PyDict::new(py);
    fields.set_item("run_id", &facts.run_id)?;
    fields.set_item("thread_id", facts.thread_id.as_deref())?;
    fields.set_item("stream", facts.outbox.state.bind(py))?;
    let state = |state: &Option<Arc<PyState>>| -> PyResult<Bound<'py, PyAny>> {
        match state {
            Some(state) => Ok(state.to_dict(py, schema)?.into_any()),
            // Before the input: the keys that start with a value (reducers').
            None => Ok(PyState::default().to_dict(py, schema)?.into_any()),
        }
    };
    let kind = match traced {
        Traced::Task { step, node, input } => {
            fields.set_item("step", step)?;
            fields.set_item("node", node)?;
            fields.set_item("input", state(input)?)?;
            "task"
        }
        Traced::Result {
            step,
            node,
            error,
            interrupts,
        } => {
            fields.set_item("step", step)?;
            fields.set_item("node", node)?;
            fields.set_item("error", error.as_deref())?;
            // How the Python node ended, as it kept it.
            fields.set_item("outcome", facts.outbox.result(py, *step, node))?;
            fields.set_item("interrupts", interrupts_list(py, interrupts)?)?;
            "task_result"
        }
        Traced::Checkpoint {
            step,
            id,
            parent,
            values,
            next,
        } => {
            fields.set_item("step", step)?;
            fields.set_item("checkpoint_id", id)?;
            fields.set_item("parent_id", parent.as_deref())?;
            fields.set_item("values", state(values)?)?;
            fields.set_item("next", next)?;
            "checkpoint"
        }
    };
    let stream = py.import("agentgraph._stream")?;
    let item = stream.call_method1("chunk", (kind, fields))?;
    if mode == "debug" {
        stream.call_method1("debug", item.cast::<PyTuple>()?)
    } else {
        item.get_item(2)
    }
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
        part_to_py(
            py,
            part,
            &self.schema,
            self.tagged,
            &self.facts,
            self.subgraphs,
        )
    }

    /// The next part, awaitable; `None` at the end.
    fn anext<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.feed.anext(py)
    }
}
