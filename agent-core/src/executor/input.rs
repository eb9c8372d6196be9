//! Input and resume: where a run starts. [`Run::open`] loads where the thread stands (with a
//! checkpointer and a thread id); [`Run::feed`] applies what the run starts from — new input
//! (the input step, written by `__start__`), a [`Command`] (resume values, an update, gotos),
//! or nothing (continue a paused or failed thread).

use std::sync::Arc;

use crate::checkpoint::{ListFilter, Source};
use crate::command::Command;
use crate::compiled::{Graph, Outgoing};
use crate::config::{Durability, RunConfig};
use crate::constants::START;
use crate::context::RunInfo;
use crate::error::GraphError;
use crate::runtime::AnyContext;
use crate::state::{FieldSet, GraphState};
use crate::stream::Emitter;

use super::algo::{self, FROM_START, Frontier};
use super::durable::{Durable, Restored};
use super::runner::to_json;
use super::{Input, Run, RunPath};

impl<'g, S: GraphState> Run<'g, S> {
    /// Prepares a run: resolves the per-run interrupts and loads the thread's checkpoint when
    /// there is a checkpointer and a thread id.
    pub(crate) async fn open(
        graph: &'g Graph<S>,
        context: Option<AnyContext>,
        config: RunConfig,
        run_id: Arc<str>,
        emitter: Option<Arc<Emitter<S>>>,
    ) -> Result<Self, GraphError> {
        Self::open_with(graph, None, false, context, config, run_id, emitter).await
    }

    /// [`open`](Self::open), checkpointing through `writer` when given (a subgraph uses its
    /// parent's) instead of to the graph's own checkpointer; with `fresh`, the run's
    /// namespace holds nothing yet and no checkpoint is looked for.
    pub(crate) async fn open_with(
        graph: &'g Graph<S>,
        writer: Option<super::Writer>,
        fresh: bool,
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
        // A writer per run: through the run's own checkpointer when its config gives one (a
        // wrapper that refuses writes once the run is cancelled, a fenced saver), else the
        // graph's. A subgraph run is handed its parent's.
        let writer = match (writer, &config.thread_id) {
            (Some(writer), Some(_)) => Some(writer),
            (None, Some(_)) => config
                .checkpointer
                .clone()
                .or_else(|| graph.checkpointer.clone())
                .map(super::Writer::new),
            _ => None,
        };
        let thread_id = writer.as_ref().and(config.thread_id.clone());
        let ns = config.checkpoint_ns.clone();
        let checkpoint_id = config.checkpoint_id.clone();
        let durability = config.durability;
        let info = Arc::new(RunInfo {
            event_parents: vec![run_id.to_string()],
            run_id,
            names: graph.names.clone(),
            config,
            can_pause: writer.is_some(),
            writer: writer.clone(),
            sink: emitter
                .clone()
                .map(|e| e as Arc<dyn crate::stream::NodeSink>),
            usage: std::sync::Mutex::new(std::collections::BTreeMap::new()),
            ns: crate::stream::Namespace::root(),
            context,
            replay: std::sync::OnceLock::new(),
        });
        let mut run = Run {
            graph,
            info,
            state: Arc::new(S::default()),
            step: -1,
            frontier: Frontier::new(graph, emitter.is_some()),
            durable: None,
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
            cache: None,
        };
        let (Some(writer), Some(thread_id)) = (writer, thread_id) else {
            return Ok(run);
        };
        let (durable, restored) = Durable::open(
            graph,
            writer,
            thread_id,
            ns,
            checkpoint_id,
            durability,
            fresh,
        )
        .await?;
        if let Some(Restored {
            record,
            state,
            pulls,
            pushes,
            joins,
            ..
        }) = restored
        {
            run.state = Arc::new(state);
            run.step = record.step;
            for node in pulls {
                run.frontier.trigger(node, FROM_START);
            }
            run.frontier.pushes = pushes;
            run.frontier.joins = joins;
        }
        run.durable = Some(durable);
        Ok(run)
    }

    /// Applies what the run starts from.
    pub(crate) async fn feed(&mut self, input: Input<S>) -> Result<(), GraphError> {
        match input {
            Input::Update(update) => self.new_input(update).await,
            Input::Command(command) => self.command(command).await,
            Input::Continue => self.continue_thread().await,
        }
    }

    /// New input starts over from START: pending tasks of the thread are dropped.
    async fn new_input(&mut self, update: S::Update) -> Result<(), GraphError> {
        let Some(durable) = &mut self.durable else {
            return self.apply_input(update);
        };
        self.step = if durable.checkpoint_id.is_some() {
            self.step + 1
        } else {
            -1
        };
        durable.clear_step();
        self.frontier.clear();
        self.frontier.reset_joins();
        let written = S::writes(&update);
        let writes = self
            .info
            .config
            .writes_metadata
            .then(|| serde_json::json!({ START: to_json(&update) }));
        if durable.durability == Durability::Exit {
            self.apply_input(update)?;
            return self
                .checkpoint(Source::Loop, writes, written, &[FROM_START])
                .await;
        }
        self.save_input(update, writes).await
    }

    /// A command: resume values for the paused tasks, then its update and gotos as input.
    async fn command(&mut self, command: Command<S>) -> Result<(), GraphError> {
        let Command {
            update,
            goto,
            resume,
            graph,
        } = command;
        if graph == crate::command::CommandGraph::Parent {
            return Err(GraphError::InvalidInput(
                "a Command given as a run's input addresses this graph; drop `.to_parent()`"
                    .to_owned(),
            ));
        }
        if let Some(value) = resume {
            self.store_resume(value).await?;
            self.skip_before_once = true;
        }
        if update.is_none() && goto.is_empty() {
            if self.durable.is_none() {
                return Err(GraphError::NoCheckpointer(
                    "a Command input without update or goto".to_owned(),
                ));
            }
            return Ok(());
        }
        // A command as input: written by `__start__`, routed by its gotos.
        let written = update.as_ref().map(S::writes).unwrap_or_default();
        let writes = self
            .info
            .config
            .writes_metadata
            .then(|| serde_json::json!({ START: update.as_ref().map(to_json) }));
        if let Some(update) = update {
            algo::apply_tracked(
                Arc::make_mut(&mut self.state),
                START,
                self.step + 1,
                update,
                self.durable.as_mut().map(|d| &mut d.rewritten),
            )?;
        }
        self.frontier
            .fire(self.graph, &Outgoing::default(), None, goto, Vec::new())?;
        self.step += 1;
        if self.durable.is_some() {
            self.checkpoint(Source::Loop, writes, written, &[FROM_START])
                .await?;
        }
        Ok(())
    }

    /// Continues a paused or failed thread from its checkpoint (LangGraph's `invoke(None)`).
    async fn continue_thread(&mut self) -> Result<(), GraphError> {
        let Some(durable) = &mut self.durable else {
            return Err(GraphError::NoCheckpointer(
                "continuing a run (Input::Continue)".to_owned(),
            ));
        };
        if durable.checkpoint_id.is_none() {
            return Err(GraphError::NothingToResume(durable.thread_id.to_string()));
        }
        self.bound_replay();
        if self.replay_forks().await? {
            self.step += 1;
            self.checkpoint(Source::Fork, None, FieldSet::EMPTY, &[])
                .await?;
        }
        let Some(durable) = &mut self.durable else {
            return Ok(());
        };
        if let Some(update) = durable.pending_input.take() {
            let written = S::writes(&update);
            self.apply_input(update)?;
            self.checkpoint(Source::Loop, None, written, &[FROM_START])
                .await?;
        }
        self.skip_before_once = true;
        Ok(())
    }

    /// A root run continuing from the checkpoint its config names time-travels: its
    /// per-thread subgraphs first load what they had stored before that checkpoint (before
    /// the one an update or fork branched from, which was written later than them).
    fn bound_replay(&self) {
        let Some(durable) = &self.durable else {
            return;
        };
        if self.info.config.checkpoint_id.is_none() || !self.info.ns.is_root() {
            return;
        }
        let branched = matches!(durable.loaded_source, Some(Source::Update | Source::Fork));
        let before = match (branched, &durable.loaded_parent, &durable.checkpoint_id) {
            (true, Some(parent), _) => parent.clone(),
            (_, _, Some(id)) => id.clone(),
            _ => return,
        };
        let _ = self
            .info
            .replay
            .set(Arc::new(crate::context::ReplayBound::new(
                before,
                self.info.config.checkpoint_map.clone(),
            )));
    }

    /// Whether continuing from the checkpoint the config names (time travel) starts a new
    /// branch with a `fork` checkpoint, as LangGraph's does: a copy of the addressed
    /// checkpoint, so what this run writes never lands on a checkpoint other branches start
    /// from. Not for an update's or a fork's checkpoint that is still the thread's latest
    /// (it already is a branch of its own), nor for an input not applied yet.
    ///
    /// On the fork the step starts over: the addressed step's finished tasks run again,
    /// its interrupts ask again (their writes, answers and pauses were by task, and the
    /// fork's tasks are new ones).
    async fn replay_forks(&mut self) -> Result<bool, GraphError> {
        let addressed = self.info.config.checkpoint_id.is_some() && self.info.ns.is_root();
        let Some(durable) = &mut self.durable else {
            return Ok(false);
        };
        if !addressed || durable.pending_input.is_some() {
            return Ok(false);
        }
        let superseded = || async {
            let latest = durable
                .saver
                .list(
                    &durable.thread_id,
                    &durable.ns,
                    &ListFilter {
                        limit: Some(1),
                        ..ListFilter::default()
                    },
                )
                .await?;
            Ok::<bool, GraphError>(latest.first().map(|r| &r.id) != durable.checkpoint_id.as_ref())
        };
        let branch = matches!(durable.loaded_source, Some(Source::Update | Source::Fork));
        if branch && !superseded().await? {
            return Ok(false);
        }
        durable.clear_step();
        Ok(true)
    }

    /// The input step: the input is written as if by a node `__start__`, then START's edges
    /// fire.
    pub(super) fn apply_input(&mut self, input: S::Update) -> Result<(), GraphError> {
        crate::route::routing(&self.info.run_id, || {
            algo::start(
                self.graph,
                &mut self.state,
                self.step,
                input,
                &mut self.frontier,
                self.durable.as_mut().map(|d| &mut d.rewritten),
            )
        })?;
        self.step += 1;
        Ok(())
    }
}
