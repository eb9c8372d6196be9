//! Durability: a run's link to its [`Checkpointer`], the only room that talks to one. It
//! restores a run's position from a checkpoint, keeps tasks' writes as pending writes, and
//! writes checkpoints when the run's [`Durability`] says so:
//!
//! - `Sync`: a checkpoint after every step, stored before the next step starts, and each
//!   finished task's writes as they land. A crash loses at most the tasks still running.
//! - `Async`: a checkpoint after every step, queued once the next step's tasks have started
//!   and stored in order in the background while they run. Before each step the run checks
//!   its store: a failed store stops the run there, with the store's error, and a store that
//!   fell [`BACKLOG`](writer::BACKLOG) ops behind holds the run back until it catches up.
//!   Everything queued is stored before the run returns, reports an interrupt, or fails. A
//!   crash loses the checkpoints queued and not stored yet (the last step's, or up to
//!   `BACKLOG` when the store fell behind) and the step running (its finished tasks' writes
//!   are kept only when a task fails or pauses); what was stored is a prefix of what was
//!   queued, so the thread resumes from its last stored checkpoint and runs the lost steps
//!   again.
//! - `Exit`: one checkpoint, when the run ends (finished, paused or failed). A crash loses
//!   the run.
//!
//! `Async` and `Exit` share one mechanism: the checkpoint of a position is *owed* (its id
//! planned when its step ends, since the next step's task ids and the namespaces of the
//! subgraphs they run are named after it) and paid later.
//!
//! The rooms: [`writer`] stores in order in the background; [`encode`] turns a run's position
//! into a checkpoint; [`restore`] turns one back; [`pending`] keeps tasks' writes against
//! their step's checkpoint; [`task_writes`] is how a task's writes are encoded; [`ids`]
//! names tasks and checkpoints. Everything here runs only when a checkpointer and a thread
//! are configured; a run without one never serializes.

mod encode;
mod ids;
mod pending;
mod restore;
mod task_writes;
mod writer;

use std::collections::HashMap;
use std::sync::Arc;

use crate::checkpoint::codec::FieldCache;
use crate::checkpoint::interning::{self, Interner};
use crate::checkpoint::{Checkpointer, LoadedCheckpoint, PendingWrite, Source, StoreOp, WriteKind};
use crate::compiled::Graph;
use crate::config::Durability;
use crate::constants::START;
use crate::error::GraphError;
use crate::interrupt::Interrupt;
use crate::state::{FieldSet, GraphState};
use crate::stream::{StreamMode, StreamPart};

use super::Run;
use super::algo::{FROM_START, Task};
use super::runner::TaskWrites;

pub(crate) use ids::{new_checkpoint_id, task_id};
pub(crate) use restore::{Restored, restore, shared_table};
pub(crate) use task_writes::{decode_writes, encode_writes};
pub(crate) use writer::Writer;

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
    /// What made the restored checkpoint (a run's step, an update, a fork).
    pub(crate) loaded_source: Option<Source>,
    /// The parent of the restored checkpoint.
    pub(crate) loaded_parent: Option<Arc<str>>,
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
    /// The tasks this run gave a resume value (`store_resume`): one that fails gives it back.
    pub(crate) resumed_now: Vec<String>,
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
            writer: writer.for_run(),
            saver,
            thread_id: thread_id.into(),
            ns: ns.into(),
            durability,
            checkpoint_id: None,
            loaded_id: None,
            writers: Vec::new(),
            loaded_source: None,
            loaded_parent: None,
            versions: vec![None; fields],
            caches: vec![None; fields],
            interner: Interner::default(),
            rewritten: FieldSet::EMPTY,
            outputs: HashMap::new(),
            resume: HashMap::new(),
            resumed_now: Vec::new(),
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
            durable.loaded_source = restored.record.source();
            durable.loaded_parent = restored.record.parent_id.clone();
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
        self.resumed_now.clear();
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
        self.writer.submit(self.writes_op(writes));
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

    /// Before a step's tasks start: a store that failed (this run's, or that of a run sharing
    /// its writer) stops the run here, before it pays for more tasks; a store that fell
    /// behind holds it back until fewer than [`BACKLOG`](writer::BACKLOG) ops wait.
    pub(crate) async fn store_ready(&self) -> Result<(), GraphError> {
        match &self.durable {
            Some(durable) => durable.writer.room().await,
            None => Ok(()),
        }
    }

    /// `error`, a failed task's, unless the run's store failed (this run's, or that of a
    /// run sharing its writer): then the store's error, which is why the run cannot go on
    /// (a subgraph whose checkpoint was refused fails its task with it; the parent reports the
    /// refusal itself, [`GraphError::Fenced`] say, not a node error wrapping it).
    pub(crate) fn store_failure_or(&self, error: GraphError) -> GraphError {
        match self.durable.as_ref().map(|d| d.writer.failed()) {
            Some(Err(failure)) => failure,
            _ => error,
        }
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
    /// one waits for the run's end. A store that failed meanwhile (a saver that stores in
    /// place fails here) stops the step before it calls more nodes.
    pub(crate) async fn step_started(&mut self, tasks: &[Task<S>]) -> Result<(), GraphError> {
        if self.durability() != Some(Durability::Async) {
            return Ok(());
        }
        self.pay_owed(Some(tasks)).await?;
        match &self.durable {
            Some(durable) => durable.writer.failed(),
            None => Ok(()),
        }
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
        let mut ops = Vec::with_capacity(before.len() + 1);
        let mut debug = Vec::new();
        for (op, event) in before.into_iter().chain(checkpoint) {
            ops.push(op);
            debug.extend(event);
        }
        if durable.durability == Durability::Async {
            durable.writer.submit(ops);
        } else {
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
}
