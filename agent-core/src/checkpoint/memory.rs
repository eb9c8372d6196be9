//! `InMemorySaver`: checkpoints in a process-local map. For tests, notebooks and short-lived
//! programs; everything is lost when the process ends.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use super::{
    CheckpointRecord, Checkpointer, FieldBlob, ListFilter, LoadedCheckpoint, PendingWrite, StoreOp,
    WriteKind, needed_blobs,
};
use crate::error::GraphError;

type ThreadKey = (String, String);

#[derive(Default)]
struct Thread {
    /// By checkpoint id; ids are time-ordered, so the map is oldest first.
    checkpoints: BTreeMap<String, CheckpointRecord>,
    /// By (field, version).
    blobs: HashMap<(String, String), FieldBlob>,
    /// By checkpoint id.
    writes: HashMap<String, Writes>,
}

/// A checkpoint's pending writes, in the order stored; one per (task id, kind).
#[derive(Default)]
struct Writes {
    list: Vec<PendingWrite>,
    index: HashMap<(String, WriteKind), usize>,
}

impl Writes {
    fn put(&mut self, write: PendingWrite) {
        match self.index.get(&(write.task_id.clone(), write.kind)) {
            Some(&at) => self.list[at] = write,
            None => {
                self.index
                    .insert((write.task_id.clone(), write.kind), self.list.len());
                self.list.push(write);
            }
        }
    }
}

impl Thread {
    fn put(&mut self, record: CheckpointRecord, blobs: Vec<FieldBlob>) {
        for blob in blobs {
            self.blobs
                .insert((blob.field.clone(), blob.version.clone()), blob);
        }
        self.checkpoints.insert(record.id.clone(), record);
    }
}

/// Checkpoints in memory.
#[derive(Default)]
pub struct InMemorySaver {
    threads: Mutex<HashMap<ThreadKey, Thread>>,
}

impl std::fmt::Debug for InMemorySaver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InMemorySaver").finish_non_exhaustive()
    }
}

impl InMemorySaver {
    /// An empty saver.
    pub fn new() -> Self {
        InMemorySaver::default()
    }

    /// Bytes of blobs stored for a thread (for storage measurements).
    pub fn blob_bytes(&self, thread_id: &str) -> usize {
        self.lock()
            .iter()
            .filter(|((t, _), _)| t == thread_id)
            .flat_map(|(_, th)| th.blobs.values())
            .map(|b| b.data.len())
            .sum()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ThreadKey, Thread>> {
        // A panic while holding the lock leaves consistent data (each method mutates at the
        // end), so a poisoned lock is still usable.
        self.threads.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[async_trait::async_trait]
impl Checkpointer for InMemorySaver {
    fn backend(&self) -> &'static str {
        "memory"
    }

    fn stores_instantly(&self) -> bool {
        true
    }

    async fn put(&self, record: &CheckpointRecord, blobs: &[FieldBlob]) -> Result<(), GraphError> {
        let mut threads = self.lock();
        threads
            .entry((record.thread_id.clone(), record.ns.clone()))
            .or_default()
            .put(record.clone(), blobs.to_vec());
        Ok(())
    }

    async fn put_batch(&self, ops: Vec<StoreOp>) -> Result<(), GraphError> {
        let mut threads = self.lock();
        for op in ops {
            match op {
                StoreOp::Checkpoint { record, blobs } => threads
                    .entry((record.thread_id.clone(), record.ns.clone()))
                    .or_default()
                    .put(record, blobs),
                StoreOp::Writes {
                    thread_id,
                    ns,
                    checkpoint_id,
                    writes,
                } => {
                    let list = threads
                        .entry((thread_id, ns))
                        .or_default()
                        .writes
                        .entry(checkpoint_id)
                        .or_default();
                    for write in writes {
                        list.put(write);
                    }
                }
            }
        }
        Ok(())
    }

    async fn put_writes(
        &self,
        thread_id: &str,
        ns: &str,
        checkpoint_id: &str,
        writes: &[PendingWrite],
    ) -> Result<(), GraphError> {
        let mut threads = self.lock();
        let thread = threads
            .entry((thread_id.to_owned(), ns.to_owned()))
            .or_default();
        let list = thread.writes.entry(checkpoint_id.to_owned()).or_default();
        for write in writes {
            list.put(write.clone());
        }
        Ok(())
    }

    async fn get(
        &self,
        thread_id: &str,
        ns: &str,
        checkpoint_id: Option<&str>,
    ) -> Result<LoadedCheckpoint, GraphError> {
        let threads = self.lock();
        let Some(thread) = threads.get(&(thread_id.to_owned(), ns.to_owned())) else {
            return Ok(LoadedCheckpoint::default());
        };
        let record = match checkpoint_id {
            Some(id) => thread.checkpoints.get(id),
            None => thread.checkpoints.values().next_back(),
        };
        let Some(record) = record.cloned() else {
            return Ok(LoadedCheckpoint::default());
        };
        let needed = needed_blobs(
            record.versions.iter().map(|(f, v)| (f.clone(), v.clone())),
            |f, v| {
                thread
                    .blobs
                    .get(&(f.to_owned(), v.to_owned()))
                    .and_then(|b| b.base.as_ref())
            },
        );
        let blobs = needed
            .iter()
            .filter_map(|k| thread.blobs.get(k).cloned())
            .collect();
        let writes = thread
            .writes
            .get(&record.id)
            .map(|w| w.list.clone())
            .unwrap_or_default();
        Ok(LoadedCheckpoint {
            record: Some(record),
            blobs,
            writes,
        })
    }

    async fn list(
        &self,
        thread_id: &str,
        ns: &str,
        filter: &ListFilter,
    ) -> Result<Vec<CheckpointRecord>, GraphError> {
        let threads = self.lock();
        let Some(thread) = threads.get(&(thread_id.to_owned(), ns.to_owned())) else {
            return Ok(Vec::new());
        };
        Ok(thread
            .checkpoints
            .values()
            .rev()
            .filter(|r| filter.before.as_ref().is_none_or(|b| r.id < *b))
            .filter(|r| filter.matches_metadata(&r.metadata))
            .take(filter.limit.unwrap_or(usize::MAX))
            .cloned()
            .collect())
    }

    async fn delete_thread(&self, thread_id: &str) -> Result<(), GraphError> {
        self.lock().retain(|(t, _), _| t != thread_id);
        Ok(())
    }

    async fn prune(
        &self,
        thread_id: &str,
        ns: &str,
        keep_last: usize,
    ) -> Result<usize, GraphError> {
        let mut threads = self.lock();
        let Some(thread) = threads.get_mut(&(thread_id.to_owned(), ns.to_owned())) else {
            return Ok(0);
        };
        let total = thread.checkpoints.len();
        if total <= keep_last {
            return Ok(0);
        }
        let doomed: Vec<String> = thread
            .checkpoints
            .keys()
            .take(total - keep_last)
            .cloned()
            .collect();
        for id in &doomed {
            thread.checkpoints.remove(id);
            thread.writes.remove(id);
        }
        let needed = needed_blobs(
            thread
                .checkpoints
                .values()
                .flat_map(|r| r.versions.iter().map(|(f, v)| (f.clone(), v.clone()))),
            |f, v| {
                thread
                    .blobs
                    .get(&(f.to_owned(), v.to_owned()))
                    .and_then(|b| b.base.as_ref())
            },
        );
        thread.blobs.retain(|k, _| needed.contains(k));
        Ok(doomed.len())
    }
}
