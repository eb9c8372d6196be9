//! The thread API: `get_state`, `get_state_history`, `update_state` (LangGraph's names),
//! for inspecting runs, time travel and forking.

use std::sync::Arc;

use crate::checkpoint::{CheckpointRecord, Checkpointer, ListFilter, Source};
use crate::compiled::CompiledGraph;
use crate::config::{RunConfig, new_run_id};
use crate::constants::START;
use crate::error::GraphError;
use crate::executor::{self, Restored, Run};
use crate::interrupt::Interrupt;
use crate::state::GraphState;

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
    /// The checkpoint's metadata (`source`, `step`, `writes`, ...).
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
            let id = executor::task_id(&record.id, &name, push);
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
                .thread_id(record.thread_id.clone())
                .checkpoint_ns(record.ns.clone())
                .checkpoint_id(id)
        };
        StateSnapshot {
            interrupts: tasks.iter().flat_map(|t| t.interrupts.clone()).collect(),
            config: config_for(&record.id),
            parent_config: record.parent_id.as_deref().map(config_for),
            metadata: record.metadata.clone(),
            step: record.step,
            created_at_ms: record.created_at_ms,
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
        let saver = self.saver("get_state")?;
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

    /// The thread's checkpoints, newest first, as snapshots. `filter` narrows by `before`,
    /// `limit` and metadata entries.
    pub async fn get_state_history(
        &self,
        config: &RunConfig,
        filter: &ListFilter,
    ) -> Result<Vec<StateSnapshot<S>>, GraphError> {
        let saver = self.saver("get_state_history")?;
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
        let saver = self.saver("update_state")?.clone();
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
        let mut run = Run::open(&self.inner, None, config.clone(), new_run_id(), None).await?;
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
            let routes = executor::route(graph, outgoing, &run.state);
            run.frontier
                .fire(graph, outgoing, node, Vec::new(), routes)?;
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
        let id = run
            .durable
            .as_ref()
            .and_then(|d| d.checkpoint_id.clone())
            .unwrap_or_default();
        Ok(RunConfig::default()
            .thread_id(thread)
            .checkpoint_ns(config.checkpoint_ns.clone())
            .checkpoint_id(id))
    }

    /// Deletes everything stored for the thread.
    pub async fn delete_thread(&self, thread_id: &str) -> Result<(), GraphError> {
        self.saver("delete_thread")?.delete_thread(thread_id).await
    }
}
