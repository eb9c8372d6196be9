//! The thread API: `get_state`, `get_state_history`, `update_state` (LangGraph's names),
//! for inspecting runs, time travel and forking.

use std::sync::Arc;

use crate::checkpoint::{CheckpointRecord, Checkpointer, ListFilter, Source, WriteKind};
use crate::checkpoint::{codec, interning};
use crate::command::Goto;
use crate::compiled::{CompiledGraph, Outgoing};
use crate::config::{RunConfig, new_run_id};
use crate::constants::START;
use crate::error::GraphError;
use crate::executor::{self, Restored, Run};
use crate::interrupt::Interrupt;
use crate::state::{FieldSet, GraphState};

/// A task the checkpoint's next step holds.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingTask {
    /// Deterministic task id.
    pub id: String,
    /// The node it runs.
    pub node: String,
    /// Pauses it asked for, not yet resumed.
    pub interrupts: Vec<Interrupt>,
    /// Whether it already finished (its output is kept; it will not run again).
    pub finished: bool,
    /// Its error, if it failed.
    pub error: Option<String>,
    /// When the task runs a subgraph that checkpointed (a paused approval inside it, say):
    /// the subgraph's own checkpoint. Filled by
    /// [`get_state_with_subgraphs`](CompiledGraph::get_state_with_subgraphs) only (LangGraph's
    /// `get_state(config, subgraphs=True)`).
    pub subgraph: Option<Box<SubgraphSnapshot>>,
}

/// A subgraph's latest checkpoint under its parent's task. The subgraph's state type is not
/// known from the parent, so its values are JSON, one entry per field; inspect it typed with
/// the subgraph's own `get_state` and a config carrying [`checkpoint_ns`](Self::checkpoint_ns).
#[derive(Debug, Clone, PartialEq)]
pub struct SubgraphSnapshot {
    /// Its namespace (LangGraph's `checkpoint_ns`: `node:task_id`, nested with `|`).
    pub checkpoint_ns: String,
    /// Its checkpoint id.
    pub checkpoint_id: String,
    /// Its step.
    pub step: i64,
    /// Its state, field by field.
    pub values: serde_json::Map<String, serde_json::Value>,
    /// The nodes of its next step.
    pub next: Vec<String>,
    /// Its tasks that asked something or finished, with their own subgraphs.
    pub tasks: Vec<PendingTask>,
    /// Every pause inside it, its nested subgraphs' included.
    pub interrupts: Vec<Interrupt>,
}

/// A thread's state at one checkpoint (LangGraph's `StateSnapshot`).
#[derive(Debug, Clone)]
pub struct StateSnapshot<S> {
    /// The state.
    pub values: S,
    /// Nodes that run next (empty when the run finished).
    pub next: Vec<String>,
    /// Config that points at this checkpoint (thread, namespace, checkpoint id).
    pub config: RunConfig,
    /// The checkpoint's metadata (`source`, `step`, `writes`, ...) as stored;
    /// [`meta`](Self::meta) reads it typed.
    pub metadata: serde_json::Value,
    /// The super-step.
    pub step: i64,
    /// When it was written, in milliseconds since the Unix epoch.
    pub created_at_ms: i64,
    /// Config of the checkpoint before this one.
    pub parent_config: Option<RunConfig>,
    /// The next step's tasks.
    pub tasks: Vec<PendingTask>,
    /// Every pending interrupt.
    pub interrupts: Vec<Interrupt>,
    /// The nodes whose writes made this checkpoint's step (`__start__` for an input, none
    /// for the thread's first checkpoint): what `update_state` takes as its `as_node` when
    /// given none, as LangGraph infers it.
    pub writers: Vec<String>,
}

impl<S> StateSnapshot<S> {
    /// The checkpoint's metadata, typed (LangGraph's `snapshot.metadata["source"]` is
    /// `snapshot.meta().source`).
    ///
    /// ```
    /// # use std::sync::Arc;
    /// use agent_core::checkpoint::Source;
    /// use agent_core::prelude::*;
    ///
    /// #[derive(GraphState, Clone, Default, Debug)]
    /// struct S {
    ///     n: u32,
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Report> {
    /// let graph = StateGraph::<S>::new()
    ///     .add_node("one", |_s: Arc<S>| async { SUpdate::default().n(1) })
    ///     .add_edge(START, "one")
    ///     .add_edge("one", END)
    ///     .compile_with(Arc::new(InMemorySaver::new()))?;
    /// let config = RunConfig::default().thread_id("t").metadata("user", "ada");
    /// graph.invoke(S::default(), config.clone()).await?;
    /// let snapshot = graph.get_state(&config).await?.expect("a checkpoint");
    /// let meta = snapshot.meta();
    /// assert_eq!(meta.source, Some(Source::Loop));
    /// assert_eq!(meta.step, Some(1));
    /// assert_eq!(meta.extra["user"], "ada");
    /// # Ok(()) }
    /// ```
    pub fn meta(&self) -> crate::checkpoint::CheckpointMetadata {
        crate::checkpoint::CheckpointMetadata::from_json(&self.metadata)
    }
}

/// The config of the checkpoint `run` saved last, on `config`'s namespace.
fn saved_config<S: GraphState>(run: &Run<'_, S>, thread: String, config: &RunConfig) -> RunConfig {
    let id = run
        .durable
        .as_ref()
        .and_then(|d| d.checkpoint_id.as_deref().map(str::to_owned))
        .unwrap_or_default();
    RunConfig::default()
        .thread_id(thread)
        .checkpoint_ns(config.checkpoint_ns.clone())
        .checkpoint_id(id)
}

fn thread_of(config: &RunConfig) -> Result<&str, GraphError> {
    config.thread_id.as_deref().ok_or_else(|| {
        GraphError::InvalidInput("the thread API needs `RunConfig::thread_id`".to_owned())
    })
}

impl<S: GraphState, C: Send + Sync + 'static> CompiledGraph<S, C> {
    fn saver(&self, what: &str) -> Result<&Arc<dyn Checkpointer>, GraphError> {
        self.inner
            .checkpointer
            .as_ref()
            .ok_or_else(|| GraphError::NoCheckpointer(what.to_owned()))
    }

    /// The checkpointer a call with `config` reads and writes through: the config's own
    /// ([`RunConfig::checkpointer`]), else the graph's.
    fn saver_for<'a>(
        &'a self,
        config: &'a RunConfig,
        what: &str,
    ) -> Result<&'a Arc<dyn Checkpointer>, GraphError> {
        match &config.checkpointer {
            Some(saver) => Ok(saver),
            None => self.saver(what),
        }
    }

    fn snapshot(&self, restored: Restored<S>) -> StateSnapshot<S> {
        let graph = &*self.inner;
        let record = &restored.record;
        let mut tasks = Vec::new();
        let mut pulls = restored.pulls.clone();
        pulls.sort_unstable_by_key(|&n| graph.rank[n]);
        let paths = pulls.iter().map(|&n| (n, None)).chain(
            restored
                .pushes
                .iter()
                .enumerate()
                .map(|(i, (n, _))| (*n, Some(i))),
        );
        for (node, push) in paths {
            let name = graph.names[node].to_string();
            let id = executor::task_id(&record.id, &name, push).to_string();
            let interrupts = restored
                .interrupted
                .iter()
                .filter(|(t, _)| *t == id)
                .flat_map(|(_, list)| list.clone())
                .collect();
            tasks.push(PendingTask {
                finished: restored.outputs.contains_key(&id),
                error: restored.errors.get(&id).cloned(),
                interrupts,
                id,
                node: name,
                subgraph: None,
            });
        }
        let mut next: Vec<String> = Vec::new();
        if restored.pending_input.is_some() {
            next.push(START.to_owned());
        }
        for task in &tasks {
            if !next.contains(&task.node) {
                next.push(task.node.clone());
            }
        }
        let config_for = |id: &str| {
            RunConfig::default()
                .thread_id(record.thread_id.to_string())
                .checkpoint_ns(record.ns.to_string())
                .checkpoint_id(id)
        };
        StateSnapshot {
            interrupts: tasks.iter().flat_map(|t| t.interrupts.clone()).collect(),
            config: config_for(&record.id),
            parent_config: record.parent_id.as_deref().map(config_for),
            metadata: record.metadata.to_json(),
            step: record.step,
            created_at_ms: record.created_at_ms,
            writers: restored.writers,
            values: restored.state,
            next,
            tasks,
        }
    }

    /// The thread's state at `config.checkpoint_id`, or its latest; `None` for a thread with
    /// no checkpoint.
    pub async fn get_state(
        &self,
        config: &RunConfig,
    ) -> Result<Option<StateSnapshot<S>>, GraphError> {
        let saver = self.saver_for(config, "get_state")?;
        let thread = thread_of(config)?;
        let loaded = saver
            .get(
                thread,
                &config.checkpoint_ns,
                config.checkpoint_id.as_deref(),
            )
            .await?;
        Ok(executor::restore(&self.inner, loaded)?.map(|r| self.snapshot(r)))
    }

    /// [`get_state`](Self::get_state), with the checkpoint of every subgraph its pending tasks
    /// run, nested (LangGraph's `get_state(config, subgraphs=True)`): where a run paused
    /// inside a subgraph, what the subgraph's state is there.
    pub async fn get_state_with_subgraphs(
        &self,
        config: &RunConfig,
    ) -> Result<Option<StateSnapshot<S>>, GraphError> {
        let Some(mut snapshot) = self.get_state(config).await? else {
            return Ok(None);
        };
        let saver = self.saver_for(config, "get_state")?;
        let thread = thread_of(config)?;
        for task in &mut snapshot.tasks {
            let ns = executor::child_ns(&config.checkpoint_ns, &task.node, &task.id);
            task.subgraph = subgraph_snapshot(saver.as_ref(), thread, ns, None, 0).await?;
        }
        Ok(Some(snapshot))
    }

    /// The checkpoints of the subgraph namespace `config.checkpoint_ns` (LangGraph's
    /// `get_state_history` with a subgraph's `checkpoint_ns`), newest first, each decoded
    /// without the subgraph's state type (its values one JSON entry per field). `filter`
    /// narrows by `before`, `limit` and metadata entries.
    pub async fn get_subgraph_history(
        &self,
        config: &RunConfig,
        filter: &ListFilter,
    ) -> Result<Vec<SubgraphSnapshot>, GraphError> {
        let saver = self.saver_for(config, "get_state_history")?;
        let thread = thread_of(config)?;
        let records = saver.list(thread, &config.checkpoint_ns, filter).await?;
        let mut out = Vec::with_capacity(records.len());
        for record in records {
            let id = record.id.to_string();
            let ns = config.checkpoint_ns.clone();
            if let Some(snapshot) =
                subgraph_snapshot(saver.as_ref(), thread, ns, Some(&id), 0).await?
            {
                out.push(*snapshot);
            }
        }
        Ok(out)
    }

    /// The thread's checkpoints, newest first, as snapshots. `filter` narrows by `before`,
    /// `limit` and metadata entries.
    pub async fn get_state_history(
        &self,
        config: &RunConfig,
        filter: &ListFilter,
    ) -> Result<Vec<StateSnapshot<S>>, GraphError> {
        let saver = self.saver_for(config, "get_state_history")?;
        let thread = thread_of(config)?;
        let records: Vec<CheckpointRecord> =
            saver.list(thread, &config.checkpoint_ns, filter).await?;
        let mut out = Vec::with_capacity(records.len());
        for record in records {
            let loaded = saver
                .get(thread, &config.checkpoint_ns, Some(&record.id))
                .await?;
            if let Some(restored) = executor::restore(&self.inner, loaded)? {
                out.push(self.snapshot(restored));
            }
        }
        Ok(out)
    }

    /// Writes `update` to the thread as if node `as_node` had produced it, so routing goes on
    /// from that node (`START` routes from the start). Without `as_node`, the node that wrote
    /// the checkpoint's step is used when there is exactly one; otherwise the next nodes stay
    /// as they were. On an older checkpoint (`config.checkpoint_id`), this forks a branch; the
    /// original history stays intact. Returns the config of the new checkpoint.
    pub async fn update_state(
        &self,
        config: &RunConfig,
        update: S::Update,
        as_node: Option<&str>,
    ) -> Result<RunConfig, GraphError> {
        self.update_state_with_goto(config, update, as_node, Vec::new())
            .await
    }

    /// [`update_state`](Self::update_state) with a `Command`'s `goto` too (LangGraph's
    /// `update_state(config, Command(update=..., goto=...), as_node)`): the next step runs
    /// these besides what `as_node`'s edges route to (without `as_node`, besides the nodes
    /// that were next).
    pub async fn update_state_with_goto(
        &self,
        config: &RunConfig,
        update: S::Update,
        as_node: Option<&str>,
        goto: Vec<Goto<S>>,
    ) -> Result<RunConfig, GraphError> {
        let saver = self.saver_for(config, "update_state")?.clone();
        let thread = thread_of(config)?.to_owned();
        // Only an explicit checkpoint id can be an older one; ask for the latest record alone
        // (no field blobs) to tell.
        let latest_id = match &config.checkpoint_id {
            Some(_) => saver
                .list(
                    &thread,
                    &config.checkpoint_ns,
                    &ListFilter {
                        limit: Some(1),
                        ..ListFilter::default()
                    },
                )
                .await?
                .into_iter()
                .next()
                .map(|r| r.id),
            None => None,
        };
        // Its checkpoint's metadata names the config's run, when it gives one.
        let run_id = match &config.run_id {
            Some(id) => Arc::from(id.as_str()),
            None => new_run_id(),
        };
        let mut run = Run::open(&self.inner, None, config.clone(), run_id, None).await?;
        let (writers, is_latest) = match &run.durable {
            Some(d) => (
                d.writers.clone(),
                latest_id.is_none() || d.checkpoint_id == latest_id,
            ),
            None => (Vec::new(), true),
        };
        // Without `as_node`: the node that wrote the checkpoint's step, when it was one node.
        let as_node: Option<String> = match as_node {
            Some(node) => Some(node.to_owned()),
            None => match writers.as_slice() {
                [one] if one != START => Some(one.clone()),
                _ => None,
            },
        };
        let graph = &*self.inner;
        let node = match as_node.as_deref() {
            None => None,
            Some(START) => Some(None),
            Some(name) => Some(Some(graph.index.get(name).copied().ok_or_else(|| {
                GraphError::UnknownNode {
                    context: "update_state(as_node)".to_owned(),
                    name: name.to_owned(),
                    known: graph.known_names(),
                }
            })?)),
        };
        let written = S::writes(&update);
        let writes_meta = serde_json::json!({
            as_node.clone().unwrap_or_default(): serde_json::to_value(&update).unwrap_or_default()
        });
        let writer: Vec<usize> = node.flatten().into_iter().collect();
        let step = run.step + 1;
        if let Some(durable) = &mut run.durable {
            durable.rewritten = durable.rewritten.union(written);
        }
        let state = Arc::make_mut(&mut run.state);
        state.apply(update).map_err(|source| GraphError::Reducer {
            node: as_node.clone().unwrap_or_default(),
            step,
            source,
        })?;
        if let Some(node) = node {
            run.frontier.clear();
            let outgoing = match node {
                None => &graph.start,
                Some(n) => &graph.out[n],
            };
            let routes = crate::route::routing(run.run_id(), || {
                executor::route(graph, outgoing, &run.state)
            });
            run.frontier.fire(graph, outgoing, node, goto, routes)?;
            run.frontier.settle_joins(graph);
        } else if !goto.is_empty() {
            run.frontier
                .fire(graph, &Outgoing::default(), None, goto, Vec::new())?;
            run.frontier.settle_joins(graph);
        }
        run.step = step;
        let source = if is_latest {
            Source::Update
        } else {
            Source::Fork
        };
        run.save(source, Some(writes_meta), written, &writer)
            .await?;
        run.flush().await?;
        Ok(saved_config(&run, thread, config))
    }

    /// A copy of the checkpoint `config` names (the latest without an id) as its sibling:
    /// the same parent, values and next tasks, one step later, source `fork` (LangGraph's
    /// `update_state(config, None, as_node="__copy__")`). The addressed step's finished tasks,
    /// answers and pauses are not copied (they were by task), so running the copy runs them
    /// afresh. Returns the copy's config.
    pub async fn copy_checkpoint(&self, config: &RunConfig) -> Result<RunConfig, GraphError> {
        let saver = self.saver_for(config, "update_state")?.clone();
        let thread = thread_of(config)?.to_owned();
        let run_id = match &config.run_id {
            Some(id) => Arc::from(id.as_str()),
            None => new_run_id(),
        };
        let mut run = Run::open(&self.inner, None, config.clone(), run_id, None).await?;
        let Some(source) = run.durable.as_ref().and_then(|d| d.checkpoint_id.clone()) else {
            return Err(GraphError::NothingToResume(thread));
        };
        let parent = saver
            .get(&thread, &config.checkpoint_ns, Some(&source))
            .await?
            .record
            .and_then(|r| r.parent_id);
        if let Some(durable) = &mut run.durable {
            durable.clear_step();
            // The copy's parent is the source's (the parent is the position it replaces).
            durable.checkpoint_id = parent;
        }
        run.step += 1;
        run.save(Source::Fork, None, FieldSet::EMPTY, &[]).await?;
        run.flush().await?;
        Ok(saved_config(&run, thread, config))
    }

    /// Deletes everything stored for the thread.
    pub async fn delete_thread(&self, thread_id: &str) -> Result<(), GraphError> {
        self.saver("delete_thread")?.delete_thread(thread_id).await
    }
}

/// Subgraphs nest at most this deep (a guard against a namespace cycle in a corrupt store).
const MAX_SUBGRAPH_DEPTH: usize = 64;

/// The checkpoint `id` under `ns` (its latest without one), decoded without its state type;
/// `None` when there is none.
fn subgraph_snapshot<'a>(
    saver: &'a dyn Checkpointer,
    thread: &'a str,
    ns: String,
    id: Option<&'a str>,
    depth: usize,
) -> futures::future::BoxFuture<'a, Result<Option<Box<SubgraphSnapshot>>, GraphError>> {
    Box::pin(async move {
        if depth >= MAX_SUBGRAPH_DEPTH {
            return Ok(None);
        }
        let loaded = saver.get(thread, &ns, id).await?;
        let Some(record) = loaded.record.as_ref() else {
            return Ok(None);
        };
        let corrupt = |detail: String| GraphError::CorruptCheckpoint {
            thread_id: thread.to_owned(),
            checkpoint_id: record.id.to_string(),
            detail,
        };
        let body: codec::Body =
            codec::decode(&record.body).map_err(|e| corrupt(format!("unreadable body: {e}")))?;
        let by_key = codec::blob_index(&loaded.blobs);
        let shared = executor::shared_table(record, &by_key)?;
        let mut values = serde_json::Map::new();
        for (field, version) in &record.versions {
            if field == interning::FIELD {
                continue;
            }
            let (bytes, _) = codec::reconstruct(field, version, &by_key)
                .and_then(|(bytes, cache)| Ok((shared.expand(&bytes)?, cache)))
                .map_err(|e| corrupt(format!("field `{field}`: {e}")))?;
            let value: serde_json::Value =
                codec::decode(&bytes).map_err(|e| corrupt(format!("field `{field}`: {e}")))?;
            values.insert(field.to_owned(), value);
        }
        // Its tasks, as its writes name them: pauses, errors and finished outputs.
        let mut tasks: Vec<PendingTask> = Vec::new();
        for write in &loaded.writes {
            // The input, and the record of what a paused subgraph already applied.
            if write.task_id == START || write.task_id == executor::SUBGRAPH_APPLIED {
                continue;
            }
            let index = match tasks.iter().position(|t| t.id == write.task_id) {
                Some(i) => i,
                None => {
                    tasks.push(PendingTask {
                        id: write.task_id.clone(),
                        node: write.node.clone(),
                        interrupts: Vec::new(),
                        finished: false,
                        error: None,
                        subgraph: None,
                    });
                    tasks.len() - 1
                }
            };
            let task = &mut tasks[index];
            match write.kind {
                WriteKind::Interrupt => {
                    let list: Vec<Interrupt> = codec::decode(&write.data)
                        .map_err(|e| corrupt(format!("interrupt does not decode: {e}")))?;
                    task.interrupts.extend(list);
                }
                WriteKind::Output => task.finished = true,
                WriteKind::Error => task.error = codec::decode(&write.data).ok(),
                WriteKind::Resume => {}
            }
        }
        for task in &mut tasks {
            if task.finished {
                task.interrupts.clear();
            }
        }
        let mut interrupts: Vec<Interrupt> = Vec::new();
        for task in &mut tasks {
            let nested = executor::child_ns(&ns, &task.node, &task.id);
            task.subgraph = subgraph_snapshot(saver, thread, nested, None, depth + 1).await?;
            interrupts.extend(task.interrupts.iter().cloned());
            if let Some(sub) = &task.subgraph {
                interrupts.extend(sub.interrupts.iter().cloned());
            }
        }
        let mut next = body.next.clone();
        for (node, _) in &body.sends {
            if !next.contains(node) {
                next.push(node.clone());
            }
        }
        Ok(Some(Box::new(SubgraphSnapshot {
            checkpoint_id: record.id.to_string(),
            step: record.step,
            checkpoint_ns: ns,
            values,
            next,
            tasks,
            interrupts,
        })))
    })
}
