//! A run's gate on its checkpoints: every checkpoint a run writes goes through a saver of
//! its own ([`Gated`], over the server's), whose gate a cancel, a rollback, a time limit, a
//! lost lease or its thread's deletion closes. Closing waits for the writes already under
//! way; after it, the run writes nothing — not the step it was in, not a queued write of
//! async durability drained later — so "cancelled" means nothing more lands, and a
//! rollback can delete what the run wrote knowing nothing follows.
//!
//! A run that goes on from a checkpoint it did not write (a resume) leaves pending writes
//! on it (the resume values, its tasks' outputs) that deleting the run's own checkpoints
//! does not take away: the gate keeps the writes each checkpoint had when the run loaded
//! it, and which ones it wrote on, so a rollback puts them back as they were.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::Mutex;

use agent_core::checkpoint::{
    CheckpointRecord, FieldBlob, ListFilter, LoadedCheckpoint, PendingWrite, StoreOp,
};
use agent_core::{Checkpointer, GraphError};
use tokio::sync::Notify;

/// Whether a run may still write, and the writes under way.
#[derive(Default)]
pub(crate) struct Gate {
    state: Mutex<State>,
    idle: Notify,
    touched: Mutex<Touched>,
}

/// The checkpoints (namespace, id) a run loaded, with the pending writes each had then, and
/// those it put writes on.
#[derive(Default)]
struct Touched {
    loaded: HashMap<(String, String), Vec<PendingWrite>>,
    written: HashSet<(String, String)>,
}

#[derive(Default)]
struct State {
    closed: bool,
    writing: usize,
}

impl Gate {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// One write through the gate, or the error that says the run may write no more.
    fn enter(self: &Arc<Self>, backend: &'static str) -> Result<Writing, GraphError> {
        let mut state = self.state();
        if state.closed {
            return Err(GraphError::Storage {
                backend,
                detail: "the run was stopped (cancelled, timed out, taken over or its thread deleted); nothing more is written".to_owned(),
            });
        }
        state.writing += 1;
        Ok(Writing(self.clone()))
    }

    /// Closes the gate and waits for the writes under way: when it returns, the run has
    /// written all it ever will.
    pub(crate) async fn close(&self) {
        loop {
            let idle = self.idle.notified();
            tokio::pin!(idle);
            idle.as_mut().enable();
            {
                let mut state = self.state();
                state.closed = true;
                if state.writing == 0 {
                    return;
                }
            }
            idle.await;
        }
    }

    fn touched(&self) -> std::sync::MutexGuard<'_, Touched> {
        self.touched.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A checkpoint the run loaded: the writes it had first are what a rollback restores.
    fn loaded(&self, ns: &str, loaded: &LoadedCheckpoint) {
        let Some(record) = &loaded.record else {
            return;
        };
        self.touched()
            .loaded
            .entry((ns.to_owned(), record.id.to_string()))
            .or_insert_with(|| loaded.writes.clone());
    }

    /// The checkpoints `ops` put writes on.
    fn writing(&self, ops: &[StoreOp]) {
        let mut touched = self.touched();
        for op in ops {
            if let StoreOp::Writes {
                ns, checkpoint_id, ..
            } = op
            {
                touched
                    .written
                    .insert((ns.to_string(), checkpoint_id.to_string()));
            }
        }
    }

    /// The checkpoints the run loaded and then put writes on (namespace, id), each with
    /// the writes it had before: what a rollback gives back to those that remain.
    pub(crate) fn written_over(&self) -> Vec<(String, String, Vec<PendingWrite>)> {
        let touched = self.touched();
        touched
            .written
            .iter()
            .filter_map(|key| {
                let before = touched.loaded.get(key)?;
                Some((key.0.clone(), key.1.clone(), before.clone()))
            })
            .collect()
    }

    /// Whether it was closed.
    #[cfg(test)]
    pub(crate) fn is_closed(&self) -> bool {
        self.state().closed
    }
}

/// A write under way.
struct Writing(Arc<Gate>);

impl Drop for Writing {
    fn drop(&mut self) {
        let mut state = self.0.state();
        state.writing -= 1;
        if state.writing == 0 {
            self.0.idle.notify_waiters();
        }
    }
}

/// The saver of one run: the server's, behind the run's [`Gate`].
pub(crate) struct Gated {
    inner: Arc<dyn Checkpointer>,
    gate: Arc<Gate>,
}

impl Gated {
    pub(crate) fn new(inner: Arc<dyn Checkpointer>, gate: Arc<Gate>) -> Self {
        Gated { inner, gate }
    }
}

#[async_trait::async_trait]
impl Checkpointer for Gated {
    fn backend(&self) -> &'static str {
        self.inner.backend()
    }

    fn put_batch_now(&self, ops: &mut Vec<StoreOp>) -> Option<Result<(), GraphError>> {
        // Asked once with no ops (does the store work in place?): say what the inner does.
        if ops.is_empty() {
            return self.inner.put_batch_now(ops);
        }
        let _writing = match self.gate.enter(self.backend()) {
            Ok(w) => w,
            Err(e) => {
                ops.clear();
                return Some(Err(e));
            }
        };
        self.gate.writing(ops);
        self.inner.put_batch_now(ops)
    }

    async fn put(&self, record: &CheckpointRecord, blobs: &[FieldBlob]) -> Result<(), GraphError> {
        let _writing = self.gate.enter(self.backend())?;
        self.inner.put(record, blobs).await
    }

    async fn put_writes(
        &self,
        thread_id: &str,
        ns: &str,
        checkpoint_id: &str,
        writes: &[PendingWrite],
    ) -> Result<(), GraphError> {
        let _writing = self.gate.enter(self.backend())?;
        self.gate
            .touched()
            .written
            .insert((ns.to_owned(), checkpoint_id.to_owned()));
        self.inner
            .put_writes(thread_id, ns, checkpoint_id, writes)
            .await
    }

    async fn put_batch(&self, ops: Vec<StoreOp>) -> Result<(), GraphError> {
        let _writing = self.gate.enter(self.backend())?;
        self.gate.writing(&ops);
        self.inner.put_batch(ops).await
    }

    async fn get(
        &self,
        thread_id: &str,
        ns: &str,
        checkpoint_id: Option<&str>,
    ) -> Result<LoadedCheckpoint, GraphError> {
        let loaded = self.inner.get(thread_id, ns, checkpoint_id).await?;
        self.gate.loaded(ns, &loaded);
        Ok(loaded)
    }

    async fn list(
        &self,
        thread_id: &str,
        ns: &str,
        filter: &ListFilter,
    ) -> Result<Vec<CheckpointRecord>, GraphError> {
        self.inner.list(thread_id, ns, filter).await
    }

    async fn delete_thread(&self, thread_id: &str) -> Result<(), GraphError> {
        let _writing = self.gate.enter(self.backend())?;
        self.inner.delete_thread(thread_id).await
    }

    async fn prune(
        &self,
        thread_id: &str,
        ns: &str,
        keep_last: usize,
    ) -> Result<usize, GraphError> {
        let _writing = self.gate.enter(self.backend())?;
        self.inner.prune(thread_id, ns, keep_last).await
    }

    async fn keep_latest(&self, thread_id: &str) -> Result<usize, GraphError> {
        let _writing = self.gate.enter(self.backend())?;
        self.inner.keep_latest(thread_id).await
    }

    async fn replace_writes(
        &self,
        thread_id: &str,
        ns: &str,
        checkpoint_id: &str,
        writes: &[PendingWrite],
    ) -> Result<(), GraphError> {
        let _writing = self.gate.enter(self.backend())?;
        self.inner
            .replace_writes(thread_id, ns, checkpoint_id, writes)
            .await
    }

    async fn delete_for_runs(
        &self,
        thread_id: &str,
        run_ids: &[&str],
    ) -> Result<usize, GraphError> {
        let _writing = self.gate.enter(self.backend())?;
        self.inner.delete_for_runs(thread_id, run_ids).await
    }

    async fn storage(
        &self,
        thread_id: &str,
    ) -> Result<Option<agent_core::checkpoint::ThreadStorage>, GraphError> {
        self.inner.storage(thread_id).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn closing_waits_for_the_writes_under_way_and_refuses_the_next() {
        let gate = Arc::new(Gate::default());
        let writing = gate.enter("memory").unwrap();
        let closer = {
            let gate = gate.clone();
            tokio::spawn(async move { gate.close().await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!closer.is_finished(), "a write is under way");
        assert!(
            gate.enter("memory").is_err(),
            "closing refuses new writes at once"
        );
        drop(writing);
        tokio::time::timeout(Duration::from_secs(1), closer)
            .await
            .unwrap()
            .unwrap();
        assert!(gate.is_closed());
        gate.close().await;
    }
}
