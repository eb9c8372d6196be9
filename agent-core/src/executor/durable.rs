//! Durability: the only room that talks to a [`Checkpointer`]. It restores a run's position
//! from a checkpoint, gives tasks their deterministic ids, keeps finished tasks' writes as
//! pending writes, and writes checkpoints when the run's [`Durability`] says so:
//! - `Sync`: after every step, awaited before the next, and each finished task's writes as they
//!   land (a crash loses at most the tasks still running);
//! - `Async`: after every step, stored in order in the background (a crash loses at most the
//!   last step's checkpoint), and encoded once the next step's tasks have started (a wide
//!   step's tasks run on the other workers meanwhile), or when the run stops before that;
//! - `Exit`: once, when the run ends (finished, paused or failed).
//!
//! `Async` and `Exit` share one mechanism: the checkpoint of a position is *owed* (its id
//! planned when its step ends, since the next step's task ids and the namespaces of the
//! subgraphs they run are named after it) and paid later.
//!
//! Everything here runs only when a checkpointer and a thread are configured; a run without
//! one never serializes.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};

use futures::FutureExt;

use serde::{Deserialize, Serialize};

use crate::checkpoint::codec::{self, Body, FieldCache, serde_bytes_vec::Bytes};
use crate::checkpoint::interning::{self, Interner, Resolver};
use crate::checkpoint::msgpack;
use crate::checkpoint::{
    CheckpointMetadata, CheckpointRecord, Checkpointer, FieldBlob, LoadedCheckpoint, PendingWrite,
    Source, StoreOp, WriteKind,
};
use crate::command::{Goto, Send, SendArg};
use crate::compiled::Graph;
use crate::config::Durability;
use crate::constants::START;
use crate::error::GraphError;
use crate::interrupt::{Interrupt, Interrupted};
use crate::node_input::{AnyInput, InputType};
use crate::state::{FieldSet, GraphState, StateUpdate};
use crate::stream::{DebugEvent, StreamMode, StreamPart};

use super::Run;
use super::algo::{FROM_START, Frontier, Task};
use super::runner::{TaskWrites, Updates};

/// A run's link to its checkpointer and thread.
pub(crate) struct Durable<S: GraphState> {
    pub(crate) saver: Arc<dyn Checkpointer>,
    pub(crate) thread_id: Arc<str>,
    pub(crate) ns: Arc<str>,
    pub(crate) durability: Durability,
    /// The checkpoint the next step starts from.
    pub(crate) checkpoint_id: Option<Arc<str>>,
    /// The checkpoint the run loaded when it opened: any other id was made by this run.
    loaded_id: Option<Arc<str>>,
    /// The nodes whose writes made the restored checkpoint's step.
    pub(crate) writers: Vec<String>,
    /// Per field, the version of its last stored value.
    versions: Vec<Option<Arc<str>>>,
    /// Per field, what the next delta is computed against.
    caches: Vec<Option<FieldCache>>,
    /// The thread's table of shared values, as stored.
    interner: Interner,
    /// Fields written other than by appending since their stored version (the others are
    /// stored as their new elements only).
    pub(crate) rewritten: FieldSet,
    /// Writes of tasks of the next step that already finished, by task id.
    pub(crate) outputs: HashMap<String, TaskWrites<S>>,
    /// Resume values by task id.
    pub(crate) resume: HashMap<String, Vec<serde_json::Value>>,
    /// Tasks paused on `interrupt()`, with what they asked.
    pub(crate) interrupted: Vec<(String, Vec<Interrupt>)>,
    /// The input of an `input` checkpoint, not applied yet.
    pub(crate) pending_input: Option<S::Update>,
    /// The checkpoint of the run's position, its id planned, not written yet: with `Exit` until
    /// the run ends, with `Async` until the next step's tasks have started.
    owed: Option<Owed<S>>,
    /// The writers list of the last checkpoint paid, emptied, for the next one owed.
    spare_writers: Vec<usize>,
    /// The id and parent the next checkpoint written takes (the owed one's, planned when its
    /// step ended).
    planned: Option<(Arc<str>, Option<Arc<str>>)>,
    /// Stores in order, in the background.
    writer: Writer,
    /// Counts this run among the runs sharing the writer.
    _seat: Seat,
}

/// An encoded checkpoint, and its `debug` stream item when the caller streams it.
type Encoded<S> = (StoreOp, Option<StreamPart<S>>);

/// A checkpoint not written yet: its id (planned when its step ended, so the next step's
/// task ids, and the namespaces of subgraphs they run, are unique per step and stay valid when
/// it is written), its parent (the last checkpoint stored), the fields written since that one,
/// the last step's source, metadata and writers, and what to store before it (a new input's
/// checkpoint and pending write).
struct Owed<S: GraphState> {
    id: Arc<str>,
    parent: Option<Arc<str>>,
    source: Source,
    writes: Option<serde_json::Value>,
    written: FieldSet,
    writers: Vec<usize>,
    before: Vec<Encoded<S>>,
}

impl<S: GraphState> Durable<S> {
    /// Loads the thread's checkpoint (`checkpoint_id`, or the latest): the link, and where
    /// the run stands when there is a checkpoint. A `fresh` namespace (a child run's, named
    /// after a checkpoint its parent made in this run) has none, so nothing is loaded.
    pub(crate) async fn open(
        graph: &Graph<S>,
        writer: Writer,
        thread_id: String,
        ns: String,
        checkpoint_id: Option<String>,
        durability: Durability,
        fresh: bool,
    ) -> Result<(Self, Option<Restored<S>>), GraphError> {
        let saver = writer.saver().clone();
        let loaded = match (fresh, &checkpoint_id) {
            (true, None) => LoadedCheckpoint::default(),
            _ => saver.get(&thread_id, &ns, checkpoint_id.as_deref()).await?,
        };
        if loaded.record.is_none()
            && let Some(id) = checkpoint_id
        {
            return Err(GraphError::CheckpointNotFound {
                thread_id,
                checkpoint_id: id,
            });
        }
        let fields = S::fields().len();
        let mut durable = Durable {
            _seat: writer.seat(),
            writer,
            saver,
            thread_id: thread_id.into(),
            ns: ns.into(),
            durability,
            checkpoint_id: None,
            loaded_id: None,
            writers: Vec::new(),
            versions: vec![None; fields],
            caches: vec![None; fields],
            interner: Interner::default(),
            rewritten: FieldSet::EMPTY,
            outputs: HashMap::new(),
            resume: HashMap::new(),
            interrupted: Vec::new(),
            pending_input: None,
            owed: None,
            spare_writers: Vec::new(),
            planned: None,
        };
        let mut restored = restore(graph, loaded)?;
        if let Some(restored) = &mut restored {
            durable.checkpoint_id = Some(restored.record.id.clone());
            durable.loaded_id = durable.checkpoint_id.clone();
            durable.writers = std::mem::take(&mut restored.writers);
            durable.versions = std::mem::take(&mut restored.versions);
            durable.caches = std::mem::take(&mut restored.caches);
            durable.interner = std::mem::take(&mut restored.interner);
            durable.outputs = std::mem::take(&mut restored.outputs);
            durable.resume = std::mem::take(&mut restored.resume);
            durable.interrupted = std::mem::take(&mut restored.interrupted);
            durable.pending_input = restored.pending_input.take();
        }
        Ok((durable, restored))
    }

    /// Whether the namespaces of this step's subgraph runs are new: their task ids derive from
    /// a checkpoint this run made (not the one it loaded, nor the placeholder before the
    /// thread's first one), so no checkpoint can be stored under them yet.
    pub(crate) fn fresh_tasks(&self) -> bool {
        self.checkpoint_id.is_some() && self.checkpoint_id != self.loaded_id
    }

    /// Forgets the pending writes of the step that starts at the current checkpoint (a new
    /// checkpoint starts a new step).
    pub(crate) fn clear_step(&mut self) {
        self.outputs.clear();
        self.resume.clear();
        self.interrupted.clear();
    }

    pub(super) fn encode_error(&self, detail: impl std::fmt::Display) -> GraphError {
        GraphError::Storage {
            backend: self.saver.backend(),
            detail: format!("encoding for thread `{}`: {detail}", self.thread_id),
        }
    }

    /// Pending writes against the current checkpoint (none before the first).
    fn writes_op(&self, writes: Vec<PendingWrite>) -> Option<StoreOp> {
        Some(StoreOp::Writes {
            thread_id: self.thread_id.clone(),
            ns: self.ns.clone(),
            checkpoint_id: self.checkpoint_id.clone()?,
            writes,
        })
    }

    /// Waits until everything queued is stored.
    pub(super) async fn flush_writes(&self) -> Result<(), GraphError> {
        self.writer.flush().await
    }

    /// Queues pending writes (stored in order with everything queued before them).
    pub(super) fn submit_writes(&self, writes: Vec<PendingWrite>) {
        if let Some(op) = self.writes_op(writes) {
            self.writer.submit(op);
        }
    }
}

impl<S: GraphState> Run<'_, S> {
    /// Whether checkpoints are written as the run goes (`Durability::Sync`).
    pub(super) fn sync(&self) -> bool {
        self.durability() == Some(Durability::Sync)
    }

    fn durability(&self) -> Option<Durability> {
        self.durable.as_ref().map(|d| d.durability)
    }

    /// Gives the step's tasks their ids: the checkpoint the step starts from plus the task's
    /// path. Before a thread's first checkpoint (`Durability::Exit`) the prefix is a
    /// placeholder; a pause re-prefixes them with the checkpoint it writes.
    pub(crate) fn name_tasks(&self, tasks: &mut [Task<S>]) {
        let Some(durable) = &self.durable else {
            return;
        };
        let cp = durable.checkpoint_id.as_deref().unwrap_or("unsaved");
        for task in tasks {
            task.id = Some(task_id(cp, &self.graph.names[task.node], task.push));
        }
    }

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
    pub(super) fn pending_of(
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

    /// Keeps a failed task's error next to its step's checkpoint (best effort; a failed
    /// store shows when the run flushes).
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
        durable.submit_writes(vec![PendingWrite {
            task_id: id.to_string(),
            node: self.graph.names[task.node].to_string(),
            kind: WriteKind::Error,
            data,
        }]);
    }

    /// Stores the resume value for every paused task of the thread.
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
        let mut writes = Vec::new();
        for (task, interrupts) in &durable.interrupted {
            let values = durable.resume.entry(task.clone()).or_default();
            values.push(value.clone());
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
                value: interrupted.value,
            };
            let data =
                codec::encode(&vec![interrupt.clone()]).map_err(|e| durable.encode_error(e))?;
            writes.push(PendingWrite {
                task_id: id.clone(),
                node,
                kind: WriteKind::Interrupt,
                data,
            });
            durable.interrupted.push((id, vec![interrupt.clone()]));
            self.interrupts.push(interrupt);
        }
        durable.submit_writes(writes);
        durable.writer.flush().await
    }

    /// A checkpoint of the run's position after a step whose tasks ran `writers`: stored now
    /// (`Sync`), queued to be stored while the next step runs (`Async`), or when the run ends
    /// (`Exit`). `writes` is the metadata's `writes` entry, when asked for.
    pub(crate) async fn checkpoint(
        &mut self,
        source: Source,
        writes: Option<serde_json::Value>,
        written: FieldSet,
        writers: &[usize],
    ) -> Result<(), GraphError> {
        match self.durability() {
            None => return Ok(()),
            Some(Durability::Exit) => {
                self.owe(Source::Loop, writes, written, writers, Vec::new());
                return Ok(());
            }
            Some(_) => {}
        }
        if self.may_owe() {
            self.owe(source, writes, written, writers, Vec::new());
            return Ok(());
        }
        self.save(source, writes, written, writers).await
    }

    /// Whether the checkpoint of the run's position may wait for the next step's tasks to
    /// start (`Async`, a next step, no `debug` stream whose checkpoint event must come first).
    fn may_owe(&self) -> bool {
        self.durability() == Some(Durability::Async)
            && !self.frontier.is_empty()
            && !self.streams(StreamMode::Debug)
    }

    /// Plans the checkpoint of the run's position (the next step's tasks are named after its
    /// id) and owes it, with `before` to store ahead of it. One still owed (`Exit`: every step
    /// until the run ends) is replaced: its fields carry over, and its parent stays the last
    /// checkpoint stored.
    fn owe(
        &mut self,
        source: Source,
        writes: Option<serde_json::Value>,
        written: FieldSet,
        writers: &[usize],
        mut before: Vec<Encoded<S>>,
    ) {
        let Some(durable) = &mut self.durable else {
            return;
        };
        // The restored step's kept outputs and answers are used up (a new position).
        durable.clear_step();
        let id = new_checkpoint_id();
        let previous = durable.checkpoint_id.replace(id.clone());
        let (written, parent) = match durable.owed.take() {
            Some(owed) => {
                before.splice(0..0, owed.before);
                (owed.written.union(written), owed.parent)
            }
            None => (written, previous),
        };
        let mut list = std::mem::take(&mut durable.spare_writers);
        list.clear();
        list.extend_from_slice(writers);
        durable.owed = Some(Owed {
            id,
            parent,
            source,
            writes,
            written,
            writers: list,
            before,
        });
    }

    /// Writes the owed checkpoint, if any, as [`save`](Self::save) does: once the step's
    /// tasks `started` (its body lists them), or from the frontier when the run stops.
    async fn pay_owed(&mut self, started: Option<&[Task<S>]>) -> Result<(), GraphError> {
        let Some(durable) = &mut self.durable else {
            return Ok(());
        };
        let Some(owed) = durable.owed.take() else {
            return Ok(());
        };
        durable.planned = Some((owed.id, owed.parent));
        let (source, written, writers) = (owed.source, owed.written, owed.writers);
        let saved = self
            .save_with(owed.before, source, owed.writes, written, &writers, started)
            .await;
        if let Some(durable) = &mut self.durable {
            durable.spare_writers = writers;
        }
        saved
    }

    /// An `Async` checkpoint owed is written once the step's tasks have started; an `Exit`
    /// one waits for the run's end.
    pub(crate) async fn step_started(&mut self, tasks: &[Task<S>]) -> Result<(), GraphError> {
        if self.durability() != Some(Durability::Async) {
            return Ok(());
        }
        self.pay_owed(Some(tasks)).await
    }

    /// Drops the owed checkpoint (`Exit`) of a subgraph run that finished: its result reaches
    /// the parent as the task's writes, so, as in LangGraph, nothing of it is stored (a child
    /// that pauses or fails stores its position).
    pub(crate) fn forget_owed(&mut self) {
        if let Some(durable) = &mut self.durable
            && durable.durability == Durability::Exit
        {
            durable.owed = None;
        }
    }

    /// Stores what is owed (the checkpoint of the run's position), and everything queued.
    /// Runs before a run returns, reports an interrupt, or fails.
    pub(crate) async fn flush(&mut self) -> Result<(), GraphError> {
        let paid = self.pay_owed(None).await;
        let flushed = match &self.durable {
            Some(durable) => durable.writer.flush().await,
            None => Ok(()),
        };
        paid.and(flushed)
    }

    /// The step's writes as the checkpoint metadata's `writes` entry, when the run asked for
    /// it (`RunConfig::writes_metadata`) and this step's checkpoint is written now.
    pub(crate) fn writes_metadata(&self, writes: &[TaskWrites<S>]) -> Option<serde_json::Value> {
        if !self.info.config.writes_metadata
            || matches!(self.durability(), None | Some(Durability::Exit))
        {
            return None;
        }
        let mut by_node: Vec<(&str, Vec<serde_json::Value>)> = Vec::new();
        for task in writes {
            let name = &*self.graph.names[task.node];
            let update = task.update_json();
            match by_node.iter_mut().find(|(n, _)| *n == name) {
                Some((_, list)) => list.push(update),
                None => by_node.push((name, vec![update])),
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
                (name.to_owned(), value)
            })
            .collect();
        Some(serde_json::Value::Object(map))
    }

    /// Writes a checkpoint of the run's position now (`Sync`; `update_state`) or queues it
    /// (`Async`): new blobs for the fields written since the last one, the frontier, and
    /// metadata.
    pub(crate) async fn save(
        &mut self,
        source: Source,
        writes: Option<serde_json::Value>,
        written: FieldSet,
        writers: &[usize],
    ) -> Result<(), GraphError> {
        self.save_with(Vec::new(), source, writes, written, writers, None)
            .await
    }

    /// [`save`](Self::save), storing `before` (encoded before, with their `debug` events) in
    /// the same batch, ahead of the checkpoint; its next tasks are the frontier's, or the
    /// tasks taken from it when the next step has `started`.
    async fn save_with(
        &mut self,
        before: Vec<Encoded<S>>,
        source: Source,
        writes: Option<serde_json::Value>,
        written: FieldSet,
        writers: &[usize],
        started: Option<&[Task<S>]>,
    ) -> Result<(), GraphError> {
        let checkpoint = self.encode_checkpoint(source, writes, written, writers, started)?;
        let Some(durable) = &mut self.durable else {
            return Ok(());
        };
        let mut debug = Vec::new();
        if durable.durability == Durability::Async {
            // Submitted one by one, in order (no vector to collect them in first).
            for (op, event) in before.into_iter().chain(checkpoint) {
                durable.writer.submit(op);
                debug.extend(event);
            }
        } else {
            let mut ops = Vec::with_capacity(before.len() + 1);
            for (op, event) in before.into_iter().chain(checkpoint) {
                ops.push(op);
                debug.extend(event);
            }
            durable.writer.write_now(ops).await?;
        }
        for event in debug {
            self.emit(event).await?;
        }
        Ok(())
    }

    /// A new input (`Sync`, `Async`): an `input` checkpoint whose next task is the input
    /// itself, the input as its pending write (a crash before the input step is stored still
    /// finds it), then the input step and its checkpoint — stored together.
    pub(crate) async fn save_input(
        &mut self,
        update: S::Update,
        writes: Option<serde_json::Value>,
    ) -> Result<(), GraphError> {
        let written = S::writes(&update);
        let mut before = Vec::with_capacity(2);
        if let Some(durable) = &mut self.durable {
            durable.pending_input = Some(update.clone());
        }
        let input = self.encode_checkpoint(Source::Input, writes, FieldSet::EMPTY, &[], None);
        let Some(durable) = &mut self.durable else {
            return self.apply_input(update);
        };
        durable.pending_input = None;
        before.extend(input?);
        let data =
            interning::encode_with_table(&update, None).map_err(|e| durable.encode_error(e))?;
        let start = durable.writes_op(vec![PendingWrite {
            task_id: START.to_owned(),
            node: START.to_owned(),
            kind: WriteKind::Output,
            data,
        }]);
        before.extend(start.map(|op| (op, None)));
        self.apply_input(update)?;
        if self.may_owe() {
            self.owe(Source::Loop, None, written, &[FROM_START], before);
            return Ok(());
        }
        self.save_with(before, Source::Loop, None, written, &[FROM_START], None)
            .await
    }

    /// The checkpoint of the run's position, and the run moved onto it. Its next tasks are
    /// the frontier's, or the tasks taken from it when the next step has `started`.
    fn encode_checkpoint(
        &mut self,
        source: Source,
        writes: Option<serde_json::Value>,
        written: FieldSet,
        writers: &[usize],
        started: Option<&[Task<S>]>,
    ) -> Result<Option<Encoded<S>>, GraphError> {
        let Some(durable) = &mut self.durable else {
            return Ok(None);
        };
        // The parent is the last checkpoint (taken below, when this one replaces it), or the
        // one planned with this id.
        let (id, created_at_ms, planned_parent) = match durable.planned.take() {
            Some((id, parent)) => (id, now_ms(), Some(parent)),
            None => {
                let (id, ms) = crate::ids::new_shared_id_at();
                (id, ms, None)
            }
        };
        // Nothing later compares against the run's last checkpoint (with `Exit` its only one;
        // otherwise the one after which nothing is triggered): its fields' encodings move
        // into their blobs instead of being copied for a cache (a run that resumes the thread
        // rebuilds its caches from the stored blobs).
        let keep_caches = durable.durability != Durability::Exit
            && (started.is_some() || !self.frontier.is_empty());
        let mut interner = std::mem::take(&mut durable.interner);
        // The version of every blob written here, shared by their entries and caches.
        let version = id.clone();
        let blobs = interning::encoding(&mut interner, || {
            self.encode_fields(written, &version, keep_caches)
        })
        .and_then(|mut blobs| {
            // The table of shared values has the last compression hint, after the fields'.
            let hint = &self.graph.compress_hints[S::fields().len()];
            blobs.extend(
                interner
                    .take_blob(&version)?
                    .map(|blob| codec::compressed(blob, hint)),
            );
            Ok(blobs)
        });
        if blobs.is_err() {
            interner.discard_fresh();
        }
        let shared_version = interner.version().cloned();
        let Some(durable) = &mut self.durable else {
            return Ok(None);
        };
        durable.interner = interner;
        let blobs = blobs.map_err(|e| durable.encode_error(e))?;
        durable.rewritten = FieldSet::EMPTY;
        let next = match started {
            Some(tasks) => Next::Started(tasks),
            None => Next::Frontier(&self.frontier),
        };
        let body = encode_body(
            self.graph,
            next,
            &self.frontier.joins,
            durable.pending_input.is_some(),
            writers,
        )
        .map_err(|e| durable.encode_error(e))?;
        let metadata = CheckpointMetadata {
            source: Some(source),
            step: Some(self.step),
            run_id: Some(self.info.run_id.clone()),
            parents: Default::default(),
            writes,
            extra: self.info.config.metadata.clone(),
        };
        let versions = self
            .graph
            .fields
            .versions(&durable.versions, shared_version.as_ref());
        let previous = durable.checkpoint_id.replace(id.clone());
        let parent_id = planned_parent.unwrap_or(previous);
        let record = CheckpointRecord {
            thread_id: durable.thread_id.clone(),
            ns: durable.ns.clone(),
            id,
            parent_id,
            step: self.step,
            created_at_ms,
            metadata,
            versions,
            body,
        };
        durable.clear_step();
        let event = self.streams(StreamMode::Debug).then(|| {
            StreamPart::Debug(DebugEvent::Checkpoint {
                step: self.step,
                checkpoint_id: record.id.to_string(),
                next: self.frontier.next_names(self.graph),
            })
        });
        Ok(Some((StoreOp::Checkpoint { record, blobs }, event)))
    }

    /// The blobs of the fields written since the last checkpoint (new elements only for a
    /// field only appended to; large ones compressed when that pays), each field's cache and
    /// version moved onto `id`.
    fn encode_fields(
        &mut self,
        written: FieldSet,
        version: &Arc<str>,
        keep_caches: bool,
    ) -> Result<Vec<FieldBlob>, String> {
        let Some(durable) = &mut self.durable else {
            return Ok(Vec::new());
        };
        let fields = S::fields();
        let mut blobs = Vec::new();
        if written.is_empty() {
            return Ok(blobs);
        }
        for index in written.iter() {
            let field = fields[index].name;
            let cache = &mut durable.caches[index];
            // Only appended to since its stored version: encode the new elements alone.
            let appended = match cache.as_mut() {
                Some(previous) if !durable.rewritten.contains(index) => {
                    match previous.array_len().map(|skip| {
                        self.state
                            .serialize_field(index, codec::TailSerializer { skip })
                    }) {
                        Some(Ok(tail)) => codec::append_blob(field, version, tail, previous).ok(),
                        _ => None,
                    }
                }
                _ => None,
            };
            let blob = match appended {
                Some(blob) => blob,
                None => {
                    // Sized from the stored version when there is one.
                    let size = cache
                        .as_ref()
                        .and_then(|c| c.encoded_len())
                        .map_or(0, |len| len + len / 8 + 16);
                    let mut bytes = cache
                        .as_mut()
                        .map(FieldCache::take_buffer)
                        .filter(|spare| spare.capacity() > 0)
                        .unwrap_or_default();
                    bytes.reserve(size);
                    self.state
                        .serialize_field(index, &mut msgpack::Packer::named(&mut bytes))
                        .map_err(|e| format!("encoding field `{field}`: {e}"))?;
                    codec::make_blob(field, version, bytes, cache, keep_caches)
                }
            };
            if let Some(blob) = blob {
                durable.versions[index] = Some(version.clone());
                // Large ones stored compressed when that pays, tried as the field's hint says.
                blobs.push(codec::compressed(blob, &self.graph.compress_hints[index]));
            }
        }
        Ok(blobs)
    }
}

/// Stores a run's operations in order, in the background: an operation queued while others
/// are being stored goes with the next batch (one `put_batch`, one transaction), so task
/// writes that land together cost one round trip. A run's subgraph runs share its writer
/// (a clone), so their checkpoints batch with the parent's and with each other's. A saver
/// that stores in place (`put_batch_now`: the in-memory one) has nothing to batch: each
/// operation is stored as it comes, on its run's thread, with no queue. A failed store drops
/// what follows it (a checkpoint may depend on the blobs before it) and is reported by the
/// next flush.
#[derive(Clone)]
pub(crate) struct Writer {
    saver: Arc<dyn Checkpointer>,
    shared: Arc<WriterShared>,
    /// The saver stores on the caller's thread (`put_batch_now`): nothing is queued, each
    /// op is stored as it comes (see [`store_here`](Self::store_here)).
    in_place: bool,
}

#[derive(Default)]
struct WriterShared {
    queue: Mutex<Queue>,
    idle: tokio::sync::Notify,
    /// Runs using the writer now (a parent and its subgraphs).
    runs: std::sync::atomic::AtomicUsize,
    /// A store in place failed and nobody has been told yet (`Queue::error` holds it): what
    /// follows is dropped, as after a queued store's failure.
    failed: std::sync::atomic::AtomicBool,
}

/// A run's place among those sharing a writer, given back when the run's link is dropped.
struct Seat(Arc<WriterShared>);

impl Drop for Seat {
    fn drop(&mut self) {
        self.0
            .runs
            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

#[derive(Default)]
struct Queue {
    ops: Vec<StoreOp>,
    /// A drain task is storing.
    busy: bool,
    error: Option<GraphError>,
    /// Ops queued so far, and how many of them are done (stored, or dropped after a failure):
    /// a caller waits for the ops it queued, not for the queue to be empty, which a parent's
    /// subgraphs storing one after another could keep from ever happening.
    queued: u64,
    done: u64,
}

impl Writer {
    pub(crate) fn new(saver: Arc<dyn Checkpointer>) -> Self {
        // Asked with nothing to store: whether the saver stores in place.
        let in_place = saver.put_batch_now(&mut Vec::new()).is_some();
        Writer {
            saver,
            shared: Arc::default(),
            in_place,
        }
    }

    /// The checkpointer it stores to.
    pub(crate) fn saver(&self) -> &Arc<dyn Checkpointer> {
        &self.saver
    }

    /// Counts a run among those using the writer until the seat is dropped.
    fn seat(&self) -> Seat {
        self.shared
            .runs
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Seat(self.shared.clone())
    }

    fn lock(shared: &WriterShared) -> std::sync::MutexGuard<'_, Queue> {
        // The lock is never held across a panic point that leaves the queue inconsistent.
        shared.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues `op` and starts a drain task when none runs; a saver that stores in place
    /// stores it now (see [`store_here`](Self::store_here)).
    fn submit(&self, op: StoreOp) {
        if self.in_place {
            STORING.with(|ops| {
                let mut buffer = ops.take();
                buffer.push(op);
                self.store_here(&mut buffer);
                buffer.clear();
                ops.set(buffer);
            });
            return;
        }
        let mut queue = Self::lock(&self.shared);
        if queue.error.is_some() {
            return;
        }
        queue.ops.push(op);
        queue.queued += 1;
        if queue.busy {
            return;
        }
        queue.busy = true;
        drop(queue);
        self.spawn_drain(false);
    }

    /// Drains the queue (marked busy by the caller) in a task of its own.
    fn spawn_drain(&self, gather: bool) {
        let (saver, shared) = (self.saver.clone(), self.shared.clone());
        tokio::spawn(async move { drain(&*saver, &shared, gather, None).await });
    }

    /// Stores `ops` on the caller's thread, for a saver that never waits on I/O: no queue,
    /// no task, no future, and no lock of the writer's. Ops from one run are stored in its
    /// order (it stores each before it goes on); runs sharing the writer on other threads
    /// (a fan-out's subgraphs) store theirs beside it, the saver's own lock ordering them.
    /// With the queue's lock held across the store instead, a `fanout_to_subgraph_10x` run
    /// with `async` put a worker to sleep on that lock about twice a run. A failure is kept
    /// for the next flush and drops what follows until then.
    fn store_here(&self, ops: &mut Vec<StoreOp>) {
        use std::sync::atomic::Ordering::{Acquire, Release};
        if self.shared.failed.load(Acquire) {
            ops.clear();
            return;
        }
        let stored = std::panic::catch_unwind(AssertUnwindSafe(|| self.saver.put_batch_now(ops)));
        let error = match stored {
            Ok(Some(Ok(()))) => return,
            Ok(Some(Err(error))) => error,
            Ok(None) => GraphError::Storage {
                backend: self.saver.backend(),
                detail: "the checkpointer stopped storing in place".to_owned(),
            },
            Err(_) => GraphError::Storage {
                backend: self.saver.backend(),
                detail: "the checkpointer panicked while storing".to_owned(),
            },
        };
        ops.clear();
        // Set under the queue's lock, as a flush takes the error and clears the flag: a flush
        // between the two would leave the flag set with no error to report.
        let mut queue = Self::lock(&self.shared);
        queue.error.get_or_insert(error);
        self.shared.failed.store(true, Release);
    }

    /// Stores `ops` after everything queued and waits for them. When no drain runs, this task
    /// drains (no hop to another task): what other runs sharing the writer (a parent and its
    /// subgraphs) queue meanwhile goes with its next batch, one transaction for several
    /// runs' checkpoints (a group commit).
    async fn write_now(&self, mut ops: Vec<StoreOp>) -> Result<(), GraphError> {
        if self.in_place {
            // Stored now; a failure (this one's or an earlier one not yet reported) is
            // reported here.
            self.store_here(&mut ops);
            return self.flush().await;
        }
        let (drains, ticket) = {
            let mut queue = Self::lock(&self.shared);
            if queue.error.is_some() {
                (false, queue.queued)
            } else {
                queue.queued += ops.len() as u64;
                queue.ops.extend(ops);
                let drains = !queue.busy && !queue.ops.is_empty();
                queue.busy |= drains;
                (drains, queue.queued)
            }
        };
        if drains {
            // Other runs share the writer (a parent and its subgraphs): gather what they are
            // about to store into the same transaction.
            let gather = self.shared.runs.load(std::sync::atomic::Ordering::Relaxed) > 1;
            if drain(&*self.saver, &self.shared, gather, Some(ticket)).await {
                self.spawn_drain(gather);
            }
        }
        self.done(ticket).await
    }

    /// Waits until everything queued so far is stored; the first failure, if any.
    async fn flush(&self) -> Result<(), GraphError> {
        let ticket = Self::lock(&self.shared).queued;
        self.done(ticket).await
    }

    /// Waits until the first `ticket` ops queued are done; the first failure, if any.
    async fn done(&self, ticket: u64) -> Result<(), GraphError> {
        loop {
            let idle = self.shared.idle.notified();
            let mut idle = std::pin::pin!(idle);
            idle.as_mut().enable();
            {
                let mut queue = Self::lock(&self.shared);
                if queue.done >= ticket {
                    self.shared
                        .failed
                        .store(false, std::sync::atomic::Ordering::Release);
                    return match queue.error.take() {
                        Some(error) => Err(error),
                        None => Ok(()),
                    };
                }
            }
            idle.await;
        }
    }
}

thread_local! {
    /// The buffer a store in place hands the saver (reused: storing allocates nothing).
    static STORING: std::cell::Cell<Vec<StoreOp>> = const { std::cell::Cell::new(Vec::new()) };
}

/// How many times a `Sync` store yields for sibling runs' ops to join its transaction.
const GATHER_YIELDS: usize = 4;

/// Stores batches until the queue is empty (a task of its own, or a `Sync` run's own task).
/// With `gather`, before each batch it yields while other runs' ops keep arriving (a few
/// times at most): those ready to store join the transaction. Before every batch, not only
/// the first: sibling subgraphs that await their checkpoints (a fan-out with `Sync`) tend to
/// split into cohorts that take turns, one committing while the other steps, each commit
/// paying its fixed cost; gathering again after a commit lets the cohort it released catch
/// up with the one queued meanwhile (`fanout_to_subgraph_10x` with SQLite `sync` ~21.3 ->
/// ~19.9 µs a step, the first batch only against every batch).
///
/// A run's own task drains `until` its own ops (its ticket) are stored; what others queued
/// meanwhile is then left to a task of its own, and `drain` returns `true` with the queue
/// still marked busy for it (the caller spawns it). Why: a run that drained until the queue
/// was empty stored its siblings' checkpoints for as long as they kept coming while its own
/// steps waited: the first subgraph of a `Sync` fan-out started its steps a millisecond
/// after its siblings, and the run ended waiting for it alone, in commits of fewer and fewer
/// checkpoints as the others finished (now they finish together, committing ten at a time).
async fn drain(
    saver: &dyn Checkpointer,
    shared: &WriterShared,
    gather: bool,
    until: Option<u64>,
) -> bool {
    // Armed before the first await: a drain dropped while gathering leaves no queue marked busy.
    let cancelled = Cancelled {
        shared,
        backend: saver.backend(),
    };
    loop {
        let mut queued = Writer::lock(shared).ops.len();
        if gather && queued > 0 {
            for _ in 0..GATHER_YIELDS {
                tokio::task::yield_now().await;
                let now = Writer::lock(shared).ops.len();
                if now == queued {
                    break;
                }
                queued = now;
            }
        }
        let ops = {
            let mut queue = Writer::lock(shared);
            if queue.ops.is_empty() || queue.error.is_some() {
                // Everything queued is stored, or dropped after the failure.
                queue.ops.clear();
                queue.done = queue.queued;
                queue.busy = false;
                drop(queue);
                shared.idle.notify_waiters();
                std::mem::forget(cancelled);
                return false;
            }
            if until.is_some_and(|ticket| queue.done >= ticket) {
                // This run's ops are stored: the rest goes on in a task of its own.
                std::mem::forget(cancelled);
                return true;
            }
            std::mem::take(&mut queue.ops)
        };
        let count = ops.len() as u64;
        let stored = AssertUnwindSafe(saver.put_batch(ops)).catch_unwind().await;
        let error = match stored {
            Ok(Ok(())) => None,
            Ok(Err(error)) => Some(error),
            Err(_) => Some(GraphError::Storage {
                backend: saver.backend(),
                detail: "the checkpointer panicked while storing".to_owned(),
            }),
        };
        {
            let mut queue = Writer::lock(shared);
            queue.done += count;
            if let Some(error) = error {
                queue.error = Some(error);
            }
        }
        // Those waiting for this batch go on while the next one is stored.
        shared.idle.notify_waiters();
    }
}

/// A drain dropped while a batch was being stored (its run was cancelled, or the runtime shut
/// down): the batch may be lost, so what follows it is dropped and the next flush fails, as
/// after a failed store, and nobody waits for a drain that no longer runs.
struct Cancelled<'a> {
    shared: &'a WriterShared,
    backend: &'static str,
}

impl Drop for Cancelled<'_> {
    fn drop(&mut self) {
        let mut queue = Writer::lock(self.shared);
        queue.ops.clear();
        queue.done = queue.queued;
        queue.busy = false;
        queue.error.get_or_insert_with(|| GraphError::Storage {
            backend: self.backend,
            detail: "storing was cancelled before it finished".to_owned(),
        });
        drop(queue);
        self.shared.idle.notify_waiters();
    }
}

// ---------------------------------------------------------------------------------------------
// Encoding: task writes as pending writes, a run's position as a checkpoint body, and back.

/// A task's writes as stored in a pending write.
#[derive(Serialize, Deserialize)]
#[serde(bound = "")]
struct StoredWrites<U: StateUpdate> {
    update: Option<U>,
    goto: Vec<StoredGoto<U>>,
    #[serde(default)]
    batch: Option<Vec<U>>,
}

#[derive(Serialize, Deserialize)]
#[serde(bound = "")]
enum StoredGoto<U: StateUpdate> {
    Node(String),
    Send(String, U),
    /// A `Send::input`: the node, and its input encoded as the node's input type.
    Input(String, Bytes),
}

/// A state as an update that writes every field (how `Send` inputs are stored).
fn state_to_update<S: GraphState>(state: &S) -> S::Update {
    state.clone().into_update()
}

/// The state an update builds from the default state.
fn update_to_state<S: GraphState>(update: S::Update) -> Result<S, String> {
    let mut state = S::default();
    state.apply(update).map_err(|e| e.to_string())?;
    Ok(state)
}

/// `thread`: the run's table of shared values, whose stored entries the write may reference
/// (a pending write next to the thread's checkpoints; `None` for one that stands alone).
pub(super) fn encode_writes<S: GraphState>(
    writes: &TaskWrites<S>,
    thread: Option<&Interner>,
) -> Result<Vec<u8>, String> {
    let (update, batch) = match &writes.updates {
        Updates::None => (None, None),
        Updates::One(update) => (Some(update.clone()), None),
        Updates::Batch(list) => (None, Some(list.clone())),
    };
    let mut goto = Vec::with_capacity(writes.goto.len());
    for g in &writes.goto {
        goto.push(match g {
            Goto::Node(name) => StoredGoto::Node(name.clone()),
            Goto::Send(send) => match &send.arg {
                SendArg::State(state) => {
                    StoredGoto::Send(send.node.clone(), state_to_update(state))
                }
                SendArg::Input(input) => {
                    StoredGoto::Input(send.node.clone(), Bytes(input.encode()?))
                }
            },
        });
    }
    let stored: StoredWrites<S::Update> = StoredWrites {
        update,
        batch,
        goto,
    };
    interning::encode_with_table(&stored, thread)
}

/// Finds the input type of a node by name (how a stored `Send::input` decodes).
pub(super) type InputLookup<'a> = &'a dyn Fn(&str) -> Option<InputType>;

/// A stored `Send::input` for `node`, decoded as the node's input type.
fn decode_input<S>(inputs: InputLookup<'_>, node: String, bytes: &[u8]) -> Result<Send<S>, String> {
    let Some(ty) = inputs(&node) else {
        return Err(format!(
            "a pending Send carries an input to `{node}`, which in this graph does not take one (the graph changed)"
        ));
    };
    let input = ty.decode(bytes).map_err(|e| {
        format!(
            "the input of a Send to `{node}` does not decode as `{}`: {e}",
            ty.name
        )
    })?;
    Ok(Send {
        node,
        arg: SendArg::Input(input),
    })
}

pub(super) fn decode_writes<S: GraphState>(
    inputs: InputLookup<'_>,
    node: usize,
    bytes: &[u8],
    thread: Option<&Resolver>,
) -> Result<TaskWrites<S>, String> {
    let stored: StoredWrites<S::Update> = interning::decode_with_table(bytes, thread)?;
    let updates = match (stored.batch, stored.update) {
        (Some(batch), _) => Updates::Batch(batch),
        (None, Some(update)) => Updates::One(update),
        (None, None) if stored.goto.is_empty() => Updates::One(S::Update::default()),
        (None, None) => Updates::None,
    };
    let mut goto = Vec::with_capacity(stored.goto.len());
    for g in stored.goto {
        goto.push(match g {
            StoredGoto::Node(name) => Goto::Node(name),
            StoredGoto::Send(node, input) => Goto::Send(Send::new(node, update_to_state(input)?)),
            StoredGoto::Input(node, bytes) => Goto::Send(decode_input(inputs, node, &bytes.0)?),
        });
    }
    Ok(TaskWrites {
        node,
        updates,
        goto,
    })
}

/// A run's position restored from a checkpoint.
pub(crate) struct Restored<S: GraphState> {
    pub(crate) record: CheckpointRecord,
    pub(crate) state: S,
    pub(crate) versions: Vec<Option<Arc<str>>>,
    pub(crate) caches: Vec<Option<FieldCache>>,
    /// The table of shared values, numbered as stored.
    pub(crate) interner: Interner,
    pub(crate) pulls: Vec<usize>,
    pub(crate) pushes: Vec<(usize, SendArg<S>)>,
    pub(crate) joins: Vec<Vec<bool>>,
    /// The input of an `input` checkpoint that was not applied yet.
    pub(crate) pending_input: Option<S::Update>,
    /// Writes of tasks that finished, by task id.
    pub(crate) outputs: HashMap<String, TaskWrites<S>>,
    /// Resume values by task id.
    pub(crate) resume: HashMap<String, Vec<serde_json::Value>>,
    /// Tasks paused on `interrupt()`, with what they asked.
    pub(crate) interrupted: Vec<(String, Vec<Interrupt>)>,
    /// Errors of tasks that failed, by task id.
    pub(crate) errors: HashMap<String, String>,
    /// The nodes whose writes made the checkpoint's step.
    pub(crate) writers: Vec<String>,
}

fn corrupt(record: &CheckpointRecord, detail: impl Into<String>) -> GraphError {
    GraphError::CorruptCheckpoint {
        thread_id: record.thread_id.to_string(),
        checkpoint_id: record.id.to_string(),
        detail: detail.into(),
    }
}

/// Rebuilds a run's position from a loaded checkpoint; `None` when there is none.
pub(crate) fn restore<S: GraphState>(
    graph: &Graph<S>,
    loaded: LoadedCheckpoint,
) -> Result<Option<Restored<S>>, GraphError> {
    let LoadedCheckpoint {
        record,
        blobs,
        writes,
    } = loaded;
    let Some(record) = record else {
        return Ok(None);
    };
    let mut body: Body = codec::decode(&record.body)
        .map_err(|e| corrupt(&record, format!("unreadable body: {e}")))?;
    if body.format != codec::FORMAT {
        return Err(corrupt(
            &record,
            format!(
                "format {} is not supported by this version (expected {})",
                body.format,
                codec::FORMAT
            ),
        ));
    }

    let fields = S::fields();
    let mut state = S::default();
    let mut versions = vec![None; fields.len()];
    let mut caches = vec![None; fields.len()];
    let by_key = codec::blob_index(&blobs);
    let mut resolver = shared_table(&record, &by_key)?;
    interning::decoding(&mut resolver, || {
        for (field, version) in record.versions.entries() {
            let (field, version): (&str, &Arc<str>) = (field, version);
            if field == interning::FIELD {
                continue;
            }
            let Some(index) = fields.iter().position(|f| f.name == field) else {
                tracing::warn!(field, checkpoint = %record.id, "checkpoint has a field this state does not; ignored");
                continue;
            };
            let (bytes, cache) = codec::reconstruct(field, version, &by_key)
                .map_err(|e| corrupt(&record, format!("field `{field}`: {e}")))?;
            state
                .deserialize_field(index, &mut rmp_serde::Deserializer::new(&bytes[..]))
                .map_err(|e| {
                    corrupt(
                        &record,
                        format!("field `{field}` does not decode into this state: {e}"),
                    )
                })?;
            versions[index] = Some(version.clone());
            caches[index] = Some(cache);
        }
        Ok::<_, GraphError>(())
    })?;

    let mut pulls = Vec::new();
    let mut pending_input = None;
    for name in &body.next {
        if name == START {
            let write = writes
                .iter()
                .find(|w| w.task_id == START && w.kind == WriteKind::Output)
                .ok_or_else(|| corrupt(&record, "input checkpoint without its input"))?;
            pending_input = Some(
                interning::decode_with_table::<S::Update>(&write.data, Some(&resolver))
                    .map_err(|e| corrupt(&record, format!("input does not decode: {e}")))?,
            );
            continue;
        }
        let index = graph.index.get(name).copied().ok_or_else(|| {
            corrupt(
                &record,
                format!("the checkpoint's next node `{name}` is not in this graph"),
            )
        })?;
        pulls.push(index);
    }
    let mut pushes = Vec::new();
    for (position, (name, input)) in body.sends.iter().enumerate() {
        let index = graph.index.get(name).copied().ok_or_else(|| {
            corrupt(
                &record,
                format!("a pending Send targets `{name}`, which is not in this graph"),
            )
        })?;
        let arg = if body.input_sends.contains(&(position as u32)) {
            let lookup = |node: &str| graph.input_of(node);
            decode_input::<S>(&lookup, name.clone(), &input.0)
                .map_err(|e| corrupt(&record, e))?
                .arg
        } else {
            let update = interning::decode_with_table::<S::Update>(&input.0, None)
                .map_err(|e| corrupt(&record, format!("Send input does not decode: {e}")))?;
            SendArg::State(update_to_state(update).map_err(|e| corrupt(&record, e))?)
        };
        pushes.push((index, arg));
    }
    let joins = if body.joins.len() == graph.joins.len()
        && body
            .joins
            .iter()
            .zip(&graph.joins)
            .all(|(seen, join)| seen.len() == join.sources)
    {
        std::mem::take(&mut body.joins)
    } else {
        return Err(corrupt(
            &record,
            "the checkpoint's joins do not match this graph's (the graph changed shape)",
        ));
    };

    let mut outputs = HashMap::new();
    let mut resume: HashMap<String, Vec<serde_json::Value>> = HashMap::new();
    let mut interrupted = Vec::new();
    let mut errors = HashMap::new();
    for write in &writes {
        match write.kind {
            WriteKind::Output if write.task_id != START => {
                // The node is set from the task when the writes are used.
                let node = graph.index.get(&write.node).copied().unwrap_or_default();
                let output =
                    decode_writes::<S>(&|n| graph.input_of(n), node, &write.data, Some(&resolver))
                        .map_err(|e| {
                            corrupt(
                                &record,
                                format!("output of task `{}` does not decode: {e}", write.task_id),
                            )
                        })?;
                outputs.insert(write.task_id.clone(), output);
            }
            WriteKind::Output => {}
            WriteKind::Resume => {
                let values: Vec<serde_json::Value> = codec::decode(&write.data)
                    .map_err(|e| corrupt(&record, format!("resume values do not decode: {e}")))?;
                resume.insert(write.task_id.clone(), values);
            }
            WriteKind::Interrupt => {
                let list: Vec<Interrupt> = codec::decode(&write.data)
                    .map_err(|e| corrupt(&record, format!("interrupt does not decode: {e}")))?;
                interrupted.push((write.task_id.clone(), list));
            }
            WriteKind::Error => {
                let message: String = codec::decode(&write.data).unwrap_or_default();
                errors.insert(write.task_id.clone(), message);
            }
        }
    }
    interrupted.retain(|(task, _)| !outputs.contains_key(task));
    let interner = resolver.into_interner();

    Ok(Some(Restored {
        record,
        state,
        versions,
        caches,
        interner,
        pulls,
        pushes,
        joins,
        pending_input,
        outputs,
        resume,
        interrupted,
        errors,
        writers: body.writers,
    }))
}

/// The checkpoint's table of shared values (empty when it stored none).
pub(crate) fn shared_table(
    record: &CheckpointRecord,
    blobs: &HashMap<(&str, &str), &FieldBlob>,
) -> Result<Resolver, GraphError> {
    let Some(version) = record.versions.get_shared(interning::FIELD) else {
        return Ok(Resolver::empty());
    };
    codec::reconstruct(interning::FIELD, version, blobs)
        .and_then(|(bytes, _)| Resolver::new(bytes, Some(version.clone())))
        .map_err(|e| corrupt(record, format!("the table of shared values: {e}")))
}

/// The body of a checkpoint at a run's position, written straight into MessagePack: the
/// bytes `codec::Body` reads (what serde writes for it, a map by field name), without
/// collecting names into vectors first. `writers` are node indices, in any order, repeated
/// or not.
fn encode_body<S: GraphState>(
    graph: &Graph<S>,
    next: Next<'_, S>,
    joins: &[Vec<bool>],
    pending_input: bool,
    writers: &[usize],
) -> Result<Vec<u8>, String> {
    let name = |n: usize| -> &str {
        match n {
            FROM_START => START,
            n => &graph.names[n],
        }
    };
    // Each `Send`: its node, its payload's bytes, and whether it is a node's own input.
    let mut sends = Vec::new();
    let mut send = |node: usize, payload: Payload<'_, S>| {
        let (bytes, input) = match payload {
            Payload::State(state) => (
                interning::encode_with_table(&state_to_update(state), None)?,
                false,
            ),
            Payload::Input(input) => (input.encode()?, true),
        };
        sends.push((node, bytes, input));
        Ok::<_, String>(())
    };
    // Edge-triggered nodes in name order (their run order): started tasks are in it already.
    let mut pulls = Pulls::default();
    match next {
        Next::Frontier(frontier) => {
            for (node, arg) in &frontier.pushes {
                send(*node, Payload::of(arg))?;
            }
            in_rank_order(&frontier.pulls, &graph.rank, |n| pulls.push(n));
        }
        Next::Started(tasks) => {
            for task in tasks {
                match &task.input {
                    Some(arg) => send(task.node, Payload::of(arg))?,
                    None => pulls.push(task.node),
                }
            }
        }
    }
    let pulls = pulls.as_slice();
    let input_sends = sends.iter().filter(|(_, _, input)| *input).count();
    let fields = S::fields();
    let unique = |i: usize| !writers[..i].contains(&writers[i]);
    // Room for everything: one allocation.
    let size = 96
        + fields.iter().map(|f| f.name.len() + 2).sum::<usize>()
        + pulls
            .iter()
            .chain(writers)
            .map(|&n| name(n).len() + 2)
            .sum::<usize>()
        + sends
            .iter()
            .map(|(n, b, _)| name(*n).len() + b.len() + 8)
            .sum::<usize>()
        + joins.iter().map(|j| j.len() + 3).sum::<usize>();
    let mut bytes = Vec::with_capacity(size);
    let mut out = msgpack::Packer::named(&mut bytes);
    out.map_len(7);
    out.str("format");
    out.uint(u64::from(codec::FORMAT));
    // The input first, then edge-triggered nodes in name order (their run order).
    out.str("next");
    out.array_len(usize::from(pending_input) + pulls.len());
    if pending_input {
        out.str(START);
    }
    for &n in pulls {
        out.str(name(n));
    }
    out.str("sends");
    out.array_len(sends.len());
    for (node, data, _) in &sends {
        out.array_len(2);
        out.str(name(*node));
        out.bin(data);
    }
    out.str("joins");
    out.array_len(joins.len());
    for join in joins {
        out.array_len(join.len());
        for &arrived in join {
            out.bool(arrived);
        }
    }
    out.str("fields");
    out.array_len(fields.len());
    for field in fields {
        out.str(field.name);
    }
    out.str("writers");
    out.array_len((0..writers.len()).filter(|&i| unique(i)).count());
    for i in (0..writers.len()).filter(|&i| unique(i)) {
        out.str(name(writers[i]));
    }
    out.str("input_sends");
    out.array_len(input_sends);
    for (position, (_, _, input)) in sends.iter().enumerate() {
        if *input {
            out.uint(position as u64);
        }
    }
    Ok(bytes)
}

/// A `Send`'s payload, borrowed from the frontier's pushes (a state) or from a started
/// task's input (an `Arc` of one).
enum Payload<'a, S> {
    State(&'a S),
    Input(&'a AnyInput),
}

impl<'a, S> Payload<'a, S> {
    fn of<T: std::borrow::Borrow<S>>(arg: &'a SendArg<T>) -> Self {
        match arg {
            SendArg::State(state) => Payload::State(state.borrow()),
            SendArg::Input(input) => Payload::Input(input),
        }
    }
}

/// The next step's tasks, as a checkpoint body lists them: the frontier's, or the tasks taken
/// from it once the step has started (an `Async` checkpoint encoded while they run).
pub(crate) enum Next<'a, S> {
    Frontier(&'a Frontier<S>),
    Started(&'a [Task<S>]),
}

/// The edge-triggered nodes a checkpoint's body lists: a step's few on the stack (most steps
/// trigger one or two), more in a vector.
#[derive(Default)]
struct Pulls {
    few: [usize; 8],
    len: usize,
    many: Vec<usize>,
}

impl Pulls {
    fn push(&mut self, node: usize) {
        if self.len < self.few.len() {
            self.few[self.len] = node;
        } else {
            if self.len == self.few.len() {
                self.many.extend_from_slice(&self.few);
            }
            self.many.push(node);
        }
        self.len += 1;
    }

    fn as_slice(&self) -> &[usize] {
        if self.len <= self.few.len() {
            &self.few[..self.len]
        } else {
            &self.many
        }
    }
}

/// Calls `f` on `nodes` in `rank` order, without sorting a copy (a step triggers few nodes;
/// more than a handful are sorted in a vector).
fn in_rank_order(nodes: &[usize], rank: &[u32], mut f: impl FnMut(usize)) {
    if nodes.len() > 8 {
        let mut sorted = nodes.to_vec();
        sorted.sort_unstable_by_key(|&n| rank[n]);
        sorted.into_iter().for_each(f);
        return;
    }
    let mut last = None;
    for _ in 0..nodes.len() {
        let next = nodes
            .iter()
            .copied()
            .filter(|&n| last.is_none_or(|l| rank[n] > l))
            .min_by_key(|&n| rank[n]);
        let Some(n) = next else { break };
        last = Some(rank[n]);
        f(n);
    }
}

/// Task id of a step's task: the checkpoint the step starts from, plus the task's path. Put
/// together on the stack (one per task per step): its one allocation is the shared string.
pub(crate) fn task_id(checkpoint_id: &str, node: &str, push: Option<usize>) -> Arc<str> {
    // Pieces written by hand: the formatting machinery costs more than the copying.
    let write = |out: &mut dyn std::fmt::Write| {
        out.write_str(checkpoint_id)?;
        match push {
            None => out.write_str(":pull:").and_then(|()| out.write_str(node)),
            Some(i) => out.write_str(":push:").and_then(|()| write!(out, "{i}")),
        }
    };
    let mut id = StackStr::default();
    match write(&mut id).ok().and_then(|()| id.as_str()) {
        Some(id) => Arc::from(id),
        // Longer than the stack buffer (a very long node name).
        None => {
            let mut id = String::new();
            let _ = write(&mut id);
            id.into()
        }
    }
}

/// A short string written on the stack; writing past its end fails.
struct StackStr {
    bytes: [u8; 128],
    len: usize,
}

impl Default for StackStr {
    fn default() -> Self {
        StackStr {
            bytes: [0; 128],
            len: 0,
        }
    }
}

impl StackStr {
    /// What was written (only whole `&str`s are, so it is UTF-8).
    fn as_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.bytes[..self.len]).ok()
    }
}

impl std::fmt::Write for StackStr {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        let dest = self.bytes.get_mut(self.len..end).ok_or(std::fmt::Error)?;
        dest.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// Milliseconds since the Unix epoch.
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
}

/// A new checkpoint id (see [`crate::new_id`]).
pub(crate) fn new_checkpoint_id() -> Arc<str> {
    crate::ids::new_shared_id_at().0
}

#[cfg(test)]
mod tests {
    /// Task ids: the checkpoint, then the pull's node or the push's index; a name too long
    /// for the stack buffer gets the same id.
    #[test]
    fn task_ids_name_the_checkpoint_and_the_path() {
        let cp = "0190000a-0000-7000-8000-000000000000";
        assert_eq!(
            &*super::task_id(cp, "agent", None),
            format!("{cp}:pull:agent")
        );
        assert_eq!(
            &*super::task_id(cp, "agent", Some(17)),
            format!("{cp}:push:17")
        );
        let long = "n".repeat(300);
        assert_eq!(
            &*super::task_id(cp, &long, None),
            format!("{cp}:pull:{long}")
        );
    }

    /// A body written before typed inputs (no `input_sends`) still reads: its sends are states.
    #[test]
    fn bodies_without_input_sends_still_read() {
        use crate::checkpoint::codec::{self, Body, serde_bytes_vec::Bytes};
        #[derive(serde::Serialize)]
        struct OldBody {
            format: u32,
            next: Vec<String>,
            sends: Vec<(String, Bytes)>,
            joins: Vec<Vec<bool>>,
            fields: Vec<String>,
            writers: Vec<String>,
        }
        let old = OldBody {
            format: codec::FORMAT,
            next: vec!["a".to_owned()],
            sends: vec![("w".to_owned(), Bytes(vec![0x80]))],
            joins: Vec::new(),
            fields: vec!["x".to_owned()],
            writers: Vec::new(),
        };
        let body: Body = codec::decode(&codec::encode(&old).unwrap()).unwrap();
        assert_eq!(body.sends.len(), 1);
        assert!(body.input_sends.is_empty());
    }

    /// The body encoder writes what serde writes for the body (which `Body` decodes), for
    /// frontiers with pulls in any order, sends of states and of inputs, joins and writers;
    /// and the same bytes from the tasks taken from the frontier (an `Async` checkpoint
    /// encoded once its step started).
    #[test]
    fn bodies_are_written_byte_for_byte_as_serde_writes_them() {
        use super::{FROM_START, Frontier, Next, encode_body, state_to_update};
        use crate::checkpoint::codec::{self, Body, BodyRef, FieldNames, serde_bytes_vec::Bytes};
        use crate::checkpoint::{interning, msgpack};
        use crate::command::SendArg;
        use crate::state::GraphState;
        use crate::{END, START, StateGraph};
        use serde::Serialize;

        #[derive(crate::GraphState, Clone, Default, Debug)]
        struct Fan {
            topic: String,
            #[reducer(append)]
            notes: Vec<String>,
        }
        let nodes = [
            "zeta", "alpha", "mid", "beta", "omega", "gamma", "delta", "eta", "theta", "iota",
        ];
        let mut graph = StateGraph::<Fan>::new();
        for name in nodes {
            graph = graph.add_node(name, |_: std::sync::Arc<Fan>| async {
                FanUpdate::default()
            });
        }
        graph = graph
            .add_node_with_input("worker", |i: u32| async move {
                FanUpdate::default().notes(vec![i.to_string()])
            })
            .add_edge(["alpha", "beta"], "gamma")
            .add_conditional_edges(START, |_: &Fan| END, ["worker", END])
            .add_edge("worker", END);
        for name in nodes {
            graph = graph.add_edge(START, name).add_edge(name, END);
        }
        let compiled = graph.compile().unwrap();
        let g = &*compiled.inner;
        let index = |n: &str| g.index[n];
        for (pulls, pending_input, writers) in [
            (vec![], false, vec![]),
            (vec!["zeta", "alpha", "mid"], true, vec![FROM_START]),
            (
                nodes.to_vec(),
                false,
                vec![index("beta"), index("alpha"), index("beta")],
            ),
        ] {
            let make = || {
                let mut frontier = Frontier::new(g, false);
                frontier.pulls = pulls.iter().map(|n| index(n)).collect();
                frontier.pushes = vec![
                    (
                        index("worker"),
                        SendArg::Input(crate::node_input::AnyInput::new(7u32)),
                    ),
                    (
                        index("mid"),
                        SendArg::State(Fan {
                            topic: "t".into(),
                            notes: vec!["n".into()],
                        }),
                    ),
                    (
                        index("worker"),
                        SendArg::Input(crate::node_input::AnyInput::new(9u32)),
                    ),
                ];
                frontier.joins = vec![vec![true, false]];
                frontier
            };
            let frontier = make();
            let encode =
                |next| encode_body(g, next, &frontier.joins, pending_input, &writers).unwrap();
            let ours = encode(Next::Frontier(&frontier));
            let tasks = make().take_tasks(g);
            let started = encode(Next::Started(&tasks));
            assert_eq!(started, ours, "from started tasks, pulls {pulls:?}");

            let mut next: Vec<usize> = frontier.pulls.clone();
            next.sort_unstable_by_key(|&n| g.rank[n]);
            let mut names: Vec<&str> = if pending_input { vec![START] } else { vec![] };
            names.extend(next.iter().map(|&n| &*g.names[n]));
            let mut writer_names: Vec<&str> = Vec::new();
            for &w in &writers {
                let name = if w == FROM_START { START } else { &*g.names[w] };
                if !writer_names.contains(&name) {
                    writer_names.push(name);
                }
            }
            let sends = frontier
                .pushes
                .iter()
                .map(|(n, arg)| {
                    let bytes = match arg {
                        SendArg::State(s) => {
                            interning::encode_with_table(&state_to_update(s), None).unwrap()
                        }
                        SendArg::Input(i) => i.encode().unwrap(),
                    };
                    (&*g.names[*n], Bytes(bytes))
                })
                .collect();
            let mut theirs = Vec::new();
            BodyRef {
                format: codec::FORMAT,
                next: names,
                sends,
                joins: &frontier.joins,
                fields: FieldNames(Fan::fields()),
                writers: &writer_names,
                input_sends: vec![0, 2],
            }
            .serialize(&mut msgpack::Packer::named(&mut theirs))
            .unwrap();
            assert_eq!(ours, theirs, "pulls {pulls:?}");
            let body: Body = codec::decode(&ours).unwrap();
            assert_eq!(body.input_sends, [0, 2]);
        }
    }

    /// A saver that stores a batch only when the test lets it (a permit per batch): none
    /// ever, a stalled database.
    struct Gated {
        inner: crate::InMemorySaver,
        gate: tokio::sync::Semaphore,
        /// Batches that reached the saver (stored or waiting), by size.
        batches: std::sync::Mutex<Vec<usize>>,
    }

    impl Default for Gated {
        fn default() -> Self {
            Gated {
                inner: crate::InMemorySaver::new(),
                gate: tokio::sync::Semaphore::new(0),
                batches: std::sync::Mutex::default(),
            }
        }
    }

    /// A test saver's `Checkpointer`: `backend`, the methods given, and the rest passed to its
    /// `inner` in-memory saver as they are.
    macro_rules! over_inner {
        ($saver:ty, $backend:literal, $($methods:tt)*) => {
            #[async_trait::async_trait]
            impl crate::checkpoint::Checkpointer for $saver {
                fn backend(&self) -> &'static str {
                    $backend
                }
                $($methods)*
                async fn put(
                    &self,
                    record: &crate::checkpoint::CheckpointRecord,
                    blobs: &[crate::checkpoint::FieldBlob],
                ) -> Result<(), crate::GraphError> {
                    self.inner.put(record, blobs).await
                }
                async fn put_writes(
                    &self,
                    thread_id: &str,
                    ns: &str,
                    checkpoint_id: &str,
                    writes: &[crate::checkpoint::PendingWrite],
                ) -> Result<(), crate::GraphError> {
                    self.inner
                        .put_writes(thread_id, ns, checkpoint_id, writes)
                        .await
                }
                async fn get(
                    &self,
                    thread_id: &str,
                    ns: &str,
                    checkpoint_id: Option<&str>,
                ) -> Result<crate::checkpoint::LoadedCheckpoint, crate::GraphError> {
                    self.inner.get(thread_id, ns, checkpoint_id).await
                }
                async fn list(
                    &self,
                    thread_id: &str,
                    ns: &str,
                    filter: &crate::ListFilter,
                ) -> Result<Vec<crate::checkpoint::CheckpointRecord>, crate::GraphError> {
                    self.inner.list(thread_id, ns, filter).await
                }
                async fn delete_thread(&self, thread_id: &str) -> Result<(), crate::GraphError> {
                    self.inner.delete_thread(thread_id).await
                }
                async fn prune(
                    &self,
                    thread_id: &str,
                    ns: &str,
                    keep_last: usize,
                ) -> Result<usize, crate::GraphError> {
                    self.inner.prune(thread_id, ns, keep_last).await
                }
            }
        };
    }

    over_inner!(
        Gated,
        "gated",
        async fn put_batch(
            &self,
            ops: Vec<crate::checkpoint::StoreOp>,
        ) -> Result<(), crate::GraphError> {
            self.batches.lock().unwrap().push(ops.len());
            self.gate.acquire().await.unwrap().forget();
            self.inner.put_batch(ops).await
        }
    );

    fn writes_op() -> crate::checkpoint::StoreOp {
        crate::checkpoint::StoreOp::Writes {
            thread_id: "t".into(),
            ns: "".into(),
            checkpoint_id: "c".into(),
            writes: Vec::new(),
        }
    }

    /// A `Sync` store that drains on its run's task and is dropped there (the run was
    /// cancelled) leaves no drain that others would wait for: the next flush reports the lost
    /// batch, once, instead of waiting forever.
    #[tokio::test]
    async fn a_cancelled_drain_fails_the_next_flush_instead_of_hanging_it() {
        let writer = super::Writer::new(std::sync::Arc::new(Gated::default()));
        let wait = std::time::Duration::from_millis(20);
        let stalled = tokio::time::timeout(wait, writer.write_now(vec![writes_op()])).await;
        assert!(stalled.is_err(), "the stalled store cannot finish");
        let flushed = tokio::time::timeout(std::time::Duration::from_secs(5), writer.flush())
            .await
            .expect("a flush after a cancelled drain must not hang");
        let error = flushed.expect_err("the cancelled batch was not stored");
        assert!(error.to_string().contains("cancelled"), "{error}");
        assert!(
            tokio::time::timeout(std::time::Duration::from_secs(5), writer.flush())
                .await
                .expect("no drain runs")
                .is_ok(),
            "the error is reported once"
        );
    }

    /// A `Sync` store dropped while it gathers sibling runs' ops (before it stored anything)
    /// leaves no queue marked busy behind it either.
    #[tokio::test]
    async fn a_store_dropped_while_gathering_fails_the_next_flush_instead_of_hanging_it() {
        let writer = super::Writer::new(std::sync::Arc::new(Gated::default()));
        let (_parent, _child) = (writer.seat(), writer.seat());
        {
            let store = writer.write_now(vec![writes_op()]);
            let mut store = std::pin::pin!(store);
            assert!(
                futures::poll!(store.as_mut()).is_pending(),
                "it yields to gather"
            );
        }
        let flushed = tokio::time::timeout(std::time::Duration::from_secs(5), writer.flush())
            .await
            .expect("a flush after a dropped store must not hang");
        assert!(flushed.is_err(), "the dropped store's op was not stored");
    }

    /// Yields until `done` holds (other tasks of the test's runtime move meanwhile).
    async fn until(done: impl Fn() -> bool) {
        for _ in 0..100_000 {
            if done() {
                return;
            }
            tokio::task::yield_now().await;
        }
        panic!("the writer never got there");
    }

    /// A writer over a [`Gated`] saver, and the saver.
    fn gated_writer() -> (std::sync::Arc<Gated>, super::Writer) {
        let saver = std::sync::Arc::new(Gated::default());
        let writer = super::Writer::new(saver.clone());
        (saver, writer)
    }

    /// A run's `Sync` store of one op through `writer` once `before` is done: a task, seated
    /// when it starts (as a run's link is).
    fn store_after(
        writer: &super::Writer,
        before: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> tokio::task::JoinHandle<Result<(), crate::GraphError>> {
        let (writer, seat) = (writer.clone(), writer.seat());
        tokio::spawn(async move {
            let _seat = seat;
            before.await;
            writer.write_now(vec![writes_op()]).await
        })
    }

    /// Runs sharing a writer (a parent and its subgraphs) wait for their own ops, not for the
    /// queue to be empty: a store returns once its batch is stored, the one that drained too
    /// (what others queued after it goes on in a task of its own). And ops queued while a
    /// store gathers go in its batch.
    #[tokio::test]
    async fn a_sync_store_returns_when_its_batch_is_stored_not_when_the_queue_empties() {
        let (saver, writer) = gated_writer();
        let store = |writer: &super::Writer| store_after(writer, async {});
        let batches = || saver.batches.lock().unwrap().clone();
        // The first store drains; two more queue while it gathers: one batch of three.
        let first = store(&writer);
        let (second, third) = (store(&writer), store(&writer));
        until(|| batches().len() == 1).await;
        assert_eq!(batches(), [3]);
        // A fourth queues while that batch is being stored; it goes in the next one.
        let fourth = store(&writer);
        until(|| super::Writer::lock(&writer.shared).ops.len() == 1).await;
        saver.gate.add_permits(1);
        until(|| second.is_finished() && third.is_finished() && batches().len() == 2).await;
        assert!(!fourth.is_finished(), "the fourth op is not stored yet");
        until(|| first.is_finished()).await;
        assert!(
            first.await.unwrap().is_ok(),
            "the first store returns with its own batch, not after draining the fourth op"
        );
        assert_eq!(batches(), [3, 1]);
        saver.gate.add_permits(1);
        for task in [second, third, fourth] {
            task.await.unwrap().unwrap();
        }
        writer.flush().await.unwrap();
    }

    /// A saver that stores in place (as the in-memory one does), counting the ops it is
    /// handed; a store meets the other runs' stores (up to `meet` at once, for up to five
    /// seconds) before it goes on, and fails while `fail` is set.
    struct InPlace {
        inner: crate::InMemorySaver,
        meet: usize,
        arrived: std::sync::Mutex<usize>,
        met: std::sync::Condvar,
        /// Stores that waited out the five seconds alone.
        alone: std::sync::atomic::AtomicUsize,
        fail: std::sync::atomic::AtomicBool,
        handed: std::sync::atomic::AtomicUsize,
    }

    impl InPlace {
        fn new(meet: usize) -> Self {
            InPlace {
                inner: crate::InMemorySaver::new(),
                meet,
                arrived: std::sync::Mutex::new(0),
                met: std::sync::Condvar::new(),
                alone: Default::default(),
                fail: Default::default(),
                handed: Default::default(),
            }
        }
    }

    over_inner!(
        InPlace,
        "in-place",
        fn put_batch_now(
            &self,
            ops: &mut Vec<crate::checkpoint::StoreOp>,
        ) -> Option<Result<(), crate::GraphError>> {
            use std::sync::atomic::Ordering::SeqCst;
            if ops.is_empty() {
                return Some(Ok(()));
            }
            self.handed.fetch_add(ops.len(), SeqCst);
            let mut arrived = self.arrived.lock().unwrap();
            *arrived += 1;
            self.met.notify_all();
            let (arrived, waited) = self
                .met
                .wait_timeout_while(arrived, std::time::Duration::from_secs(5), |n| {
                    *n < self.meet
                })
                .unwrap();
            drop(arrived);
            if waited.timed_out() {
                self.alone.fetch_add(1, SeqCst);
            }
            if self.fail.load(SeqCst) {
                ops.clear();
                return Some(Err(crate::GraphError::Storage {
                    backend: "in-place",
                    detail: "disk full".to_owned(),
                }));
            }
            self.inner.put_batch_now(ops)
        }
    );

    /// Runs sharing a writer whose saver stores in place (a fan-out's subgraphs with the
    /// in-memory saver) store at once from their threads: neither waits on the writer for
    /// the other's store to finish.
    #[test]
    fn runs_storing_in_place_do_not_wait_for_each_other() {
        let saver = std::sync::Arc::new(InPlace::new(2));
        let writer = super::Writer::new(saver.clone());
        std::thread::scope(|scope| {
            for _ in 0..2 {
                let writer = writer.clone();
                scope.spawn(move || writer.submit(writes_op()));
            }
        });
        assert_eq!(
            saver.alone.load(std::sync::atomic::Ordering::SeqCst),
            0,
            "both stores were in the saver at once"
        );
        assert_eq!(saver.handed.load(std::sync::atomic::Ordering::SeqCst), 2);
    }

    /// A failed store in place is reported by the next flush, once, and what is queued after
    /// it until then is dropped (it may depend on what failed), as with a queued store.
    #[tokio::test]
    async fn a_failed_store_in_place_drops_what_follows_until_a_flush_reports_it() {
        use std::sync::atomic::Ordering::SeqCst;
        let saver = std::sync::Arc::new(InPlace::new(1));
        let writer = super::Writer::new(saver.clone());
        saver.fail.store(true, SeqCst);
        writer.submit(writes_op());
        saver.fail.store(false, SeqCst);
        writer.submit(writes_op());
        assert_eq!(
            saver.handed.load(SeqCst),
            1,
            "the op after the failure is dropped"
        );
        let error = writer.flush().await.expect_err("the failure is reported");
        assert!(error.to_string().contains("disk full"), "{error}");
        writer.flush().await.expect("reported once");
        writer.write_now(vec![writes_op()]).await.unwrap();
        assert_eq!(
            saver.handed.load(SeqCst),
            2,
            "stores go on after the report"
        );
    }

    /// A `Sync` store gathers before every batch it stores, not only its first: a sibling run
    /// released by one commit that queues at once goes with the ops queued during that
    /// commit (one transaction for both cohorts), not in a transaction after them.
    #[tokio::test]
    async fn a_sync_store_gathers_again_before_its_next_batch() {
        let (saver, writer) = gated_writer();
        let store = |writer: &super::Writer| store_after(writer, async {});
        let batches = || saver.batches.lock().unwrap().clone();
        let (first, second) = (store(&writer), store(&writer));
        until(|| batches().len() == 1).await;
        assert_eq!(batches(), [2]);
        // Queued while that batch is stored: the next batch's.
        let third = store(&writer);
        until(|| super::Writer::lock(&writer.shared).ops.len() == 1).await;
        // A run that steps again as soon as its checkpoint is stored, and stores the next.
        let again = store_after(&writer, async move { second.await.unwrap().unwrap() });
        saver.gate.add_permits(1);
        until(|| batches().len() == 2).await;
        assert_eq!(
            batches(),
            [2, 2],
            "the released run's op joins the next batch"
        );
        saver.gate.add_permits(1);
        for task in [first, third, again] {
            task.await.unwrap().unwrap();
        }
        writer.flush().await.unwrap();
    }

    #[test]
    fn checkpoint_ids_are_v7_unique_and_ordered() {
        let ids: Vec<std::sync::Arc<str>> =
            (0..10_000).map(|_| super::new_checkpoint_id()).collect();
        for pair in ids.windows(2) {
            assert!(pair[0] < pair[1], "{} then {}", pair[0], pair[1]);
        }
        let parsed = uuid::Uuid::parse_str(&ids[0]).unwrap();
        assert_eq!(parsed.get_version_num(), 7);
        assert_eq!(parsed.get_variant(), uuid::Variant::RFC4122);
        let ms = parsed.get_timestamp().unwrap().to_unix();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap();
        assert!(now.as_secs().abs_diff(ms.0) < 5);
    }
}
