//! Hostile stored bytes: whatever a store hands back, reading a checkpoint ends in a state or a
//! `CorruptCheckpoint` error, in bounded memory: never a panic, an abort, a stack overflow or
//! an allocation bomb.
//!
//! The checkpoints come from a real run (a parent graph paused inside a subgraph, so a read
//! goes through the typed decoder, the untyped one `get_state_with_subgraphs` uses for the
//! subgraph, pending writes, element deltas, byte splices, LZ4 frames and a table of shared
//! values), then a [`Doctored`] store hands them back edited: mutated, replaced by arbitrary
//! bytes, or crafted (frames, splice chains, shared tables). A counting allocator measures
//! what each read allocates on its thread and fails an allocation past [`counting::CEILING`],
//! so a bomb ends this test binary instead of the machine. Round trips of arbitrary states
//! through every saver close the file.
//!
//! `PROPTEST_CASES=10000 cargo test -p agent-core --test hostile_checkpoints` runs more cases.

mod common;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use agent_core::checkpoint::{
    CheckpointRecord, Checkpointer, FieldBlob, ListFilter, LoadedCheckpoint, PendingWrite, StoreOp,
    WriteKind,
};
use agent_core::{
    Command, CompiledGraph, END, GraphError, GraphState, InMemorySaver, NodeContext, RunConfig,
    START, Shared, StateGraph,
};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::json;

#[global_allocator]
static ALLOCATOR: counting::Counting = counting::Counting;

/// Bytes allocated on this thread, for measuring a read.
#[allow(unsafe_code)]
mod counting {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    /// Live bytes on one thread past which an allocation fails (the process aborts with
    /// "memory allocation of N bytes failed"): what a bomb runs into here.
    pub const CEILING: usize = 1 << 30;

    thread_local! {
        static LIVE: Cell<isize> = const { Cell::new(0) };
        static PEAK: Cell<isize> = const { Cell::new(0) };
    }

    pub struct Counting;

    /// Counts `n` more bytes on this thread; false past the ceiling.
    fn grow(n: usize) -> bool {
        LIVE.try_with(|live| {
            let now = live.get().saturating_add(n as isize);
            if now > CEILING as isize {
                return false;
            }
            live.set(now);
            let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
            true
        })
        .unwrap_or(true)
    }

    fn shrink(n: usize) {
        let _ = LIVE.try_with(|live| live.set(live.get() - n as isize));
    }

    // SAFETY: every call goes to `System` with the caller's arguments; the counting around it
    // touches only const-initialized thread-locals (no allocation, no destructor).
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            if !grow(layout.size()) {
                return std::ptr::null_mut();
            }
            // SAFETY: the caller upholds `alloc`'s contract.
            unsafe { System.alloc(layout) }
        }

        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            if !grow(layout.size()) {
                return std::ptr::null_mut();
            }
            // SAFETY: as above.
            unsafe { System.alloc_zeroed(layout) }
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            shrink(layout.size());
            // SAFETY: `ptr` came from this allocator with `layout`.
            unsafe { System.dealloc(ptr, layout) }
        }

        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            if new_size > layout.size() {
                if !grow(new_size - layout.size()) {
                    return std::ptr::null_mut();
                }
            } else {
                shrink(layout.size() - new_size);
            }
            // SAFETY: as above.
            unsafe { System.realloc(ptr, layout, new_size) }
        }
    }

    /// Runs `f` and returns what it returned and the most bytes it had allocated at once on
    /// this thread (beyond what was live before).
    pub fn peak<R>(f: impl FnOnce() -> R) -> (R, usize) {
        let start = LIVE.with(Cell::get);
        PEAK.with(|peak| peak.set(start));
        let out = f();
        let peak = PEAK.with(Cell::get);
        (out, (peak - start).max(0) as usize)
    }
}

const MIB: usize = 1 << 20;

/// Cases per property: a few hundred, `PROPTEST_CASES` for more.
fn cases(default: u32) -> ProptestConfig {
    ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

// ---------------------------------------------------------------------------------------
// The state and graph whose checkpoints are attacked.

/// A recursive enum: `rmp-serde` does not count enum variants toward its depth limit.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
enum Expr {
    Lit(i64),
    Neg(Box<Expr>),
}

/// A tree of shared values (a cycle in a stored table is a tree that contains itself).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
struct Tree {
    label: String,
    kids: Vec<Shared<Tree>>,
}

#[derive(GraphState, Clone, Default, Debug, PartialEq)]
struct Doc {
    /// Grows by appends: element deltas.
    #[reducer(append)]
    log: Vec<String>,
    /// Grows in place: byte splices.
    text: String,
    /// Large and repetitive: an LZ4 frame.
    big: String,
    json: serde_json::Value,
    expr: Option<Expr>,
    tree: Option<Shared<Tree>>,
    /// One shared value appended again and again: a table entry referenced many times.
    #[reducer(append)]
    docs: Vec<Shared<String>>,
    rounds: usize,
}

/// The child: grows its fields for `rounds` steps, then one branch writes and the other asks
/// a human (a paused checkpoint with a pending write and an interrupt).
fn child() -> CompiledGraph<Doc> {
    let doc = Shared::new("a document retrieved once and cited at every step ".repeat(8));
    StateGraph::new()
        .add_node("grow", move |s: Arc<Doc>| {
            let doc = doc.clone();
            async move {
                let n = s.log.len();
                let tree = Tree {
                    label: format!("node {n}"),
                    kids: s.tree.iter().cloned().collect(),
                };
                DocUpdate::default()
                    .log(vec![format!("line {n} of the log")])
                    .text(format!("{} and {n} more words", s.text))
                    .docs(vec![doc])
                    .tree(Some(Shared::new(tree)))
            }
        })
        .add_node("fork", |_s: Arc<Doc>| async { DocUpdate::default() })
        .add_node("side", |_s: Arc<Doc>| async {
            DocUpdate::default()
                .log(vec!["side".to_owned()])
                .json(json!({"side": [1, [2, [3]]], "done": true}))
        })
        .add_node("ask", |_s: Arc<Doc>, ctx: NodeContext| async move {
            let answer: String = ctx.interrupt_as("go on?")?;
            Ok::<_, agent_core::BoxError>(DocUpdate::default().log(vec![answer]))
        })
        .add_edge(START, "grow")
        .add_conditional_edges(
            "grow",
            |s: &Doc| {
                if s.log.len() < s.rounds {
                    "grow"
                } else {
                    "fork"
                }
            },
            ["grow", "fork"],
        )
        .add_edge("fork", "side")
        .add_edge("fork", "ask")
        .add_edge("side", END)
        .add_edge("ask", END)
        .compile()
        .unwrap()
}

fn parent(saver: Arc<dyn Checkpointer>) -> CompiledGraph<Doc> {
    StateGraph::new()
        .add_node("sub", child())
        .add_edge(START, "sub")
        .add_edge("sub", END)
        .compile_with(saver)
        .unwrap()
}

fn input() -> DocUpdate {
    DocUpdate::default()
        .rounds(6)
        .text("the start of a text that grows ".repeat(6))
        .big("lorem ipsum dolor sit amet, ".repeat(1000))
        .json(json!({"a": [1, 2, {"b": null}], "c": "d"}))
        .expr(Some(Expr::Neg(Box::new(Expr::Neg(Box::new(Expr::Lit(7)))))))
}

// ---------------------------------------------------------------------------------------
// A store that hands back edited checkpoints.

/// Which namespace's checkpoints are edited: the parent's (read by its type) or the
/// subgraph's (read by type on resume, untyped by `get_state_with_subgraphs`).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Target {
    Root,
    Child,
}

type Edit = Arc<dyn Fn(&mut LoadedCheckpoint) + Send + Sync>;

/// An in-memory store whose reads of one namespace go through an edit; while an edit is set,
/// writes are dropped (so every case reads the same real checkpoints).
struct Doctored {
    inner: InMemorySaver,
    edit: Mutex<Option<(Target, Edit)>>,
    namespaces: Mutex<BTreeSet<String>>,
}

impl Doctored {
    fn new() -> Arc<Self> {
        Arc::new(Doctored {
            inner: InMemorySaver::new(),
            edit: Mutex::new(None),
            namespaces: Mutex::new(BTreeSet::new()),
        })
    }

    fn set(&self, target: Target, edit: impl Fn(&mut LoadedCheckpoint) + Send + Sync + 'static) {
        *self.edit.lock().unwrap() = Some((target, Arc::new(edit)));
    }

    fn editing(&self) -> bool {
        self.edit.lock().unwrap().is_some()
    }

    /// The subgraph's namespace.
    fn child_ns(&self) -> String {
        let namespaces = self.namespaces.lock().unwrap();
        namespaces.iter().find(|ns| !ns.is_empty()).unwrap().clone()
    }
}

#[async_trait::async_trait]
impl Checkpointer for Doctored {
    fn backend(&self) -> &'static str {
        "doctored"
    }

    async fn put(&self, record: &CheckpointRecord, blobs: &[FieldBlob]) -> Result<(), GraphError> {
        if self.editing() {
            return Ok(());
        }
        self.namespaces
            .lock()
            .unwrap()
            .insert(record.ns.to_string());
        self.inner.put(record, blobs).await
    }

    async fn put_writes(
        &self,
        thread_id: &str,
        ns: &str,
        checkpoint_id: &str,
        writes: &[PendingWrite],
    ) -> Result<(), GraphError> {
        if self.editing() {
            return Ok(());
        }
        self.inner
            .put_writes(thread_id, ns, checkpoint_id, writes)
            .await
    }

    async fn put_batch(&self, ops: Vec<StoreOp>) -> Result<(), GraphError> {
        if self.editing() {
            return Ok(());
        }
        for op in &ops {
            if let StoreOp::Checkpoint { record, .. } = op {
                self.namespaces
                    .lock()
                    .unwrap()
                    .insert(record.ns.to_string());
            }
        }
        self.inner.put_batch(ops).await
    }

    async fn get(
        &self,
        thread_id: &str,
        ns: &str,
        checkpoint_id: Option<&str>,
    ) -> Result<LoadedCheckpoint, GraphError> {
        let mut loaded = self.inner.get(thread_id, ns, checkpoint_id).await?;
        let edit = self.edit.lock().unwrap().clone();
        if let Some((target, edit)) = edit
            && (target == Target::Root) == ns.is_empty()
            && loaded.record.is_some()
        {
            edit(&mut loaded);
        }
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
        self.inner.delete_thread(thread_id).await
    }

    async fn prune(
        &self,
        thread_id: &str,
        ns: &str,
        keep_last: usize,
    ) -> Result<usize, GraphError> {
        self.inner.prune(thread_id, ns, keep_last).await
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
    async fn delete_for_runs(
        &self,
        thread_id: &str,
        run_ids: &[&str],
    ) -> Result<usize, GraphError> {
        self.inner.delete_for_runs(thread_id, run_ids).await
    }
}

/// A paused run on a doctored store, and a runtime to read it on this thread.
struct Bench {
    runtime: tokio::runtime::Runtime,
    store: Arc<Doctored>,
    graph: CompiledGraph<Doc>,
    config: RunConfig,
    /// The real checkpoints, as stored.
    root: LoadedCheckpoint,
    child: LoadedCheckpoint,
}

impl Bench {
    fn new() -> Bench {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let store = Doctored::new();
        let graph = parent(store.clone());
        let config = RunConfig::default().thread_id("hostile");
        let (root, child) = runtime.block_on(async {
            let out = graph.invoke(input(), config.clone()).await.unwrap();
            assert_eq!(out.interrupts.len(), 1, "the run pauses in the subgraph");
            let root = store.get("hostile", "", None).await.unwrap();
            let child = store.get("hostile", &store.child_ns(), None).await.unwrap();
            (root, child)
        });
        let bench = Bench {
            runtime,
            store,
            graph,
            config,
            root,
            child,
        };
        bench.check_real_data();
        bench
    }

    /// The real checkpoints hold what the properties mean to attack.
    fn check_real_data(&self) {
        let kinds = |loaded: &LoadedCheckpoint| {
            let mut kinds = BTreeSet::new();
            for blob in &loaded.blobs {
                kinds.insert(match (&blob.base, blob.data.first()) {
                    (None, Some(0xc1)) => "lz4",
                    (None, _) => "whole",
                    (Some((_, n)), _) if n >> 63 == 1 => "splice",
                    (Some(_), _) => "elements",
                });
                if blob.field == "__shared__" {
                    kinds.insert("shared");
                }
            }
            kinds
        };
        let child = kinds(&self.child);
        for kind in ["lz4", "whole", "splice", "elements", "shared"] {
            assert!(
                child.contains(kind),
                "the child's blobs have no {kind}: {child:?}"
            );
        }
        assert!(!self.child.writes.is_empty());
        assert!(kinds(&self.root).contains("lz4"));
    }

    fn real(&self, target: Target) -> &LoadedCheckpoint {
        match target {
            Target::Root => &self.root,
            Target::Child => &self.child,
        }
    }

    /// Reads the thread every way there is with `edit` applied to `target`'s checkpoints
    /// (`get_state`, with subgraphs, the history, a resume that restores both and runs what
    /// is left): the reads' results and the peak of bytes allocated.
    fn read(
        &self,
        target: Target,
        edit: impl Fn(&mut LoadedCheckpoint) + Send + Sync + 'static,
    ) -> (Vec<Result<(), GraphError>>, usize) {
        self.store.set(target, edit);
        let (results, peak) = counting::peak(|| {
            self.runtime.block_on(async {
                let g = &self.graph;
                let c = &self.config;
                let mut results = vec![
                    g.get_state(c).await.map(drop),
                    g.get_state_with_subgraphs(c).await.map(drop),
                    g.get_state_history(c, &ListFilter::default())
                        .await
                        .map(drop),
                ];
                let resumed = g.invoke(Command::resume("yes").unwrap(), c.clone()).await;
                let resumed = resumed.map(drop).or_else(ran_or_read_error);
                results.push(resumed);
                results
            })
        });
        *self.store.edit.lock().unwrap() = None;
        (results, peak)
    }
}

/// What a resume's error says of the read: a checkpoint edited to pause nowhere, or a node
/// that failed on what it was given (a resume value of another type), ran; a subgraph's read
/// error comes wrapped in its node's.
fn ran_or_read_error(error: GraphError) -> Result<(), GraphError> {
    match error {
        GraphError::NothingToResume(_) => Ok(()),
        GraphError::Node { source, .. } => match source.downcast::<GraphError>() {
            Ok(inner) => ran_or_read_error(*inner),
            Err(_) => Ok(()),
        },
        other => Err(other),
    }
}

/// Every result is a value or `CorruptCheckpoint`.
fn ok_or_corrupt(results: &[Result<(), GraphError>]) -> Result<(), TestCaseError> {
    for result in results {
        match result {
            Ok(()) | Err(GraphError::CorruptCheckpoint { .. }) => {}
            Err(other) => {
                return Err(TestCaseError::fail(format!(
                    "not CorruptCheckpoint: {other}"
                )));
            }
        }
    }
    Ok(())
}

fn assert_corrupt(results: &[Result<(), GraphError>], needle: &str) {
    assert!(
        results.iter().any(|r| matches!(
            r, Err(GraphError::CorruptCheckpoint { detail, .. }) if detail.contains(needle)
        )),
        "no CorruptCheckpoint mentioning `{needle}`: {results:?}"
    );
    for r in results {
        assert!(
            matches!(r, Ok(()) | Err(GraphError::CorruptCheckpoint { .. })),
            "{r:?}"
        );
    }
}

/// Sets `field`'s value to a whole blob of `data` (adding a version when it had none).
fn set_field(loaded: &mut LoadedCheckpoint, field: &str, data: Vec<u8>) {
    let record = loaded.record.as_mut().unwrap();
    let version: Arc<str> = match record.versions.get(field) {
        Some(v) => v.into(),
        None => {
            record.versions.insert(field, "hostile");
            "hostile".into()
        }
    };
    loaded
        .blobs
        .retain(|b| !(b.field == field && *b.version == *version));
    loaded.blobs.push(FieldBlob {
        field: field.to_owned().into(),
        version,
        base: None,
        data,
    });
}

/// A reference to entry `id` of the table of shared values.
fn reference(id: u32) -> Vec<u8> {
    let mut out = vec![0xd6, 0x53];
    out.extend_from_slice(&id.to_be_bytes());
    out
}

fn array_header(n: usize) -> Vec<u8> {
    match n {
        0..=15 => vec![0x90 | n as u8],
        16..=65535 => vec![0xdc, (n >> 8) as u8, n as u8],
        _ => {
            let mut h = vec![0xdd];
            h.extend_from_slice(&(n as u32).to_be_bytes());
            h
        }
    }
}

/// A table of shared values from its entries' encodings.
fn table(entries: &[Vec<u8>]) -> Vec<u8> {
    let mut out = array_header(entries.len());
    for e in entries {
        out.extend_from_slice(e);
    }
    out
}

/// A `Tree` entry whose kids are references.
fn tree_entry(label: &str, kids: &[u32]) -> Vec<u8> {
    let mut out = vec![0x82];
    out.extend(rmp_serde::to_vec("label").unwrap());
    out.extend(rmp_serde::to_vec(label).unwrap());
    out.extend(rmp_serde::to_vec("kids").unwrap());
    out.extend(array_header(kids.len()));
    for k in kids {
        out.extend(reference(*k));
    }
    out
}

/// An LZ4 frame header claiming `len` bytes, then `block`.
fn frame(len: u32, block: &[u8]) -> Vec<u8> {
    let mut out = vec![0xc1, 1];
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(block);
    out
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A splice delta's base count for a base of `len` bytes.
fn splice_count(len: usize) -> u64 {
    (1 << 63) | len as u64
}

thread_local! {
    static BENCH: Bench = Bench::new();
}

// ---------------------------------------------------------------------------------------
// One test per bomb: each failed before its fix (see the report in each).

/// Before: `lz4_flex` reserved the claimed 2 GiB (the counting allocator's 1 GiB ceiling
/// aborted the test binary: "memory allocation of 2147483648 bytes failed").
#[test]
fn a_frame_claiming_2_gib_is_refused_without_reserving_it() {
    BENCH.with(|bench| {
        for target in [Target::Root, Target::Child] {
            let (results, peak) = bench.read(target, |loaded| {
                set_field(loaded, "big", frame(1 << 31, &[0x00]));
            });
            assert_corrupt(&results, "claims");
            assert!(peak < 8 * MIB, "{peak} bytes");
        }
    });
}

/// Makes `text` a 64-byte value then `links` splices, each copying its base twice.
fn doubling_chain(loaded: &mut LoadedCheckpoint, links: usize) {
    let record = loaded.record.as_mut().unwrap();
    record.versions.insert("text", format!("d{links}"));
    loaded.blobs.retain(|b| b.field != "text");
    loaded.blobs.push(FieldBlob {
        field: "text".into(),
        version: "d0".into(),
        base: None,
        data: rmp_serde::to_vec(&"x".repeat(62)).unwrap(),
    });
    let mut len = 64usize;
    for link in 1..=links {
        let mut data = vec![1];
        varint(&mut data, 2 * len as u64);
        for _ in 0..2 {
            varint(&mut data, (len as u64) << 1);
            varint(&mut data, 0);
        }
        loaded.blobs.push(FieldBlob {
            field: "text".into(),
            version: format!("d{link}").into(),
            base: Some((format!("d{}", link - 1).into(), splice_count(len))),
            data,
        });
        len *= 2;
    }
}

/// Before: a splice could copy its base twice and a chain was not held to `MAX_SPLICES` on
/// read, so 40 ten-byte splices doubled a 64-byte value to 2^40 x 64 bytes (the allocator's
/// ceiling aborted the binary at 1 GiB).
#[test]
fn doubling_splices_are_refused() {
    BENCH.with(|bench| {
        let (results, peak) = bench.read(Target::Root, |loaded| {
            doubling_chain(loaded, 40);
        });
        assert_corrupt(&results, "byte splices");
        assert!(peak < 8 * MIB, "{peak} bytes");
        // Within MAX_SPLICES (16 links, 64 bytes to 4 MiB before), a splice that copies its
        // base twice is refused on its own: its output passes its base and its own bytes.
        let (results, peak) = bench.read(Target::Root, |loaded| {
            doubling_chain(loaded, 16);
        });
        assert_corrupt(&results, "longer than its base");
        assert!(peak < 8 * MIB, "{peak} bytes");
    });
}

/// Before: 30 entries, each referencing the one before twice, expanded to 2^30 copies of a
/// two-byte string for the subgraph's untyped view (the allocator's ceiling aborted the
/// binary at 1 GiB).
#[test]
fn an_exponential_shared_table_is_refused_for_untyped_readers() {
    BENCH.with(|bench| {
        let (results, peak) = bench.read(Target::Child, |loaded| {
            let mut entries = vec![rmp_serde::to_vec("x").unwrap()];
            for i in 1..30u32 {
                let mut e = array_header(2);
                e.extend(reference(i - 1));
                e.extend(reference(i - 1));
                entries.push(e);
            }
            set_field(loaded, "__shared__", table(&entries));
            set_field(loaded, "json", reference(29));
        });
        assert_corrupt(&results, "MiB");
        assert!(peak < 200 * MIB, "{peak} bytes");
    });
}

/// Before: a tree that holds itself recursed until the stack overflowed (the binary died
/// with "thread has overflowed its stack"), and an untyped read of an entry holding itself
/// twice ran 2^256 expansions.
#[test]
fn a_cyclic_shared_table_is_an_error_not_a_stack_overflow() {
    BENCH.with(|bench| {
        for target in [Target::Root, Target::Child] {
            let (results, peak) = bench.read(target, |loaded| {
                set_field(
                    loaded,
                    "__shared__",
                    table(&[tree_entry("a", &[1]), tree_entry("b", &[0, 0])]),
                );
                set_field(loaded, "tree", reference(0));
            });
            assert_corrupt(&results, "contains itself");
            assert!(peak < 8 * MIB, "{peak} bytes");
        }
    });
}

/// Before: 100k nested enum variants (which `rmp-serde` does not count toward its depth
/// limit) and a chain of 100k shared trees each inside the next (a fresh decoder, and a fresh
/// count, per entry) overflowed the stack ("thread has overflowed its stack").
#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    const DEEP: usize = 100_000;
    BENCH.with(|bench| {
        let deep_enum = || {
            let mut bytes = Vec::new();
            for _ in 0..DEEP {
                bytes.push(0x81);
                bytes.extend(rmp_serde::to_vec("Neg").unwrap());
            }
            bytes.push(0x81);
            bytes.extend(rmp_serde::to_vec("Lit").unwrap());
            bytes.push(1);
            bytes
        };
        let deep_arrays = || {
            let mut bytes = vec![0x91; DEEP];
            bytes.push(0xc0);
            bytes
        };
        let shared_chain = || {
            let entries: Vec<Vec<u8>> = (0..DEEP as u32)
                .map(|i| match i {
                    0 => tree_entry("leaf", &[]),
                    _ => tree_entry("t", &[i - 1]),
                })
                .collect();
            table(&entries)
        };
        for target in [Target::Root, Target::Child] {
            let (results, _) = bench.read(target, move |loaded| {
                set_field(loaded, "expr", deep_enum());
            });
            assert_corrupt(&results, "deeper than");
            let (results, _) = bench.read(target, move |loaded| {
                set_field(loaded, "json", deep_arrays());
            });
            assert_corrupt(&results, "deep");
            let (results, _) = bench.read(target, move |loaded| {
                set_field(loaded, "__shared__", shared_chain());
                set_field(loaded, "tree", reference(DEEP as u32 - 1));
            });
            assert_corrupt(&results, "deep");
        }
        // Nesting up to the limit (256 levels, the field's own included) still reads, typed
        // and untyped, within a test thread's 2 MiB stack in a debug build.
        for target in [Target::Root, Target::Child] {
            let (results, _) = bench.read(target, |loaded| {
                let mut bytes = vec![0x91; 254];
                bytes.push(0xc0);
                set_field(loaded, "json", bytes);
                let mut bytes = Vec::new();
                for _ in 0..254 {
                    bytes.push(0x81);
                    bytes.extend(rmp_serde::to_vec("Neg").unwrap());
                }
                bytes.extend(rmp_serde::to_vec(&Expr::Lit(1)).unwrap());
                set_field(loaded, "expr", bytes);
                // 80 trees each inside the next: three levels each (the tree, its kids, the
                // reference).
                let entries: Vec<Vec<u8>> = (0..80u32)
                    .map(|i| match i {
                        0 => tree_entry("leaf", &[]),
                        _ => tree_entry("t", &[i - 1]),
                    })
                    .collect();
                set_field(loaded, "__shared__", table(&entries));
                set_field(loaded, "tree", reference(79));
                // The documents referenced entries of the table replaced.
                set_field(loaded, "docs", array_header(0));
            });
            assert!(results.iter().all(Result::is_ok), "{target:?}: {results:?}");
        }
    });
}

// ---------------------------------------------------------------------------------------
// Properties.

/// One byte-level edit.
#[derive(Debug, Clone)]
enum ByteEdit {
    Set(usize, u8),
    Flip(usize, u8),
    Insert(usize, Vec<u8>),
    Delete(usize, usize),
    Truncate(usize),
    /// Splices in a sequence that means something to a decoder: a container header with a
    /// huge count, a frame marker, a shared reference.
    Marker(usize, Vec<u8>),
}

fn byte_edit() -> impl Strategy<Value = ByteEdit> {
    let markers = prop_oneof![
        Just(vec![0xdd, 0xff, 0xff, 0xff, 0xff]),
        Just(vec![0xdf, 0x7f, 0xff, 0xff, 0xff]),
        Just(vec![0xdb, 0xff, 0xff, 0xff, 0xf0]),
        Just(vec![0xc6, 0x7f, 0xff, 0xff, 0xff]),
        Just(vec![0xc1, 0x01, 0xff, 0xff, 0xff, 0x7f]),
        (0u32..8).prop_map(reference),
        Just(vec![0x91; 64]),
    ];
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(at, b)| ByteEdit::Set(at, b)),
        (any::<usize>(), 0u8..8).prop_map(|(at, bit)| ByteEdit::Flip(at, bit)),
        (
            any::<usize>(),
            proptest::collection::vec(any::<u8>(), 1..16)
        )
            .prop_map(|(at, b)| ByteEdit::Insert(at, b)),
        (any::<usize>(), 1usize..64).prop_map(|(at, n)| ByteEdit::Delete(at, n)),
        any::<usize>().prop_map(ByteEdit::Truncate),
        (any::<usize>(), markers).prop_map(|(at, m)| ByteEdit::Marker(at, m)),
    ]
}

fn apply_edit(bytes: &mut Vec<u8>, edit: &ByteEdit) {
    let at = |i: usize, bytes: &Vec<u8>| if bytes.is_empty() { 0 } else { i % bytes.len() };
    match edit {
        ByteEdit::Set(i, b) if !bytes.is_empty() => {
            let i = at(*i, bytes);
            bytes[i] = *b;
        }
        ByteEdit::Flip(i, bit) if !bytes.is_empty() => {
            let i = at(*i, bytes);
            bytes[i] ^= 1 << bit;
        }
        ByteEdit::Insert(i, new) | ByteEdit::Marker(i, new) => {
            let i = at(*i, bytes);
            bytes.splice(i..i, new.iter().copied());
        }
        ByteEdit::Delete(i, n) if !bytes.is_empty() => {
            let i = at(*i, bytes);
            let end = (i + n).min(bytes.len());
            bytes.drain(i..end);
        }
        ByteEdit::Truncate(i) => {
            let i = at(*i, bytes);
            bytes.truncate(i);
        }
        _ => {}
    }
}

/// What of a loaded checkpoint an edit goes to.
#[derive(Debug, Clone)]
enum Part {
    Body,
    Blob(usize),
    BlobBase(usize, Option<u64>),
    Write(usize),
    WriteKind(usize, u8),
}

fn part() -> impl Strategy<Value = Part> {
    prop_oneof![
        Just(Part::Body),
        any::<usize>().prop_map(Part::Blob),
        any::<usize>().prop_map(Part::Blob),
        any::<usize>().prop_map(Part::Blob),
        (
            any::<usize>(),
            prop_oneof![
                Just(None),
                any::<u64>().prop_map(Some),
                (0u64..64).prop_map(Some),
                (0u64..20_000).prop_map(|n| Some((1 << 63) | n)),
            ]
        )
            .prop_map(|(i, n)| Part::BlobBase(i, n)),
        any::<usize>().prop_map(Part::Write),
        (any::<usize>(), 0u8..4).prop_map(|(i, k)| Part::WriteKind(i, k)),
    ]
}

/// The bytes of `part` in `loaded`, to edit (`None` when the part does not exist).
fn bytes_of<'a>(loaded: &'a mut LoadedCheckpoint, part: &Part) -> Option<&'a mut Vec<u8>> {
    match part {
        Part::Body => loaded.record.as_mut().map(|r| &mut r.body),
        Part::Blob(i) => {
            let n = loaded.blobs.len();
            loaded.blobs.get_mut(i % n.max(1)).map(|b| &mut b.data)
        }
        Part::Write(i) => {
            let n = loaded.writes.len();
            loaded.writes.get_mut(i % n.max(1)).map(|w| &mut w.data)
        }
        _ => None,
    }
}

fn apply_part(loaded: &mut LoadedCheckpoint, part: &Part) {
    match part {
        Part::BlobBase(i, count) => {
            let n = loaded.blobs.len();
            let versions: Vec<Arc<str>> = loaded.blobs.iter().map(|b| b.version.clone()).collect();
            if let Some(blob) = loaded.blobs.get_mut(i % n.max(1)) {
                blob.base = count.map(|c| (versions[(*i / 7) % n].clone(), c));
            }
        }
        Part::WriteKind(i, kind) => {
            let n = loaded.writes.len();
            if let Some(w) = loaded.writes.get_mut(i % n.max(1)) {
                w.kind = WriteKind::from_code(i64::from(*kind)).unwrap();
            }
        }
        _ => {}
    }
}

fn target() -> impl Strategy<Value = Target> {
    prop_oneof![Just(Target::Root), Just(Target::Child)]
}

/// The bytes a read is given: what an edit can make a decoder allocate is bounded by these.
fn input_bytes(loaded: &LoadedCheckpoint) -> usize {
    loaded.record.as_ref().map_or(0, |r| r.body.len())
        + loaded.blobs.iter().map(|b| b.data.len()).sum::<usize>()
        + loaded.writes.iter().map(|w| w.data.len()).sum::<usize>()
}

/// What a read of the real checkpoints, edited but not grown, may allocate: the decoded
/// state (a few times its bytes) and LZ4's largest ratio on what is compressed.
fn budget(bench: &Bench, target: Target) -> usize {
    8 * MIB + 300 * input_bytes(bench.real(target))
}

proptest! {
    #![proptest_config(cases(256))]

    /// Real checkpoints with their bytes edited (bodies, blobs, base counts, write rows and
    /// kinds): a state or `CorruptCheckpoint`, in bounded memory.
    #[test]
    fn mutated_real_checkpoints_read_or_are_corrupt(
        target in target(),
        edits in proptest::collection::vec((part(), proptest::collection::vec(byte_edit(), 1..4)), 1..5),
    ) {
        BENCH.with(|bench| {
            let budget = budget(bench, target);
            let (results, peak) = bench.read(target, move |loaded| {
                for (part, byte_edits) in &edits {
                    apply_part(loaded, part);
                    if let Some(bytes) = bytes_of(loaded, part) {
                        for e in byte_edits {
                            apply_edit(bytes, e);
                        }
                    }
                }
            });
            ok_or_corrupt(&results)?;
            prop_assert!(peak < budget, "{} bytes (budget {})", peak, budget);
            Ok(())
        })?;
    }

    /// Parts replaced by arbitrary bytes (under 1 KiB each): a state or `CorruptCheckpoint`,
    /// and under 16 MiB more than the real read.
    #[test]
    fn arbitrary_bodies_blobs_and_writes_read_or_are_corrupt(
        target in target(),
        parts in proptest::collection::vec((part(), proptest::collection::vec(any::<u8>(), 0..1024)), 1..4),
    ) {
        BENCH.with(|bench| {
            let budget = budget(bench, target) + 16 * MIB;
            let (results, peak) = bench.read(target, move |loaded| {
                for (part, data) in &parts {
                    apply_part(loaded, part);
                    if let Some(bytes) = bytes_of(loaded, part) {
                        *bytes = data.clone();
                    }
                }
            });
            ok_or_corrupt(&results)?;
            prop_assert!(peak < budget, "{} bytes (budget {})", peak, budget);
            Ok(())
        })?;
    }

    /// LZ4 frames with any claim and any block, and real frames with their claim changed:
    /// nothing past LZ4's ratio is reserved.
    #[test]
    fn crafted_lz4_frames_read_or_are_corrupt(
        target in target(),
        claim in prop_oneof![any::<u32>(), 0u32..100_000, Just(u32::MAX), Just(1 << 31)],
        block in proptest::collection::vec(any::<u8>(), 0..256),
        real in any::<bool>(),
    ) {
        BENCH.with(|bench| {
            let budget = budget(bench, target) + 4 * MIB;
            let (results, peak) = bench.read(target, move |loaded| {
                let framed = loaded.blobs.iter_mut().find(|b| b.data.first() == Some(&0xc1));
                match (real, framed) {
                    (true, Some(blob)) => blob.data[2..6].copy_from_slice(&claim.to_le_bytes()),
                    _ => set_field(loaded, "big", frame(claim, &block)),
                }
            });
            ok_or_corrupt(&results)?;
            prop_assert!(peak < budget, "{} bytes (budget {})", peak, budget);
            Ok(())
        })?;
    }

    /// Chains of splices over a field (copies anywhere, of any length, inserts, stated lengths
    /// true or not, links up to 40): a value or `CorruptCheckpoint`, and never more than the
    /// chain's own bytes in output.
    #[test]
    fn splice_chains_read_or_are_corrupt(
        target in target(),
        base in proptest::collection::vec(any::<u8>(), 0..300),
        links in proptest::collection::vec(
            (
                proptest::collection::vec(
                    prop_oneof![
                        (any::<u16>(), any::<u16>()).prop_map(|(o, n)| (false, o, n, Vec::new())),
                        proptest::collection::vec(any::<u8>(), 0..40)
                            .prop_map(|b| (true, 0, 0, b)),
                    ],
                    0..6,
                ),
                any::<bool>(),
                any::<bool>(),
            ),
            1..40,
        ),
    ) {
        BENCH.with(|bench| {
            let budget = budget(bench, target) + 4 * MIB;
            let (results, peak) = bench.read(target, move |loaded| {
                let field = "text";
                loaded.blobs.retain(|b| b.field != field);
                let mut len = base.len();
                loaded.blobs.push(FieldBlob {
                    field: field.into(),
                    version: "s0".into(),
                    base: None,
                    data: base.clone(),
                });
                for (i, (ops, true_len, true_base)) in links.iter().enumerate() {
                    let mut body = Vec::new();
                    let mut out = 0usize;
                    for (insert, offset, n, bytes) in ops {
                        if *insert {
                            varint(&mut body, (bytes.len() as u64) << 1 | 1);
                            body.extend_from_slice(bytes);
                            out += bytes.len();
                        } else {
                            // Mostly within the base, sometimes anywhere.
                            let (offset, n) = match len {
                                0 => (*offset as usize, *n as usize),
                                len if n % 4 != 0 => (*offset as usize % len, *n as usize % (len + 1)),
                                _ => (*offset as usize, *n as usize),
                            };
                            varint(&mut body, (n as u64) << 1);
                            varint(&mut body, offset as u64);
                            out += n;
                        }
                    }
                    let stated = if *true_len { out } else { out.wrapping_mul(3) + 1 };
                    let mut data = vec![1];
                    varint(&mut data, stated as u64);
                    data.extend(body);
                    let base_len = if *true_base { len } else { len + 1 };
                    loaded.blobs.push(FieldBlob {
                        field: field.into(),
                        version: format!("s{}", i + 1).into(),
                        base: Some((format!("s{i}").into(), splice_count(base_len))),
                        data,
                    });
                    len = out;
                }
                let last = format!("s{}", links.len());
                loaded.record.as_mut().unwrap().versions.insert(field, last);
            });
            ok_or_corrupt(&results)?;
            prop_assert!(peak < budget, "{} bytes (budget {})", peak, budget);
            Ok(())
        })?;
    }

    /// Tables of shared values whose entries reference any entry (themselves, later ones,
    /// ones past the end, the same one many times), read by type and untyped: a state or
    /// `CorruptCheckpoint`, the untyped expansion held to its cap.
    #[test]
    fn shared_tables_read_or_are_corrupt(
        target in target(),
        entries in proptest::collection::vec(
            prop_oneof![
                "[a-z]{0,12}".prop_map(|s| rmp_serde::to_vec(&s).unwrap()),
                any::<i64>().prop_map(|n| rmp_serde::to_vec(&n).unwrap()),
                ("[a-z]{0,6}", proptest::collection::vec(0u32..24, 0..5))
                    .prop_map(|(label, kids)| tree_entry(&label, &kids)),
                proptest::collection::vec(0u32..24, 0..5).prop_map(|refs| {
                    let mut e = array_header(refs.len());
                    for r in refs {
                        e.extend(reference(r));
                    }
                    e
                }),
            ],
            1..24,
        ),
        roots in proptest::collection::vec((0usize..4, 0u32..24), 1..4),
    ) {
        BENCH.with(|bench| {
            // The untyped expansion may take its cap (64 MiB, 32 bytes a value) and the JSON
            // it decodes to.
            let budget = budget(bench, target) + 256 * MIB;
            let (results, peak) = bench.read(target, move |loaded| {
                set_field(loaded, "__shared__", table(&entries));
                for (field, id) in &roots {
                    let field = ["tree", "json", "docs", "log"][*field];
                    let data = match field {
                        "docs" | "log" => {
                            let mut d = array_header(2);
                            d.extend(reference(*id));
                            d.extend(reference(*id));
                            d
                        }
                        _ => reference(*id),
                    };
                    set_field(loaded, field, data);
                }
            });
            ok_or_corrupt(&results)?;
            prop_assert!(peak < budget, "{} bytes (budget {})", peak, budget);
            Ok(())
        })?;
    }

    /// Pending write rows replaced by arbitrary ones (real or made-up task ids and nodes,
    /// any kind, real data edited or arbitrary bytes): a state or `CorruptCheckpoint`.
    #[test]
    fn arbitrary_write_rows_read_or_are_corrupt(
        target in target(),
        rows in proptest::collection::vec(
            (
                any::<usize>(),
                prop_oneof![Just(None), "[a-z_]{0,8}".prop_map(Some)],
                0u8..4,
                prop_oneof![
                    proptest::collection::vec(any::<u8>(), 0..256).prop_map(Err),
                    proptest::collection::vec(byte_edit(), 0..4).prop_map(Ok),
                ],
            ),
            0..6,
        ),
    ) {
        BENCH.with(|bench| {
            let budget = budget(bench, target) + 16 * MIB;
            let real = bench.real(target).writes.clone();
            let (results, peak) = bench.read(target, move |loaded| {
                loaded.writes = rows
                    .iter()
                    .map(|(pick, name, kind, data)| {
                        let mut w = real
                            .get(pick % real.len().max(1))
                            .cloned()
                            .unwrap_or(PendingWrite {
                                task_id: "t".to_owned(),
                                node: "side".to_owned(),
                                kind: WriteKind::Output,
                                data: Vec::new(),
                            });
                        if let Some(name) = name {
                            if pick % 2 == 0 {
                                w.task_id = name.clone();
                            } else {
                                w.node = name.clone();
                            }
                        }
                        w.kind = WriteKind::from_code(i64::from(*kind)).unwrap();
                        match data {
                            Err(bytes) => w.data = bytes.clone(),
                            Ok(edits) => edits.iter().for_each(|e| apply_edit(&mut w.data, e)),
                        }
                        w
                    })
                    .collect();
            });
            ok_or_corrupt(&results)?;
            prop_assert!(peak < budget, "{} bytes (budget {})", peak, budget);
            Ok(())
        })?;
    }
}

// ---------------------------------------------------------------------------------------
// Round trips: arbitrary states through every saver.

fn expr(depth: u32) -> impl Strategy<Value = Expr> {
    any::<i64>()
        .prop_map(Expr::Lit)
        .prop_recursive(depth, depth, 1, |inner| {
            inner.prop_map(|e| Expr::Neg(Box::new(e)))
        })
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<u64>().prop_map(serde_json::Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(serde_json::Value::from),
        any::<String>().prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(8, 64, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::from),
            proptest::collection::btree_map(any::<String>(), inner, 0..6)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Arbitrary text: any characters (controls, RTL, combining marks) or a long repetitive run
/// (compressed when stored).
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[\\u{0}-\\u{1f}\\u{202e}\\u{301}a-z]{0,40}",
        ("[a-z ]{1,12}", 700usize..1500).prop_map(|(s, n)| s.repeat(n)),
    ]
}

fn state_update() -> impl Strategy<Value = DocUpdate> {
    (
        proptest::collection::vec(text(), 0..4),
        text(),
        text(),
        json_value(),
        proptest::option::of(expr(40)),
        proptest::option::of(("[a-z]{0,8}", 0usize..4)),
        (text(), 0usize..4),
    )
        .prop_map(|(log, text, big, json, expr, tree, (doc, copies))| {
            let tree = tree.map(|(label, n)| {
                let leaf = Shared::new(Tree {
                    label: label.clone(),
                    kids: Vec::new(),
                });
                Shared::new(Tree {
                    label,
                    kids: vec![leaf; n],
                })
            });
            let doc = Shared::new(doc);
            DocUpdate::default()
                .log(log)
                .text(text)
                .big(big)
                .json(json)
                .expr(expr)
                .tree(tree)
                .docs(vec![doc; copies])
        })
}

/// Every saver there is here, with the runtime they run on.
type Savers = (
    tokio::runtime::Runtime,
    Vec<(&'static str, Arc<dyn Checkpointer>)>,
);

/// A graph that stores its input and one step: what goes in must come back.
fn echo(saver: Arc<dyn Checkpointer>) -> CompiledGraph<Doc> {
    StateGraph::new()
        .add_node("step", |s: Arc<Doc>| async move {
            DocUpdate::default().text(format!("{} (seen)", s.text))
        })
        .add_edge(START, "step")
        .add_edge("step", END)
        .compile_with(saver)
        .unwrap()
}

proptest! {
    #![proptest_config(cases(64))]

    /// Arbitrary states, then a second input on top (element deltas, splices, shared values
    /// met again), through every saver: `get_state` gives back what the run ended with.
    #[test]
    fn arbitrary_states_round_trip_through_every_saver(
        first in state_update(),
        second in state_update(),
    ) {
        thread_local! {
            static SAVERS: Savers = {
                let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
                let savers = runtime.block_on(common::backends());
                (runtime, savers)
            };
        }
        SAVERS.with(|(runtime, savers)| {
            runtime.block_on(async {
                for (name, saver) in savers {
                    let graph = echo(saver.clone());
                    let config = RunConfig::default().thread_id(common::unique("roundtrip"));
                    for update in [first.clone(), second.clone()] {
                        let out = graph.invoke(update, config.clone()).await.unwrap();
                        let stored = graph.get_state(&config).await.unwrap().unwrap();
                        prop_assert_eq!(&stored.values, &out.state, "{}", name);
                    }
                }
                Ok(())
            })
        })?;
    }
}

/// Before: `Row::get` panicked on a NULL where the schema had none ("error retrieving
/// column 4: ... a Postgres value was `NULL`"), taking the caller's task with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_postgres_row_is_an_error_not_a_panic() {
    let Some(url) = common::postgres_url() else {
        return;
    };
    // A schema of its own: the tables are altered.
    let (admin, schema, scoped) = common::postgres_schema(&url, "hostile").await;
    let saver = Arc::new(agent_core::PostgresSaver::connect(&scoped).await.unwrap());
    let graph = echo(saver);
    let config = RunConfig::default().thread_id("bad-row");
    graph
        .invoke(
            DocUpdate::default().text("hello".to_owned()),
            config.clone(),
        )
        .await
        .unwrap();
    assert!(graph.get_state(&config).await.unwrap().is_some());
    for (table, column) in [
        ("agentgraph_blobs", "data"),
        ("agentgraph_checkpoints", "body"),
    ] {
        admin
            .batch_execute(&format!(
                "ALTER TABLE {schema}.{table} ALTER COLUMN {column} DROP NOT NULL;
                 UPDATE {schema}.{table} SET {column} = NULL"
            ))
            .await
            .unwrap();
        let error = graph.get_state(&config).await.unwrap_err();
        assert!(
            matches!(&error, GraphError::CorruptCheckpoint { detail, .. } if detail.contains(&format!("`{column}`"))),
            "{error}"
        );
    }
    admin
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .await
        .unwrap();
}

/// Proptest's cases above run a few hundred reads; this one pins the budget they are held
/// to against what the real read takes, so a loose budget shows.
#[test]
fn the_real_checkpoints_read_within_their_budget() {
    BENCH.with(|bench| {
        for target in [Target::Root, Target::Child] {
            let (results, peak) = bench.read(target, |_| {});
            assert!(results.iter().all(Result::is_ok), "{results:?}");
            assert!(peak < budget(bench, target), "{peak}");
            eprintln!(
                "{target:?}: {} input bytes, {peak} bytes at peak",
                input_bytes(bench.real(target))
            );
        }
    });
}
