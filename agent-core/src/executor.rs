//! The run loop (Pregel super-steps): plan tasks -> run them -> apply writes at the barrier ->
//! checkpoint -> route. Everything else hangs off this loop; keep it small.
//!
//! Semantics (LangGraph's):
//! - every task of step N sees the state as of the end of step N-1 (one shared `Arc`, no copy);
//! - writes apply together at the barrier in task order — edge-triggered tasks by node name
//!   (plain string order), then `Send` tasks in the order sent — never completion order;
//! - two writes to a last-value field in one step are an error naming both nodes;
//! - a node triggered by several finished nodes runs once; a join runs once all sources ran;
//! - routers read the state as their node left it: the step's start plus that node's writes;
//! - with a checkpointer: a checkpoint for each input and after every step; outputs of tasks
//!   that finished are kept when a sibling fails or pauses, so a resume does not rerun them.

use std::collections::HashMap;
use std::ops::Deref;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use tracing::Instrument;

use crate::checkpoint::codec::{self, FieldCache};
use crate::checkpoint::{CheckpointRecord, Checkpointer, PendingWrite, Source, WriteKind};
use crate::command::{Command, Goto, Send};
use crate::compiled::{CompiledGraph, Graph, Outgoing, Target};
use crate::config::{RunConfig, new_run_id};
use crate::constants::{END, START};
use crate::context::{NodeContext, RunInfo, TaskStream};
use crate::error::{GraphError, list_names};
use crate::interrupt::{Interrupt, Interrupted};
use crate::node::{NodeError, NodeOutput};
use crate::persist::{self, Restored};
use crate::runtime::AnyContext;
use crate::state::{FieldSet, GraphState};
use crate::stream::{
    CHANNEL_CAPACITY, DebugEvent, Emitter, Event, GraphStream, StreamMode, StreamModes, StreamPart,
};

/// What a run starts from: new input, a command (resume, update, goto), or nothing (continue
/// a paused or failed thread from its checkpoint; LangGraph's `invoke(None)`).
///
/// `#[derive(GraphState)]` writes `From` impls for the state and its update, so
/// `graph.invoke(state, ..)` and `graph.invoke(update, ..)` both work.
#[derive(Debug, Clone)]
pub enum Input<S: GraphState> {
    /// New input: written by `__start__`, then START's edges fire.
    Update(S::Update),
    /// A command: resume a paused node, and/or update and route.
    Command(Command<S>),
    /// Continue from the thread's checkpoint.
    Continue,
}

impl<S: GraphState> From<Command<S>> for Input<S> {
    fn from(command: Command<S>) -> Self {
        Input::Command(command)
    }
}

/// What a run returns: the state (it derefs to it), plus how it stopped.
#[derive(Debug, Clone)]
pub struct RunOutput<S> {
    /// The state at the end of the run.
    pub state: S,
    /// Pauses requested by nodes (`interrupt()`); empty when the run finished.
    pub interrupts: Vec<Interrupt>,
    /// Nodes that would run next: non-empty when the run paused.
    pub next: Vec<String>,
    /// The last checkpoint written, when the graph has a checkpointer and a thread.
    pub checkpoint_id: Option<String>,
    /// Super-steps this run executed.
    pub steps: usize,
    /// Tasks this run executed.
    pub tasks: usize,
    /// Run-wide counters nodes added with `NodeContext::add_usage` (token usage).
    pub usage: std::collections::BTreeMap<String, u64>,
    /// The nodes this run executed, super-step by super-step.
    pub path: RunPath,
}

/// The nodes a run executed, one list per super-step in task order (a node that ran several
/// times in a step, through `Send`, is listed each time). Recorded as indices and named
/// only when read, so runs pay nothing for it.
///
/// ```
/// # use std::sync::Arc;
/// # use agent_core::{GraphState, RunConfig, StateGraph, END, START};
/// # #[derive(GraphState, Clone, Default, Debug)] struct S { n: u8 }
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), agent_core::GraphError> {
/// let graph = StateGraph::<S>::new()
///     .add_node("a", |_s: Arc<S>| async {})
///     .add_node("b", |_s: Arc<S>| async {})
///     .add_node("c", |_s: Arc<S>| async {})
///     .add_edge(START, "a")
///     .add_edge("a", "c")
///     .add_edge("a", "b")
///     .add_edge(["b", "c"], END)
///     .compile()?;
/// let out = graph.invoke(S::default(), RunConfig::default()).await?;
/// assert_eq!(out.path.to_vec(), [vec!["a"], vec!["b", "c"]]);
/// # Ok(()) }
/// ```
#[derive(Clone, Default)]
pub struct RunPath {
    names: Option<Arc<[Arc<str>]>>,
    /// Node indices of every step, concatenated.
    nodes: Vec<u32>,
    /// Where each step's nodes end in `nodes`.
    ends: Vec<u32>,
}

impl RunPath {
    fn record(&mut self, names: &Arc<[Arc<str>]>, nodes: &[usize]) {
        if self.names.is_none() {
            self.names = Some(names.clone());
        }
        self.nodes.extend(nodes.iter().map(|&n| n as u32));
        self.ends.push(self.nodes.len() as u32);
    }

    /// How many super-steps ran.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether no step ran.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The node names of each step, in order.
    pub fn steps(&self) -> impl Iterator<Item = Vec<&str>> + '_ {
        let names = self.names.as_deref().unwrap_or_default();
        let mut start = 0usize;
        self.ends.iter().map(move |&end| {
            let step = self.nodes[start..end as usize]
                .iter()
                .map(|&n| &*names[n as usize])
                .collect();
            start = end as usize;
            step
        })
    }

    /// The node names of each step, owned.
    pub fn to_vec(&self) -> Vec<Vec<String>> {
        self.steps()
            .map(|step| step.into_iter().map(str::to_owned).collect())
            .collect()
    }
}

impl std::fmt::Debug for RunPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.steps()).finish()
    }
}

impl serde::Serialize for RunPath {
    fn serialize<Ser: serde::Serializer>(&self, serializer: Ser) -> Result<Ser::Ok, Ser::Error> {
        serializer.collect_seq(self.steps())
    }
}

impl<S> RunOutput<S> {
    /// Whether the run paused (an interrupt, or a static interrupt before/after a node).
    pub fn is_paused(&self) -> bool {
        !self.interrupts.is_empty() || !self.next.is_empty()
    }

    /// The final state.
    pub fn into_state(self) -> S {
        self.state
    }
}

impl<S> Deref for RunOutput<S> {
    type Target = S;

    fn deref(&self) -> &S {
        &self.state
    }
}

/// One task of a super-step.
struct Task<S> {
    node: usize,
    /// `Some` for a `Send` task: its own input.
    input: Option<S>,
    /// Set when persisting: the task's deterministic id.
    id: Option<String>,
    /// Set when streaming: what triggered it, and its run id in the event stream.
    stream: Option<TaskStream>,
}

/// A trigger source that is not a node.
const FROM_START: usize = usize::MAX;
const FROM_JOIN: usize = usize::MAX - 1;

/// How a task ended, short of an error.
enum Done<S: GraphState> {
    Output(NodeOutput<S>),
    Paused(Interrupted),
}

/// What routes into the next step.
pub(crate) struct Frontier<S> {
    triggered: Vec<bool>,
    pub(crate) pulls: Vec<usize>,
    pub(crate) pushes: Vec<(usize, S)>,
    /// When streaming: which nodes triggered each pulled node.
    sources: Option<Vec<Vec<usize>>>,
}

impl<S> Frontier<S> {
    fn new(n: usize, track_sources: bool) -> Self {
        Frontier {
            triggered: vec![false; n],
            pulls: Vec::new(),
            pushes: Vec::new(),
            sources: track_sources.then(|| vec![Vec::new(); n]),
        }
    }

    fn trigger(&mut self, node: usize, from: usize) {
        if !self.triggered[node] {
            self.triggered[node] = true;
            self.pulls.push(node);
        }
        if let Some(sources) = &mut self.sources {
            sources[node].push(from);
        }
    }

    fn clear(&mut self) {
        for &n in &self.pulls {
            self.triggered[n] = false;
            if let Some(sources) = &mut self.sources {
                sources[n].clear();
            }
        }
        self.pulls.clear();
        self.pushes.clear();
    }

    fn is_empty(&self) -> bool {
        self.pulls.is_empty() && self.pushes.is_empty()
    }

    fn nodes(&self) -> impl Iterator<Item = usize> + '_ {
        self.pulls
            .iter()
            .copied()
            .chain(self.pushes.iter().map(|(n, _)| *n))
    }

    /// Tasks in the order they run and apply: pulls by node name, then pushes as sent.
    fn take_tasks(&mut self, rank: &[u32], names: &[Arc<str>]) -> Vec<Task<S>> {
        let mut pulls = std::mem::take(&mut self.pulls);
        pulls.sort_unstable_by_key(|&n| rank[n]);
        let mut tasks = Vec::with_capacity(pulls.len() + self.pushes.len());
        for node in pulls {
            self.triggered[node] = false;
            let stream = self.sources.as_mut().map(|sources| TaskStream {
                triggers: std::mem::take(&mut sources[node])
                    .into_iter()
                    .map(|from| match from {
                        FROM_START => START.to_owned(),
                        FROM_JOIN => "join".to_owned(),
                        n => names[n].to_string(),
                    })
                    .collect(),
                run_id: String::new(),
            });
            tasks.push(Task {
                node,
                input: None,
                id: None,
                stream,
            });
        }
        let track = self.sources.is_some();
        for (node, input) in self.pushes.drain(..) {
            tasks.push(Task {
                node,
                input: Some(input),
                id: None,
                stream: track.then(|| TaskStream {
                    triggers: vec!["send".to_owned()],
                    run_id: String::new(),
                }),
            });
        }
        tasks
    }
}

/// A run's link to its checkpointer.
pub(crate) struct Persist<S: GraphState> {
    pub(crate) saver: Arc<dyn Checkpointer>,
    pub(crate) thread_id: String,
    pub(crate) ns: String,
    /// The checkpoint the next step starts from.
    pub(crate) checkpoint_id: Option<String>,
    pub(crate) record: Option<CheckpointRecord>,
    versions: Vec<Option<String>>,
    caches: Vec<Option<FieldCache>>,
    outputs: HashMap<String, NodeOutput<S>>,
    resume: HashMap<String, Vec<serde_json::Value>>,
    pub(crate) interrupted: Vec<(String, Vec<Interrupt>)>,
    pending_input: Option<S::Update>,
    /// With `Durability::Exit`: fields written and the last step's writes, not saved yet.
    deferred: Option<(FieldSet, serde_json::Value)>,
}

/// The state of one run.
pub(crate) struct Run<'g, S: GraphState> {
    pub(crate) graph: &'g Graph<S>,
    info: Arc<RunInfo>,
    pub(crate) state: Arc<S>,
    pub(crate) step: i64,
    pub(crate) frontier: Frontier<S>,
    pub(crate) join_seen: Vec<Vec<bool>>,
    pub(crate) persist: Option<Persist<S>>,
    interrupt_before: Vec<bool>,
    interrupt_after: Vec<bool>,
    skip_before_once: bool,
    steps_run: usize,
    tasks_run: usize,
    path: RunPath,
    interrupts: Vec<Interrupt>,
    paused: bool,
    emitter: Option<Arc<Emitter<S>>>,
    /// Set for a subgraph run: every update applied, in order (its output to the parent).
    recorded: Option<Vec<S::Update>>,
}

impl<S: GraphState, C: std::marker::Send + Sync + 'static> CompiledGraph<S, C> {
    /// Runs the graph on `input` — new input (a partial state or a full one), a [`Command`]
    /// (e.g. `Command::resume(answer)`), or [`Input::Continue`] — until it finishes or pauses.
    ///
    /// With a checkpointer and `config.thread_id`, the run continues the thread: state from
    /// earlier invocations is there, and every step is checkpointed.
    pub async fn invoke(
        &self,
        input: impl Into<Input<S>>,
        config: RunConfig,
    ) -> Result<RunOutput<S>, GraphError> {
        self.run_with(input.into(), config, None).await
    }

    /// Runs the graph like [`invoke`](Self::invoke) on its own task and streams what happens,
    /// in the `modes` asked for (one mode or an array of them: items come tagged). The last
    /// item is an error if the run fails. Dropping the stream cancels the run.
    ///
    /// Needs a tokio runtime (it spawns the run).
    pub fn stream(
        &self,
        input: impl Into<Input<S>>,
        config: RunConfig,
        modes: impl Into<StreamModes>,
    ) -> GraphStream<S> {
        let (tx, rx) = tokio::sync::mpsc::channel(CHANNEL_CAPACITY);
        let emitter = Arc::new(Emitter {
            tx: tx.clone(),
            modes: modes.into(),
        });
        let graph = self.clone();
        let input = input.into();
        let task = tokio::spawn(async move {
            match graph.run_with(input, config, Some(emitter)).await {
                Ok(output) => Some(output),
                Err(error) => {
                    let _ = tx.send(Err(error)).await;
                    None
                }
            }
        });
        GraphStream {
            rx,
            task: Some(task),
        }
    }

    async fn run_with(
        &self,
        input: Input<S>,
        config: RunConfig,
        emitter: Option<Arc<Emitter<S>>>,
    ) -> Result<RunOutput<S>, GraphError> {
        let run_id = match &config.run_id {
            Some(id) => Arc::from(id.as_str()),
            None => new_run_id(),
        };
        let span = tracing::info_span!(
            "graph",
            run_id = %run_id,
            thread_id = config.thread_id.as_deref().unwrap_or(""),
        );
        async move {
            let context = self.run_context()?;
            let mut run = Run::open(&self.inner, context, config, run_id, emitter).await?;
            if run.streams(StreamMode::Events) {
                let data = match &input {
                    Input::Update(update) => serde_json::json!({ "input": to_json(update) }),
                    Input::Command(command) => {
                        serde_json::json!({ "input": { "resume": command.resume } })
                    }
                    Input::Continue => serde_json::json!({ "input": null }),
                };
                run.graph_event("on_chain_start", data).await?;
            }
            let ran = match run.feed(input).await {
                Ok(()) => run.run_steps().await,
                Err(error) => Err(error),
            };
            // With `Durability::Exit`, the run's one checkpoint (also after a failure, so the
            // thread can resume from the last step that completed).
            let flushed = run.flush().await;
            ran?;
            flushed?;
            if run.streams(StreamMode::Events) {
                let output = to_json(&(*run.state).clone().into_update());
                run.graph_event("on_chain_end", serde_json::json!({ "output": output }))
                    .await?;
            }
            Ok(run.finish())
        }
        .instrument(span)
        .await
    }
}

impl<'g, S: GraphState> Run<'g, S> {
    /// Prepares a run: loads the thread's checkpoint when there is a checkpointer and a
    /// thread id.
    pub(crate) async fn open(
        graph: &'g Graph<S>,
        context: Option<AnyContext>,
        config: RunConfig,
        run_id: Arc<str>,
        emitter: Option<Arc<Emitter<S>>>,
    ) -> Result<Self, GraphError> {
        let mut interrupt_before = graph.interrupt_before.clone();
        let mut interrupt_after = graph.interrupt_after.clone();
        for (names, mask) in [
            (&config.interrupt_before, &mut interrupt_before),
            (&config.interrupt_after, &mut interrupt_after),
        ] {
            for name in names {
                let index =
                    graph
                        .index
                        .get(name)
                        .copied()
                        .ok_or_else(|| GraphError::UnknownNode {
                            context: "RunConfig interrupts".to_owned(),
                            name: name.clone(),
                            known: graph.known_names(),
                        })?;
                mask[index] = true;
            }
        }
        let saver = match (&graph.checkpointer, &config.thread_id) {
            (Some(saver), Some(thread)) => Some((saver.clone(), thread.clone())),
            _ => None,
        };
        let ns = config.checkpoint_ns.clone();
        let checkpoint_id = config.checkpoint_id.clone();
        let info = Arc::new(RunInfo {
            run_id,
            config,
            can_pause: saver.is_some(),
            sink: emitter
                .clone()
                .map(|e| e as Arc<dyn crate::stream::NodeSink>),
            usage: std::sync::Mutex::new(std::collections::BTreeMap::new()),
            ns: Vec::new(),
            context,
        });
        let n = graph.names.len();
        let fields = S::fields().len();
        let mut run = Run {
            graph,
            info,
            state: Arc::new(S::default()),
            step: -1,
            frontier: Frontier::new(n, emitter.is_some()),
            join_seen: graph.joins.iter().map(|j| vec![false; j.sources]).collect(),
            persist: None,
            interrupt_before,
            interrupt_after,
            skip_before_once: false,
            steps_run: 0,
            tasks_run: 0,
            path: RunPath::default(),
            interrupts: Vec::new(),
            paused: false,
            emitter,
            recorded: None,
        };
        let Some((saver, thread_id)) = saver else {
            return Ok(run);
        };
        let loaded = saver.get(&thread_id, &ns, checkpoint_id.as_deref()).await?;
        if loaded.record.is_none()
            && let Some(id) = &checkpoint_id
        {
            return Err(GraphError::CheckpointNotFound {
                thread_id,
                checkpoint_id: id.clone(),
            });
        }
        let mut persist = Persist {
            saver,
            thread_id,
            ns,
            checkpoint_id: None,
            record: None,
            versions: vec![None; fields],
            caches: vec![None; fields],
            outputs: HashMap::new(),
            resume: HashMap::new(),
            interrupted: Vec::new(),
            pending_input: None,
            deferred: None,
        };
        if let Some(restored) = persist::restore(graph, loaded)? {
            let Restored {
                record,
                state,
                versions,
                caches,
                pulls,
                pushes,
                joins,
                pending_input,
                outputs,
                resume,
                interrupted,
                errors: _,
            } = restored;
            run.state = Arc::new(state);
            run.step = record.step;
            for node in pulls {
                run.frontier.trigger(node, FROM_START);
            }
            run.frontier.pushes = pushes;
            run.join_seen = joins;
            persist.checkpoint_id = Some(record.id.clone());
            persist.record = Some(record);
            persist.versions = versions;
            persist.caches = caches;
            persist.outputs = outputs;
            persist.resume = resume;
            persist.interrupted = interrupted;
            persist.pending_input = pending_input;
        }
        run.persist = Some(persist);
        Ok(run)
    }

    /// Applies what the run starts from.
    async fn feed(&mut self, input: Input<S>) -> Result<(), GraphError> {
        match input {
            Input::Update(update) => self.new_input(update).await,
            Input::Command(command) => self.command(command).await,
            Input::Continue => {
                let Some(persist) = &mut self.persist else {
                    return Err(GraphError::NoCheckpointer(
                        "continuing a run (Input::Continue)".to_owned(),
                    ));
                };
                if persist.checkpoint_id.is_none() {
                    return Err(GraphError::NothingToResume(persist.thread_id.clone()));
                }
                if let Some(update) = persist.pending_input.take() {
                    self.apply_input(update.clone())?;
                    self.checkpoint(Source::Loop, serde_json::Value::Null, S::writes(&update))
                        .await?;
                }
                self.skip_before_once = true;
                Ok(())
            }
        }
    }

    async fn new_input(&mut self, update: S::Update) -> Result<(), GraphError> {
        if self.persist.is_some() && !self.sync() {
            if let Some(persist) = &mut self.persist {
                self.step = if persist.checkpoint_id.is_some() {
                    self.step + 1
                } else {
                    -1
                };
                persist.outputs.clear();
                persist.resume.clear();
                persist.interrupted.clear();
            }
            self.frontier.clear();
            for seen in &mut self.join_seen {
                seen.iter_mut().for_each(|s| *s = false);
            }
            let written = S::writes(&update);
            let writes = serde_json::json!({ START: to_json(&update) });
            self.apply_input(update)?;
            return self.checkpoint(Source::Loop, writes, written).await;
        }
        if let Some(persist) = &mut self.persist {
            // A new input starts over from START: pending tasks of the thread are dropped.
            self.step = if persist.checkpoint_id.is_some() {
                self.step + 1
            } else {
                -1
            };
            persist.outputs.clear();
            persist.resume.clear();
            persist.interrupted.clear();
            persist.pending_input = Some(update.clone());
            self.frontier.clear();
            for seen in &mut self.join_seen {
                seen.iter_mut().for_each(|s| *s = false);
            }
            let writes = serde_json::json!({ START: to_json(&update) });
            self.save(Source::Input, writes, FieldSet::EMPTY).await?;
            if let Some(persist) = &mut self.persist {
                persist.pending_input = None;
                if let Some(id) = &persist.checkpoint_id {
                    let write = PendingWrite {
                        task_id: START.to_owned(),
                        node: START.to_owned(),
                        kind: WriteKind::Output,
                        data: codec::encode(&update).map_err(|e| storage_encode(persist, e))?,
                    };
                    persist
                        .saver
                        .put_writes(&persist.thread_id, &persist.ns, id, &[write])
                        .await?;
                }
            }
            let written = S::writes(&update);
            self.apply_input(update)?;
            return self
                .save(Source::Loop, serde_json::Value::Null, written)
                .await;
        }
        self.apply_input(update)
    }

    async fn command(&mut self, command: Command<S>) -> Result<(), GraphError> {
        let Command {
            update,
            goto,
            resume,
        } = command;
        if let Some(value) = resume {
            let Some(persist) = &mut self.persist else {
                return Err(GraphError::NoCheckpointer(
                    "resuming an interrupt".to_owned(),
                ));
            };
            if persist.interrupted.is_empty() {
                return Err(GraphError::NothingToResume(persist.thread_id.clone()));
            }
            let mut writes = Vec::new();
            for (task, interrupts) in &persist.interrupted {
                let values = persist.resume.entry(task.clone()).or_default();
                values.push(value.clone());
                let node = interrupts
                    .first()
                    .map(|i| i.node.clone())
                    .unwrap_or_default();
                writes.push(PendingWrite {
                    task_id: task.clone(),
                    node,
                    kind: WriteKind::Resume,
                    data: codec::encode(values).map_err(|e| storage_encode(persist, e))?,
                });
            }
            if let Some(id) = &persist.checkpoint_id {
                persist
                    .saver
                    .put_writes(&persist.thread_id, &persist.ns, id, &writes)
                    .await?;
            }
            self.skip_before_once = true;
        }
        if update.is_some() || !goto.is_empty() {
            // A command as input: written by `__start__`, routed by its gotos.
            let written = update.as_ref().map(S::writes).unwrap_or_default();
            let writes = serde_json::json!({ START: update.as_ref().map(to_json) });
            if let Some(update) = update {
                Arc::make_mut(&mut self.state)
                    .apply(update)
                    .map_err(|source| GraphError::Reducer {
                        node: START.to_owned(),
                        step: self.step + 1,
                        source,
                    })?;
            }
            self.fire(&Outgoing::default(), None, goto, Vec::new())?;
            self.step += 1;
            if self.persist.is_some() {
                self.checkpoint(Source::Loop, writes, written).await?;
            }
        } else if self.persist.is_none() {
            return Err(GraphError::NoCheckpointer(
                "a Command input without update or goto".to_owned(),
            ));
        }
        Ok(())
    }

    /// The input step: the input is written as if by a node `__start__`, then START's edges
    /// fire.
    fn apply_input(&mut self, input: S::Update) -> Result<(), GraphError> {
        let step = self.step;
        let state = Arc::make_mut(&mut self.state);
        state.apply(input).map_err(|source| GraphError::Reducer {
            node: START.to_owned(),
            step,
            source,
        })?;
        let graph = self.graph;
        let mut routes = Vec::new();
        for &b in &graph.start.branches {
            let branch = &graph.branches[b];
            routes.push((b, (branch.router)(&self.state).goto));
        }
        self.fire(&graph.start, None, Vec::new(), routes)?;
        self.step += 1;
        Ok(())
    }

    async fn run_steps(&mut self) -> Result<(), GraphError> {
        let limit = self.info.config.recursion_limit;
        let mut last_nodes = String::new();
        if self.streams(StreamMode::Values) {
            self.emit(StreamPart::Values(self.state.clone())).await?;
        }
        loop {
            if self.frontier.is_empty() {
                return Ok(());
            }
            if self.steps_run >= limit {
                return Err(GraphError::RecursionLimit { limit, last_nodes });
            }
            let pause_before =
                !self.skip_before_once && self.frontier.nodes().any(|n| self.interrupt_before[n]);
            self.skip_before_once = false;
            if pause_before {
                if self.persist.is_none() {
                    return Err(GraphError::NoCheckpointer("interrupt_before".to_owned()));
                }
                self.paused = true;
                return Ok(());
            }
            // When persisting, a pause must leave the step's tasks as the next ones.
            let before_step = self
                .persist
                .as_ref()
                .map(|_| (self.frontier.pulls.clone(), self.frontier.pushes.clone()));
            let mut tasks = self
                .frontier
                .take_tasks(&self.graph.rank, &self.graph.names);
            if let Some(persist) = &self.persist {
                // Before a thread's first checkpoint (Durability::Exit) ids get a placeholder
                // prefix; a pause re-prefixes them with the checkpoint it writes.
                let cp = persist.checkpoint_id.as_deref().unwrap_or("unsaved");
                let mut pushes = 0;
                for task in &mut tasks {
                    let push = task.input.as_ref().map(|_| {
                        pushes += 1;
                        pushes - 1
                    });
                    task.id = Some(persist::task_id(cp, &self.graph.names[task.node], push));
                }
            }
            if self.emitter.is_some() {
                let events = self.streams(StreamMode::Events);
                for task in &mut tasks {
                    if let Some(stream) = &mut task.stream {
                        if events {
                            stream.run_id = uuid::Uuid::now_v7().to_string();
                        }
                        self.task_started(task.node, stream).await?;
                    }
                }
            }
            let nodes: Vec<usize> = tasks.iter().map(|t| t.node).collect();
            let ids: Vec<Option<String>> = tasks.iter().map(|t| t.id.clone()).collect();
            let step_span = tracing::info_span!("step", step = self.step + 1, tasks = nodes.len());
            let done = match self.run_tasks(tasks).instrument(step_span).await {
                Ok(done) => done,
                Err(error) => {
                    // The step did not happen: its tasks stay next (what a deferred
                    // checkpoint must record).
                    if let Some((pulls, pushes)) = before_step {
                        for n in pulls {
                            self.frontier.trigger(n, FROM_START);
                        }
                        self.frontier.pushes = pushes;
                    }
                    return Err(error);
                }
            };

            let mut outputs = Vec::with_capacity(done.len());
            let mut paused = Vec::new();
            for (i, d) in done.into_iter().enumerate() {
                match d {
                    Done::Output(output) => outputs.push(output),
                    Done::Paused(interrupted) => paused.push((i, interrupted)),
                }
            }
            if !paused.is_empty() {
                if let Some((pulls, pushes)) = before_step {
                    for n in pulls {
                        self.frontier.trigger(n, FROM_START);
                    }
                    self.frontier.pushes = pushes;
                }
                return self.pause_on_interrupts(&nodes, &ids, paused).await;
            }
            // The step's writes as JSON for the checkpoint's metadata: only when a checkpoint
            // is written for this step (with Durability::Exit most steps have none).
            let sync = self.sync();
            let writes_meta = self.persist.as_ref().map(|_| {
                if !sync {
                    return serde_json::Value::Null;
                }
                let mut by_node: Vec<(String, Vec<serde_json::Value>)> = Vec::new();
                for (i, output) in outputs.iter().enumerate() {
                    let update = match output {
                        NodeOutput::Update(u) => to_json(u),
                        NodeOutput::Command(c) => {
                            c.update.as_ref().map(to_json).unwrap_or_default()
                        }
                        NodeOutput::Batch(b) => to_json(b),
                    };
                    let name = &self.graph.names[nodes[i]];
                    match by_node.iter_mut().find(|(n, _)| n.as_str() == &**name) {
                        Some((_, list)) => list.push(update),
                        None => by_node.push((name.to_string(), vec![update])),
                    }
                }
                let map: serde_json::Map<String, serde_json::Value> = by_node
                    .into_iter()
                    .map(|(name, mut list)| {
                        let value = if list.len() == 1 {
                            list.pop().unwrap_or_default()
                        } else {
                            serde_json::Value::Array(list)
                        };
                        (name, value)
                    })
                    .collect();
                serde_json::Value::Object(map)
            });
            let updates_out: Option<Vec<(usize, S::Update)>> = (self.streams(StreamMode::Updates)
                || self.streams(StreamMode::Events))
            .then(|| {
                outputs
                    .iter()
                    .zip(&nodes)
                    .flat_map(|(output, &node)| match output {
                        NodeOutput::Update(u) => vec![(node, u.clone())],
                        NodeOutput::Command(c) => {
                            c.update.clone().map(|u| (node, u)).into_iter().collect()
                        }
                        NodeOutput::Batch(b) => b.iter().map(|u| (node, u.clone())).collect(),
                    })
                    .collect()
            });
            let written = self.barrier(&nodes, outputs)?;
            if let Some(updates) = updates_out {
                if self.streams(StreamMode::Events) {
                    let mut chunk = serde_json::Map::new();
                    for (node, update) in &updates {
                        chunk.insert(self.graph.names[*node].to_string(), to_json(update));
                    }
                    self.graph_event("on_chain_stream", serde_json::json!({ "chunk": chunk }))
                        .await?;
                }
                if self.streams(StreamMode::Updates) {
                    for (node, update) in updates {
                        let node = self.graph.names[node].to_string();
                        self.emit(StreamPart::Updates { node, update }).await?;
                    }
                }
            }
            if self.streams(StreamMode::Values) {
                self.emit(StreamPart::Values(self.state.clone())).await?;
            }
            last_nodes = list_names(nodes.iter().map(|&n| &*self.graph.names[n]));
            self.step += 1;
            self.steps_run += 1;
            self.tasks_run += nodes.len();
            self.path.record(&self.graph.names, &nodes);
            if let Some(writes) = writes_meta {
                self.checkpoint(Source::Loop, writes, written).await?;
            }
            if nodes.iter().any(|&n| self.interrupt_after[n]) {
                if self.persist.is_none() {
                    return Err(GraphError::NoCheckpointer("interrupt_after".to_owned()));
                }
                self.paused = true;
                return Ok(());
            }
        }
    }

    /// Some tasks paused: keep the others' outputs as pending writes, report the interrupts.
    async fn pause_on_interrupts(
        &mut self,
        nodes: &[usize],
        ids: &[Option<String>],
        paused: Vec<(usize, Interrupted)>,
    ) -> Result<(), GraphError> {
        if self.persist.is_none() {
            let node = paused
                .first()
                .map(|(i, _)| self.graph.names[nodes[*i]].to_string())
                .unwrap_or_default();
            return Err(GraphError::NoCheckpointer(format!(
                "interrupt() in node `{node}`"
            )));
        }
        // Interrupts hang off a stored checkpoint: with Durability::Exit, write it now.
        let before = self.persist.as_ref().and_then(|p| p.checkpoint_id.clone());
        self.flush().await?;
        let Some(persist) = &mut self.persist else {
            return Ok(());
        };
        let now = persist.checkpoint_id.clone().unwrap_or_default();
        let mut writes = Vec::new();
        for (i, interrupted) in paused {
            let mut task = ids[i].clone().unwrap_or_default();
            if before.as_deref() != Some(now.as_str())
                && let Some((_, path)) = task.split_once(':')
            {
                task = format!("{now}:{path}");
            }
            let node = self.graph.names[nodes[i]].to_string();
            let interrupt = Interrupt {
                id: format!("{task}#{}", interrupted.index),
                node: node.clone(),
                value: interrupted.value,
            };
            writes.push(PendingWrite {
                task_id: task.clone(),
                node,
                kind: WriteKind::Interrupt,
                data: codec::encode(&vec![interrupt.clone()])
                    .map_err(|e| storage_encode(persist, e))?,
            });
            persist.interrupted.push((task, vec![interrupt.clone()]));
            self.interrupts.push(interrupt);
        }
        if let Some(id) = &persist.checkpoint_id {
            persist
                .saver
                .put_writes(&persist.thread_id, &persist.ns, id, &writes)
                .await?;
        }
        self.paused = true;
        Ok(())
    }

    /// Runs the step's tasks concurrently; results come back in task order. Tasks whose
    /// output was kept from an earlier attempt of this step are not run again.
    async fn run_tasks(&self, tasks: Vec<Task<S>>) -> Result<Vec<Done<S>>, GraphError> {
        let limit = self.info.config.recursion_limit;
        let remaining = limit.saturating_sub(self.steps_run);
        let step = self.step + 1;
        let graph = self.graph;
        let make = |task: Task<S>, state: &Arc<S>| {
            let name = graph.names[task.node].clone();
            let resume = match (&self.persist, &task.id) {
                (Some(p), Some(id)) => p.resume.get(id).cloned().unwrap_or_default(),
                _ => Vec::new(),
            };
            let ctx = NodeContext::new(
                name.clone(),
                step,
                remaining,
                self.info.clone(),
                resume,
                task.stream.clone(),
            );
            let input = match task.input {
                Some(input) => Arc::new(input),
                None => state.clone(),
            };
            let span = tracing::info_span!("node", node = %name, step);
            let fut = graph.nodes[task.node].call(input, ctx);
            async move {
                let started = std::time::Instant::now();
                let result = AssertUnwindSafe(fut).catch_unwind().await;
                tracing::debug!(
                    elapsed_us = started.elapsed().as_micros() as u64,
                    ok = matches!(result, Ok(Ok(_))),
                    "node finished"
                );
                result
            }
            .instrument(span)
        };
        let restored = |task: &Task<S>| -> Option<NodeOutput<S>> {
            let persist = self.persist.as_ref()?;
            persist.outputs.get(task.id.as_ref()?).cloned()
        };

        if tasks.len() == 1 {
            let Some(task) = tasks.into_iter().next() else {
                return Ok(Vec::new());
            };
            if let Some(output) = restored(&task) {
                return Ok(vec![Done::Output(output)]);
            }
            let node = task.node;
            let id = task.id.clone();
            let stream = task.stream.clone();
            let result = make(task, &self.state).await;
            let result = self.task_result(node, result);
            if let Some(stream) = &stream {
                self.task_finished(node, stream, &result).await?;
            }
            return match result {
                Ok(done) => Ok(vec![done]),
                Err(error) => {
                    self.record_failure(node, id, &error).await;
                    Err(error)
                }
            };
        }

        let count = tasks.len();
        let nodes: Vec<usize> = tasks.iter().map(|t| t.node).collect();
        let ids: Vec<Option<String>> = tasks.iter().map(|t| t.id.clone()).collect();
        let streams: Vec<Option<TaskStream>> = tasks.iter().map(|t| t.stream.clone()).collect();
        let mut results: Vec<Option<Done<S>>> = (0..count).map(|_| None).collect();
        let mut to_run = Vec::with_capacity(count);
        for (i, task) in tasks.into_iter().enumerate() {
            match restored(&task) {
                Some(output) => results[i] = Some(Done::Output(output)),
                None => to_run.push((i, task)),
            }
        }
        let max_concurrency = self.info.config.max_concurrency.unwrap_or(usize::MAX);
        let mut pending = to_run.into_iter();
        let mut set = tokio::task::JoinSet::new();
        let spawn_next =
            |set: &mut tokio::task::JoinSet<_>,
             pending: &mut std::vec::IntoIter<(usize, Task<S>)>| {
                if let Some((i, task)) = pending.next() {
                    let fut = make(task, &self.state);
                    set.spawn(async move { (i, fut.await) });
                }
            };
        for _ in 0..max_concurrency.min(count) {
            spawn_next(&mut set, &mut pending);
        }
        let mut failure: Option<GraphError> = None;
        while let Some(joined) = set.join_next().await {
            let (i, result) = match joined {
                Ok(done) => done,
                Err(error) => {
                    // Tasks catch their own panics; this is a runtime shutting down.
                    return Err(GraphError::NodePanicked {
                        node: "unknown".to_owned(),
                        step: self.step + 1,
                        message: error.to_string(),
                    });
                }
            };
            let result = self.task_result(nodes[i], result);
            if let Some(stream) = &streams[i] {
                self.task_finished(nodes[i], stream, &result).await?;
            }
            match result {
                Ok(done) => {
                    if let (Done::Output(output), Some(persist), Some(id)) = (
                        &done,
                        self.persist.as_ref().filter(|_| self.sync()),
                        &ids[i],
                    ) {
                        // Kept at once, so a crash or a failing sibling does not lose it.
                        let data = persist::encode_output(output)
                            .map_err(|e| storage_encode(persist, e))?;
                        let write = PendingWrite {
                            task_id: id.clone(),
                            node: self.graph.names[nodes[i]].to_string(),
                            kind: WriteKind::Output,
                            data,
                        };
                        if let Some(cp) = &persist.checkpoint_id {
                            persist
                                .saver
                                .put_writes(&persist.thread_id, &persist.ns, cp, &[write])
                                .await?;
                        }
                    }
                    results[i] = Some(done);
                }
                Err(error) => {
                    self.record_failure(nodes[i], ids[i].clone(), &error).await;
                    if self.persist.is_none() {
                        set.abort_all();
                        return Err(error);
                    }
                    // With a checkpointer, siblings already running may finish: their
                    // outputs are kept, so resuming the thread does not pay for them twice.
                    if failure.is_none() {
                        failure = Some(error);
                    }
                    continue;
                }
            }
            if failure.is_none() {
                spawn_next(&mut set, &mut pending);
            }
        }
        if let Some(error) = failure {
            return Err(error);
        }
        Ok(results.into_iter().flatten().collect())
    }

    /// Keeps a failed task's error next to its step's checkpoint (best effort).
    async fn record_failure(&self, node: usize, id: Option<String>, error: &GraphError) {
        let (Some(persist), Some(id)) = (&self.persist, id) else {
            return;
        };
        let Some(cp) = &persist.checkpoint_id else {
            return;
        };
        let Ok(data) = codec::encode(&error.to_string()) else {
            return;
        };
        let write = PendingWrite {
            task_id: id,
            node: self.graph.names[node].to_string(),
            kind: WriteKind::Error,
            data,
        };
        if let Err(e) = persist
            .saver
            .put_writes(&persist.thread_id, &persist.ns, cp, &[write])
            .await
        {
            tracing::warn!(error = %e, "could not record a failed task");
        }
    }

    fn task_result(
        &self,
        node: usize,
        result: Result<
            Result<NodeOutput<S>, NodeError>,
            Box<dyn std::any::Any + std::marker::Send>,
        >,
    ) -> Result<Done<S>, GraphError> {
        let name = || self.graph.names[node].to_string();
        let step = self.step + 1;
        match result {
            Ok(Ok(output)) => Ok(Done::Output(output)),
            Ok(Err(NodeError::TimedOut(after))) => Err(GraphError::NodeTimeout {
                node: name(),
                step,
                after,
            }),
            Ok(Err(NodeError::Failed(source))) => match source.downcast::<Interrupted>() {
                Ok(interrupted) => {
                    if self.info.can_pause {
                        Ok(Done::Paused(*interrupted))
                    } else {
                        Err(GraphError::NoCheckpointer(format!(
                            "interrupt() in node `{}` (compile with a checkpointer and run with a thread_id)",
                            name()
                        )))
                    }
                }
                Err(source) => Err(GraphError::Node {
                    node: name(),
                    step,
                    source,
                }),
            },
            Ok(Err(error)) => Err(GraphError::Node {
                node: name(),
                step,
                source: Box::new(error),
            }),
            Err(panic) => Err(GraphError::NodePanicked {
                node: name(),
                step,
                message: panic_message(panic.as_ref()),
            }),
        }
    }

    /// Applies the step's writes in task order, then routes. Returns the fields written.
    fn barrier(
        &mut self,
        nodes: &[usize],
        outputs: Vec<NodeOutput<S>>,
    ) -> Result<FieldSet, GraphError> {
        let graph = self.graph;
        let step = self.step + 1;
        let mut updates: Vec<Vec<S::Update>> = Vec::with_capacity(outputs.len());
        let mut gotos = Vec::with_capacity(outputs.len());
        for output in outputs {
            match output {
                NodeOutput::Update(update) => {
                    updates.push(vec![update]);
                    gotos.push(Vec::new());
                }
                NodeOutput::Command(command) => {
                    updates.push(command.update.into_iter().collect());
                    gotos.push(command.goto);
                }
                NodeOutput::Batch(batch) => {
                    updates.push(batch);
                    gotos.push(Vec::new());
                }
            }
        }

        // A last-value field takes one write per step (a batch counts as one task's write).
        let task_writes = |batch: &[S::Update]| {
            batch
                .iter()
                .fold(FieldSet::EMPTY, |acc, u| acc.union(S::writes(u)))
        };
        let mut written = FieldSet::EMPTY;
        let mut all_written = FieldSet::EMPTY;
        for (i, batch) in updates.iter().enumerate() {
            let writes = task_writes(batch);
            all_written = all_written.union(writes);
            let writes = writes.intersection(graph.last_value);
            let clash = writes.intersection(written);
            if let Some(field) = clash.iter().next() {
                let first = updates[..i]
                    .iter()
                    .position(|b| task_writes(b).contains(field))
                    .unwrap_or(0);
                return Err(GraphError::InvalidUpdate {
                    field: S::fields()[field].name,
                    first: graph.names[nodes[first]].to_string(),
                    second: graph.names[nodes[i]].to_string(),
                    step,
                });
            }
            written = written.union(writes);
        }

        // Routers read the state as their own node left it. With one task that is the state
        // after the barrier; with several, a private copy of the step's start plus that
        // task's writes (only for tasks that have conditional edges).
        let single = nodes.len() == 1;
        let mut routes: Vec<Vec<(usize, Vec<Goto<S>>)>> =
            (0..nodes.len()).map(|_| Vec::new()).collect();
        if !single {
            for (i, &node) in nodes.iter().enumerate() {
                if graph.out[node].branches.is_empty() {
                    continue;
                }
                let mut local = (*self.state).clone();
                for update in &updates[i] {
                    apply_to(&mut local, graph, step, node, update.clone())?;
                }
                for &b in &graph.out[node].branches {
                    routes[i].push((b, (graph.branches[b].router)(&local).goto));
                }
            }
        }

        let state = Arc::make_mut(&mut self.state);
        for (i, batch) in updates.into_iter().enumerate() {
            for update in batch {
                if let Some(record) = &mut self.recorded {
                    record.push(update.clone());
                }
                apply_to(state, graph, step, nodes[i], update)?;
            }
        }

        if single {
            let node = nodes[0];
            for &b in &graph.out[node].branches {
                routes[0].push((b, (graph.branches[b].router)(&self.state).goto));
            }
        }

        for (&node, (goto, routes)) in nodes.iter().zip(gotos.into_iter().zip(routes)) {
            self.fire(&graph.out[node], Some(node), goto, routes)?;
        }
        self.settle_joins();
        Ok(all_written)
    }

    /// Joins whose sources have all run trigger their target.
    pub(crate) fn settle_joins(&mut self) {
        for (j, join) in self.graph.joins.iter().enumerate() {
            let seen = &mut self.join_seen[j];
            if seen.iter().all(|s| *s) {
                seen.iter_mut().for_each(|s| *s = false);
                self.frontier.trigger(join.target, FROM_JOIN);
            }
        }
    }

    /// Fires what a finished node (or START) leads to: static edges, joins, its `Command`
    /// gotos, then its routers' results.
    pub(crate) fn fire(
        &mut self,
        outgoing: &Outgoing,
        from_index: Option<usize>,
        goto: Vec<Goto<S>>,
        routes: Vec<(usize, Vec<Goto<S>>)>,
    ) -> Result<(), GraphError> {
        let graph = self.graph;
        let from_name: Arc<str> = match from_index {
            Some(n) => graph.names[n].clone(),
            None => Arc::from(START),
        };
        let from = &*from_name;
        let source = from_index.unwrap_or(FROM_START);
        for &t in &outgoing.targets {
            self.frontier.trigger(t, source);
        }
        for &(join, slot) in &outgoing.joins {
            self.join_seen[join][slot] = true;
        }
        for g in goto {
            match g {
                Goto::Node(name) => {
                    if name != END {
                        let target = self.node_named(&name, from, "Command goto")?;
                        self.frontier.trigger(target, source);
                    }
                }
                Goto::Send(send) => self.push(send, from, "Send")?,
            }
        }
        for (b, gotos) in routes {
            let branch = &graph.branches[b];
            for g in gotos {
                match g {
                    Goto::Send(send) => self.push(send, &branch.from, "Send")?,
                    Goto::Node(key) => {
                        let target = match &branch.map {
                            Some(map) => {
                                *map.get(&key).ok_or_else(|| GraphError::RouteNotInPathMap {
                                    from: branch.from.to_string(),
                                    key: key.clone(),
                                    known: branch.keys.clone(),
                                })?
                            }
                            None if key == END => Target::End,
                            None => Target::Node(self.node_named(&key, &branch.from, "router")?),
                        };
                        if let Target::Node(t) = target {
                            self.frontier.trigger(t, source);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    fn push(&mut self, send: Send<S>, from: &str, what: &'static str) -> Result<(), GraphError> {
        let node = self.node_named(&send.node, from, what)?;
        self.frontier.pushes.push((node, send.input));
        Ok(())
    }

    fn node_named(&self, name: &str, from: &str, what: &'static str) -> Result<usize, GraphError> {
        self.graph
            .index
            .get(name)
            .copied()
            .ok_or_else(|| GraphError::UnknownTarget {
                what,
                from: from.to_owned(),
                target: name.to_owned(),
                known: self.graph.known_names(),
            })
    }

    /// Writes a checkpoint of the run's position: new blobs for the fields written since the
    /// last one, the frontier, and metadata.
    pub(crate) async fn save(
        &mut self,
        source: Source,
        writes: serde_json::Value,
        written: FieldSet,
    ) -> Result<(), GraphError> {
        let Some(persist) = &mut self.persist else {
            return Ok(());
        };
        let id = persist::new_checkpoint_id();
        let fields = S::fields();
        let mut blobs = Vec::with_capacity(written.len());
        for index in written.iter() {
            let field = fields[index].name;
            let mut bytes = Vec::new();
            self.state
                .serialize_field(
                    index,
                    &mut rmp_serde::Serializer::new(&mut bytes).with_struct_map(),
                )
                .map_err(|e| storage_encode(persist, format!("field `{field}`: {e}")))?;
            let (blob, cache) = codec::make_blob(field, &id, bytes, persist.caches[index].as_ref());
            persist.caches[index] = Some(cache);
            persist.versions[index] = Some(id.clone());
            blobs.push(blob);
        }
        let body = persist::encode_body(
            self.graph,
            &self.frontier.pulls,
            &self.frontier.pushes,
            &self.join_seen,
            persist.pending_input.is_some(),
        )
        .map_err(|e| storage_encode(persist, e))?;
        let mut metadata = serde_json::Map::new();
        for (k, v) in &self.info.config.metadata {
            metadata.insert(k.clone(), v.clone());
        }
        metadata.insert("source".to_owned(), source.as_str().into());
        metadata.insert("step".to_owned(), self.step.into());
        metadata.insert("writes".to_owned(), writes);
        metadata.insert("run_id".to_owned(), self.info.run_id.to_string().into());
        let record = CheckpointRecord {
            thread_id: persist.thread_id.clone(),
            ns: persist.ns.clone(),
            id: id.clone(),
            parent_id: persist.checkpoint_id.clone(),
            step: self.step,
            created_at_ms: persist::now_ms(),
            metadata: serde_json::Value::Object(metadata),
            versions: fields
                .iter()
                .zip(&persist.versions)
                .filter_map(|(f, v)| v.as_ref().map(|v| (f.name.to_owned(), v.clone())))
                .collect(),
            body,
        };
        persist.saver.put(&record, &blobs).await?;
        persist.checkpoint_id = Some(id.clone());
        persist.record = Some(record);
        persist.outputs.clear();
        persist.resume.clear();
        persist.interrupted.clear();
        if self.streams(StreamMode::Debug) {
            let mut next: Vec<usize> = self.frontier.nodes().collect();
            next.sort_unstable_by_key(|&n| self.graph.rank[n]);
            next.dedup();
            self.emit(StreamPart::Debug(DebugEvent::Checkpoint {
                step: self.step,
                checkpoint_id: id,
                next: next
                    .iter()
                    .map(|&n| self.graph.names[n].to_string())
                    .collect(),
            }))
            .await?;
        }
        Ok(())
    }

    /// Runs this graph as a node of a parent graph over the same state: it starts from the
    /// parent's snapshot, streams its nodes' custom/messages/events to the parent's caller,
    /// and returns the updates it applied, in order, as the parent task's writes.
    pub(crate) async fn run_subgraph(
        graph: &'g Graph<S>,
        context: Option<AnyContext>,
        state: Arc<S>,
        ctx: NodeContext,
    ) -> Result<NodeOutput<S>, GraphError> {
        // The subgraph's own context, else its parent's.
        let context = context.or_else(|| ctx.context_any());
        let parent = ctx.config();
        let config = RunConfig {
            recursion_limit: parent.recursion_limit,
            tags: parent.tags.clone(),
            metadata: parent.metadata.clone(),
            max_concurrency: parent.max_concurrency,
            ..RunConfig::default()
        };
        let mut run = Run::open(graph, context.clone(), config, new_run_id(), None).await?;
        let mut ns = ctx.ns().to_vec();
        ns.push(ctx.node().to_owned());
        let sink = ctx.sink();
        run.info = Arc::new(RunInfo {
            run_id: run.info.run_id.clone(),
            config: run.info.config.clone(),
            can_pause: false,
            sink: sink.clone(),
            usage: std::sync::Mutex::new(std::collections::BTreeMap::new()),
            ns,
            context,
        });
        run.frontier = Frontier::new(run.graph.names.len(), sink.is_some());
        run.state = state;
        run.recorded = Some(Vec::new());
        let graph_ref = run.graph;
        let mut routes = Vec::new();
        for &b in &graph_ref.start.branches {
            routes.push((b, (graph_ref.branches[b].router)(&run.state).goto));
        }
        run.fire(&graph_ref.start, None, Vec::new(), routes)?;
        run.step = 0;
        run.run_steps().await?;
        if let Ok(usage) = run.info.usage.lock() {
            for (key, amount) in usage.iter() {
                ctx.add_usage(key, *amount);
            }
        }
        Ok(NodeOutput::Batch(run.recorded.take().unwrap_or_default()))
    }

    fn sync(&self) -> bool {
        self.info.config.durability == crate::config::Durability::Sync
    }

    /// A checkpoint of the run's position: written now (`Durability::Sync`) or when the run
    /// ends (`Durability::Exit`).
    async fn checkpoint(
        &mut self,
        source: Source,
        writes: serde_json::Value,
        written: FieldSet,
    ) -> Result<(), GraphError> {
        if self.sync() {
            return self.save(source, writes, written).await;
        }
        if let Some(persist) = &mut self.persist {
            let fields = persist
                .deferred
                .take()
                .map(|(f, _)| f)
                .unwrap_or_default()
                .union(written);
            persist.deferred = Some((fields, writes));
        }
        Ok(())
    }

    /// Writes the deferred checkpoint, if any.
    async fn flush(&mut self) -> Result<(), GraphError> {
        let deferred = self.persist.as_mut().and_then(|p| p.deferred.take());
        match deferred {
            Some((written, writes)) => self.save(Source::Loop, writes, written).await,
            None => Ok(()),
        }
    }

    fn streams(&self, mode: StreamMode) -> bool {
        self.emitter.as_ref().is_some_and(|e| e.modes.has(mode))
    }

    async fn emit(&self, part: StreamPart<S>) -> Result<(), GraphError> {
        if let Some(emitter) = &self.emitter
            && !emitter.send(part).await
        {
            return Err(GraphError::Cancelled);
        }
        Ok(())
    }

    fn event(
        &self,
        event: &str,
        name: &str,
        run_id: String,
        parent_ids: Vec<String>,
        metadata: serde_json::Value,
        data: serde_json::Value,
    ) -> StreamPart<S> {
        StreamPart::Event(Event {
            event: event.to_owned(),
            name: name.to_owned(),
            run_id,
            parent_ids,
            tags: self.info.config.tags.clone(),
            metadata,
            data,
        })
    }

    async fn graph_event(&self, event: &str, data: serde_json::Value) -> Result<(), GraphError> {
        let metadata = serde_json::json!({ "thread_id": self.info.config.thread_id });
        let part = self.event(
            event,
            "LangGraph",
            self.info.run_id.to_string(),
            Vec::new(),
            metadata,
            data,
        );
        self.emit(part).await
    }

    async fn node_event(
        &self,
        event: &str,
        node: usize,
        stream: &TaskStream,
        data: serde_json::Value,
    ) -> Result<(), GraphError> {
        let metadata = serde_json::json!({
            "langgraph_node": &*self.graph.names[node],
            "langgraph_step": self.step + 1,
            "langgraph_triggers": stream.triggers,
            "thread_id": self.info.config.thread_id,
        });
        let part = self.event(
            event,
            &self.graph.names[node],
            stream.run_id.clone(),
            vec![self.info.run_id.to_string()],
            metadata,
            data,
        );
        self.emit(part).await
    }

    /// Stream items for a task that is about to run.
    async fn task_started(&self, node: usize, stream: &TaskStream) -> Result<(), GraphError> {
        if self.streams(StreamMode::Debug) {
            self.emit(StreamPart::Debug(DebugEvent::Task {
                step: self.step + 1,
                node: self.graph.names[node].to_string(),
                triggers: stream.triggers.clone(),
            }))
            .await?;
        }
        if self.streams(StreamMode::Events) {
            self.node_event(
                "on_chain_start",
                node,
                stream,
                serde_json::json!({ "input": null }),
            )
            .await?;
        }
        Ok(())
    }

    /// Stream items for a task that finished (in completion order).
    async fn task_finished(
        &self,
        node: usize,
        stream: &TaskStream,
        done: &Result<Done<S>, GraphError>,
    ) -> Result<(), GraphError> {
        let update = match done {
            Ok(Done::Output(NodeOutput::Update(u))) => to_json(u),
            Ok(Done::Output(NodeOutput::Batch(b))) => to_json(b),
            Ok(Done::Output(NodeOutput::Command(c))) => {
                c.update.as_ref().map(to_json).unwrap_or_default()
            }
            _ => serde_json::Value::Null,
        };
        if self.streams(StreamMode::Debug) {
            self.emit(StreamPart::Debug(DebugEvent::TaskResult {
                step: self.step + 1,
                node: self.graph.names[node].to_string(),
                result: update.clone(),
                error: done.as_ref().err().map(ToString::to_string),
            }))
            .await?;
        }
        if self.streams(StreamMode::Events) && matches!(done, Ok(Done::Output(_))) {
            self.node_event(
                "on_chain_stream",
                node,
                stream,
                serde_json::json!({ "chunk": update }),
            )
            .await?;
            self.node_event(
                "on_chain_end",
                node,
                stream,
                serde_json::json!({ "output": update }),
            )
            .await?;
        }
        Ok(())
    }

    pub(crate) fn clear_frontier(&mut self) {
        self.frontier.clear();
    }

    pub(crate) fn finish(self) -> RunOutput<S> {
        let next = if self.paused {
            let mut next: Vec<usize> = self.frontier.nodes().collect();
            next.sort_unstable_by_key(|&n| self.graph.rank[n]);
            next.dedup();
            next.iter()
                .map(|&n| self.graph.names[n].to_string())
                .collect()
        } else {
            Vec::new()
        };
        let checkpoint_id = self.persist.as_ref().and_then(|p| p.checkpoint_id.clone());
        let usage = self
            .info
            .usage
            .lock()
            .map(|u| u.clone())
            .unwrap_or_default();
        RunOutput {
            usage,
            state: Arc::try_unwrap(self.state).unwrap_or_else(|shared| (*shared).clone()),
            interrupts: self.interrupts,
            next,
            checkpoint_id,
            steps: self.steps_run,
            tasks: self.tasks_run,
            path: self.path,
        }
    }
}

pub(crate) fn apply_to<S: GraphState>(
    state: &mut S,
    graph: &Graph<S>,
    step: i64,
    node: usize,
    update: S::Update,
) -> Result<(), GraphError> {
    state.apply(update).map_err(|source| GraphError::Reducer {
        node: graph.names[node].to_string(),
        step,
        source,
    })
}

fn to_json<T: serde::Serialize>(value: &T) -> serde_json::Value {
    serde_json::to_value(value).unwrap_or(serde_json::Value::Null)
}

fn storage_encode<S: GraphState>(persist: &Persist<S>, detail: String) -> GraphError {
    GraphError::Storage {
        backend: persist.saver.backend(),
        detail: format!("encoding for thread `{}`: {detail}", persist.thread_id),
    }
}

fn panic_message(panic: &(dyn std::any::Any + std::marker::Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "non-string panic payload".to_owned()
    }
}
