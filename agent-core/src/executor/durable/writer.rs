//! The writer: stores a run's checkpoints and pending writes in order, in the background.
//!
//! Every durability stores through it: `Sync` queues a step's ops and waits for them, `Async`
//! queues them and goes on, `Exit` queues its one checkpoint when the run ends and waits. A
//! run's subgraph runs share its writer (a clone), so their ops go in the same order and the
//! same batches as the parent's.
//!
//! - **Order.** One drain task at a time takes everything queued as one batch (one
//!   `put_batch`, one transaction with the savers that have them), then the next: what is
//!   queued while a batch is being stored goes in the next one. Ops are stored in the order
//!   they were queued, so a checkpoint is never stored before the blobs and checkpoints it
//!   builds on.
//! - **Tickets.** A caller waits for the ops *it* queued (the count queued when it queued
//!   them), not for the queue to be empty, which runs sharing the writer could keep from
//!   ever happening.
//! - **Bound.** Before a run starts a step's tasks it waits while [`BACKLOG`] ops or more are
//!   queued and not stored yet (backpressure): a run cannot get further ahead of its store
//!   than that, nor hold more than that in memory waiting for it (plus what one step of each
//!   run sharing the writer queues).
//! - **Failure.** A store that fails (or panics) fails the writer for good: what is queued
//!   after it is dropped (it may build on what failed), and every run sharing the writer gets
//!   the error at its next step, its next `Sync` store and its flush, each caller a copy.
//!   What was stored before the failure stays stored.
//! - **Gathering.** Runs that share the writer (a parent and its subgraph runs) store at
//!   nearly the same time: with `Sync` each child awaits its checkpoint, and a commit releases
//!   them all at once. Before it takes a batch, a drain of a writer that more than one open
//!   run shares yields to the runtime while their ops keep arriving ([`GATHER_YIELDS`] times
//!   at most), so the children a commit released queue their next checkpoints into one
//!   transaction instead of the first of them committing alone and the rest after it. Only
//!   when the batch is taken: nothing waits for a run that is not about to store.
//! - **In place.** A saver that never waits on I/O (the in-memory one, through
//!   [`Checkpointer::put_batch_now`]) stores each op as it is queued, on the run's thread:
//!   no drain task, no wake-up, never a backlog; its failure fails the writer the same way.
//!   Why: without it a `Sync` step in memory cost about a third more instructions (a spawned
//!   drain and a wake-up per step), an `Async` one about a tenth.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use futures::FutureExt;
use tracing::Instrument;

use crate::checkpoint::{Checkpointer, StoreOp};
use crate::error::GraphError;

/// How many ops may be queued and not stored yet before a run waits to start its next step.
/// A step queues one or two (its checkpoint; an input's checkpoint and write), so a run alone
/// gets at most about this many steps ahead of a store slower than its steps, and a crash
/// with `Durability::Async` loses at most that many of its checkpoints. Large enough that
/// a store that fell behind catches up in batches that share a commit's fixed cost.
pub(crate) const BACKLOG: u64 = 16;

/// How many times at most a drain yields, before it takes a batch, for the ops of other runs
/// sharing the writer to join it (it stops at the first yield after which none arrived).
/// The children of a `Sync` fan-out released by one commit each run their next step and
/// queue its checkpoint within a few of the runtime's turns.
const GATHER_YIELDS: usize = 4;

/// Stores a run's ops in order, in the background (see the module docs).
pub(crate) struct Writer {
    saver: Arc<dyn Checkpointer>,
    shared: Arc<Shared>,
    /// The saver stores on the caller's thread ([`Checkpointer::put_batch_now`]: the
    /// in-memory one): ops are stored as they are queued, with no drain task.
    in_place: bool,
    /// This handle is an open run's ([`for_run`](Self::for_run)): counted in
    /// `Shared::runs` until it is dropped. Clones are not.
    counted: bool,
}

impl Clone for Writer {
    fn clone(&self) -> Self {
        Writer {
            saver: self.saver.clone(),
            shared: self.shared.clone(),
            in_place: self.in_place,
            counted: false,
        }
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        if self.counted {
            self.shared.runs.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

#[derive(Default)]
struct Shared {
    queue: Mutex<Queue>,
    /// Woken when a batch is stored or a store failed.
    changed: tokio::sync::Notify,
    /// Open runs storing through the writer: more than one, and a drain gathers.
    runs: AtomicUsize,
}

#[derive(Default)]
struct Queue {
    /// Ops waiting for the drain, in order.
    ops: Vec<StoreOp>,
    /// A drain task runs (it stores batches until `ops` is empty).
    draining: bool,
    /// Ops queued since the writer was made, and how many of them are stored.
    queued: u64,
    stored: u64,
    /// The first store that failed; once set, nothing more is stored.
    failure: Option<Failure>,
    /// The span current where the first of `ops` was queued (the run's, a step's...), when
    /// spans are recorded: the parent of the span of the batch that stores them, so a
    /// background store lands in the run's trace.
    span: Option<tracing::Span>,
}

/// A failed store: its error, handed to the first caller that asks, and a copy of it for
/// every other. A copy keeps the error's variant when it is one a caller tells apart (a
/// refused write, [`GraphError::Fenced`], a cancel); any other becomes a
/// [`GraphError::Storage`] with its message.
struct Failure {
    first: Option<GraphError>,
    kind: CopyKind,
    backend: &'static str,
    detail: String,
}

/// The variant of a failure's copies.
#[derive(Clone, Copy)]
enum CopyKind {
    Storage,
    Fenced,
    Cancelled,
}

impl Failure {
    fn new(error: GraphError, saver: &'static str) -> Self {
        let (kind, backend, detail) = match &error {
            GraphError::Storage { backend, detail } => {
                (CopyKind::Storage, *backend, detail.clone())
            }
            GraphError::Fenced { backend, detail } => (CopyKind::Fenced, *backend, detail.clone()),
            GraphError::Cancelled => (CopyKind::Cancelled, saver, String::new()),
            other => (CopyKind::Storage, saver, other.to_string()),
        };
        Failure {
            first: Some(error),
            kind,
            backend,
            detail,
        }
    }

    fn report(&mut self) -> GraphError {
        if let Some(first) = self.first.take() {
            return first;
        }
        let (backend, detail) = (self.backend, self.detail.clone());
        match self.kind {
            CopyKind::Storage => GraphError::Storage { backend, detail },
            CopyKind::Fenced => GraphError::Fenced { backend, detail },
            CopyKind::Cancelled => GraphError::Cancelled,
        }
    }
}

impl Queue {
    /// Fails the writer with `error` (the first failure stays) and drops what is queued.
    fn fail(&mut self, error: GraphError, backend: &'static str) {
        self.ops.clear();
        self.failure
            .get_or_insert_with(|| Failure::new(error, backend));
    }
}

impl Writer {
    pub(crate) fn new(saver: Arc<dyn Checkpointer>) -> Self {
        // Asked with nothing to store: whether the saver stores in place.
        let in_place = saver.put_batch_now(&mut Vec::new()).is_some();
        Writer {
            saver,
            shared: Arc::default(),
            in_place,
            counted: false,
        }
    }

    /// The handle of a run that stores through this writer, counted as one of its runs while
    /// it lives (see the module docs' gathering).
    pub(crate) fn for_run(&self) -> Writer {
        self.shared.runs.fetch_add(1, Ordering::Relaxed);
        let mut run = self.clone();
        run.counted = true;
        run
    }

    /// The checkpointer it stores to.
    pub(crate) fn saver(&self) -> &Arc<dyn Checkpointer> {
        &self.saver
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        lock(&self.shared)
    }

    /// Queues `ops` to be stored after everything queued before them. After a failed store
    /// they are dropped: the failure is reported at the run's next step or flush.
    pub(crate) fn submit(&self, ops: impl IntoIterator<Item = StoreOp>) {
        self.queue(ops);
    }

    /// Queues `ops` (see [`submit`](Self::submit)); their ticket: they are stored once
    /// `stored` reaches it.
    fn queue(&self, ops: impl IntoIterator<Item = StoreOp>) -> u64 {
        if self.in_place {
            self.store_here(ops.into_iter().collect());
            return 0;
        }
        let mut queue = self.lock();
        if queue.failure.is_some() {
            return queue.queued;
        }
        let before = queue.ops.len();
        if before == 0 && tracing::level_filters::LevelFilter::current() >= tracing::Level::INFO {
            queue.span = Some(tracing::Span::current());
        }
        queue.ops.extend(ops);
        queue.queued += (queue.ops.len() - before) as u64;
        let ticket = queue.queued;
        if !queue.draining && !queue.ops.is_empty() {
            queue.draining = true;
            drop(queue);
            let (saver, shared) = (self.saver.clone(), self.shared.clone());
            tokio::spawn(async move { drain(&*saver, &shared).await });
        }
        ticket
    }

    /// Stores `ops` now, on the caller's thread, for a saver that stores in place: a run's ops
    /// in its order (it stores each before it goes on), sibling runs' beside them (the saver
    /// orders those); nothing is ever waiting, so tickets are 0 and there is never a
    /// backlog. A failure fails the writer as a queued store's does.
    fn store_here(&self, mut ops: Vec<StoreOp>) {
        if ops.is_empty() || self.lock().failure.is_some() {
            return;
        }
        let backend = self.saver.backend();
        let span = crate::telemetry::checkpoint_span(None, backend, &ops);
        let stored = span.in_scope(|| {
            std::panic::catch_unwind(AssertUnwindSafe(|| self.saver.put_batch_now(&mut ops)))
        });
        let error = match stored {
            Ok(Some(Ok(()))) => return,
            Ok(Some(Err(error))) => error,
            Ok(None) => GraphError::Storage {
                backend,
                detail: "the checkpointer stopped storing in place".to_owned(),
            },
            Err(_) => GraphError::Storage {
                backend,
                detail: "the checkpointer panicked while storing".to_owned(),
            },
        };
        crate::telemetry::checkpoint_failed(&span, &error);
        self.lock().fail(error, backend);
        self.shared.changed.notify_waiters();
    }

    /// Stores `ops` after everything queued before them and waits until they are stored.
    pub(crate) async fn write_now(&self, ops: Vec<StoreOp>) -> Result<(), GraphError> {
        let ticket = self.queue(ops);
        self.wait(|queue| queue.stored >= ticket).await
    }

    /// Waits until everything queued so far is stored.
    pub(crate) async fn flush(&self) -> Result<(), GraphError> {
        let ticket = self.lock().queued;
        self.wait(|queue| queue.stored >= ticket).await
    }

    /// Waits until fewer than [`BACKLOG`] ops wait to be stored (a run calls it before it
    /// starts a step's tasks).
    pub(crate) async fn room(&self) -> Result<(), GraphError> {
        self.wait(|queue| queue.queued - queue.stored < BACKLOG)
            .await
    }

    /// The failure, once a store failed.
    pub(crate) fn failed(&self) -> Result<(), GraphError> {
        self.settled(|_| true).map(|_| ())
    }

    /// Waits until `ready` holds; the failure instead once a store failed.
    async fn wait(&self, ready: impl Fn(&Queue) -> bool) -> Result<(), GraphError> {
        if self.settled(&ready)? {
            return Ok(());
        }
        loop {
            // Registered before the queue is read again, so a change in between wakes it.
            let changed = self.shared.changed.notified();
            let mut changed = std::pin::pin!(changed);
            changed.as_mut().enable();
            if self.settled(&ready)? {
                return Ok(());
            }
            changed.await;
        }
    }

    /// Whether `ready` holds; the failure once a store failed.
    fn settled(&self, ready: impl Fn(&Queue) -> bool) -> Result<bool, GraphError> {
        let mut queue = self.lock();
        match &mut queue.failure {
            Some(failure) => Err(failure.report()),
            None => Ok(ready(&queue)),
        }
    }
}

fn lock(shared: &Shared) -> MutexGuard<'_, Queue> {
    // No code panics while holding the lock with the queue half-changed.
    shared.queue.lock().unwrap_or_else(|p| p.into_inner())
}

/// Stores batches until the queue is empty or a store failed (a task of its own).
async fn drain(saver: &dyn Checkpointer, shared: &Shared) {
    let backend = saver.backend();
    // Dropped before it finishes only when the runtime shuts down: nobody waits forever.
    let abandoned = Abandoned { shared, backend };
    loop {
        gather(shared).await;
        let (ops, parent) = {
            let mut queue = lock(shared);
            if queue.ops.is_empty() || queue.failure.is_some() {
                queue.draining = false;
                queue.span = None;
                std::mem::forget(abandoned);
                return;
            }
            (std::mem::take(&mut queue.ops), queue.span.take())
        };
        let count = ops.len() as u64;
        // Parented to the span that queued the batch's first op: a drain runs on a task of
        // its own, with no current span.
        let span = match &parent {
            Some(parent) => crate::telemetry::checkpoint_span(Some(parent), backend, &ops),
            None => tracing::Span::none(),
        };
        let stored = AssertUnwindSafe(saver.put_batch(ops))
            .catch_unwind()
            .instrument(span.clone())
            .await;
        {
            let mut queue = lock(shared);
            match stored {
                Ok(Ok(())) => queue.stored += count,
                Ok(Err(error)) => {
                    crate::telemetry::checkpoint_failed(&span, &error);
                    queue.fail(error, backend)
                }
                Err(_) => {
                    let error = GraphError::Storage {
                        backend,
                        detail: "the checkpointer panicked while storing".to_owned(),
                    };
                    crate::telemetry::checkpoint_failed(&span, &error);
                    queue.fail(error, backend)
                }
            }
        }
        shared.changed.notify_waiters();
    }
}

/// Yields while other runs sharing the writer keep queueing ops (see [`GATHER_YIELDS`]); at
/// once when one run alone stores through it, or nothing is queued.
async fn gather(shared: &Shared) {
    if shared.runs.load(Ordering::Relaxed) < 2 {
        return;
    }
    let mut queued = lock(shared).ops.len();
    for _ in 0..GATHER_YIELDS {
        if queued == 0 {
            return;
        }
        tokio::task::yield_now().await;
        let now = lock(shared).ops.len();
        if now == queued {
            return;
        }
        queued = now;
    }
}

/// A drain dropped before it finished (the runtime shut down): its batch may be lost, so the
/// writer fails, as after a failed store, and nobody waits for a drain that no longer runs.
struct Abandoned<'a> {
    shared: &'a Shared,
    backend: &'static str,
}

impl Drop for Abandoned<'_> {
    fn drop(&mut self) {
        let mut queue = lock(self.shared);
        queue.draining = false;
        queue.fail(
            GraphError::Storage {
                backend: self.backend,
                detail: "storing was cancelled before it finished".to_owned(),
            },
            self.backend,
        );
        drop(queue);
        self.shared.changed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    use std::time::Duration;

    use super::{BACKLOG, Ordering, Writer};
    use crate::checkpoint::{CheckpointRecord, Checkpointer, LoadedCheckpoint, StoreOp};
    use crate::{GraphError, InMemorySaver, ListFilter};

    /// An in-memory saver whose batches wait for a permit each (none: a stalled database),
    /// failing while `fail` is set; or that stores in place, as the in-memory one does.
    struct Gated {
        in_place: bool,
        inner: InMemorySaver,
        gate: tokio::sync::Semaphore,
        fail: AtomicBool,
        /// Batches handed to the saver, by size.
        batches: std::sync::Mutex<Vec<usize>>,
    }

    impl Gated {
        /// A saver that stores a batch for each of `permits`.
        fn new(permits: usize) -> Self {
            Gated {
                in_place: false,
                inner: InMemorySaver::new(),
                gate: tokio::sync::Semaphore::new(permits),
                fail: AtomicBool::new(false),
                batches: std::sync::Mutex::default(),
            }
        }
    }

    impl Gated {
        fn check(&self) -> Result<(), GraphError> {
            if self.fail.load(SeqCst) {
                return Err(GraphError::Storage {
                    backend: "gated",
                    detail: "disk full".to_owned(),
                });
            }
            Ok(())
        }
    }

    #[async_trait::async_trait]
    impl Checkpointer for Gated {
        fn backend(&self) -> &'static str {
            "gated"
        }
        fn put_batch_now(&self, ops: &mut Vec<StoreOp>) -> Option<Result<(), GraphError>> {
            if !self.in_place || ops.is_empty() {
                return self.in_place.then_some(Ok(()));
            }
            self.batches.lock().unwrap().push(ops.len());
            Some(
                self.check()
                    .and_then(|()| self.inner.put_batch_now(ops).unwrap()),
            )
        }
        async fn put_batch(&self, ops: Vec<StoreOp>) -> Result<(), GraphError> {
            self.batches.lock().unwrap().push(ops.len());
            self.gate.acquire().await.unwrap().forget();
            self.check()?;
            self.inner.put_batch(ops).await
        }
        async fn put(
            &self,
            record: &CheckpointRecord,
            blobs: &[crate::checkpoint::FieldBlob],
        ) -> Result<(), GraphError> {
            self.inner.put(record, blobs).await
        }
        async fn put_writes(
            &self,
            thread_id: &str,
            ns: &str,
            checkpoint_id: &str,
            writes: &[crate::checkpoint::PendingWrite],
        ) -> Result<(), GraphError> {
            self.inner
                .put_writes(thread_id, ns, checkpoint_id, writes)
                .await
        }
        async fn get(
            &self,
            thread_id: &str,
            ns: &str,
            checkpoint_id: Option<&str>,
        ) -> Result<LoadedCheckpoint, GraphError> {
            self.inner.get(thread_id, ns, checkpoint_id).await
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
            self.inner.delete_thread(thread_id).await
        }
        async fn prune(&self, thread_id: &str, ns: &str, keep: usize) -> Result<usize, GraphError> {
            self.inner.prune(thread_id, ns, keep).await
        }
        async fn keep_latest(&self, thread_id: &str) -> Result<usize, GraphError> {
            self.inner.keep_latest(thread_id).await
        }
        async fn replace_writes(
            &self,
            thread_id: &str,
            ns: &str,
            checkpoint_id: &str,
            writes: &[crate::checkpoint::PendingWrite],
        ) -> Result<(), GraphError> {
            self.inner
                .replace_writes(thread_id, ns, checkpoint_id, writes)
                .await
        }
        async fn delete_for_runs(
            &self,
            thread_id: &str,
            runs: &[&str],
        ) -> Result<usize, GraphError> {
            self.inner.delete_for_runs(thread_id, runs).await
        }
    }

    fn op() -> StoreOp {
        StoreOp::Writes {
            thread_id: "t".into(),
            ns: "".into(),
            checkpoint_id: "c".into(),
            writes: Vec::new(),
        }
    }

    fn ops(n: usize) -> Vec<StoreOp> {
        (0..n).map(|_| op()).collect()
    }

    /// Yields until `done` holds (the drain moves meanwhile).
    async fn until(done: impl Fn() -> bool) {
        for _ in 0..100_000 {
            if done() {
                return;
            }
            tokio::task::yield_now().await;
        }
        panic!("the writer never got there");
    }

    /// A failed store fails the writer for good: every caller (flushes, `Sync` stores, runs
    /// about to step) gets the error, and nothing queued after it reaches the saver; whether
    /// it was stored in the background or in place.
    #[tokio::test]
    async fn a_failed_store_reaches_every_caller_and_nothing_after_it_is_stored() {
        for in_place in [false, true] {
            let saver = Arc::new(Gated {
                in_place,
                ..Gated::new(1000)
            });
            saver.fail.store(true, SeqCst);
            let writer = Writer::new(saver.clone());
            assert_eq!(writer.in_place, in_place);
            let other = writer.clone();
            writer.submit([op()]);
            for error in [
                writer.flush().await.unwrap_err(),
                other.flush().await.unwrap_err(),
                writer.room().await.unwrap_err(),
                other.failed().unwrap_err(),
                other.write_now(ops(2)).await.unwrap_err(),
            ] {
                assert!(
                    matches!(&error, GraphError::Storage { backend: "gated", detail } if detail == "disk full"),
                    "in place {in_place}: {error}"
                );
            }
            saver.fail.store(false, SeqCst);
            writer.submit(ops(3));
            assert!(writer.flush().await.is_err(), "still failed");
            assert_eq!(
                *saver.batches.lock().unwrap(),
                [1],
                "in place {in_place}: nothing after the failure"
            );
        }
    }

    /// A caller waits for the ops it queued, not for the queue to empty: a flush returns once
    /// its ops are stored while later ones still wait; ops queued while a batch is being
    /// stored go together in the next one.
    #[tokio::test]
    async fn a_flush_waits_for_what_was_queued_before_it_not_for_an_empty_queue() {
        let saver = Arc::new(Gated::new(0));
        let writer = Writer::new(saver.clone());
        let batches = || saver.batches.lock().unwrap().clone();
        writer.submit([op()]);
        until(|| batches().len() == 1).await;
        let mut flushed = std::pin::pin!(writer.flush());
        assert!(futures::poll!(flushed.as_mut()).is_pending());
        writer.submit(ops(2));
        writer.submit([op()]);
        saver.gate.add_permits(1);
        until(|| batches().len() == 2).await;
        assert_eq!(batches(), [1, 3], "queued meanwhile: one batch");
        tokio::time::timeout(Duration::from_secs(5), flushed)
            .await
            .expect("the flush returns while the next batch waits")
            .unwrap();
        assert_eq!(writer.lock().stored, 1);
        saver.gate.add_permits(1);
        writer.flush().await.unwrap();
    }

    /// Goes to the back of the runtime's queue once, as a task woken meanwhile would be
    /// (`yield_now` waits until the queue is empty: the drain's own yield).
    async fn requeue() {
        let mut woken = false;
        std::future::poll_fn(|cx| {
            if std::mem::replace(&mut woken, true) {
                return std::task::Poll::Ready(());
            }
            cx.waker().wake_by_ref();
            std::task::Poll::Pending
        })
        .await
    }

    /// Runs sharing a writer whose ops arrive a few turns of the runtime apart (the children
    /// a commit released, each running its next step) are stored in one batch, one
    /// transaction: the drain the first of them started yields while the others' ops arrive.
    #[tokio::test]
    async fn a_drain_gathers_the_ops_of_the_runs_sharing_the_writer() {
        let saver = Arc::new(Gated::new(1000));
        let writer = Writer::new(saver.clone());
        let stores: Vec<_> = (0..3)
            .map(|turns| {
                let run = writer.for_run();
                tokio::spawn(async move {
                    // A step that takes `turns` turns of the runtime before it stores.
                    for _ in 0..turns {
                        requeue().await;
                    }
                    run.write_now(ops(1)).await
                })
            })
            .collect();
        for store in stores {
            store.await.unwrap().unwrap();
        }
        assert_eq!(*saver.batches.lock().unwrap(), [3], "one batch");
        assert_eq!(writer.shared.runs.load(Ordering::Relaxed), 0, "runs ended");
        // One run alone is not held back: each of its stores is a batch.
        let alone = writer.for_run();
        alone.write_now(ops(1)).await.unwrap();
        alone.write_now(ops(2)).await.unwrap();
        assert_eq!(*saver.batches.lock().unwrap(), [3, 1, 2]);
    }

    /// A store that stalls holds back whoever waits for room once `BACKLOG` ops wait, and
    /// lets them go once it catches up.
    #[tokio::test]
    async fn room_waits_while_the_backlog_is_full() {
        let saver = Arc::new(Gated::new(0));
        let writer = Writer::new(saver.clone());
        let wait = Duration::from_millis(20);
        writer.submit(ops(BACKLOG as usize - 1));
        writer.room().await.unwrap();
        writer.submit([op()]);
        assert!(
            tokio::time::timeout(wait, writer.room()).await.is_err(),
            "the backlog is full"
        );
        saver.gate.add_permits(1);
        tokio::time::timeout(Duration::from_secs(5), writer.room())
            .await
            .expect("room once the batch is stored")
            .unwrap();
    }

    /// A drain dropped with its runtime (shut down mid-store) fails the writer instead of
    /// leaving callers elsewhere waiting for it forever.
    #[test]
    fn a_drain_dropped_with_its_runtime_fails_the_writer_instead_of_hanging_it() {
        let saver = Arc::new(Gated::new(0));
        let writer = Writer::new(saver.clone());
        let doomed = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        doomed.block_on(async {
            writer.submit([op()]);
            until(|| saver.batches.lock().unwrap().len() == 1).await;
        });
        drop(doomed);
        let other = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let flushed = other
            .block_on(async { tokio::time::timeout(Duration::from_secs(5), writer.flush()).await });
        let error = flushed.expect("no hang").unwrap_err();
        assert!(error.to_string().contains("cancelled"), "{error}");
    }
}
