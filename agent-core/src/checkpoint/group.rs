//! Batches stored at the same time share one transaction (a group commit).
//!
//! A commit has a fixed cost whatever it holds: with SQLite the log's frame headers and
//! checksums, the pages every insert touches (a table's last leaf, an index's leaf) and the
//! system call that writes them; with PostgreSQL a round trip and the server's commit. When
//! many runs store at once (a server's runs, each awaiting its step's checkpoint with
//! `Durability::Sync`), each batch in a transaction of its own pays it again, one after
//! another. Here a batch that arrives while another commits waits in a queue, and the next
//! committer stores everything queued in one transaction. (A run and its subgraph runs share
//! one writer, which gathers their batches before it hands one here,
//! `executor/durable/writer.rs`: this is for runs that do not share one.)
//!
//! The committer is whichever waiting caller takes the turn (a fair lock: callers take it in
//! the order they asked); a caller whose batch another committed returns without taking it.
//! Every caller returns once its own batch is committed or has failed: the saver stores a
//! group that fails again batch by batch, so one bad batch fails only its own caller.

use std::future::Future;
use std::sync::Mutex;

use tokio::sync::oneshot;

use crate::error::GraphError;

/// A batch in the queue and the caller waiting for it.
pub(super) struct Queued<T> {
    pub(super) batch: T,
    done: oneshot::Sender<Result<(), GraphError>>,
}

impl<T> Queued<T> {
    /// Tells the caller how its batch ended (a caller that went away is not told).
    pub(super) fn finish(self, result: Result<(), GraphError>) {
        let _ = self.done.send(result);
    }
}

/// The queue of one saver's batches.
pub(super) struct Group<T> {
    backend: &'static str,
    queue: Mutex<Vec<Queued<T>>>,
    turn: tokio::sync::Mutex<()>,
}

impl<T> Group<T> {
    /// An empty queue for the saver named `backend` (in errors).
    pub(super) fn new(backend: &'static str) -> Self {
        Group {
            backend,
            queue: Mutex::new(Vec::new()),
            turn: tokio::sync::Mutex::new(()),
        }
    }

    /// Queues `batch` and returns how it was stored: by this caller, with whatever else is
    /// queued when it takes the turn (`commit` must finish every batch it is given), or by
    /// another caller that took the turn first.
    pub(super) async fn submit<F, Fut>(&self, batch: T, commit: F) -> Result<(), GraphError>
    where
        F: Fn(Vec<Queued<T>>) -> Fut,
        Fut: Future<Output = ()>,
    {
        let (done, mut stored) = oneshot::channel();
        self.lock().push(Queued { batch, done });
        loop {
            tokio::select! {
                biased;
                result = &mut stored => {
                    return result.unwrap_or_else(|_| {
                        Err(GraphError::Storage {
                            backend: self.backend,
                            detail: "the committer of a batch stopped before storing it".into(),
                        })
                    });
                }
                _turn = self.turn.lock() => {
                    let queued = std::mem::take(&mut *self.lock());
                    if !queued.is_empty() {
                        commit(queued).await;
                    }
                }
            }
        }
    }

    /// How many batches wait for the next commit.
    #[cfg(test)]
    pub(super) fn queued(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Queued<T>>> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A checkpoint of `thread` (id `c1`) with a body of `bytes` bytes: the savers' group tests'
/// batch.
#[cfg(test)]
pub(super) fn checkpoint_op(thread: &str, bytes: usize) -> super::StoreOp {
    super::StoreOp::Checkpoint {
        record: super::CheckpointRecord {
            thread_id: thread.into(),
            ns: "".into(),
            id: "c1".into(),
            parent_id: None,
            step: 0,
            created_at_ms: 0,
            metadata: Default::default(),
            versions: Default::default(),
            body: vec![1; bytes],
        },
        blobs: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Batches queued while one commits are committed together, each caller learns its own
    /// batch's result, and every batch is committed exactly once.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn waiting_batches_share_the_next_commit() {
        let group = Arc::new(Group::<u32>::new("test"));
        let commits = Arc::new(Mutex::new(Vec::<Vec<u32>>::new()));
        let mut callers = Vec::new();
        for batch in 0..40u32 {
            let (group, commits) = (group.clone(), commits.clone());
            callers.push(tokio::spawn(async move {
                group
                    .submit(batch, |queued| {
                        let commits = commits.clone();
                        async move {
                            // A commit that takes a while, so that others queue behind it.
                            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                            commits
                                .lock()
                                .unwrap()
                                .push(queued.iter().map(|q| q.batch).collect());
                            for q in queued {
                                let result = if q.batch % 7 == 3 {
                                    Err(GraphError::Storage {
                                        backend: "sqlite",
                                        detail: format!("batch {}", q.batch),
                                    })
                                } else {
                                    Ok(())
                                };
                                q.finish(result);
                            }
                        }
                    })
                    .await
            }));
        }
        for (batch, caller) in callers.into_iter().enumerate() {
            let result = caller.await.unwrap();
            assert_eq!(result.is_err(), batch % 7 == 3, "batch {batch}: {result:?}");
        }
        let commits = commits.lock().unwrap();
        let mut all: Vec<u32> = commits.iter().flatten().copied().collect();
        all.sort_unstable();
        assert_eq!(
            all,
            (0..40).collect::<Vec<_>>(),
            "each batch committed once"
        );
        assert!(
            commits.len() < 40,
            "some batches shared a commit: {commits:?}"
        );
    }

    /// A committer that drops a batch without finishing it fails that batch's caller (it does
    /// not hang).
    #[tokio::test]
    async fn a_batch_dropped_unfinished_fails_its_caller() {
        let group = Group::<u32>::new("test");
        let result = group.submit(1, |queued| async move { drop(queued) }).await;
        assert!(
            matches!(result, Err(GraphError::Storage { .. })),
            "{result:?}"
        );
    }
}
