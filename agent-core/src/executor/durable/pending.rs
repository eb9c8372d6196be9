//! Pending writes: what a step's tasks leave against the checkpoint the step started from
//! (finished tasks' outputs, a failed task's error, interrupts and their resume values), so
//! a resumed step does not run its finished tasks again and a paused one knows its question.

use std::sync::Arc;

use crate::checkpoint::{PendingWrite, WriteKind, codec};
use crate::config::Durability;
use crate::error::GraphError;
use crate::interrupt::{Interrupt, Interrupted};
use crate::state::GraphState;

use super::super::Run;
use super::super::algo::Task;
use super::super::runner::TaskWrites;
use super::task_writes::encode_writes;

impl<S: GraphState> Run<'_, S> {
    /// The writes an earlier attempt of this step kept for `task`, if it finished.
    pub(crate) fn kept_writes(&self, task: &Task<S>) -> Option<TaskWrites<S>> {
        let durable = self.durable.as_ref().filter(|d| !d.outputs.is_empty())?;
        let kept = durable.outputs.get(task.id.as_deref()?)?;
        let mut writes = kept.clone();
        writes.node = task.node;
        Some(writes)
    }

    /// The resume values for `task`'s interrupts.
    pub(crate) fn resume_values(&self, task: &Task<S>) -> Vec<serde_json::Value> {
        match (&self.durable, &task.id) {
            (Some(durable), Some(id)) if !durable.resume.is_empty() => {
                durable.resume.get(&**id).cloned().unwrap_or_default()
            }
            _ => Vec::new(),
        }
    }

    /// A finished task's writes as a pending write.
    fn pending(
        &self,
        task: &Task<S>,
        writes: &TaskWrites<S>,
    ) -> Result<Option<PendingWrite>, GraphError> {
        self.pending_of(task.id.as_deref(), task.node, writes)
    }

    /// The writes of task `id` of `node` as a pending write.
    pub(crate) fn pending_of(
        &self,
        id: Option<&str>,
        node: usize,
        writes: &TaskWrites<S>,
    ) -> Result<Option<PendingWrite>, GraphError> {
        let (Some(durable), Some(id)) = (&self.durable, id) else {
            return Ok(None);
        };
        let data =
            encode_writes(writes, Some(&durable.interner)).map_err(|e| durable.encode_error(e))?;
        Ok(Some(PendingWrite {
            task_id: id.to_owned(),
            node: self.graph.names[node].to_string(),
            kind: WriteKind::Output,
            data,
        }))
    }

    /// Keeps a finished task's writes as it lands (`Durability::Sync`), so a crash or a
    /// failing sibling does not lose them. Queued: writes that land while earlier ones are
    /// being stored go together.
    pub(crate) fn keep_writes(
        &self,
        task: &Task<S>,
        writes: &TaskWrites<S>,
    ) -> Result<(), GraphError> {
        if !self.sync() {
            return Ok(());
        }
        if let (Some(durable), Some(write)) = (&self.durable, self.pending(task, writes)?) {
            durable.submit_writes(vec![write]);
        }
        Ok(())
    }

    /// A task failed: with `Durability::Async`, the writes of the siblings that finished are
    /// kept now (`Sync` kept them as they landed; `Exit` keeps none).
    pub(crate) fn keep_finished(
        &self,
        finished: &[(&Task<S>, &TaskWrites<S>)],
    ) -> Result<(), GraphError> {
        if self.durability() != Some(Durability::Async) {
            return Ok(());
        }
        let mut writes = Vec::with_capacity(finished.len());
        for (task, done) in finished {
            writes.extend(self.pending(task, done)?);
        }
        if let Some(durable) = &self.durable
            && !writes.is_empty()
        {
            durable.submit_writes(writes);
        }
        Ok(())
    }

    /// Keeps a failed task's error next to its step's checkpoint (best effort: the task's
    /// error is what the run reports; a store that fails shows at the run's flush).
    pub(crate) fn record_failure(&self, task: &Task<S>, error: &GraphError) {
        // A command for the parent leaves the run as an error but is not a failure.
        if matches!(error, GraphError::ParentCommand(_)) {
            return;
        }
        let (Some(durable), Some(id)) = (&self.durable, &task.id) else {
            return;
        };
        let Ok(data) = codec::encode(&error.to_string()) else {
            return;
        };
        let id = id.to_string();
        // A task that fails after this run resumed it did not take the answer (LangGraph
        // saves a task's resume values with its writes, which a failure drops): stored
        // without it, the next resume answers the same interrupt again.
        if durable.resumed_now.contains(&id)
            && let Some(values) = durable.resume.get(&id)
            && let Ok(kept) = codec::encode(&values[..values.len().saturating_sub(1)])
        {
            durable.submit_writes(vec![PendingWrite {
                task_id: id.clone(),
                node: self.graph.names[task.node].to_string(),
                kind: WriteKind::Resume,
                data: kept,
            }]);
        }
        durable.submit_writes(vec![PendingWrite {
            task_id: id,
            node: self.graph.names[task.node].to_string(),
            kind: WriteKind::Error,
            data,
        }]);
    }

    /// Keeps what a failed task recorded in its journal (as its resume values: the task's
    /// next attempt on this step replays them).
    pub(crate) fn record_journal(&self, task: &Task<S>, journal: Vec<serde_json::Value>) {
        let (Some(durable), Some(id)) = (&self.durable, &task.id) else {
            return;
        };
        let Ok(data) = codec::encode(&journal) else {
            return;
        };
        durable.submit_writes(vec![PendingWrite {
            task_id: id.to_string(),
            node: self.graph.names[task.node].to_string(),
            kind: WriteKind::Resume,
            data,
        }]);
    }

    /// Stores the resume value for the paused tasks of the thread (every one, or those a map
    /// by interrupt id names).
    pub(crate) async fn store_resume(
        &mut self,
        value: serde_json::Value,
    ) -> Result<(), GraphError> {
        let Some(durable) = &mut self.durable else {
            return Err(GraphError::NoCheckpointer(
                "resuming an interrupt".to_owned(),
            ));
        };
        if durable.interrupted.is_empty() {
            return Err(GraphError::NothingToResume(durable.thread_id.to_string()));
        }
        // A map keyed by interrupt ids (LangGraph's `Command(resume={id: value})`) answers
        // the tasks it names, each with its value; the others stay paused. Anything else
        // answers every paused task.
        let by_id = value.as_object().filter(|map| {
            !map.is_empty()
                && map.keys().all(|key| {
                    durable
                        .interrupted
                        .iter()
                        .any(|(_, list)| list.iter().any(|i| &i.id == key))
                })
        });
        let mut writes = Vec::new();
        for (task, interrupts) in &durable.interrupted {
            let answer = match by_id {
                Some(map) => match interrupts.iter().find_map(|i| map.get(&i.id)) {
                    Some(answer) => answer.clone(),
                    None => continue,
                },
                None => value.clone(),
            };
            let values = durable.resume.entry(task.clone()).or_default();
            values.push(answer);
            durable.resumed_now.push(task.clone());
            let node = interrupts
                .first()
                .map(|i| i.node.clone())
                .unwrap_or_default();
            let data = codec::encode(values).map_err(|e| GraphError::Storage {
                backend: durable.saver.backend(),
                detail: format!("encoding for thread `{}`: {e}", durable.thread_id),
            })?;
            writes.push(PendingWrite {
                task_id: task.clone(),
                node,
                kind: WriteKind::Resume,
                data,
            });
        }
        durable.submit_writes(writes);
        durable.writer.flush().await
    }

    /// Some tasks paused: stores their interrupts against the step's checkpoint (written now
    /// with `Durability::Exit`), everything stored before the run reports them.
    pub(crate) async fn store_interrupts(
        &mut self,
        before: Option<Arc<str>>,
        paused: Vec<(Option<Arc<str>>, usize, Interrupted)>,
        finished: Vec<PendingWrite>,
    ) -> Result<(), GraphError> {
        // Interrupts hang off a stored checkpoint: with Durability::Exit, write it now.
        self.flush().await?;
        let Some(durable) = &mut self.durable else {
            return Ok(());
        };
        let now: Arc<str> = durable
            .checkpoint_id
            .clone()
            .unwrap_or_else(|| Arc::from(""));
        // Task ids name the checkpoint the step started from: the one written now, with Exit.
        let moved = |id: String| match id.split_once(':') {
            Some((_, path)) if before.as_deref() != Some(&*now) => format!("{now}:{path}"),
            _ => id,
        };
        let mut writes: Vec<PendingWrite> = finished
            .into_iter()
            .map(|w| PendingWrite {
                task_id: moved(w.task_id),
                ..w
            })
            .collect();
        for (id, node, interrupted) in paused {
            let id = moved(id.as_deref().unwrap_or_default().to_owned());
            let node = self.graph.names[node].to_string();
            let interrupt = Interrupt {
                id: format!("{id}#{}", interrupted.index),
                node: node.clone(),
                value: interrupted.value.clone(),
            };
            let data =
                codec::encode(&vec![interrupt.clone()]).map_err(|e| durable.encode_error(e))?;
            writes.push(PendingWrite {
                task_id: id.clone(),
                node: node.clone(),
                kind: WriteKind::Interrupt,
                data,
            });
            if !interrupted.journal.is_empty() {
                // What the task recorded before it paused: the resumed task replays it, and
                // the resume answer lands after it (in the interrupt's slot).
                let data =
                    codec::encode(&interrupted.journal).map_err(|e| durable.encode_error(e))?;
                writes.push(PendingWrite {
                    task_id: id.clone(),
                    node: node.clone(),
                    kind: WriteKind::Resume,
                    data,
                });
                durable.resume.insert(id.clone(), interrupted.journal);
            }
            durable.interrupted.push((id, vec![interrupt.clone()]));
            self.interrupts.push(interrupt);
        }
        durable.submit_writes(writes);
        durable.writer.flush().await
    }
}
