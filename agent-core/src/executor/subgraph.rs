//! Subgraphs: a compiled graph run as one task of a parent graph (a child run).
//!
//! - Over the parent's state, it starts from the parent's snapshot and returns the updates it
//!   applied, in order, as the task's writes (so appends land once). Over a state of its own,
//!   it starts from an input mapped from the parent's and its final state is mapped back.
//! - When the parent checkpoints, the child checkpoints too: in the parent's saver and thread,
//!   under a namespace of its own (LangGraph's `checkpoint_ns`: the parent's, then
//!   `node:<uuid>` with a uuid derived from the task id; nested levels joined by `|`). A graph
//!   made [`SubgraphCheckpoints::PerThread`] keeps one history per thread instead (its
//!   namespace without task ids), and an [`SubgraphCheckpoints::Off`] one stores nothing. With `Durability::Exit`, as in LangGraph,
//!   a child that finishes stores nothing (its result is its task's writes); one that pauses
//!   or fails stores where it stopped.
//! - It runs under its parent's run id (the root run's): `ctx.run_id()` in its nodes and the
//!   `run_id` of its checkpoints' metadata are the id the caller gave the root run, so
//!   [`Checkpointer::delete_for_runs`](crate::checkpoint::Checkpointer::delete_for_runs) finds
//!   a run's checkpoints in every namespace.
//! - `interrupt()` inside the child pauses the whole run: the child stores where it stopped
//!   (and the updates it applied so far), and its task pauses the parent with the child's
//!   question. Resuming the parent reruns the task, which resumes the child where it stopped
//!   with the answer — in this process or another one.
//! - Its nodes' custom / messages / events items reach the parent's caller under its
//!   namespace (`node:task_id`, the same string as its `checkpoint_ns`; the task id is made up
//!   when nothing checkpoints), and its usage rolls up into the parent's. When the caller
//!   streams subgraphs, the child run gets an emitter of its own that sends its values,
//!   updates, debug and node events, type-erased, through the parent's sink.

use std::sync::Arc;

use tracing::Instrument;

use crate::checkpoint::{PendingWrite, Source, WriteKind};
use crate::command::Command;
use crate::compiled::{Graph, SubgraphCheckpoints};
use crate::config::RunConfig;
use crate::context::{NodeContext, RunInfo};
use crate::error::GraphError;
use crate::interrupt::Interrupted;
use crate::node::NodeError;
use crate::runtime::AnyContext;
use crate::state::{FieldSet, GraphState};
use crate::stream::Emitter;

use super::algo::{self, FROM_START};
use super::runner::{TaskWrites, Updates};
use super::{Input, Run};

/// How a child run starts when its namespace has no checkpoint yet.
pub(crate) enum ChildStart<S: GraphState> {
    /// Over the parent's state: from the parent's snapshot, START's edges fire.
    Snapshot(Arc<S>),
    /// Over a state of its own: this input, as the child's input step.
    Input(S::Update),
}

/// What a finished child run hands its task.
pub(crate) struct ChildOutput<S: GraphState> {
    /// The child's final state.
    pub(crate) state: S,
    /// Every update the child applied, in order (across pauses); none for a child over a
    /// state of its own (its parent reads `state`).
    pub(crate) recorded: Vec<S::Update>,
    /// A command one of its nodes addressed to the parent ([`Command::to_parent`]); the
    /// child's run ended there.
    pub(crate) to_parent: Option<Command<S>>,
}

/// The pending write that keeps, across a pause, the updates a child applied before it.
pub(crate) const APPLIED: &str = "__subgraph_applied__";

/// The namespace a subgraph run by task `task` of `node` checkpoints under (LangGraph's
/// `checkpoint_ns`: `node:<task uuid>`, nested with `|`).
pub(crate) fn child_ns(parent: &str, node: &str, task: &str) -> String {
    let segment = ns_segment(node, task);
    if parent.is_empty() {
        segment
    } else {
        format!("{parent}|{segment}")
    }
}

/// The namespace a per-thread subgraph ([`SubgraphCheckpoints::PerThread`]) of `node`
/// checkpoints under: the parent's path without task ids, then `node` (LangGraph's
/// `checkpointer=True` namespace), so every call in the thread finds the same history.
pub(crate) fn thread_ns(parent: &str, node: &str) -> String {
    parent
        .split('|')
        .filter(|segment| !segment.is_empty())
        .map(|segment| segment.split(':').next().unwrap_or(segment))
        .chain(std::iter::once(node))
        .collect::<Vec<_>>()
        .join("|")
}

/// A subgraph run's segment of a namespace: `node:<uuid>`, the uuid (v5) derived from the
/// task's id. Why not the id itself: ours (`<checkpoint>:pull:<node>`) holds `:`, and
/// LangGraph's clients read a segment as `node:<task id>` with a task id free of `:` and `|`
/// (LangGraph's task ids are UUIDs); derived, the same task (resumed, in another process)
/// finds the same namespace.
pub(crate) fn ns_segment(node: &str, task: &str) -> String {
    let id = uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_OID, task.as_bytes());
    format!("{node}:{id}")
}

fn failed(error: GraphError) -> NodeError {
    NodeError::Failed(Box::new(error))
}

impl<'g, S: GraphState> Run<'g, S> {
    /// Stores the updates a child applied so far next to its checkpoint (it paused or failed;
    /// resuming it hands them to the parent with the rest).
    async fn keep_applied(&mut self, recorded: Vec<S::Update>) -> Result<(), GraphError> {
        // Nothing applied (or a child over another state, which does not record): a resume
        // starts from an empty list anyway.
        if recorded.is_empty() {
            return Ok(());
        }
        let Some(durable) = &self.durable else {
            return Ok(());
        };
        let applied = TaskWrites::<S> {
            node: 0,
            updates: Updates::Batch(recorded),
            goto: Vec::new(),
        };
        let data =
            super::durable::encode_writes(&applied, None).map_err(|e| durable.encode_error(e))?;
        durable.submit_writes(vec![PendingWrite {
            task_id: APPLIED.to_owned(),
            node: APPLIED.to_owned(),
            kind: WriteKind::Output,
            data,
        }]);
        durable.flush_writes().await
    }

    /// Runs `graph`, named `name`, as the node of `ctx`'s task, in a run span of its own
    /// (under the node's).
    pub(crate) async fn run_child(
        graph: &'g Graph<S>,
        name: &str,
        context: Option<AnyContext>,
        store: Option<Arc<dyn crate::store::Store>>,
        checkpoints: SubgraphCheckpoints,
        start: ChildStart<S>,
        ctx: NodeContext,
    ) -> Result<ChildOutput<S>, NodeError> {
        let parent = ctx.config();
        let span = crate::telemetry::run_span(
            name,
            ctx.run_id(),
            parent.thread_id.as_deref(),
            parent.durability,
            true,
        );
        let recorded = span.clone();
        let result = Self::run_child_in(graph, context, store, checkpoints, start, ctx)
            .instrument(span)
            .await;
        if let Err(error) = &result {
            let interrupted = matches!(error, NodeError::Failed(e) if e.is::<Interrupted>());
            if !interrupted {
                let kind = crate::telemetry::node_error_type(error);
                crate::telemetry::record_error(&recorded, kind, error);
            }
        }
        result
    }

    async fn run_child_in(
        graph: &'g Graph<S>,
        context: Option<AnyContext>,
        store: Option<Arc<dyn crate::store::Store>>,
        checkpoints: SubgraphCheckpoints,
        start: ChildStart<S>,
        ctx: NodeContext,
    ) -> Result<ChildOutput<S>, NodeError> {
        // The subgraph's own context, else its parent's.
        let context = context.or_else(|| ctx.context_any());
        let parent = ctx.config();
        // Checkpoints go to the parent's saver and thread, in a namespace of the child's own,
        // through the parent's writer (batched with the parent's and its siblings').
        let writer = ctx.writer().filter(|_| {
            parent.thread_id.is_some()
                && ctx.task_id().is_some()
                && checkpoints != SubgraphCheckpoints::Off
        });
        let per_thread = checkpoints == SubgraphCheckpoints::PerThread;
        let ns = match (&writer, ctx.task_id()) {
            (Some(_), Some(_)) if per_thread => thread_ns(&parent.checkpoint_ns, ctx.node()),
            (Some(_), Some(task)) => child_ns(&parent.checkpoint_ns, ctx.node(), task),
            _ => String::new(),
        };
        if !ns.is_empty() {
            tracing::Span::current().record("agentgraph.checkpoint.ns", ns.as_str());
        }
        // A time-traveling run's per-thread child, on its first call: what it had stored
        // before the checkpoint the run travels to (LangGraph's `ReplayState`), never a resume.
        let replay = ctx.replay();
        let mut replayed_from = None;
        let mut replaying = false;
        // Sent to a checkpoint of its own (the run's `checkpoint_map`): continued from there.
        let mut traveled = false;
        if let (Some(bound), Some(writer), Some(thread)) = (&replay, &writer, &parent.thread_id)
            && per_thread
            && bound.first_visit(&ns)
        {
            if let Some(id) = bound.at.get(&ns) {
                replayed_from = Some(id.clone());
                traveled = true;
            } else {
                let filter = crate::checkpoint::ListFilter {
                    before: Some(bound.before.to_string()),
                    limit: Some(1),
                    ..Default::default()
                };
                let found = writer
                    .saver()
                    .list(thread, &ns, &filter)
                    .await
                    .map_err(failed)?;
                replayed_from = found.first().map(|record| record.id.to_string());
                replaying = true;
            }
        }
        let config = RunConfig {
            recursion_limit: parent.recursion_limit,
            tags: parent.tags.clone(),
            metadata: parent.metadata.clone(),
            max_concurrency: parent.max_concurrency,
            thread_id: writer.as_ref().and(parent.thread_id.clone()),
            checkpoint_ns: ns,
            durability: parent.durability,
            writes_metadata: parent.writes_metadata,
            // The parent's store, else the subgraph's own.
            store: parent.store.clone().or(store),
            // Stored through the parent's writer (above); kept so the child's nodes see the
            // config their run has.
            checkpointer: parent.checkpointer.clone(),
            checkpoint_id: replayed_from.clone(),
            ..RunConfig::default()
        };
        // A namespace named after a checkpoint the parent made in this run holds nothing yet.
        // (A per-thread namespace is not named after one: it holds the earlier calls'.)
        let fresh = (ctx.take_fresh() && !per_thread) || (replaying && replayed_from.is_none());
        let segment = match ctx.task_id() {
            Some(task) => ns_segment(ctx.node(), task),
            None => format!("{}:{}", ctx.node(), crate::ids::new_id()),
        };
        let path = ctx.ns().child(segment);
        let sink = ctx.sink();
        let emitter = sink
            .as_ref()
            .filter(|sink| sink.modes().subgraphs())
            .map(|sink| Arc::new(Emitter::child(sink.clone(), path.clone())));
        // The run's id is its parent's (the root run's): its checkpoints' metadata names the
        // run that wrote them, so a run's checkpoints are found (and deleted) in every
        // namespace by the id its caller gave.
        let run_id: Arc<str> = Arc::from(ctx.run_id());
        let mut run = Run::open_with(graph, writer, fresh, context, config, run_id, emitter)
            .await
            .map_err(failed)?;
        let mut event_parents = ctx.event_parents().to_vec();
        event_parents.push(ctx.task_run_id());
        if sink.is_some() {
            run.frontier.track_sources();
        }
        // The run's info is its own until its first task starts.
        let can_pause = run.durable.is_some();
        match Arc::get_mut(&mut run.info) {
            Some(info) => {
                info.can_pause = can_pause;
                info.sink = sink;
                info.ns = path;
                info.event_parents = event_parents;
            }
            None => {
                run.info = Arc::new(RunInfo {
                    run_id: run.info.run_id.clone(),
                    names: run.info.names.clone(),
                    config: run.info.config.clone(),
                    can_pause,
                    sink,
                    usage: std::sync::Mutex::new(std::collections::BTreeMap::new()),
                    ns: path,
                    event_parents,
                    context: run.info.context.clone(),
                    writer: run.info.writer.clone(),
                    replay: std::sync::OnceLock::new(),
                })
            }
        }
        if let Some(bound) = replay {
            let _ = run.info.replay.set(bound);
        }
        // A child over the parent's state hands the parent every update it applied; one over a
        // state of its own hands its final state through the output map, so it records none
        // (a copy of every update, for nothing).
        let records = matches!(start, ChildStart::Snapshot(_));
        let mut recorded = Vec::new();
        // A per-task namespace with a checkpoint is this task's run, paused; a per-thread one
        // holds earlier calls too, so only pending tasks there mean a paused call.
        if traveled && let Some(durable) = &mut run.durable {
            // Time travel inside the child: its step at that checkpoint runs again, its
            // interrupts ask again (the answers and outputs kept there were the old branch's),
            // on a fork checkpoint, so a pause there is where the next call resumes.
            durable.clear_step();
            run.step += 1;
            run.checkpoint(Source::Fork, None, FieldSet::EMPTY, &[])
                .await
                .map_err(failed)?;
        }
        let resuming = traveled
            || !replaying
                && run.durable.as_ref().is_some_and(|d| {
                    d.checkpoint_id.is_some()
                        && (!per_thread || !run.frontier.is_empty() || !d.interrupted.is_empty())
                });
        if resuming {
            // Where it paused: the updates it applied before, and the answers for its paused
            // tasks (the parent's resume values for this task).
            if let Some(durable) = &mut run.durable {
                if let Some(applied) = durable.outputs.remove(APPLIED) {
                    recorded.extend(applied.updates);
                }
                let answers = ctx.resume_values();
                if !answers.is_empty() {
                    for (task, asked) in &durable.interrupted {
                        // The parent's task collects every answer given inside the child; a
                        // child task paused at its interrupt `i` takes the last `i + 1` (the
                        // earlier ones went to the child's tasks before it).
                        let index = asked
                            .iter()
                            .filter_map(|i| i.id.rsplit('#').next()?.parse::<usize>().ok())
                            .max()
                            .unwrap_or(answers.len() - 1);
                        let take = (index + 1).min(answers.len());
                        let own = answers[answers.len() - take..].to_vec();
                        durable.resume.insert(task.clone(), own);
                    }
                }
            }
            run.skip_before_once = true;
        } else {
            match start {
                ChildStart::Snapshot(state) => {
                    run.state = state;
                    let routes = crate::route::routing(&run.info.run_id, || {
                        algo::route(graph, &graph.start, &run.state)
                    });
                    run.frontier
                        .fire(graph, &graph.start, None, Vec::new(), routes)
                        .map_err(failed)?;
                    run.step = 0;
                    if run.durable.is_some() {
                        // The first checkpoint holds the whole snapshot it started from.
                        let all = match S::fields().len() {
                            0 => FieldSet::EMPTY,
                            n => FieldSet(u128::MAX >> (128 - n)),
                        };
                        if let Some(durable) = &mut run.durable {
                            durable.rewritten = all;
                        }
                        run.checkpoint(Source::Input, None, all, &[FROM_START])
                            .await
                            .map_err(failed)?;
                    }
                }
                ChildStart::Input(update) => {
                    run.feed(Input::Update(update)).await.map_err(failed)?
                }
            }
        }
        run.recorded = records.then_some(recorded);
        let ran = run.run_steps().await;
        run.record_end(&tracing::Span::current());
        if ran.is_ok() && !run.paused {
            run.forget_owed();
        }
        let flushed = run.flush().await;
        // A command for the parent ends the child here (LangGraph's `ParentCommand`).
        let ran = match ran {
            Err(GraphError::ParentCommand(parent)) => match parent.command.downcast::<Command<S>>()
            {
                Ok(command) => {
                    flushed.map_err(failed)?;
                    return Ok(ChildOutput {
                        state: (*run.state).clone(),
                        recorded: Vec::new(),
                        to_parent: Some(*command),
                    });
                }
                Err(command) => Err(GraphError::ParentCommand(crate::error::ParentCommand {
                    node: parent.node,
                    command,
                })),
            },
            other => other,
        };
        if let Err(error) = ran {
            // Kept, so continuing the parent resumes this run with what it applied so far
            // (a node that fails leaves the ones before it done).
            let recorded = run.recorded.take().unwrap_or_default();
            if let Err(kept) = run.keep_applied(recorded).await {
                tracing::warn!(error = %kept, "could not keep a failed subgraph's updates");
            }
            return Err(failed(error));
        }
        flushed.map_err(failed)?;
        if let Ok(usage) = run.info.usage.lock() {
            for (key, amount) in usage.iter() {
                ctx.add_usage(key, *amount);
            }
        }
        let recorded = run.recorded.take().unwrap_or_default();
        if run.paused {
            return Err(run.pause_parent(recorded, &ctx).await);
        }
        let out = run.finish();
        Ok(ChildOutput {
            state: out.state,
            recorded,
            to_parent: None,
        })
    }

    /// The child paused: keeps the updates it applied so far next to its checkpoint, and
    /// returns what pauses the parent's task (the child's question).
    async fn pause_parent(&mut self, recorded: Vec<S::Update>, ctx: &NodeContext) -> NodeError {
        if let Err(error) = self.keep_applied(recorded).await {
            return failed(error);
        }
        let value = self
            .interrupts
            .first()
            .map(|i| i.value.clone())
            .unwrap_or(serde_json::Value::Null);
        NodeError::Failed(Box::new(Interrupted {
            index: ctx.resume_values().len(),
            value,
            journal: Vec::new(),
        }))
    }
}
