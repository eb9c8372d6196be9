//! `PostgresSaver::fenced` against a real server: writes pass while the fence's row says so;
//! after an `UPDATE` of the row every write (checkpoints, pending writes, deletes) fails with
//! `GraphError::Fenced` and stores nothing; a write racing the `UPDATE` either lands before it
//! or is refused; fenced batches never share a commit with unfenced ones or another fence's;
//! and a run checkpointing through a fenced saver stops with `Fenced` once its lease is taken.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

use agent_core::checkpoint::{
    CheckpointMetadata, CheckpointRecord, Checkpointer, Fence, PendingWrite, StoreOp, WriteKind,
};
use agent_core::{
    Durability, END, GraphError, GraphState, ListFilter, PostgresSaver, RunConfig, START,
    StateGraph,
};

/// A saver, and a lease table of the test's own (dropped by `drop_table`).
async fn setup() -> Option<(PostgresSaver, String)> {
    let url = common::postgres_url()?;
    let saver = PostgresSaver::connect(&url).await.unwrap();
    let table = format!("fence_leases_{}_{}", std::process::id(), fastrand::u32(..));
    saver
        .pool()
        .get()
        .await
        .unwrap()
        .batch_execute(&format!(
            "CREATE TABLE {table} (id TEXT PRIMARY KEY, owner TEXT NOT NULL)"
        ))
        .await
        .unwrap();
    Some((saver, table))
}

async fn execute(saver: &PostgresSaver, sql: &str) {
    saver
        .pool()
        .get()
        .await
        .unwrap()
        .batch_execute(sql)
        .await
        .unwrap();
}

/// The fence of lease `id` held by `owner`.
fn fence(table: &str, id: &str, owner: &str) -> Fence {
    Fence {
        sql: format!("SELECT 1 FROM {table} WHERE id = $1 AND owner = $2 FOR SHARE"),
        params: vec![id.to_owned(), owner.to_owned()],
    }
}

fn checkpoint(thread: &str, id: &str, run: &str) -> StoreOp {
    let mut metadata = CheckpointMetadata::default();
    metadata.run_id = Some(run.into());
    StoreOp::Checkpoint {
        record: CheckpointRecord {
            thread_id: thread.into(),
            ns: "".into(),
            id: id.into(),
            parent_id: None,
            step: 0,
            created_at_ms: 0,
            metadata,
            versions: [("f".to_owned(), id.to_owned())].into_iter().collect(),
            body: vec![1, 2, 3],
        },
        blobs: vec![agent_core::checkpoint::FieldBlob {
            field: "f".into(),
            version: id.into(),
            base: None,
            data: vec![4],
        }],
    }
}

fn write(task: &str) -> PendingWrite {
    PendingWrite {
        task_id: task.to_owned(),
        node: "n".to_owned(),
        kind: WriteKind::Output,
        data: vec![1],
    }
}

fn is_fenced(result: &Result<impl std::fmt::Debug, GraphError>) -> bool {
    matches!(
        result,
        Err(GraphError::Fenced {
            backend: "postgres",
            ..
        })
    )
}

async fn count(saver: &PostgresSaver, thread: &str) -> usize {
    saver
        .list(thread, "", &ListFilter::default())
        .await
        .unwrap()
        .len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_pass_while_the_row_holds_and_none_after_it_changes() {
    let Some((saver, table)) = setup().await else {
        return;
    };
    let thread = common::unique("fenced");
    execute(&saver, &format!("INSERT INTO {table} VALUES ('run', 'a')")).await;
    let fenced = saver.fenced(fence(&table, "run", "a"));
    assert!(format!("{fenced:?}").contains("fenced: true"));
    fenced
        .put_batch(vec![checkpoint(&thread, "c1", "r1")])
        .await
        .unwrap();
    fenced
        .put_writes(&thread, "", "c1", &[write("t1")])
        .await
        .unwrap();
    let stored = saver.get(&thread, "", Some("c1")).await.unwrap();
    assert!(stored.record.is_some() && stored.writes.len() == 1);

    // Another worker takes the lease over.
    execute(
        &saver,
        &format!("UPDATE {table} SET owner = 'b' WHERE id = 'run'"),
    )
    .await;
    let refused = fenced
        .put_batch(vec![checkpoint(&thread, "c2", "r1")])
        .await;
    assert!(is_fenced(&refused), "{refused:?}");
    let message = refused.unwrap_err().to_string();
    assert!(
        message.contains("nothing was written") && message.contains("lease"),
        "{message}"
    );
    assert!(
        saver
            .get(&thread, "", Some("c2"))
            .await
            .unwrap()
            .record
            .is_none(),
        "the refused checkpoint was not stored"
    );
    let refused = fenced.put_writes(&thread, "", "c1", &[write("t2")]).await;
    assert!(is_fenced(&refused), "{refused:?}");
    let refused = fenced
        .put(
            &match checkpoint(&thread, "c3", "r1") {
                StoreOp::Checkpoint { record, .. } => record,
                StoreOp::Writes { .. } => unreachable!(),
            },
            &[],
        )
        .await;
    assert!(is_fenced(&refused), "{refused:?}");
    // Deletes are writes too.
    assert!(is_fenced(&fenced.delete_for_runs(&thread, &["r1"]).await));
    assert!(is_fenced(&fenced.prune(&thread, "", 0).await));
    assert!(is_fenced(&fenced.delete_thread(&thread).await));
    let stored = saver.get(&thread, "", None).await.unwrap();
    assert_eq!(
        stored.record.map(|r| r.id.to_string()).as_deref(),
        Some("c1")
    );
    assert_eq!(stored.writes.len(), 1, "the refused write was not stored");
    assert_eq!(stored.blobs.len(), 1);
    // Reads are not fenced; the saver it was made from writes as before.
    assert_eq!(count(&fenced, &thread).await, 1);
    saver
        .put_batch(vec![checkpoint(&thread, "c4", "r2")])
        .await
        .unwrap();
    // A fence on the new owner passes.
    let taken = saver.fenced(fence(&table, "run", "b"));
    taken
        .put_batch(vec![checkpoint(&thread, "c5", "r2")])
        .await
        .unwrap();
    assert_eq!(taken.delete_for_runs(&thread, &["r2"]).await.unwrap(), 2);
    saver.delete_thread(&thread).await.unwrap();
    execute(&saver, &format!("DROP TABLE {table}")).await;
}

/// A fence that cannot run (a statement error) fails the write with a storage error, storing
/// nothing; a fence with a typed column casts its text parameter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_fence_stores_nothing() {
    let Some((saver, table)) = setup().await else {
        return;
    };
    let thread = common::unique("broken-fence");
    let broken = saver.fenced(Fence {
        sql: "SELECT 1 FROM no_such_table_here WHERE id = $1".to_owned(),
        params: vec!["x".to_owned()],
    });
    let result = broken.put_batch(vec![checkpoint(&thread, "c1", "r")]).await;
    assert!(
        matches!(&result, Err(GraphError::Storage { detail, .. }) if detail.contains("fence")),
        "{result:?}"
    );
    assert_eq!(count(&saver, &thread).await, 0);
    let typed = saver.fenced(Fence {
        sql: "SELECT 1 WHERE $1::BIGINT = 42".to_owned(),
        params: vec!["42".to_owned()],
    });
    typed
        .put_batch(vec![checkpoint(&thread, "c1", "r")])
        .await
        .unwrap();
    assert_eq!(count(&saver, &thread).await, 1);
    saver.delete_thread(&thread).await.unwrap();
    execute(&saver, &format!("DROP TABLE {table}")).await;
}

/// Writers hammer a fenced saver while the lease is taken over: every write either landed
/// before the `UPDATE` committed (stored, and counted right after it) or was refused (not
/// stored); none lands after it. Meanwhile writes of the unfenced saver and of another fence
/// (whose row holds) all pass: a refusal never takes a batch of theirs with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_racing_the_takeover_lands_before_it_or_is_refused() {
    let Some((saver, table)) = setup().await else {
        return;
    };
    let thread = common::unique("race");
    let (plain_thread, other_thread) = (format!("{thread}-plain"), format!("{thread}-other"));
    execute(
        &saver,
        &format!("INSERT INTO {table} VALUES ('run', 'a'), ('other', 'a')"),
    )
    .await;
    // The fenced thread's inserts take a while, so that writes are in flight (fenced, not
    // committed) when the takeover comes.
    let slow = format!("{table}_slow");
    execute(
        &saver,
        &format!(
            "CREATE FUNCTION {slow}() RETURNS trigger AS $$
             BEGIN
               IF NEW.thread_id = '{thread}' THEN PERFORM pg_sleep(0.01); END IF;
               RETURN NEW;
             END $$ LANGUAGE plpgsql;
             CREATE TRIGGER {slow} BEFORE INSERT ON agentgraph_checkpoints
               FOR EACH ROW EXECUTE FUNCTION {slow}();"
        ),
    )
    .await;
    let fenced = saver.fenced(fence(&table, "run", "a"));
    let other = saver.fenced(fence(&table, "other", "a"));
    let landed = Arc::new(AtomicUsize::new(0));
    let mut writers = Vec::new();
    for w in 0..12 {
        let (fenced, plain, other) = (fenced.clone(), saver.clone(), other.clone());
        let (thread, plain_thread, other_thread) =
            (thread.clone(), plain_thread.clone(), other_thread.clone());
        let landed = landed.clone();
        writers.push(tokio::spawn(async move {
            let mut outcomes = Vec::new();
            for n in 0..400 {
                let id = format!("c{w:02}-{n:03}");
                // The three savers store at once: their batches queue side by side.
                let (mine, theirs, others) = tokio::join!(
                    fenced.put_batch(vec![checkpoint(&thread, &id, "r")]),
                    plain.put_batch(vec![checkpoint(&plain_thread, &id, "r")]),
                    other.put_batch(vec![checkpoint(&other_thread, &id, "r")]),
                );
                theirs.expect("the unfenced saver's write");
                others.expect("the other fence's write");
                let refused = match mine {
                    Ok(()) => {
                        landed.fetch_add(1, SeqCst);
                        false
                    }
                    Err(GraphError::Fenced { .. }) => true,
                    Err(e) => panic!("{id}: {e}"),
                };
                outcomes.push((id, refused));
                if refused {
                    break;
                }
            }
            outcomes
        }));
    }
    // Let some writes land, then take the lease over.
    while landed.load(SeqCst) < 24 {
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    execute(
        &saver,
        &format!("UPDATE {table} SET owner = 'b' WHERE id = 'run'"),
    )
    .await;
    let at_takeover = count(&saver, &thread).await;
    let mut refused = 0;
    for writer in writers {
        for (id, was_refused) in writer.await.unwrap() {
            let stored = saver.get(&thread, "", Some(&id)).await.unwrap().record;
            assert_eq!(stored.is_some(), !was_refused, "{id}");
            refused += usize::from(was_refused);
        }
    }
    assert_eq!(
        refused, 12,
        "every writer was refused once the lease was taken"
    );
    assert_eq!(
        count(&saver, &thread).await,
        at_takeover,
        "no write landed after the takeover committed"
    );
    assert_eq!(at_takeover, landed.load(SeqCst));
    for t in [&thread, &plain_thread, &other_thread] {
        saver.delete_thread(t).await.unwrap();
    }
    execute(
        &saver,
        &format!(
            "DROP TRIGGER {slow} ON agentgraph_checkpoints; DROP FUNCTION {slow}();
             DROP TABLE {table}"
        ),
    )
    .await;
}

#[derive(GraphState, Clone, Default, Debug)]
struct Loop {
    #[reducer(add)]
    count: u32,
}

/// A run checkpointing through a fenced saver (the graph compiled with the plain one): once
/// its lease is taken over mid-run, the run fails with `Fenced`, no node runs after the
/// refused store, and nothing after it is stored; another worker continues the thread from
/// the last stored checkpoint.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_stops_with_fenced_once_its_lease_is_taken() {
    let Some((saver, table)) = setup().await else {
        return;
    };
    for durability in [Durability::Sync, Durability::Async] {
        let thread = common::unique("fenced-run");
        execute(
            &saver,
            &format!("INSERT INTO {table} VALUES ('{thread}', 'a')"),
        )
        .await;
        let calls = Arc::new(AtomicUsize::new(0));
        let plain = Arc::new(saver.clone());
        let graph = {
            let (calls, saver, table, thread) =
                (calls.clone(), saver.clone(), table.clone(), thread.clone());
            StateGraph::<Loop>::new()
                .add_node("tick", move |s: Arc<Loop>| {
                    let (calls, saver, table, thread) =
                        (calls.clone(), saver.clone(), table.clone(), thread.clone());
                    async move {
                        calls.fetch_add(1, SeqCst);
                        if s.count == 3 {
                            // The run's worker stalls; another takes its lease meanwhile.
                            execute(
                                &saver,
                                &format!("UPDATE {table} SET owner = 'b' WHERE id = '{thread}'"),
                            )
                            .await;
                        }
                        LoopUpdate::default().count(1)
                    }
                })
                .add_edge(START, "tick")
                .add_conditional_edges(
                    "tick",
                    |s: &Loop| if s.count < 10 { "tick" } else { END },
                    ["tick", END],
                )
                .compile_with(plain)
                .unwrap()
        };
        let config = RunConfig::default()
            .thread_id(thread.clone())
            .durability(durability);
        let fenced = saver.fenced(fence(&table, &thread, "a"));
        let error = graph
            .invoke(
                LoopUpdate::default(),
                config.clone().checkpointer(Arc::new(fenced)),
            )
            .await
            .expect_err("the lease was taken");
        assert!(
            matches!(error, GraphError::Fenced { .. }),
            "{durability:?}: {error:?}"
        );
        // With `Sync` the refused store is the step's own: no node runs after it. (With
        // `Async` the steps may run ahead of their stores, up to the backlog.)
        let calls = calls.load(SeqCst);
        if durability == Durability::Sync {
            assert_eq!(calls, 4, "the run went on after the refused store");
        }
        // (With `Async`, the takeover may come before the first batch is stored: then
        // nothing is.)
        let stored = graph.get_state(&config).await.unwrap();
        let count = stored.as_ref().map_or(0, |s| s.values.count);
        assert!(
            count <= 3,
            "{durability:?}: a step after the takeover was stored ({count})"
        );
        assert!(durability == Durability::Async || count == 3, "{count}");
        // The new owner continues from there.
        let taken = saver.fenced(fence(&table, &thread, "b"));
        let input = match stored {
            Some(_) => agent_core::Input::Continue,
            None => agent_core::Input::Update(LoopUpdate::default()),
        };
        let out = graph
            .invoke(input, config.clone().checkpointer(Arc::new(taken)))
            .await
            .unwrap();
        assert_eq!(out.count, 10, "{durability:?}");
        saver.delete_thread(&thread).await.unwrap();
    }
    execute(&saver, &format!("DROP TABLE {table}")).await;
}
