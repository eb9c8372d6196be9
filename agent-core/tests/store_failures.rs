//! A store that fails or falls behind while a run checkpoints with `Durability::Async`: the
//! run stops at its next step with the store's error (no more node calls, every run sharing
//! the writer told), keeps what was stored, and a slow store holds the run back instead of
//! letting checkpoints pile up in memory.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_core::checkpoint::{
    CheckpointRecord, Checkpointer, FieldBlob, LoadedCheckpoint, PendingWrite, StoreOp,
};
use agent_core::{
    CompiledGraph, Durability, END, GraphError, GraphState, InMemorySaver, Input, ListFilter,
    RunConfig, START, StateGraph,
};

#[derive(GraphState, Clone, Default, Debug)]
struct Loop {
    #[reducer(add)]
    count: u32,
}

/// An in-memory saver that breaks (every store fails, "disk full") the first time it is handed
/// a checkpoint `breaks` picks, until the test heals it; and whose batches wait for a permit each when
/// gated (a slow database).
struct Flaky {
    inner: InMemorySaver,
    breaks: Box<dyn Fn(&CheckpointRecord) -> bool + Send + Sync>,
    tripped: AtomicBool,
    broken: AtomicBool,
    /// Node calls so far (the test's nodes count themselves here), and when the store broke.
    calls: Arc<AtomicUsize>,
    calls_when_broken: AtomicUsize,
    gate: Option<tokio::sync::Semaphore>,
    /// The ops of each batch handed to the saver.
    batches: Mutex<Vec<usize>>,
    /// Stores on the run's thread (`put_batch_now`), as the in-memory saver does.
    in_place: bool,
}

impl Flaky {
    fn new(breaks: impl Fn(&CheckpointRecord) -> bool + Send + Sync + 'static) -> Self {
        Flaky {
            inner: InMemorySaver::new(),
            breaks: Box::new(breaks),
            tripped: AtomicBool::new(false),
            broken: AtomicBool::new(false),
            calls: Arc::default(),
            calls_when_broken: AtomicUsize::new(usize::MAX),
            gate: None,
            batches: Mutex::default(),
            in_place: false,
        }
    }

    /// Stores on the run's thread.
    fn in_place(self) -> Self {
        Flaky {
            in_place: true,
            ..self
        }
    }

    /// Whether `ops` may be stored: an error once the store broke (on a checkpoint `breaks`
    /// picks, the first time).
    fn check(&self, ops: &[StoreOp]) -> Result<(), GraphError> {
        let breaks = ops.iter().any(|op| match op {
            StoreOp::Checkpoint { record, .. } => (self.breaks)(record),
            StoreOp::Writes { .. } => false,
        });
        if breaks && !self.tripped.swap(true, SeqCst) {
            self.calls_when_broken
                .store(self.calls.load(SeqCst), SeqCst);
            self.broken.store(true, SeqCst);
        }
        if self.broken.load(SeqCst) {
            return Err(GraphError::Storage {
                backend: "flaky",
                detail: "disk full".to_owned(),
            });
        }
        Ok(())
    }

    /// A saver that never breaks and stores a batch only for a permit.
    fn gated() -> Self {
        Flaky {
            gate: Some(tokio::sync::Semaphore::new(0)),
            ..Flaky::new(|_| false)
        }
    }
}

#[async_trait::async_trait]
impl Checkpointer for Flaky {
    fn backend(&self) -> &'static str {
        "flaky"
    }
    fn put_batch_now(&self, ops: &mut Vec<StoreOp>) -> Option<Result<(), GraphError>> {
        if !self.in_place {
            return None;
        }
        if ops.is_empty() {
            return Some(Ok(()));
        }
        self.batches.lock().unwrap().push(ops.len());
        Some(self.check(ops).and_then(|()| {
            self.inner
                .put_batch_now(ops)
                .expect("the in-memory saver stores in place")
        }))
    }
    async fn put_batch(&self, ops: Vec<StoreOp>) -> Result<(), GraphError> {
        self.batches.lock().unwrap().push(ops.len());
        if let Some(gate) = &self.gate {
            gate.acquire().await.unwrap().forget();
        }
        self.check(&ops)?;
        self.inner.put_batch(ops).await
    }
    async fn put(&self, record: &CheckpointRecord, blobs: &[FieldBlob]) -> Result<(), GraphError> {
        self.inner.put(record, blobs).await
    }
    async fn put_writes(
        &self,
        thread_id: &str,
        ns: &str,
        checkpoint_id: &str,
        writes: &[PendingWrite],
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
        writes: &[agent_core::checkpoint::PendingWrite],
    ) -> Result<(), GraphError> {
        self.inner
            .replace_writes(thread_id, ns, checkpoint_id, writes)
            .await
    }
    async fn delete_for_runs(&self, thread_id: &str, runs: &[&str]) -> Result<usize, GraphError> {
        self.inner.delete_for_runs(thread_id, runs).await
    }
}

/// A graph whose one node runs `steps` times in a loop, each call counted in `calls` and
/// taking `took` (a model call).
fn ticking(steps: u32, took: Duration, calls: Arc<AtomicUsize>) -> StateGraph<Loop> {
    StateGraph::<Loop>::new()
        .add_node("tick", move |_: Arc<Loop>| {
            let calls = calls.clone();
            async move {
                calls.fetch_add(1, SeqCst);
                tokio::time::sleep(took).await;
                LoopUpdate::default().count(1)
            }
        })
        .add_edge(START, "tick")
        .add_conditional_edges(
            "tick",
            move |s: &Loop| if s.count < steps { "tick" } else { END },
            ["tick", END],
        )
}

fn config(thread: &str) -> RunConfig {
    RunConfig::default()
        .thread_id(thread)
        .durability(Durability::Async)
}

fn is_disk_full(error: &GraphError) -> bool {
    error.to_string().contains("disk full")
}

/// The checkpoint of step 2 fails to store (in the background while step 3 runs, or on the
/// run's thread before step 3's node is called, for a saver that stores in place): the run
/// stops at step 3 at the latest with the store's error, no node is called after the failure, and the checkpoints stored before it
/// stay: once the store heals, the thread resumes from step 1.
#[tokio::test]
async fn an_async_run_stops_at_the_step_after_a_failed_store() {
    for in_place in [false, true] {
        let saver = Flaky::new(|record| record.step == 2);
        let saver = Arc::new(if in_place { saver.in_place() } else { saver });
        let calls = saver.calls.clone();
        let graph = ticking(20, Duration::from_millis(20), calls.clone())
            .compile_with(saver.clone())
            .unwrap();
        let error = graph
            .invoke(LoopUpdate::default(), config("fails"))
            .await
            .expect_err("the store failed");
        assert!(is_disk_full(&error), "in place {in_place}: {error}");
        // Step 2's checkpoint is stored once step 3 started: before its node is called when
        // stored in place, while it runs when stored in the background.
        let when = saver.calls_when_broken.load(SeqCst);
        assert_eq!(when, if in_place { 2 } else { 3 }, "in place {in_place}");
        assert_eq!(
            calls.load(SeqCst),
            when,
            "in place {in_place}: no node is called once the store failed"
        );

        let stored = graph.get_state(&config("fails")).await.unwrap().unwrap();
        assert_eq!(
            (stored.step, stored.values.count),
            (1, 1),
            "in place {in_place}: step 1 was stored"
        );
        saver.broken.store(false, SeqCst);
        let out = graph
            .invoke(Input::Continue, config("fails"))
            .await
            .expect("resumes once the store heals");
        assert_eq!(out.count, 20);
        assert_eq!(
            calls.load(SeqCst),
            when + 19,
            "in place {in_place}: the steps after step 1 ran again"
        );
    }
}

/// A store that stalls holds an `Async` run back once its backlog (16 ops) is full: the run
/// stops calling nodes instead of queuing checkpoints without bound, and once the store
/// catches up it finishes, every batch it stored bounded by the backlog.
#[tokio::test]
async fn a_slow_store_holds_an_async_run_back() {
    let saver = Arc::new(Flaky::gated());
    let calls = saver.calls.clone();
    let graph = ticking(100, Duration::ZERO, calls.clone())
        .compile_with(saver.clone())
        .unwrap();
    let run = tokio::spawn({
        let graph = graph.clone();
        async move { graph.invoke(LoopUpdate::default(), config("slow")).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let held = calls.load(SeqCst);
    assert!(
        (1..=20).contains(&held),
        "the run waits for its store after about 16 steps, not 100: {held}"
    );
    assert!(!run.is_finished());
    saver
        .gate
        .as_ref()
        .unwrap()
        .add_permits(tokio::sync::Semaphore::MAX_PERMITS / 2);
    let out = run.await.unwrap().unwrap();
    assert_eq!(out.count, 100);
    let batches = saver.batches.lock().unwrap().clone();
    let largest = batches.iter().max().copied().unwrap_or_default();
    assert!(largest <= 20, "batches stay bounded: {batches:?}");
    let history = graph
        .get_state_history(&config("slow"), &ListFilter::default())
        .await
        .unwrap();
    assert_eq!(
        history.len(),
        102,
        "every checkpoint is stored: input, 0..=100"
    );
}

/// A child graph ticking `steps` times, its calls counted in `calls`.
fn child(steps: u32, calls: Arc<AtomicUsize>) -> CompiledGraph<Loop> {
    ticking(steps, Duration::from_millis(20), calls)
        .compile()
        .unwrap()
}

/// Two subgraph runs share their parent's writer: one's checkpoint fails to store, and both
/// stop at their next step (each sees the failure, not only the one that stored it), and the
/// parent fails with the store's error.
#[tokio::test]
async fn subgraph_runs_sharing_a_writer_both_stop_on_a_failed_store() {
    let saver = Arc::new(Flaky::new(|record| {
        record.ns.starts_with("a:") && record.step == 2
    }));
    let (a, b) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let graph = StateGraph::<Loop>::new()
        .add_node("a", child(10, a.clone()))
        .add_node("b", child(10, b.clone()))
        .add_edge(START, "a")
        .add_edge(START, "b")
        .add_edge("a", END)
        .add_edge("b", END)
        .compile_with(saver.clone())
        .unwrap();
    let error = graph
        .invoke(LoopUpdate::default(), config("children"))
        .await
        .expect_err("a store failed");
    assert!(is_disk_full(&error), "the store's error: {error}");
    assert!(saver.broken.load(SeqCst));
    let (a, b) = (a.load(SeqCst), b.load(SeqCst));
    assert_eq!(a, 3, "child a stops at the step after its failed store");
    assert!(b <= 4, "child b stops too, not after its ten steps: {b}");
}
