//! A run's own checkpointer (`RunConfig::checkpointer`): the run and its subgraph runs store
//! through it instead of the graph's, a graph compiled without one persists through it, and a
//! wrapper that starts refusing writes mid-run (a run cancelled, a lease lost) fails the run
//! with its error, with every durability and from inside a subgraph, and nothing more of the
//! run is written.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};

use agent_core::checkpoint::{
    CheckpointRecord, Checkpointer, FieldBlob, LoadedCheckpoint, PendingWrite, StoreOp,
};
use agent_core::{
    BoxResult, CompiledGraph, Durability, END, GraphError, GraphState, InMemorySaver, Input,
    ListFilter, NodeContext, RunConfig, START, StateGraph,
};

#[derive(GraphState, Clone, Default, Debug)]
struct Loop {
    #[reducer(add)]
    count: u32,
    #[reducer(append)]
    seen: Vec<String>,
}

/// A wrapper over another saver that counts what it stores and refuses every write (with
/// `GraphError::Fenced`) from the first batch holding a checkpoint `refuse` picks, or once
/// told to (`refusing`).
struct Refusing {
    inner: Arc<dyn Checkpointer>,
    refuse: Box<dyn Fn(&CheckpointRecord) -> bool + Send + Sync>,
    refusing: AtomicBool,
    /// Stores on the run's thread, as the in-memory saver does.
    in_place: bool,
    /// Checkpoints handed to the inner saver, and batches refused.
    stored: AtomicUsize,
    refused: AtomicUsize,
    /// The test's node calls so far, and how many there were at the first refusal.
    calls: Arc<AtomicUsize>,
    calls_when_refused: AtomicUsize,
}

impl Refusing {
    fn new(
        inner: Arc<dyn Checkpointer>,
        in_place: bool,
        refuse: impl Fn(&CheckpointRecord) -> bool + Send + Sync + 'static,
    ) -> Self {
        Refusing {
            inner,
            refuse: Box::new(refuse),
            refusing: AtomicBool::new(false),
            in_place,
            stored: AtomicUsize::new(0),
            refused: AtomicUsize::new(0),
            calls: Arc::default(),
            calls_when_refused: AtomicUsize::new(usize::MAX),
        }
    }

    /// Notes how many of `calls` were made when it first refuses.
    fn counting(self, calls: Arc<AtomicUsize>) -> Self {
        Refusing { calls, ..self }
    }

    fn check(&self, ops: &[StoreOp]) -> Result<(), GraphError> {
        let checkpoints = ops.iter().filter_map(|op| match op {
            StoreOp::Checkpoint { record, .. } => Some(record),
            StoreOp::Writes { .. } => None,
        });
        let mut count = 0;
        for record in checkpoints {
            count += 1;
            if (self.refuse)(record) {
                self.refusing.store(true, SeqCst);
            }
        }
        if self.refusing.load(SeqCst) {
            if self.refused.fetch_add(1, SeqCst) == 0 {
                self.calls_when_refused
                    .store(self.calls.load(SeqCst), SeqCst);
            }
            return Err(GraphError::Fenced {
                backend: "refusing",
                detail: "the run was cancelled".to_owned(),
            });
        }
        self.stored.fetch_add(count, SeqCst);
        Ok(())
    }
}

#[async_trait::async_trait]
impl Checkpointer for Refusing {
    fn backend(&self) -> &'static str {
        "refusing"
    }
    fn put_batch_now(&self, ops: &mut Vec<StoreOp>) -> Option<Result<(), GraphError>> {
        if !self.in_place {
            return None;
        }
        if ops.is_empty() {
            return Some(Ok(()));
        }
        if let Err(e) = self.check(ops) {
            return Some(Err(e));
        }
        self.inner.put_batch_now(ops)
    }
    async fn put_batch(&self, ops: Vec<StoreOp>) -> Result<(), GraphError> {
        self.check(&ops)?;
        self.inner.put_batch(ops).await
    }
    async fn put(&self, record: &CheckpointRecord, blobs: &[FieldBlob]) -> Result<(), GraphError> {
        self.put_batch(vec![StoreOp::Checkpoint {
            record: record.clone(),
            blobs: blobs.to_vec(),
        }])
        .await
    }
    async fn put_writes(
        &self,
        thread_id: &str,
        ns: &str,
        checkpoint_id: &str,
        writes: &[PendingWrite],
    ) -> Result<(), GraphError> {
        self.put_batch(vec![StoreOp::Writes {
            thread_id: thread_id.into(),
            ns: ns.into(),
            checkpoint_id: checkpoint_id.into(),
            writes: writes.to_vec(),
        }])
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

/// A loop of `steps` steps whose node counts its calls in `calls`.
fn ticking(steps: u32, calls: Arc<AtomicUsize>) -> StateGraph<Loop> {
    StateGraph::<Loop>::new()
        .add_node("tick", move |_: Arc<Loop>| {
            let calls = calls.clone();
            async move {
                calls.fetch_add(1, SeqCst);
                tokio::task::yield_now().await;
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

/// Every checkpoint of `thread` in `ns` in `saver`, oldest first.
async fn stored(saver: &dyn Checkpointer, thread: &str, ns: &str) -> Vec<CheckpointRecord> {
    let mut records = saver
        .list(thread, ns, &ListFilter::default())
        .await
        .unwrap();
    records.reverse();
    records
}

/// The run stores through the config's saver, not the graph's; reads where it starts through
/// it too; the thread API given the config goes through it.
#[tokio::test]
async fn a_run_checkpoints_through_the_saver_its_config_gives() {
    let graphs = Arc::new(InMemorySaver::new());
    let elsewhere: Arc<dyn Checkpointer> = Arc::new(InMemorySaver::new());
    let counting = Arc::new(Refusing::new(elsewhere.clone(), true, |_| false));
    let graph = ticking(3, Arc::default())
        .compile_with(graphs.clone())
        .unwrap();
    let config = RunConfig::default()
        .thread_id("t")
        .checkpointer(counting.clone());
    let out = graph
        .invoke(LoopUpdate::default(), config.clone())
        .await
        .unwrap();
    assert_eq!(out.count, 3);
    assert!(
        stored(graphs.as_ref(), "t", "").await.is_empty(),
        "nothing went to the graph's own saver"
    );
    let written = stored(elsewhere.as_ref(), "t", "").await;
    assert_eq!(written.len(), counting.stored.load(SeqCst));
    assert_eq!(written.len(), 5, "input, the input step and three ticks");
    // The next run starts from what the config's saver holds.
    let again = graph
        .invoke(LoopUpdate::default().count(10), config.clone())
        .await
        .unwrap();
    // 3, plus the input's 10, plus one tick.
    assert_eq!(again.count, 14, "went on from the config's saver's thread");
    // The thread API reads through the config's saver too; the graph's own has nothing.
    let state = graph.get_state(&config).await.unwrap().unwrap();
    assert_eq!(state.values.count, 14);
    let history = graph
        .get_state_history(&config, &ListFilter::default())
        .await
        .unwrap();
    assert_eq!(
        history.len(),
        stored(elsewhere.as_ref(), "t", "").await.len()
    );
    let plain = RunConfig::default().thread_id("t");
    assert!(graph.get_state(&plain).await.unwrap().is_none());
    let updated = graph
        .update_state(&config, LoopUpdate::default().count(1), Some("tick"))
        .await
        .unwrap();
    let forked = elsewhere
        .get("t", "", updated.checkpoint_id.as_deref())
        .await
        .unwrap();
    assert!(forked.record.is_some(), "update_state wrote through it");
    assert!(stored(graphs.as_ref(), "t", "").await.is_empty());
}

/// A graph compiled without a checkpointer persists through the config's: it pauses,
/// resumes, and its thread loads.
#[tokio::test]
async fn a_graph_without_a_checkpointer_persists_through_the_configs() {
    let graph = StateGraph::<Loop>::new()
        .add_node("ask", |_: Arc<Loop>, ctx: NodeContext| async move {
            let answer = ctx.interrupt("name?")?;
            BoxResult::Ok(LoopUpdate::default().seen(vec![answer.to_string()]))
        })
        .add_edge(START, "ask")
        .add_edge("ask", END)
        .compile()
        .unwrap();
    let saver: Arc<dyn Checkpointer> = Arc::new(InMemorySaver::new());
    let config = RunConfig::default()
        .thread_id("t")
        .checkpointer(saver.clone());
    let paused = graph
        .invoke(LoopUpdate::default(), config.clone())
        .await
        .unwrap();
    assert_eq!(paused.interrupts.len(), 1);
    let state = graph.get_state(&config).await.unwrap().unwrap();
    assert_eq!(state.next, ["ask"]);
    let done = graph
        .invoke(agent_core::Command::resume("ada").unwrap(), config.clone())
        .await
        .unwrap();
    assert_eq!(done.seen, ["\"ada\""]);
    // Without the config's saver, there is none.
    let error = graph
        .get_state(&RunConfig::default().thread_id("t"))
        .await
        .unwrap_err();
    assert!(matches!(error, GraphError::NoCheckpointer(_)), "{error}");
}

/// `RunConfig` keeps its `Clone` and `Debug`: a clone shares the saver, and the saver shows
/// as its backend's name.
#[test]
fn the_config_clones_and_prints_with_a_saver() {
    let saver: Arc<dyn Checkpointer> = Arc::new(InMemorySaver::new());
    let config = RunConfig::default().checkpointer(saver.clone());
    let clone = config.clone();
    assert!(Arc::ptr_eq(clone.checkpointer.as_ref().unwrap(), &saver));
    let printed = format!("{clone:?}");
    assert!(
        printed.contains("checkpointer: Some(\"memory\")"),
        "{printed}"
    );
    assert!(
        format!("{:?}", RunConfig::default()).contains("checkpointer: None"),
        "{printed}"
    );
}

fn config(thread: &str, saver: Arc<dyn Checkpointer>, durability: Durability) -> RunConfig {
    RunConfig::default()
        .thread_id(thread)
        .durability(durability)
        .checkpointer(saver)
}

/// A saver that starts refusing at step 3's checkpoint (the run was cancelled): the run fails
/// with its error (the variant, not a copy as a storage error), stops calling nodes, and
/// nothing after the refusal reaches the saver; with every durability, stored in place or in
/// the background. The thread stays where the last accepted write left it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_saver_that_starts_refusing_fails_the_run_and_nothing_more_is_written() {
    for durability in [Durability::Sync, Durability::Async, Durability::Exit] {
        for in_place in [false, true] {
            let what = format!("{durability:?}, in place {in_place}");
            let inner: Arc<dyn Checkpointer> = Arc::new(InMemorySaver::new());
            let calls = Arc::new(AtomicUsize::new(0));
            let refusing = Arc::new(
                Refusing::new(inner.clone(), in_place, |r| r.step >= 3).counting(calls.clone()),
            );
            let graph: CompiledGraph<Loop> = ticking(20, calls.clone()).compile().unwrap();
            let error = graph
                .invoke(
                    LoopUpdate::default(),
                    config("t", refusing.clone(), durability),
                )
                .await
                .expect_err("the saver refused");
            assert!(
                matches!(
                    &error,
                    GraphError::Fenced {
                        backend: "refusing",
                        ..
                    }
                ),
                "{what}: {error:?}"
            );
            assert!(
                error.to_string().contains("nothing was written"),
                "{what}: {error}"
            );
            assert_eq!(
                refusing.refused.load(SeqCst),
                1,
                "{what}: one refused batch, then nothing more was tried"
            );
            let calls = calls.load(SeqCst);
            let kept = stored(inner.as_ref(), "t", "").await;
            assert_eq!(kept.len(), refusing.stored.load(SeqCst), "{what}");
            assert!(kept.iter().all(|r| r.step < 3), "{what}: {kept:?}");
            match durability {
                // Refused at the end: every step ran, nothing was stored.
                Durability::Exit => {
                    assert_eq!(calls, 20, "{what}");
                    assert!(kept.is_empty(), "{what}");
                }
                // No node is called once the refusal is known: stored on the run's thread
                // (in place, or `Sync`), the refusal stops the run before the next call; in
                // the background, a call may start while the refused batch is on its way.
                _ => {
                    let when = refusing.calls_when_refused.load(SeqCst);
                    let late = usize::from(durability == Durability::Async && !in_place);
                    assert!(
                        when <= calls && calls <= when + late,
                        "{what}: {calls} node calls, {when} when it refused"
                    );
                    if late == 0 {
                        assert_eq!(calls, 3, "{what}: step 3's checkpoint was refused");
                        assert_eq!(kept.last().map(|r| r.step), Some(2), "{what}");
                    }
                    // In the background, step 3's checkpoint may share its batch with earlier
                    // ones: the whole batch is refused.
                }
            }
        }
    }
}

/// A subgraph's checkpoint refused: the subgraph's run stops, and the root run fails with the
/// refusal itself (not a node error wrapping it); nothing after it is stored in either
/// namespace. The subgraph shares its parent's writer, so the config's saver is the one both
/// store through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_inside_a_subgraph_fails_the_run_with_it() {
    for durability in [Durability::Sync, Durability::Async] {
        for in_place in [false, true] {
            let what = format!("{durability:?}, in place {in_place}");
            let inner: Arc<dyn Checkpointer> = Arc::new(InMemorySaver::new());
            let calls = Arc::new(AtomicUsize::new(0));
            let refusing = Arc::new(
                Refusing::new(inner.clone(), in_place, |r| !r.ns.is_empty() && r.step >= 3)
                    .counting(calls.clone()),
            );
            let child = ticking(20, calls.clone()).compile().unwrap();
            let graph = StateGraph::<Loop>::new()
                .add_node("child", child)
                .add_edge(START, "child")
                .add_edge("child", END)
                .compile()
                .unwrap();
            let error = graph
                .invoke(
                    LoopUpdate::default(),
                    config("t", refusing.clone(), durability),
                )
                .await
                .expect_err("the saver refused");
            assert!(
                matches!(
                    &error,
                    GraphError::Fenced {
                        backend: "refusing",
                        ..
                    }
                ),
                "{what}: {error:?}"
            );
            assert_eq!(refusing.refused.load(SeqCst), 1, "{what}");
            let (calls, when) = (calls.load(SeqCst), refusing.calls_when_refused.load(SeqCst));
            let late = usize::from(durability == Durability::Async && !in_place);
            assert!(
                when <= calls && calls <= when + late,
                "{what}: the child stopped: {calls} calls, {when} when it refused"
            );
            let root = stored(inner.as_ref(), "t", "").await;
            assert!(
                root.iter().all(|r| r.step <= 0),
                "{what}: the root stored nothing after its input step: {root:?}"
            );
            // The child's namespace, from where the root stands: its checkpoints stop before
            // the refused one. (In the background, the root's checkpoints and the child's
            // may all have shared the refused batch: then nothing was stored.)
            let snapshot = graph
                .get_state_with_subgraphs(&config("t", inner.clone(), durability))
                .await
                .unwrap();
            let ns = snapshot
                .as_ref()
                .and_then(|s| s.tasks.first())
                .and_then(|task| task.subgraph.as_ref())
                .map(|s| s.checkpoint_ns.clone());
            let late = durability == Durability::Async && !in_place;
            assert!(late || ns.is_some(), "{what}: the child stored nothing");
            if let Some(ns) = ns {
                let steps: Vec<i64> = stored(inner.as_ref(), "t", &ns)
                    .await
                    .iter()
                    .map(|r| r.step)
                    .collect();
                assert!(steps.iter().all(|&s| s < 3), "{what}: {steps:?}");
                if !late {
                    assert_eq!(
                        steps.last(),
                        Some(&2),
                        "{what}: the child's steps {steps:?}"
                    );
                }
            }
        }
    }
}

/// The run after a refusal, through a saver that accepts again (the next claim), goes on from
/// the last checkpoint the refusing one let through.
#[tokio::test]
async fn the_thread_goes_on_from_the_last_accepted_checkpoint() {
    let inner: Arc<dyn Checkpointer> = Arc::new(InMemorySaver::new());
    let refusing = Arc::new(Refusing::new(inner.clone(), true, |r| r.step >= 3));
    let calls = Arc::new(AtomicUsize::new(0));
    let graph = ticking(10, calls.clone()).compile().unwrap();
    graph
        .invoke(
            LoopUpdate::default(),
            config("t", refusing.clone(), Durability::Sync),
        )
        .await
        .expect_err("refused");
    let out = graph
        .invoke(
            Input::Continue,
            config("t", inner.clone(), Durability::Sync),
        )
        .await
        .unwrap();
    assert_eq!(out.count, 10);
    let history = stored(inner.as_ref(), "t", "").await;
    let steps: Vec<i64> = history.iter().map(|r| r.step).collect();
    assert_eq!(steps, (-1..=10).collect::<Vec<_>>(), "no step stored twice");
}
