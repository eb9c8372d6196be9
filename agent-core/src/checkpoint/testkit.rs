//! A conformance kit for [`Checkpointer`] implementations (LangGraph's
//! `langgraph-checkpoint-validation`): the cases every saver must pass, for the built-in
//! ones and for yours (a Firestore, DynamoDB or file saver). Behind the `testkit` feature.
//!
//! ```toml
//! [dev-dependencies]
//! agent-core = { version = "0.1", features = ["testkit"] }
//! ```
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use agent_core::{Checkpointer, InMemorySaver};
//! #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
//! async fn my_saver_conforms() {
//!     let passed = agent_core::checkpoint::testkit::run_all(|| async {
//!         Arc::new(InMemorySaver::new()) as Arc<dyn Checkpointer>
//!     })
//!     .await
//!     .unwrap_or_else(|failure| panic!("{failure}"));
//!     assert_eq!(passed, agent_core::checkpoint::testkit::CASES);
//! }
//! ```
//!
//! Each case gets a saver from the factory and uses threads of its own, so savers that share
//! one database (a file, a server) can be handed out as they are. The cases:
//!
//! - [`put_get_list`]: records and their blobs round-trip; `get` by id and latest;
//!   `list` newest first, with `before`, `limit` and metadata filters; namespaces apart;
//!   a delta's base blobs come with it.
//! - [`pending_writes`]: writes attach to their checkpoint; a write with the same task id and
//!   kind replaces the earlier one; a newer checkpoint starts without writes.
//! - [`delete_and_prune`]: `prune` keeps the newest checkpoints and every blob their delta
//!   chains need; `delete_thread` removes one thread only.
//! - [`concurrent_writers`]: eight tasks writing to one thread lose nothing.
//! - [`interleaved_namespaces`]: a parent and two subgraph namespaces checkpointing in turns
//!   (as sibling subgraphs do): `get`, `list` and `prune` see one namespace's checkpoints,
//!   and each one's blobs.
//! - [`graph_threads`]: a real graph on the saver — a thread carried over two runs (deltas
//!   of an appended list), history with LangGraph's sources and step numbers, a fork from an
//!   older checkpoint, and an interrupt resumed after the graph is opened again.
//! - [`delete_for_runs`]: a thread's checkpoints of some runs deleted in every namespace;
//!   the others still load with their whole delta chains (also a later checkpoint whose
//!   chain runs through a deleted run's blobs), their writes kept; other threads untouched.
//! - [`graph_runs_deleted`]: a real graph with a subgraph on the saver — each checkpoint's
//!   metadata names the run that wrote it (the subgraph's too); a run deleted (the latest,
//!   then one in the middle) takes its checkpoints in every namespace with it, every
//!   remaining checkpoint restores (`get_state`, `get_state_history`), and the next run goes
//!   on from the latest remaining one.
//! - [`keep_latest`]: each namespace keeps its newest checkpoint (LangGraph's
//!   `prune(strategy="keep_latest")`), with its writes and whole delta chains; a kept
//!   checkpoint whose parent went names none (`prune` too); `replace_writes` sets a
//!   checkpoint's writes to exactly those given, and does nothing for one not stored.
//! - [`storage`]: a saver that tells what a thread occupies ([`Checkpointer::storage`])
//!   counts its checkpoints, values (by field, a delta's base kept by a prune included) and
//!   pending writes in every namespace, and nothing of other threads; a saver that does not
//!   tell passes.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use serde_json::json;

use super::{
    CheckpointMetadata, CheckpointRecord, Checkpointer, FieldBlob, ListFilter, PendingWrite,
    StoreOp, StoredBytes, WriteKind,
};
use crate::error::BoxResult;
use crate::{Command, END, GraphError, GraphState, NodeContext, RunConfig, START, StateGraph};

/// The cases, in the order [`run_all`] runs them.
pub const CASES: &[&str] = &[
    "put_get_list",
    "pending_writes",
    "delete_and_prune",
    "concurrent_writers",
    "graph_threads",
    "batches",
    "interleaved_namespaces",
    "delete_for_runs",
    "graph_runs_deleted",
    "keep_latest",
    "storage",
];

/// A case that failed: which, on which backend, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("checkpointer `{backend}` fails the conformance case `{case}`: {message}")]
pub struct Failure {
    /// The case.
    pub case: &'static str,
    /// The saver's [`Checkpointer::backend`].
    pub backend: String,
    /// What went wrong.
    pub message: String,
}

/// A case's outcome.
pub type CaseResult = Result<(), Failure>;

struct Case<'a> {
    name: &'static str,
    saver: &'a Arc<dyn Checkpointer>,
}

impl Case<'_> {
    fn fail(&self, message: impl Into<String>) -> Failure {
        Failure {
            case: self.name,
            backend: self.saver.backend().to_owned(),
            message: message.into(),
        }
    }

    /// `Err` with `message` unless `ok`.
    fn check(&self, ok: bool, message: impl FnOnce() -> String) -> CaseResult {
        if ok {
            Ok(())
        } else {
            Err(self.fail(message()))
        }
    }

    /// The saver's result, or a failure naming the call.
    fn call<T>(&self, what: &str, result: Result<T, GraphError>) -> Result<T, Failure> {
        result.map_err(|e| self.fail(format!("{what} failed: {e}")))
    }
}

/// Runs every case on savers from `factory` (one per case); the names of the cases that
/// passed (all of [`CASES`]), or the first failure.
pub async fn run_all<F, Fut>(factory: F) -> Result<Vec<&'static str>, Failure>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn Checkpointer>>,
{
    put_get_list(&factory().await).await?;
    pending_writes(&factory().await).await?;
    delete_and_prune(&factory().await).await?;
    concurrent_writers(&factory().await).await?;
    graph_threads(&factory().await).await?;
    batches(&factory().await).await?;
    interleaved_namespaces(&factory().await).await?;
    delete_for_runs(&factory().await).await?;
    graph_runs_deleted(&factory().await).await?;
    keep_latest(&factory().await).await?;
    storage(&factory().await).await?;
    Ok(CASES.to_vec())
}

/// A thread id no other run uses.
fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", uuid::Uuid::now_v7())
}

/// Ids that sort by time like uuid v7 strings do.
fn id(n: u32) -> String {
    format!("0190{n:04}-0000-7000-8000-000000000000")
}

fn record(
    thread: &str,
    id: &str,
    parent: Option<&str>,
    step: i64,
    source: &str,
    versions: &[(&str, &str)],
) -> CheckpointRecord {
    CheckpointRecord {
        thread_id: thread.into(),
        ns: "".into(),
        id: id.into(),
        parent_id: parent.map(Into::into),
        step,
        created_at_ms: 1_700_000_000_000 + step,
        metadata: CheckpointMetadata::from_json(
            &json!({"source": source, "step": step, "user": "ada"}),
        ),
        versions: versions.iter().copied().collect(),
        body: vec![1, 2, 3, step as u8],
    }
}

/// A delta count with the top bit set (how the codec marks a byte splice).
const SPLICE_COUNT: u64 = 1 << 63 | 5;

fn blob(field: &str, version: &str, base: Option<(&str, u64)>, data: &[u8]) -> FieldBlob {
    FieldBlob {
        field: field.to_owned().into(),
        version: version.into(),
        base: base.map(|(b, n)| (b.into(), n)),
        data: data.to_vec(),
    }
}

/// Records and blobs round-trip; `get` and `list` with their filters; namespaces.
pub async fn put_get_list(saver: &Arc<dyn Checkpointer>) -> CaseResult {
    let case = Case {
        name: "put_get_list",
        saver,
    };
    let thread = unique("conf");
    let empty = case.call("get on a new thread", saver.get(&thread, "", None).await)?;
    case.check(empty.record.is_none(), || {
        "a thread with no checkpoint returned one".into()
    })?;
    let (a, b, c) = (id(1), id(2), id(3));
    case.call(
        "put",
        saver
            .put(&record(&thread, &a, None, -1, "input", &[]), &[])
            .await,
    )?;
    case.call(
        "put",
        saver
            .put(
                &record(&thread, &b, Some(&a), 0, "loop", &[("messages", &b)]),
                &[blob("messages", &b, None, b"full")],
            )
            .await,
    )?;
    case.call(
        "put",
        saver
            .put(
                &record(
                    &thread,
                    &c,
                    Some(&b),
                    1,
                    "loop",
                    &[("messages", &c), ("count", &c)],
                ),
                &[
                    // A splice's count: the top bit set, which must round-trip bit for bit.
                    blob("messages", &c, Some((&b, SPLICE_COUNT)), b"delta"),
                    blob("count", &c, None, b"7"),
                ],
            )
            .await,
    )?;
    let latest = case.call("get latest", saver.get(&thread, "", None).await)?;
    let r = latest
        .record
        .clone()
        .ok_or_else(|| case.fail("get latest returned no record"))?;
    case.check(*r.id == *c, || {
        format!("latest is `{}`, expected `{c}`", r.id)
    })?;
    case.check(r.parent_id.as_deref() == Some(b.as_str()), || {
        format!("parent is {:?}, expected `{b}`", r.parent_id)
    })?;
    case.check(
        r.metadata.to_json() == json!({"source": "loop", "step": 1, "user": "ada"}),
        || format!("metadata did not round-trip: {}", r.metadata.to_json()),
    )?;
    case.check(r.body == vec![1, 2, 3, 1], || {
        format!("body did not round-trip: {:?}", r.body)
    })?;
    case.check(r.step == 1 && r.created_at_ms == 1_700_000_000_001, || {
        format!(
            "step/created_at did not round-trip: {} {}",
            r.step, r.created_at_ms
        )
    })?;
    case.check(
        r.versions.get("messages") == Some(&c) && r.versions.get("count") == Some(&c),
        || format!("versions did not round-trip: {:?}", r.versions),
    )?;
    let mut keys: Vec<(String, String, Vec<u8>)> = latest
        .blobs
        .iter()
        .map(|b| (b.field.to_string(), b.version.to_string(), b.data.clone()))
        .collect();
    keys.sort();
    let expected = vec![
        ("count".to_owned(), c.clone(), b"7".to_vec()),
        ("messages".to_owned(), b.clone(), b"full".to_vec()),
        ("messages".to_owned(), c.clone(), b"delta".to_vec()),
    ];
    case.check(keys == expected, || {
        format!("the latest checkpoint's blobs (with the delta's base) are {keys:?}")
    })?;
    let delta = latest
        .blobs
        .iter()
        .find(|x| x.field == "messages" && *x.version == *c)
        .ok_or_else(|| case.fail("the delta blob is missing"))?;
    case.check(
        delta.base == Some((b.as_str().into(), SPLICE_COUNT)),
        || format!("the delta's base did not round-trip: {:?}", delta.base),
    )?;
    let by_id = case.call("get by id", saver.get(&thread, "", Some(&a)).await)?;
    case.check(by_id.record.as_ref().map(|r| r.step) == Some(-1), || {
        "get by id returned another checkpoint".into()
    })?;
    let missing = case.call("get unknown id", saver.get(&thread, "", Some("nope")).await)?;
    case.check(missing.record.is_none(), || {
        "an unknown checkpoint id returned a record".into()
    })?;
    let ids = |records: &[CheckpointRecord]| -> Vec<String> {
        records.iter().map(|r| r.id.to_string()).collect()
    };
    let all = case.call(
        "list",
        saver.list(&thread, "", &ListFilter::default()).await,
    )?;
    case.check(ids(&all) == [c.clone(), b.clone(), a.clone()], || {
        format!("list is not newest first: {:?}", ids(&all))
    })?;
    let before = case.call(
        "list before",
        saver
            .list(
                &thread,
                "",
                &ListFilter {
                    before: Some(c.clone()),
                    ..ListFilter::default()
                },
            )
            .await,
    )?;
    case.check(ids(&before) == [b.clone(), a.clone()], || {
        format!("list before `{c}` gave {:?}", ids(&before))
    })?;
    let limited = case.call(
        "list limit",
        saver
            .list(
                &thread,
                "",
                &ListFilter {
                    limit: Some(1),
                    ..ListFilter::default()
                },
            )
            .await,
    )?;
    case.check(ids(&limited) == [c.clone()], || {
        format!("list limit 1 gave {:?}", ids(&limited))
    })?;
    let inputs = case.call(
        "list by metadata",
        saver
            .list(
                &thread,
                "",
                &ListFilter {
                    metadata: BTreeMap::from([("source".to_owned(), json!("input"))]),
                    ..ListFilter::default()
                },
            )
            .await,
    )?;
    case.check(ids(&inputs) == [a.clone()], || {
        format!("list source=input gave {:?}", ids(&inputs))
    })?;
    let none = case.call(
        "list by metadata",
        saver
            .list(
                &thread,
                "",
                &ListFilter {
                    metadata: BTreeMap::from([("user".to_owned(), json!("bob"))]),
                    ..ListFilter::default()
                },
            )
            .await,
    )?;
    case.check(none.is_empty(), || "list user=bob matched".into())?;
    let other_ns = case.call(
        "get in another namespace",
        saver.get(&thread, "sub", None).await,
    )?;
    case.check(other_ns.record.is_none(), || {
        "namespaces are not separate: `sub` sees the root's checkpoint".into()
    })?;
    Ok(())
}

/// Pending writes belong to their checkpoint and replace by task id and kind.
pub async fn pending_writes(saver: &Arc<dyn Checkpointer>) -> CaseResult {
    let case = Case {
        name: "pending_writes",
        saver,
    };
    let thread = unique("writes");
    let cp = id(10);
    case.call(
        "put",
        saver
            .put(&record(&thread, &cp, None, 0, "loop", &[]), &[])
            .await,
    )?;
    let w = |task: &str, kind, data: &[u8]| PendingWrite {
        task_id: task.to_owned(),
        node: "n".to_owned(),
        kind,
        data: data.to_vec(),
    };
    case.call(
        "put_writes",
        saver
            .put_writes(&thread, "", &cp, &[w("t1", WriteKind::Output, b"a")])
            .await,
    )?;
    case.call(
        "put_writes",
        saver
            .put_writes(
                &thread,
                "",
                &cp,
                &[
                    w("t2", WriteKind::Interrupt, b"i"),
                    w("t2", WriteKind::Resume, b"r1"),
                ],
            )
            .await,
    )?;
    case.call(
        "put_writes",
        saver
            .put_writes(&thread, "", &cp, &[w("t2", WriteKind::Resume, b"r2")])
            .await,
    )?;
    let loaded = case.call("get", saver.get(&thread, "", None).await)?;
    let mut got: Vec<(String, i16, Vec<u8>, String)> = loaded
        .writes
        .iter()
        .map(|w| {
            (
                w.task_id.clone(),
                w.kind.code(),
                w.data.clone(),
                w.node.clone(),
            )
        })
        .collect();
    got.sort();
    let expected = vec![
        (
            "t1".to_owned(),
            WriteKind::Output.code(),
            b"a".to_vec(),
            "n".to_owned(),
        ),
        (
            "t2".to_owned(),
            WriteKind::Interrupt.code(),
            b"i".to_vec(),
            "n".to_owned(),
        ),
        (
            "t2".to_owned(),
            WriteKind::Resume.code(),
            b"r2".to_vec(),
            "n".to_owned(),
        ),
    ];
    case.check(got == expected, || {
        format!(
            "writes are {got:?}; a write with the same task and kind must replace the earlier one"
        )
    })?;
    case.call(
        "put",
        saver
            .put(&record(&thread, &id(11), Some(&cp), 1, "loop", &[]), &[])
            .await,
    )?;
    let newer = case.call("get", saver.get(&thread, "", None).await)?;
    case.check(newer.writes.is_empty(), || {
        "a newer checkpoint came back with its parent's writes".into()
    })?;
    let older = case.call("get by id", saver.get(&thread, "", Some(&cp)).await)?;
    case.check(older.writes.len() == 3, || {
        "the older checkpoint lost its writes".into()
    })?;
    Ok(())
}

/// One `put_batch` stores what the same calls one by one would: a checkpoint or a write
/// stored twice in a batch is stored once with the later values, a blob given twice is kept
/// once, and writes of distinct tasks come back in the order they were given.
pub async fn batches(saver: &Arc<dyn Checkpointer>) -> CaseResult {
    let case = Case {
        name: "batches",
        saver,
    };
    let thread = unique("batch");
    let (first, second) = (id(20), id(21));
    let w = |task: &str, data: &[u8]| PendingWrite {
        task_id: task.to_owned(),
        node: format!("node-{task}"),
        kind: WriteKind::Output,
        data: data.to_vec(),
    };
    let writes = |cp: &str, writes: Vec<PendingWrite>| StoreOp::Writes {
        thread_id: thread.as_str().into(),
        ns: "".into(),
        checkpoint_id: cp.into(),
        writes,
    };
    let mut replaced = record(&thread, &first, None, 0, "input", &[("f", "v1")]);
    replaced.body = vec![9];
    let kept = record(&thread, &first, None, 0, "loop", &[("f", "v1")]);
    let ops = vec![
        StoreOp::Checkpoint {
            record: replaced,
            blobs: vec![blob("f", "v1", None, b"one")],
        },
        writes(&first, vec![w("t3", b"3"), w("t1", b"old")]),
        writes(&first, vec![w("t2", b"2"), w("t1", b"new")]),
        StoreOp::Checkpoint {
            record: kept.clone(),
            blobs: vec![blob("f", "v1", None, b"one")],
        },
        StoreOp::Checkpoint {
            record: record(&thread, &second, Some(&first), 1, "loop", &[("f", "v2")]),
            blobs: vec![blob("f", "v2", Some(("v1", 1)), b"two")],
        },
        writes(&second, vec![w("t9", b"9")]),
    ];
    case.call("put_batch", saver.put_batch(ops).await)?;
    let older = case.call("get by id", saver.get(&thread, "", Some(&first)).await)?;
    case.check(older.record.as_ref() == Some(&kept), || {
        format!(
            "the checkpoint stored twice in one batch came back as {:?}; the later one must win",
            older.record
        )
    })?;
    let mut got: Vec<(&str, &[u8], &str)> = older
        .writes
        .iter()
        .map(|w| (w.task_id.as_str(), w.data.as_slice(), w.node.as_str()))
        .collect();
    let order: Vec<&str> = got.iter().map(|w| w.0).filter(|t| *t != "t1").collect();
    case.check(order == ["t3", "t2"], || {
        format!("writes came back in the order {order:?}, not as given (t3, then t2)")
    })?;
    got.sort();
    let expected: Vec<(&str, &[u8], &str)> = vec![
        ("t1", b"new", "node-t1"),
        ("t2", b"2", "node-t2"),
        ("t3", b"3", "node-t3"),
    ];
    case.check(got == expected, || {
        format!("writes came back as {got:?}, expected {expected:?} (the later duplicate's data)")
    })?;
    let newer = case.call("get", saver.get(&thread, "", None).await)?;
    case.check(
        newer.record.as_ref().map(|r| &*r.id) == Some(second.as_str()),
        || "the batch's newest checkpoint is not the thread's latest".into(),
    )?;
    let mut blobs: Vec<(&str, &[u8])> = newer
        .blobs
        .iter()
        .map(|b| (&*b.version, b.data.as_slice()))
        .collect();
    blobs.sort();
    case.check(blobs == [("v1", &b"one"[..]), ("v2", &b"two"[..])], || {
        format!("blobs came back as {blobs:?}")
    })?;
    case.check(newer.writes.len() == 1, || {
        format!(
            "the newest checkpoint has {} writes, expected 1",
            newer.writes.len()
        )
    })?;
    Ok(())
}

/// Three namespaces of one thread (a parent and two subgraphs) whose checkpoints interleave in
/// time, as sibling subgraphs' do: each namespace's newest, its list (newest first, with
/// `before`), its blobs and a prune of one of them see that namespace's checkpoints only.
pub async fn interleaved_namespaces(saver: &Arc<dyn Checkpointer>) -> CaseResult {
    let case = Case {
        name: "interleaved_namespaces",
        saver,
    };
    let thread = unique("ns");
    let spaces = ["", "child:1", "child:2"];
    // Ids 1..=12 in turns: "" has 1, 4, 7, 10; "child:1" 2, 5, 8, 11; "child:2" 3, 6, 9, 12.
    let of =
        |space: usize| -> Vec<String> { (0..4).map(|k| id(1 + space as u32 + 3 * k)).collect() };
    for round in 0..4 {
        let mut ops = Vec::new();
        for (space, ns) in spaces.iter().enumerate() {
            let ids = of(space);
            let cp = &ids[round];
            let mut checkpoint = record(
                &thread,
                cp,
                round.checked_sub(1).map(|r| ids[r].as_str()),
                round as i64,
                "loop",
                &[("f", cp)],
            );
            checkpoint.ns = (*ns).into();
            ops.push(StoreOp::Checkpoint {
                record: checkpoint,
                blobs: vec![blob("f", cp, None, format!("{ns}@{round}").as_bytes())],
            });
        }
        // One batch a round: the three namespaces commit together.
        case.call("put_batch", saver.put_batch(ops).await)?;
    }
    for (space, ns) in spaces.iter().enumerate() {
        let ids = of(space);
        let latest = case.call("get latest", saver.get(&thread, ns, None).await)?;
        let record = latest
            .record
            .ok_or_else(|| case.fail(format!("no checkpoint in `{ns}`")))?;
        case.check(*record.id == *ids[3] && &*record.ns == *ns, || {
            format!(
                "the newest of `{ns}` is {} in `{}`, expected {}",
                record.id, record.ns, ids[3]
            )
        })?;
        let data: Vec<&[u8]> = latest.blobs.iter().map(|b| b.data.as_slice()).collect();
        let want = format!("{ns}@3");
        case.check(data == [want.as_bytes()], || {
            format!("`{ns}`'s newest loads blobs {data:?}, expected [{want:?}]")
        })?;
        let listed = case.call(
            "list",
            saver.list(&thread, ns, &ListFilter::default()).await,
        )?;
        let listed: Vec<&str> = listed.iter().map(|r| &*r.id).collect();
        let newest_first: Vec<&str> = ids.iter().rev().map(String::as_str).collect();
        case.check(listed == newest_first, || {
            format!("list of `{ns}` gave {listed:?}, expected {newest_first:?}")
        })?;
        let before = ListFilter {
            before: Some(ids[2].clone()),
            ..ListFilter::default()
        };
        let older = case.call("list before", saver.list(&thread, ns, &before).await)?;
        let older: Vec<&str> = older.iter().map(|r| &*r.id).collect();
        case.check(older == [ids[1].as_str(), ids[0].as_str()], || {
            format!("list of `{ns}` before {} gave {older:?}", ids[2])
        })?;
        // Another namespace's checkpoint is not this one's.
        let other = of((space + 1) % 3);
        let foreign = case.call("get by id", saver.get(&thread, ns, Some(&other[3])).await)?;
        case.check(foreign.record.is_none(), || {
            format!(
                "`{ns}` found `{}`'s checkpoint {}",
                spaces[(space + 1) % 3],
                other[3]
            )
        })?;
    }
    let pruned = case.call("prune", saver.prune(&thread, "child:1", 1).await)?;
    case.check(pruned == 3, || {
        format!("prune of `child:1` to 1 of 4 reported {pruned} deleted, expected 3")
    })?;
    for (space, ns) in spaces.iter().enumerate() {
        let left = case.call(
            "list",
            saver.list(&thread, ns, &ListFilter::default()).await,
        )?;
        let expected = if space == 1 { 1 } else { 4 };
        case.check(left.len() == expected, || {
            format!(
                "`{ns}` has {} checkpoints after pruning `child:1`, expected {expected}",
                left.len()
            )
        })?;
        let latest = case.call("get latest", saver.get(&thread, ns, None).await)?;
        let want = format!("{ns}@3");
        case.check(
            latest
                .blobs
                .iter()
                .map(|b| b.data.as_slice())
                .eq([want.as_bytes()]),
            || format!("`{ns}`'s newest lost its blob in the prune of `child:1`"),
        )?;
    }
    Ok(())
}

/// `prune` keeps what the newest checkpoints need; `delete_thread` touches one thread.
pub async fn delete_and_prune(saver: &Arc<dyn Checkpointer>) -> CaseResult {
    let case = Case {
        name: "delete_and_prune",
        saver,
    };
    let thread = unique("prune");
    let other = unique("keep");
    let mut parent: Option<String> = None;
    for n in 0..6u32 {
        let cp = id(100 + n);
        // `messages` grows by deltas on the previous version; `count` is rewritten.
        let blobs = match &parent {
            None => vec![
                blob("messages", &cp, None, b"m0"),
                blob("count", &cp, None, &[0]),
            ],
            Some(base) => vec![
                blob(
                    "messages",
                    &cp,
                    Some((base, u64::from(n))),
                    format!("m{n}").as_bytes(),
                ),
                blob("count", &cp, None, &[n as u8]),
            ],
        };
        case.call(
            "put",
            saver
                .put(
                    &record(
                        &thread,
                        &cp,
                        parent.as_deref(),
                        i64::from(n),
                        "loop",
                        &[("messages", &cp), ("count", &cp)],
                    ),
                    &blobs,
                )
                .await,
        )?;
        case.call(
            "put_writes",
            saver
                .put_writes(
                    &thread,
                    "",
                    &cp,
                    &[PendingWrite {
                        task_id: format!("t{n}"),
                        node: "n".into(),
                        kind: WriteKind::Output,
                        data: vec![1],
                    }],
                )
                .await,
        )?;
        parent = Some(cp);
    }
    case.call(
        "put",
        saver
            .put(&record(&other, &id(1), None, 0, "loop", &[]), &[])
            .await,
    )?;
    let deleted = case.call("prune", saver.prune(&thread, "", 2).await)?;
    case.check(deleted == 4, || {
        format!("prune to 2 of 6 reported {deleted} deleted, expected 4")
    })?;
    let left = case.call(
        "list",
        saver.list(&thread, "", &ListFilter::default()).await,
    )?;
    case.check(left.len() == 2, || {
        format!("{} checkpoints left after prune, expected 2", left.len())
    })?;
    let latest = case.call("get", saver.get(&thread, "", None).await)?;
    let messages = latest
        .blobs
        .iter()
        .filter(|b| b.field == "messages")
        .count();
    case.check(messages == 6, || {
        format!("the newest checkpoint loads {messages} messages blobs after prune; its delta chain needs 6")
    })?;
    let counts = latest.blobs.iter().filter(|b| b.field == "count").count();
    case.check(counts == 1, || format!("{counts} count blobs, expected 1"))?;
    case.check(latest.writes.len() == 1, || {
        "the newest checkpoint lost its writes in prune".into()
    })?;
    let again = case.call("prune", saver.prune(&thread, "", 2).await)?;
    case.check(again == 0, || format!("a second prune deleted {again}"))?;
    case.call("delete_thread", saver.delete_thread(&thread).await)?;
    let gone = case.call("get", saver.get(&thread, "", None).await)?;
    case.check(gone.record.is_none(), || {
        "the deleted thread still has a checkpoint".into()
    })?;
    let listed = case.call(
        "list",
        saver.list(&thread, "", &ListFilter::default()).await,
    )?;
    case.check(listed.is_empty(), || {
        "the deleted thread still lists checkpoints".into()
    })?;
    let kept = case.call("get", saver.get(&other, "", None).await)?;
    case.check(kept.record.is_some(), || {
        "delete_thread removed another thread".into()
    })?;
    case.call("delete_thread", saver.delete_thread(&other).await)?;
    Ok(())
}

/// Eight tasks writing checkpoints and writes to one thread lose nothing.
pub async fn concurrent_writers(saver: &Arc<dyn Checkpointer>) -> CaseResult {
    let case = Case {
        name: "concurrent_writers",
        saver,
    };
    let thread = unique("concurrent");
    let mut handles = Vec::new();
    for w in 0..8u32 {
        let saver = saver.clone();
        let thread = thread.clone();
        handles.push(tokio::spawn(async move {
            for n in 0..10u32 {
                let cp = id(1000 + w * 100 + n);
                saver
                    .put(
                        &record(&thread, &cp, None, i64::from(n), "loop", &[("f", &cp)]),
                        &[blob("f", &cp, None, &[w as u8, n as u8])],
                    )
                    .await?;
                saver
                    .put_writes(
                        &thread,
                        "",
                        &cp,
                        &[PendingWrite {
                            task_id: format!("t{w}"),
                            node: "n".into(),
                            kind: WriteKind::Output,
                            data: vec![1],
                        }],
                    )
                    .await?;
            }
            Ok::<(), GraphError>(())
        }));
    }
    for handle in handles {
        let joined = handle
            .await
            .map_err(|e| case.fail(format!("a writer task panicked: {e}")))?;
        case.call("a concurrent put", joined)?;
    }
    let all = case.call(
        "list",
        saver.list(&thread, "", &ListFilter::default()).await,
    )?;
    case.check(all.len() == 80, || {
        format!(
            "{} of 80 concurrently written checkpoints are there",
            all.len()
        )
    })?;
    let latest = case.call("get", saver.get(&thread, "", None).await)?;
    let latest_id = latest.record.map(|r| r.id).unwrap_or_default();
    case.check(*latest_id == *id(1000 + 7 * 100 + 9), || {
        format!("latest is `{latest_id}`, not the highest id")
    })?;
    case.check(latest.blobs.len() == 1 && latest.writes.len() == 1, || {
        format!(
            "latest has {} blobs and {} writes, expected 1 and 1",
            latest.blobs.len(),
            latest.writes.len()
        )
    })?;
    Ok(())
}

/// The kit's graph state: a list that only grows (stored as deltas) and a counter.
#[derive(GraphState, Clone, Default, Debug)]
struct Journal {
    #[reducer(append)]
    entries: Vec<String>,
    #[reducer(add)]
    count: i64,
    approved: Option<String>,
}

fn journal_graph(
    saver: Arc<dyn Checkpointer>,
) -> Result<crate::CompiledGraph<Journal>, GraphError> {
    StateGraph::new()
        .add_node("write", |s: Arc<Journal>| async move {
            JournalUpdate::default()
                .entries(vec![format!("entry {}", s.count)])
                .count(1)
        })
        .add_node("review", |s: Arc<Journal>, ctx: NodeContext| async move {
            // Every third entry needs an approval.
            if s.count % 3 == 0 {
                let answer = ctx.interrupt(json!({"approve": s.count}))?;
                let answer = answer.as_str().unwrap_or_default().to_owned();
                return BoxResult::Ok(JournalUpdate::default().approved(Some(answer)));
            }
            Ok(JournalUpdate::default())
        })
        .add_edge(START, "write")
        .add_edge("write", "review")
        .add_edge("review", END)
        .compile_with(saver)
}

/// A real graph on the saver: threads, history, forks, interrupts.
pub async fn graph_threads(saver: &Arc<dyn Checkpointer>) -> CaseResult {
    let case = Case {
        name: "graph_threads",
        saver,
    };
    let graph = case.call("compile", journal_graph(saver.clone()))?;
    let config = RunConfig::default().thread_id(unique("graph"));
    let first = case.call(
        "invoke",
        graph.invoke(JournalUpdate::default(), config.clone()).await,
    )?;
    let second = case.call(
        "invoke",
        graph.invoke(JournalUpdate::default(), config.clone()).await,
    )?;
    case.check(first.entries == ["entry 0"], || {
        format!("first run: {:?}", first.entries)
    })?;
    case.check(
        second.entries == ["entry 0", "entry 1"] && second.count == 2,
        || {
            format!(
                "the thread did not carry over: {:?}, count {}",
                second.entries, second.count
            )
        },
    )?;
    let history = case.call(
        "get_state_history",
        graph
            .get_state_history(&config, &ListFilter::default())
            .await,
    )?;
    let steps: Vec<i64> = history.iter().map(|s| s.step).collect();
    let expected: Vec<i64> = (-1..steps.len() as i64 - 1).rev().collect();
    case.check(steps.len() >= 4 && steps == expected, || {
        format!("history steps are {steps:?}; newest first, they count up across runs from -1")
    })?;
    let sources: Vec<String> = history
        .iter()
        .map(|s| s.metadata["source"].as_str().unwrap_or("").to_owned())
        .collect();
    case.check(
        sources.last().map(String::as_str) == Some("input") && sources.contains(&"loop".to_owned()),
        || format!("history sources are {sources:?}"),
    )?;
    // Fork from the checkpoint after the first run's write: a new branch, the original kept.
    let after_first = history
        .iter()
        .find(|s| s.values.entries == ["entry 0"] && s.next.is_empty())
        .ok_or_else(|| case.fail("the first run's final checkpoint is not in the history"))?;
    let fork = case.call(
        "update_state",
        graph
            .update_state(
                &after_first.config,
                JournalUpdate::default().entries(vec!["forked".to_owned()]),
                None,
            )
            .await,
    )?;
    let forked = case
        .call("get_state", graph.get_state(&fork).await)?
        .ok_or_else(|| case.fail("the fork's checkpoint does not load"))?;
    case.check(forked.values.entries == ["entry 0", "forked"], || {
        format!("the fork holds {:?}", forked.values.entries)
    })?;
    case.check(forked.metadata["source"] == "fork", || {
        format!("the fork's source is {}", forked.metadata["source"])
    })?;
    let after_fork = case.call(
        "get_state_history",
        graph
            .get_state_history(&config, &ListFilter::default())
            .await,
    )?;
    case.check(after_fork.len() == history.len() + 1, || {
        format!(
            "the fork should add one checkpoint to {}; the history has {}",
            history.len(),
            after_fork.len()
        )
    })?;
    case.check(
        after_fork
            .iter()
            .any(|s| s.values.entries == ["entry 0", "entry 1"]),
        || "the original branch was lost in the fork".into(),
    )?;
    // An interrupt survives reopening the graph on the same saver.
    let paused_config = RunConfig::default().thread_id(unique("pause"));
    let mut paused = None;
    for _ in 0..4 {
        let out = case.call(
            "invoke",
            graph
                .invoke(JournalUpdate::default(), paused_config.clone())
                .await,
        )?;
        if !out.interrupts.is_empty() {
            paused = Some(out);
            break;
        }
    }
    let paused = paused.ok_or_else(|| case.fail("the review node never paused"))?;
    case.check(paused.interrupts[0].value["approve"] == 3, || {
        format!("the interrupt's value is {}", paused.interrupts[0].value)
    })?;
    let reopened = case.call("compile", journal_graph(saver.clone()))?;
    let snapshot = case
        .call("get_state", reopened.get_state(&paused_config).await)?
        .ok_or_else(|| case.fail("the paused thread does not load"))?;
    case.check(
        snapshot.next == ["review"] && snapshot.interrupts.len() == 1,
        || {
            format!(
                "the paused thread waits on {:?} with {} interrupts",
                snapshot.next,
                snapshot.interrupts.len()
            )
        },
    )?;
    let resume = Command::resume("yes").map_err(|e| case.fail(e.to_string()))?;
    let done = case.call(
        "resume",
        reopened.invoke(resume, paused_config.clone()).await,
    )?;
    case.check(
        done.interrupts.is_empty() && done.approved.as_deref() == Some("yes") && done.count == 3,
        || {
            format!(
                "after resume: interrupts {}, approved {:?}, count {}",
                done.interrupts.len(),
                done.approved,
                done.count
            )
        },
    )?;
    case.call(
        "delete_thread",
        saver
            .delete_thread(config.thread_id.as_deref().unwrap_or(""))
            .await,
    )?;
    case.call(
        "delete_thread",
        saver
            .delete_thread(paused_config.thread_id.as_deref().unwrap_or(""))
            .await,
    )?;
    Ok(())
}

/// A record of `thread` in `ns` written by run `run`.
fn run_record(
    thread: &str,
    ns: &str,
    run: &str,
    id: &str,
    parent: Option<&str>,
    step: i64,
    versions: &[(&str, &str)],
) -> CheckpointRecord {
    let mut record = record(thread, id, parent, step, "loop", versions);
    record.ns = ns.into();
    record.metadata.run_id = Some(run.into());
    record
}

/// `delete_for_runs` deletes a run's checkpoints in every namespace, with their writes;
/// what remains loads whole, delta chains through the deleted run's blobs included.
pub async fn delete_for_runs(saver: &Arc<dyn Checkpointer>) -> CaseResult {
    let case = Case {
        name: "delete_for_runs",
        saver,
    };
    let thread = unique("runs");
    let other = unique("runs-other");
    let (r1, r2, r3) = ("run-1", "run-2", "run-3");
    let c: Vec<String> = (0..5).map(|n| id(200 + n)).collect();
    let (s1, s2) = (id(300), id(301));
    // `messages` grows by deltas from c0 to c4, through every run; `count` is rewritten by
    // c0, c1, c2 and c4 (c3 keeps c2's).
    let puts: Vec<(CheckpointRecord, Vec<FieldBlob>)> = vec![
        (
            run_record(
                &thread,
                "",
                r1,
                &c[0],
                None,
                0,
                &[("messages", &c[0]), ("count", &c[0])],
            ),
            vec![
                blob("messages", &c[0], None, b"m0"),
                blob("count", &c[0], None, b"0"),
            ],
        ),
        (
            run_record(
                &thread,
                "",
                r1,
                &c[1],
                Some(&c[0]),
                1,
                &[("messages", &c[1]), ("count", &c[1])],
            ),
            vec![
                blob("messages", &c[1], Some((&c[0], 1)), b"m1"),
                blob("count", &c[1], None, b"1"),
            ],
        ),
        (
            run_record(
                &thread,
                "",
                r2,
                &c[2],
                Some(&c[1]),
                2,
                &[("messages", &c[2]), ("count", &c[2])],
            ),
            vec![
                blob("messages", &c[2], Some((&c[1], 2)), b"m2"),
                blob("count", &c[2], None, b"2"),
            ],
        ),
        (
            run_record(
                &thread,
                "",
                r2,
                &c[3],
                Some(&c[2]),
                3,
                &[("messages", &c[3]), ("count", &c[2])],
            ),
            vec![blob("messages", &c[3], Some((&c[2], 3)), b"m3")],
        ),
        (
            run_record(
                &thread,
                "",
                r3,
                &c[4],
                Some(&c[3]),
                4,
                &[("messages", &c[4]), ("count", &c[4])],
            ),
            vec![
                blob("messages", &c[4], Some((&c[3], 4)), b"m4"),
                blob("count", &c[4], None, b"4"),
            ],
        ),
        (
            run_record(&thread, "child:1", r1, &s1, None, 0, &[("f", &s1)]),
            vec![blob("f", &s1, None, b"s1")],
        ),
        (
            run_record(&thread, "child:1", r2, &s2, Some(&s1), 1, &[("f", &s2)]),
            vec![blob("f", &s2, Some((&s1, 1)), b"s2")],
        ),
        (
            run_record(&other, "", r2, &c[0], None, 0, &[("f", &c[0])]),
            vec![blob("f", &c[0], None, b"other")],
        ),
    ];
    for (record, blobs) in &puts {
        case.call("put", saver.put(record, blobs).await)?;
    }
    let write = |task: &str| PendingWrite {
        task_id: task.to_owned(),
        node: "n".to_owned(),
        kind: WriteKind::Output,
        data: task.as_bytes().to_vec(),
    };
    for (ns, cp, task) in [
        ("", &c[1], "kept"),
        ("", &c[2], "gone"),
        ("child:1", &s2, "gone"),
    ] {
        case.call(
            "put_writes",
            saver.put_writes(&thread, ns, cp, &[write(task)]).await,
        )?;
    }
    let nothing = case.call("delete_for_runs", saver.delete_for_runs(&thread, &[]).await)?;
    let unknown = case.call(
        "delete_for_runs",
        saver.delete_for_runs(&thread, &["no-such-run"]).await,
    )?;
    case.check(nothing == 0 && unknown == 0, || {
        format!("deleting no runs or an unknown one deleted {nothing} and {unknown} checkpoints")
    })?;
    let deleted = case.call(
        "delete_for_runs",
        saver.delete_for_runs(&thread, &[r2, "no-such-run"]).await,
    )?;
    case.check(deleted == 3, || {
        format!("deleting run-2 (2 checkpoints at the root, 1 in `child:1`) reported {deleted}")
    })?;
    // Borrowed by the helpers below (each call's future holds the references).
    let (case, thread) = (&case, &thread);
    let listed = |ns: &'static str| async move {
        let records = case.call("list", saver.list(thread, ns, &ListFilter::default()).await)?;
        Ok::<Vec<String>, Failure>(records.iter().map(|r| r.id.to_string()).collect())
    };
    let root = listed("").await?;
    case.check(root == [c[4].clone(), c[1].clone(), c[0].clone()], || {
        format!("after deleting run-2 the root lists {root:?}")
    })?;
    let child = listed("child:1").await?;
    case.check(child == [s1.clone()], || {
        format!("after deleting run-2 `child:1` lists {child:?}")
    })?;
    for gone in [&c[2], &c[3]] {
        let loaded = case.call("get by id", saver.get(thread, "", Some(gone)).await)?;
        case.check(loaded.record.is_none(), || {
            format!("run-2's checkpoint {gone} still loads")
        })?;
    }
    // The blobs of a loaded checkpoint: (field, version, data), sorted.
    let blobs_of = |ns: &'static str, cp: String| async move {
        let loaded = case.call("get by id", saver.get(thread, ns, Some(&cp)).await)?;
        let record = loaded
            .record
            .ok_or_else(|| case.fail(format!("the remaining checkpoint {cp} does not load")))?;
        let mut blobs: Vec<(String, String, Vec<u8>)> = loaded
            .blobs
            .iter()
            .map(|b| (b.field.to_string(), b.version.to_string(), b.data.clone()))
            .collect();
        blobs.sort();
        let writes: Vec<String> = loaded.writes.iter().map(|w| w.task_id.clone()).collect();
        Ok::<_, Failure>((record, blobs, writes))
    };
    let b = |field: &str, version: &str, data: &[u8]| {
        (field.to_owned(), version.to_owned(), data.to_vec())
    };
    // run-3's checkpoint builds on run-2's blobs: they stay while it needs them.
    let (after, latest, _) = blobs_of("", c[4].clone()).await?;
    // Its parent, run-2's last checkpoint, went: it names the nearest remaining ancestor.
    case.check(after.parent_id.as_deref() == Some(c[1].as_str()), || {
        format!(
            "run-3's checkpoint names the parent {:?} after run-2 went, expected {}",
            after.parent_id, c[1]
        )
    })?;
    let expected = vec![
        b("count", &c[4], b"4"),
        b("messages", &c[0], b"m0"),
        b("messages", &c[1], b"m1"),
        b("messages", &c[2], b"m2"),
        b("messages", &c[3], b"m3"),
        b("messages", &c[4], b"m4"),
    ];
    case.check(latest == expected, || {
        format!(
            "run-3's checkpoint, whose delta chain runs through run-2's blobs, loads {latest:?}"
        )
    })?;
    let (_, first, writes) = blobs_of("", c[1].clone()).await?;
    case.check(
        first
            == [
                b("count", &c[1], b"1"),
                b("messages", &c[0], b"m0"),
                b("messages", &c[1], b"m1"),
            ],
        || format!("run-1's last checkpoint loads {first:?}"),
    )?;
    case.check(writes == ["kept"], || {
        format!("run-1's last checkpoint has the writes {writes:?}, expected its own")
    })?;
    let (_, sub, _) = blobs_of("child:1", s1.clone()).await?;
    case.check(sub == [b("f", &s1, b"s1")], || {
        format!("`child:1`'s remaining checkpoint loads {sub:?}")
    })?;
    let kept = case.call("get", saver.get(&other, "", None).await)?;
    case.check(kept.record.is_some() && kept.blobs.len() == 1, || {
        "deleting run-2 on one thread touched another thread's run-2 checkpoint".into()
    })?;
    // run-3, which the kept chain needed run-2's blobs for, goes too: then run-1's.
    let deleted = case.call(
        "delete_for_runs",
        saver.delete_for_runs(thread, &[r3]).await,
    )?;
    case.check(deleted == 1, || {
        format!("deleting run-3 reported {deleted}")
    })?;
    let (record, latest, _) = blobs_of("", c[1].clone()).await?;
    case.check(latest == first, || {
        format!("run-1's last checkpoint loads {latest:?} once run-3 is deleted")
    })?;
    let newest = case.call("get latest", saver.get(thread, "", None).await)?;
    case.check(
        newest.record.as_ref().map(|r| &r.id) == Some(&record.id),
        || "the thread's latest is not run-1's last checkpoint".into(),
    )?;
    let deleted = case.call(
        "delete_for_runs",
        saver.delete_for_runs(thread, &[r1]).await,
    )?;
    case.check(deleted == 3, || {
        format!("deleting run-1 reported {deleted}, expected 3")
    })?;
    for ns in ["", "child:1"] {
        let left = listed(ns).await?;
        case.check(left.is_empty(), || format!("`{ns}` still lists {left:?}"))?;
    }
    case.call("delete_thread", saver.delete_thread(thread).await)?;
    case.call("delete_thread", saver.delete_thread(&other).await)?;
    Ok(())
}

/// `keep_latest` keeps each namespace's newest checkpoint and what it needs; no kept
/// checkpoint names a parent that went; `replace_writes` sets a checkpoint's writes.
pub async fn keep_latest(saver: &Arc<dyn Checkpointer>) -> CaseResult {
    let case = Case {
        name: "keep_latest",
        saver,
    };
    let thread = unique("latest");
    let other = unique("latest-other");
    let c: Vec<String> = (0..4).map(|n| id(400 + n)).collect();
    let s: Vec<String> = (0..3).map(|n| id(500 + n)).collect();
    // The root: `messages` grows by deltas over c0..c2; two subgraph namespaces.
    let mut puts = vec![
        (
            run_record(&thread, "", "r", &c[0], None, 0, &[("messages", &c[0])]),
            vec![blob("messages", &c[0], None, b"m0")],
        ),
        (
            run_record(
                &thread,
                "",
                "r",
                &c[1],
                Some(&c[0]),
                1,
                &[("messages", &c[1])],
            ),
            vec![blob("messages", &c[1], Some((&c[0], 1)), b"m1")],
        ),
        (
            run_record(
                &thread,
                "",
                "r",
                &c[2],
                Some(&c[1]),
                2,
                &[("messages", &c[2])],
            ),
            vec![blob("messages", &c[2], Some((&c[1], 2)), b"m2")],
        ),
        (
            run_record(&thread, "child:1", "r", &s[0], None, 0, &[("f", &s[0])]),
            vec![blob("f", &s[0], None, b"s0")],
        ),
        (
            run_record(
                &thread,
                "child:1",
                "r",
                &s[1],
                Some(&s[0]),
                1,
                &[("f", &s[1])],
            ),
            vec![blob("f", &s[1], None, b"s1")],
        ),
        (
            run_record(&thread, "child:2", "r", &s[2], None, 0, &[("f", &s[2])]),
            vec![blob("f", &s[2], None, b"s2")],
        ),
    ];
    puts.push((
        run_record(&other, "", "r", &c[0], None, 0, &[("f", &c[0])]),
        vec![blob("f", &c[0], None, b"o0")],
    ));
    puts.push((
        run_record(&other, "", "r", &c[1], Some(&c[0]), 1, &[("f", &c[1])]),
        vec![blob("f", &c[1], None, b"o1")],
    ));
    for (record, blobs) in &puts {
        case.call("put", saver.put(record, blobs).await)?;
    }
    let write = |task: &str| PendingWrite {
        task_id: task.to_owned(),
        node: "n".to_owned(),
        kind: WriteKind::Output,
        data: task.as_bytes().to_vec(),
    };
    for (ns, cp, task) in [
        ("", &c[2], "latest"),
        ("", &c[1], "older"),
        ("child:1", &s[1], "sub"),
    ] {
        case.call(
            "put_writes",
            saver.put_writes(&thread, ns, cp, &[write(task)]).await,
        )?;
    }
    let deleted = case.call("keep_latest", saver.keep_latest(&thread).await)?;
    case.check(deleted == 3, || {
        format!("keep_latest deleted {deleted}, expected 3 (2 at the root, 1 in `child:1`)")
    })?;
    let (case, thread) = (&case, &thread);
    for (ns, newest, writes) in [
        ("", &c[2], "latest"),
        ("child:1", &s[1], "sub"),
        ("child:2", &s[2], ""),
    ] {
        let listed = case.call("list", saver.list(thread, ns, &ListFilter::default()).await)?;
        let ids: Vec<&str> = listed.iter().map(|r| &*r.id).collect();
        case.check(ids == [newest.as_str()], || {
            format!("after keep_latest `{ns}` lists {ids:?}, expected only {newest}")
        })?;
        let loaded = case.call("get", saver.get(thread, ns, None).await)?;
        let record = loaded
            .record
            .ok_or_else(|| case.fail(format!("`{ns}`'s newest does not load")))?;
        case.check(record.parent_id.is_none(), || {
            format!(
                "`{ns}`'s kept checkpoint names the deleted parent {:?}",
                record.parent_id
            )
        })?;
        let kept: Vec<&str> = loaded.writes.iter().map(|w| w.task_id.as_str()).collect();
        let expected: Vec<&str> = Some(writes).filter(|w| !w.is_empty()).into_iter().collect();
        case.check(kept == expected, || {
            format!("`{ns}`'s kept checkpoint has the writes {kept:?}, expected {expected:?}")
        })?;
        if ns.is_empty() {
            let mut blobs: Vec<(String, Vec<u8>)> = loaded
                .blobs
                .iter()
                .map(|b| (b.version.to_string(), b.data.clone()))
                .collect();
            blobs.sort();
            let whole = vec![
                (c[0].clone(), b"m0".to_vec()),
                (c[1].clone(), b"m1".to_vec()),
                (c[2].clone(), b"m2".to_vec()),
            ];
            case.check(blobs == whole, || {
                format!("the kept root checkpoint's delta chain loads {blobs:?}")
            })?;
        }
    }
    let untouched = case.call("list", saver.list(&other, "", &ListFilter::default()).await)?;
    case.check(untouched.len() == 2, || {
        "keep_latest on one thread pruned another".into()
    })?;
    // `prune` of one namespace: the oldest kept one's parent went with the rest.
    let more = [id(403), id(404)];
    for (i, (cp, parent)) in [(&more[0], &c[2]), (&more[1], &more[0])]
        .into_iter()
        .enumerate()
    {
        let record = run_record(
            thread,
            "",
            "r",
            cp,
            Some(parent),
            3 + i as i64,
            &[("messages", &c[2])],
        );
        case.call("put", saver.put(&record, &[]).await)?;
    }
    case.call("prune", saver.prune(thread, "", 2).await)?;
    let oldest = case.call("get by id", saver.get(thread, "", Some(&more[0])).await)?;
    case.check(
        oldest
            .record
            .as_ref()
            .is_some_and(|r| r.parent_id.is_none()),
        || {
            format!(
                "after prune the oldest kept checkpoint loads as {:?}",
                oldest.record.map(|r| r.parent_id)
            )
        },
    )?;
    // `replace_writes`: exactly the writes given; nothing for a checkpoint not stored.
    let newest = more[1].clone();
    for task in ["a", "b"] {
        case.call(
            "put_writes",
            saver.put_writes(thread, "", &newest, &[write(task)]).await,
        )?;
    }
    case.call(
        "replace_writes",
        saver
            .replace_writes(thread, "", &newest, &[write("b"), write("c")])
            .await,
    )?;
    let loaded = case.call("get", saver.get(thread, "", Some(&newest)).await)?;
    let mut tasks: Vec<&str> = loaded.writes.iter().map(|w| w.task_id.as_str()).collect();
    tasks.sort();
    case.check(tasks == ["b", "c"], || {
        format!("after replace_writes the checkpoint has the writes {tasks:?}, expected b and c")
    })?;
    case.call(
        "replace_writes",
        saver.replace_writes(thread, "", &newest, &[]).await,
    )?;
    let loaded = case.call("get", saver.get(thread, "", Some(&newest)).await)?;
    case.check(loaded.writes.is_empty(), || {
        "replace_writes with none left writes".into()
    })?;
    let missing = id(499);
    case.call(
        "replace_writes",
        saver
            .replace_writes(thread, "", &missing, &[write("x")])
            .await,
    )?;
    case.call(
        "put",
        saver
            .put(
                &run_record(thread, "", "r", &missing, Some(&newest), 9, &[]),
                &[],
            )
            .await,
    )?;
    let fresh = case.call("get", saver.get(thread, "", Some(&missing)).await)?;
    case.check(fresh.writes.is_empty(), || {
        "replace_writes on a checkpoint not stored left writes for it".into()
    })?;
    case.call("delete_thread", saver.delete_thread(thread).await)?;
    case.call("delete_thread", saver.delete_thread(&other).await)?;
    Ok(())
}

/// The state of [`graph_runs_deleted`]'s graph: a list that only grows (stored as deltas),
/// a counter, and the namespaces its subgraph ran in.
#[derive(GraphState, Clone, Default, Debug, PartialEq)]
struct Ledger {
    #[reducer(append)]
    entries: Vec<String>,
    #[reducer(add)]
    count: i64,
    #[reducer(append)]
    spaces: Vec<String>,
}

/// Writes three entries a run (a loop), then runs a subgraph that notes where it ran.
fn ledger_graph(saver: Arc<dyn Checkpointer>) -> Result<crate::CompiledGraph<Ledger>, GraphError> {
    let sub = StateGraph::<Ledger>::new()
        .add_node("note", |_s: Arc<Ledger>, ctx: NodeContext| async move {
            LedgerUpdate::default()
                .entries(vec![format!("noted by {}", ctx.run_id())])
                .spaces(vec![ctx.config().checkpoint_ns.clone()])
        })
        .add_edge(START, "note")
        .add_edge("note", END)
        .compile()?;
    StateGraph::new()
        .add_node("write", |s: Arc<Ledger>| async move {
            LedgerUpdate::default()
                .entries(vec![format!("entry {} {}", s.count, "x".repeat(64))])
                .count(1)
        })
        .add_node("sub", sub)
        .add_edge(START, "write")
        .add_conditional_edges(
            "write",
            |s: &Ledger| if s.count % 3 == 0 { "sub" } else { "write" },
            ["write", "sub"],
        )
        .add_edge("sub", END)
        .compile_with(saver)
}

/// A real graph with a subgraph: checkpoints name their run; deleting runs leaves a thread
/// whose every checkpoint restores and whose next run goes on from the latest remaining.
pub async fn graph_runs_deleted(saver: &Arc<dyn Checkpointer>) -> CaseResult {
    let case = Case {
        name: "graph_runs_deleted",
        saver,
    };
    let graph = case.call("compile", ledger_graph(saver.clone()))?;
    let thread = unique("rollback");
    let runs: Vec<String> = (1..=4).map(|n| unique(&format!("run{n}"))).collect();
    // Borrowed by the helpers below (each call's future holds the references).
    let (case, graph, thread, runs) = (&case, &graph, &thread, &runs);
    let config = move |run: usize| {
        RunConfig::default()
            .thread_id(thread.clone())
            .run_id(runs[run].clone())
    };
    let history = move || async move {
        case.call(
            "get_state_history",
            graph
                .get_state_history(&config(0), &ListFilter::default())
                .await,
        )
    };
    let run = |n: usize| async move {
        case.call(
            "invoke",
            graph.invoke(LedgerUpdate::default(), config(n)).await,
        )
    };
    // Every checkpoint of `ns` (newest first) names its run: the run ids given, in turn.
    let run_ids_of = |ns: String| async move {
        let records = case.call(
            "list",
            saver.list(thread, &ns, &ListFilter::default()).await,
        )?;
        Ok::<Vec<String>, Failure>(
            records
                .iter()
                .map(|r| r.metadata.run_id.as_deref().unwrap_or("(none)").to_owned())
                .collect(),
        )
    };
    let first = run(0).await?;
    case.check(first.count == 3 && first.spaces.len() == 1, || {
        format!(
            "the first run: count {}, subgraph namespaces {:?}",
            first.count, first.spaces
        )
    })?;
    let after_first = history().await?;
    let root_ids = run_ids_of(String::new()).await?;
    case.check(root_ids.iter().all(|r| *r == runs[0]), || {
        format!(
            "the first run's checkpoints name the runs {root_ids:?}, expected {}",
            runs[0]
        )
    })?;
    let sub_ids = run_ids_of(first.spaces[0].clone()).await?;
    case.check(
        !sub_ids.is_empty() && sub_ids.iter().all(|r| *r == runs[0]),
        || {
            format!(
                "the subgraph's checkpoints (`{}`) name the runs {sub_ids:?}, expected {}",
                first.spaces[0], runs[0]
            )
        },
    )?;
    case.check(
        first.entries.last() == Some(&format!("noted by {}", runs[0])),
        || {
            format!(
                "the subgraph's node saw the run id in {:?}",
                first.entries.last()
            )
        },
    )?;

    let second = run(1).await?;
    case.check(second.count == 6 && second.spaces.len() == 2, || {
        format!(
            "the second run: count {}, namespaces {:?}",
            second.count, second.spaces
        )
    })?;
    // The appended list is stored as deltas: the latest checkpoint builds on earlier blobs.
    let latest = case.call("get", saver.get(thread, "", None).await)?;
    case.check(
        latest
            .blobs
            .iter()
            .any(|b| b.field == "entries" && b.base.is_some()),
        || "the appended list is not stored as a delta; the case needs one".into(),
    )?;
    let after_second = history().await?;
    let sub_second = second.spaces[1].clone();
    let sub_second_count = run_ids_of(sub_second.clone()).await?.len();
    let deleted = case.call(
        "delete_for_runs",
        saver.delete_for_runs(thread, &[runs[1].as_str()]).await,
    )?;
    let expected = after_second.len() - after_first.len() + sub_second_count;
    case.check(deleted == expected, || {
        format!("deleting the second run reported {deleted} checkpoints, expected {expected}")
    })?;
    let rolled_back = history().await?;
    let values = |h: &[crate::StateSnapshot<Ledger>]| -> Vec<Ledger> {
        h.iter().map(|s| s.values.clone()).collect()
    };
    case.check(values(&rolled_back) == values(&after_first), || {
        format!(
            "after deleting the second run the history holds {} checkpoints, not the first run's {}",
            rolled_back.len(),
            after_first.len()
        )
    })?;
    for snapshot in &rolled_back {
        let again = case.call("get_state", graph.get_state(&snapshot.config).await)?;
        case.check(again.is_some_and(|s| s.values == snapshot.values), || {
            format!(
                "checkpoint {:?} does not restore",
                snapshot.config.checkpoint_id
            )
        })?;
    }
    let gone = run_ids_of(sub_second).await?;
    case.check(gone.is_empty(), || {
        format!("the deleted run's subgraph checkpoints are still listed: {gone:?}")
    })?;
    let kept = case
        .call("get_state", graph.get_state(&config(0)).await)?
        .ok_or_else(|| case.fail("the thread has no state after the delete"))?;
    case.check(kept.values == first.state, || {
        format!("the thread's state after the delete is {:?}", kept.values)
    })?;

    // The next run goes on from the first run's end.
    let third = run(2).await?;
    case.check(
        third.count == 6
            && third.entries.len() == 2 * first.entries.len()
            && third.entries[..first.entries.len()] == first.entries[..],
        || format!("the run after the delete went on from {:?}", third.entries),
    )?;
    // A run in the middle: the fourth run's checkpoints build on the third's blobs.
    let fourth = run(3).await?;
    let deleted = case.call(
        "delete_for_runs",
        saver.delete_for_runs(thread, &[runs[2].as_str()]).await,
    )?;
    case.check(deleted > 0, || {
        "deleting the third run deleted nothing".into()
    })?;
    let left = history().await?;
    let ran: Vec<String> = left
        .iter()
        .map(|s| s.meta().run_id.as_deref().unwrap_or("").to_owned())
        .collect();
    case.check(
        ran.iter().all(|r| *r == runs[0] || *r == runs[3]) && ran.contains(&runs[3]),
        || format!("after deleting the third run the history's runs are {ran:?}"),
    )?;
    for snapshot in &left {
        let again = case.call("get_state", graph.get_state(&snapshot.config).await)?;
        case.check(again.is_some(), || {
            format!(
                "checkpoint {:?} does not restore",
                snapshot.config.checkpoint_id
            )
        })?;
    }
    let now = case
        .call("get_state", graph.get_state(&config(0)).await)?
        .ok_or_else(|| case.fail("the thread has no state"))?;
    case.check(now.values == fourth.state, || {
        "the fourth run's end does not restore once the third run is deleted".into()
    })?;
    let fifth = run(3).await?;
    case.check(fifth.count == fourth.count + 3, || {
        format!("a run after that went on from count {}", fifth.count - 3)
    })?;
    case.call("delete_thread", saver.delete_thread(thread).await)?;
    Ok(())
}

/// What a thread occupies: checkpoints, values by field and pending writes, every namespace,
/// through a prune and a delete; other threads apart.
pub async fn storage(saver: &Arc<dyn Checkpointer>) -> CaseResult {
    let case = Case {
        name: "storage",
        saver,
    };
    let thread = unique("storage");
    let Some(empty) = case.call("storage", saver.storage(&thread).await)? else {
        return Ok(());
    };
    case.check(
        empty.total_bytes() == 0 && empty.checkpoints.count == 0,
        || format!("a thread with nothing stored: {empty:?}"),
    )?;
    let (a, b, c, d) = (id(1), id(2), id(3), id(4));
    let puts = [
        (record(&thread, &a, None, -1, "input", &[]), vec![]),
        (
            record(&thread, &b, Some(&a), 0, "loop", &[("messages", &b)]),
            vec![blob("messages", &b, None, b"full")],
        ),
        (
            record(
                &thread,
                &c,
                Some(&b),
                1,
                "loop",
                &[("messages", &c), ("count", &c)],
            ),
            vec![
                blob("messages", &c, Some((&b, 1)), b"delta"),
                blob("count", &c, None, b"7"),
            ],
        ),
    ];
    for (record, blobs) in &puts {
        case.call("put", saver.put(record, blobs).await)?;
    }
    let mut sub = record(&thread, &d, None, 0, "loop", &[("messages", &d)]);
    sub.ns = "child:1".into();
    case.call(
        "put in a namespace",
        saver
            .put(&sub, &[blob("messages", &d, None, b"sub-messages")])
            .await,
    )?;
    let writes = [("t1", &b"out1"[..]), ("t2", &b"out22"[..])].map(|(task, data)| PendingWrite {
        task_id: task.to_owned(),
        node: "n".to_owned(),
        kind: WriteKind::Output,
        data: data.to_vec(),
    });
    case.call(
        "put_writes",
        saver.put_writes(&thread, "", &c, &writes).await,
    )?;
    // Another thread's rows are not this one's.
    let other = unique("storage-other");
    case.call(
        "put on another thread",
        saver
            .put(
                &record(&other, &a, None, 0, "loop", &[("messages", &a)]),
                &[blob("messages", &a, None, b"elsewhere")],
            )
            .await,
    )?;

    let told = |what: &str, stored: Option<super::ThreadStorage>| {
        stored.ok_or_else(|| case.fail(format!("{what}: told once, then not")))
    };
    let full = told(
        "storage",
        case.call("storage", saver.storage(&thread).await)?,
    )?;
    let expected = |messages: u64, messages_bytes: u64| {
        BTreeMap::from([
            ("count".to_owned(), StoredBytes { count: 1, bytes: 1 }),
            (
                "messages".to_owned(),
                StoredBytes {
                    count: messages,
                    bytes: messages_bytes,
                },
            ),
        ])
    };
    case.check(
        full.checkpoints.count == 4 && full.checkpoints.bytes > 0,
        || format!("four checkpoints in two namespaces: {full:?}"),
    )?;
    case.check(full.by_field == expected(3, 4 + 5 + 12), || {
        format!("values by field (three of messages, one of count): {full:?}")
    })?;
    case.check(
        full.values
            == StoredBytes {
                count: 4,
                bytes: 22,
            },
        || format!("values: {full:?}"),
    )?;
    case.check(full.writes == StoredBytes { count: 2, bytes: 9 }, || {
        format!("pending writes: {full:?}")
    })?;
    case.check(
        full.total_bytes() == full.checkpoints.bytes + 22 + 9,
        || format!("total: {full:?}"),
    )?;

    // The root keeps its latest checkpoint, whose delta still needs `b`'s messages.
    case.call("prune", saver.prune(&thread, "", 1).await)?;
    let pruned = told(
        "storage after prune",
        case.call("storage", saver.storage(&thread).await)?,
    )?;
    case.check(pruned.checkpoints.count == 2, || {
        format!("one checkpoint per namespace after the prune: {pruned:?}")
    })?;
    case.check(pruned.by_field == expected(3, 4 + 5 + 12), || {
        format!("the kept delta's base is still stored, and counted: {pruned:?}")
    })?;

    case.call("delete_thread", saver.delete_thread(&thread).await)?;
    let gone = told(
        "storage after delete",
        case.call("storage", saver.storage(&thread).await)?,
    )?;
    case.check(gone == super::ThreadStorage::default(), || {
        format!("a deleted thread stores nothing: {gone:?}")
    })?;
    let kept = told(
        "storage",
        case.call("storage", saver.storage(&other).await)?,
    )?;
    case.check(
        kept.values.count == 1 && kept.checkpoints.count == 1,
        || format!("the other thread is untouched: {kept:?}"),
    )?;
    case.call("delete_thread", saver.delete_thread(&other).await)?;
    Ok(())
}
