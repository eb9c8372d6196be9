//! The executor: Pregel super-steps. This file is the loop — plan -> run -> barrier -> emit ->
//! durable -> route — and the entry points that start it; each concern lives in a room of its
//! own:
//!
//! - [`algo`]: the pure algorithm (frontier, task order, triggers, joins, the barrier); no I/O;
//! - [`runner`]: running a step's tasks; every finished task becomes one `TaskWrites`;
//! - [`input`]: where a run starts (load the thread, apply input, commands, resume);
//! - [`durable`]: checkpoints and pending writes (`Sync` / `Async` / `Exit`), the only room
//!   that talks to a checkpointer;
//! - [`emit`]: stream items for the modes the caller asked for;
//! - [`subgraph`]: a compiled graph run as one task of its parent;
//! - [`output`]: what a run returns.

mod algo;
mod durable;
mod emit;
mod input;
mod output;
mod runner;
mod subgraph;

use std::sync::Arc;

use tracing::Instrument;

use crate::checkpoint::Source;
use crate::command::Command;
use crate::compiled::{CompiledGraph, Graph};
use crate::config::{RunConfig, new_run_id};
use crate::context::RunInfo;
use crate::error::{GraphError, list_names};
use crate::interrupt::{Interrupt, Interrupted};
use crate::state::GraphState;
use crate::stream::{CHANNEL_CAPACITY, Emitter, GraphStream, StreamMode, StreamModes};
use crate::telemetry;

pub(crate) use algo::{Frontier, Task, route};
pub(crate) use durable::{Durable, Restored, Writer, restore, shared_table, task_id};
pub use output::{RunOutput, RunPath};
pub(crate) use runner::FirstPolls;
use runner::{TaskWrites, to_json};
pub(crate) use subgraph::{APPLIED as SUBGRAPH_APPLIED, ChildStart, child_ns};

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

/// The state of one run.
pub(crate) struct Run<'g, S: GraphState> {
    pub(crate) graph: &'g Graph<S>,
    info: Arc<RunInfo>,
    pub(crate) state: Arc<S>,
    /// The step of the last checkpointed position (-1 before a thread's first input).
    pub(crate) step: i64,
    pub(crate) frontier: Frontier<S>,
    pub(crate) durable: Option<Durable<S>>,
    interrupt_before: Vec<bool>,
    interrupt_after: Vec<bool>,
    /// Set when resuming: the first step does not pause before its nodes again.
    skip_before_once: bool,
    steps_run: usize,
    tasks_run: usize,
    path: RunPath,
    interrupts: Vec<Interrupt>,
    paused: bool,
    emitter: Option<Arc<Emitter<S>>>,
    /// Set for a subgraph run: every update applied, in order (its output to the parent).
    recorded: Option<Vec<S::Update>>,
    /// Where nodes with a cache policy find and keep their results.
    cache: Option<Arc<dyn crate::cache::NodeCache>>,
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
        let emitter = Arc::new(Emitter::new(tx.clone(), modes.into()));
        let graph = self.clone();
        let input = input.into();
        // The run's span nests under the caller's, not under nothing (the spawned task has
        // no current span of its own).
        let parent = tracing::Span::current();
        let task = tokio::spawn(
            async move {
                match graph.run_with(input, config, Some(emitter)).await {
                    Ok(output) => Some(output),
                    Err(error) => {
                        let _ = tx.send(Err(error)).await;
                        None
                    }
                }
            }
            .instrument(parent),
        );
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
        let span = telemetry::run_span(
            self.name(),
            &run_id,
            config.thread_id.as_deref(),
            config.durability,
            false,
        );
        let mut config = config;
        if config.store.is_none() {
            config.store = self.store.clone();
        }
        let recorded = span.clone();
        let result = async move {
            let context = self.run_context()?;
            let mut run = Run::open(&self.inner, context, config, run_id, emitter).await?;
            run.cache = self.cache.clone();
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
            run.record_end(&tracing::Span::current());
            Ok(run.finish())
        }
        .instrument(span)
        .await;
        if let Err(error) = &result {
            telemetry::record_error(&recorded, telemetry::graph_error_type(error), error);
        }
        result
    }
}

impl<S: GraphState> Run<'_, S> {
    /// The super-step loop: until nothing is triggered, or the run pauses.
    async fn run_steps(&mut self) -> Result<(), GraphError> {
        let limit = self.info.config.recursion_limit;
        // The step's nodes, refilled every step (no allocation a step).
        let mut nodes: Vec<usize> = Vec::new();
        self.emit_values().await?;
        loop {
            if self.frontier.is_empty() {
                return Ok(());
            }
            if self.steps_run >= limit {
                let last_nodes = list_names(self.path.last_step());
                return Err(GraphError::RecursionLimit { limit, last_nodes });
            }
            if self.pause_before()? {
                return Ok(());
            }
            // Durable: a failed store stops the run before it pays for more tasks; a store
            // that fell behind holds it back.
            self.store_ready().await?;

            // Plan: the step's tasks, in the order they run and apply.
            let mut tasks = self.frontier.take_tasks(self.graph);
            self.name_tasks(&mut tasks);
            if let Err(error) = self.tasks_started(&mut tasks).await {
                self.frontier.put_back(tasks);
                return Err(error);
            }

            // Run: every task on the state as of the end of the last step.
            let span = telemetry::step_span(self.step + 1, &tasks, &self.graph.names);
            let (writes, paused) = match self.run_tasks(&tasks).instrument(span).await {
                Ok(done) => done,
                Err(error) => {
                    // The step did not happen: its tasks stay next.
                    self.frontier.put_back(tasks);
                    return Err(self.store_failure_or(error));
                }
            };
            if !paused.is_empty() {
                return self.pause_on_interrupts(tasks, writes, paused).await;
            }

            // Barrier: the writes apply in task order; what they trigger is the next step.
            let metadata = self.writes_metadata(&writes);
            let updates = self.step_updates(&writes);
            nodes.clear();
            nodes.extend(tasks.iter().map(|t| t.node));
            let written = crate::route::routing(&self.info.run_id, || {
                algo::barrier(
                    self.graph,
                    &mut self.state,
                    self.step + 1,
                    writes,
                    &mut self.frontier,
                    self.recorded.as_mut(),
                    self.durable.as_mut().map(|d| &mut d.rewritten),
                )
            })?;
            self.step_emitted(updates).await?;
            self.step += 1;
            self.steps_run += 1;
            self.tasks_run += nodes.len();
            self.path.record(&self.graph.names, &nodes);

            // Durable: a checkpoint of the new position.
            self.checkpoint(Source::Loop, metadata, written, &nodes)
                .await?;

            // Route: a static interrupt after one of the step's nodes pauses here.
            if nodes.iter().any(|&n| self.interrupt_after[n]) {
                return self.pause("interrupt_after");
            }
            self.frontier.recycle(tasks);
        }
    }

    /// Whether the next step pauses before it runs (`interrupt_before` one of its nodes).
    fn pause_before(&mut self) -> Result<bool, GraphError> {
        let pause =
            !self.skip_before_once && self.frontier.nodes().any(|n| self.interrupt_before[n]);
        self.skip_before_once = false;
        if pause {
            self.pause("interrupt_before")?;
        }
        Ok(pause)
    }

    /// Pauses the run (a static interrupt), which needs a checkpointer.
    fn pause(&mut self, what: &str) -> Result<(), GraphError> {
        if self.durable.is_none() {
            return Err(GraphError::NoCheckpointer(what.to_owned()));
        }
        self.paused = true;
        Ok(())
    }

    /// Some tasks paused on `interrupt()`: the step did not happen (its tasks stay next, the
    /// finished ones' writes are kept), and the interrupts are stored and reported.
    async fn pause_on_interrupts(
        &mut self,
        tasks: Vec<Task<S>>,
        writes: Vec<TaskWrites<S>>,
        paused: Vec<(usize, Interrupted)>,
    ) -> Result<(), GraphError> {
        if self.durable.is_none() {
            let node = paused
                .first()
                .map(|(i, _)| self.graph.names[tasks[*i].node].to_string())
                .unwrap_or_default();
            return Err(GraphError::NoCheckpointer(format!(
                "interrupt() in node `{node}`"
            )));
        }
        // The finished tasks' writes (`Sync` stored them as they landed), so a resume does not
        // run them again; encoded after the step's checkpoint is stored (with `Exit`, now), so
        // they may reference its shared values.
        let before = self.durable.as_ref().and_then(|d| d.checkpoint_id.clone());
        let done: Vec<(Option<Arc<str>>, usize)> = (0..tasks.len())
            .filter(|i| !paused.iter().any(|(p, _)| p == i))
            .map(|i| (tasks[i].id.clone(), tasks[i].node))
            .collect();
        let paused = paused
            .into_iter()
            .map(|(i, interrupted)| (tasks[i].id.clone(), tasks[i].node, interrupted))
            .collect();
        self.frontier.put_back(tasks);
        let mut finished = Vec::new();
        if !self.sync() {
            self.flush().await?;
            for ((id, node), output) in done.iter().zip(&writes) {
                finished.extend(self.pending_of(id.as_deref(), *node, output)?);
            }
        }
        let known = self.interrupts.len();
        self.store_interrupts(before, paused, finished).await?;
        self.paused = true;
        let new = self.interrupts.get(known..).unwrap_or_default();
        self.interrupts_emitted(new).await
    }

    /// Records on the run's `span` how it ended: steps and tasks run, whether it paused.
    /// The run's id.
    pub(crate) fn run_id(&self) -> &Arc<str> {
        &self.info.run_id
    }

    pub(crate) fn record_end(&self, span: &tracing::Span) {
        if span.is_disabled() {
            return;
        }
        span.record("agentgraph.steps", telemetry::int(self.steps_run));
        span.record("agentgraph.tasks", telemetry::int(self.tasks_run));
        if self.paused {
            span.record("agentgraph.interrupted", true);
        }
    }

    /// The run's output.
    pub(crate) fn finish(self) -> RunOutput<S> {
        let next = if self.paused {
            self.frontier.next_names(self.graph)
        } else {
            Vec::new()
        };
        let checkpoint_id = self
            .durable
            .as_ref()
            .and_then(|d| d.checkpoint_id.as_deref().map(str::to_owned));
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
            paused: self.paused,
            checkpoint_id,
            steps: self.steps_run,
            tasks: self.tasks_run,
            path: self.path,
        }
    }
}
